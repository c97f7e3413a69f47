// SPDX-License-Identifier: MIT
/* The rounds of an elastic job (plane_round.h): pure. */
#include "plane_round.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "restart.h"

int plane_roster_init(struct plane_roster *r, int min, int max, const struct plane_node *self)
{
	*r = (struct plane_roster){ .min = min, .max = max };
	r->cap = max > 8 ? 8 : max;
	r->n = calloc((size_t)r->cap, sizeof(*r->n));
	r->at = calloc((size_t)max, sizeof(*r->at));
	r->base = calloc((size_t)max, sizeof(*r->base));
	if (!r->n || !r->at || !r->base) {
		plane_roster_free(r);
		return -ENOMEM;
	}
	r->n[0] = *self;
	r->n[0].rank = -1;
	r->n[0].gone = false;
	r->n[0].order = r->arrivals++;
	r->count = r->present = 1;
	return 0;
}

void plane_roster_free(struct plane_roster *r)
{
	free(r->n);
	free(r->at);
	free(r->base);
	r->n = NULL;
	r->at = r->base = NULL;
	r->count = r->cap = r->present = 0;
}

int plane_roster_present(const struct plane_roster *r)
{
	return r->present;
}

/* Gone nodes are forgotten once no rank refers to them, so that a job
 * whose nodes come and go for weeks holds at most about MAX of them. */
static void compact(struct plane_roster *r)
{
	int k = 0;

	for (int i = 0; i < r->count; i++) {
		if (r->n[i].gone && r->n[i].rank < 0 && i != 0)
			continue;
		if (k != i) {
			r->n[k] = r->n[i];
			if (r->n[k].rank >= 0)
				r->at[r->n[k].rank] = k;
		}
		k++;
	}
	r->count = k;
}

int plane_roster_add(struct plane_roster *r, const struct plane_node *n)
{
	struct plane_node *grown;

	for (int i = 0; i < r->count; i++)
		if (!r->n[i].gone && memcmp(r->n[i].id, n->id, PLANE_ID_LEN) == 0)
			return -EEXIST;
	if (r->present >= r->max)
		return -ENOSPC;
	if (r->count == r->cap) {
		compact(r);
		if (r->count == r->cap) {
			int cap = r->cap * 2;

			grown = realloc(r->n, (size_t)cap * sizeof(*grown));
			if (!grown)
				return -ENOMEM;
			r->n = grown;
			r->cap = cap;
		}
	}
	r->n[r->count] = *n;
	r->n[r->count].rank = -1;
	r->n[r->count].gone = false;
	r->n[r->count].order = r->arrivals++;
	r->present++;
	return r->count++;
}

void plane_roster_drop(struct plane_roster *r, int i)
{
	if (i > 0 && i < r->count) {
		r->present -= !r->n[i].gone;
		r->n[i].gone = true;
		r->n[i].tag = NULL;
	}
}

int plane_roster_find(const struct plane_roster *r, const void *tag)
{
	for (int i = 0; tag && i < r->count; i++)
		if (!r->n[i].gone && r->n[i].tag == tag)
			return i;
	return -1;
}

bool plane_roster_first_due(const struct plane_roster *r, double since, double settle)
{
	int present = plane_roster_present(r);

	return present >= r->max || (present >= r->min && since >= settle);
}

/* The roster holds its nodes in arrival order: a node joins at the end,
 * and compact() keeps the order.  So "the earliest arrival" is the lowest
 * index, and one pass in index order meets the nodes in arrival order. */

/* The waiting node that comes first at or after *from (moved past it):
 * the lowest arrival not placed yet, or -1. */
static int next_waiting(const struct plane_roster *r, const bool *placed, int *from)
{
	for (; *from < r->count; ++*from)
		if (!r->n[*from].gone && !placed[*from])
			return (*from)++;
	return -1;
}

/* The first round: preferences first, where free (the earliest arrival
 * among those that ask for the same rank); the rest in arrival order into
 * the ranks left. */
static void place_first(struct plane_roster *r, int size, bool *placed, bool *taken)
{
	int from = 1;

	for (int i = 1; i < r->count; i++) {
		const struct plane_node *x = &r->n[i];

		if (x->gone || x->pref < 1 || x->pref >= size || taken[x->pref])
			continue;
		r->at[x->pref] = i;
		taken[x->pref] = placed[i] = true;
	}
	for (int k = 1; k < size; k++) {
		int i;

		if (taken[k] || (i = next_waiting(r, placed, &from)) < 0)
			continue;
		r->at[k] = i;
		taken[k] = placed[i] = true;
	}
}

/* A later round: the previous round's nodes in their order, then the
 * waiting ones in arrival order.  by_prev: room for max entries. */
static void place_next(struct plane_roster *r, int size, bool *placed, int *by_prev)
{
	int k = 1, from = 1;

	for (int prev = 0; prev < r->max; prev++)
		by_prev[prev] = -1;
	for (int i = r->count - 1; i >= 1; i--) /* the first of each rank before wins */
		if (!r->n[i].gone && r->n[i].prev >= 1 && r->n[i].prev < r->max)
			by_prev[r->n[i].prev] = i;
	for (int prev = 1; prev < r->max && k < size; prev++) {
		int i = by_prev[prev];

		if (i >= 0 && !placed[i]) {
			r->at[k++] = i;
			placed[i] = true;
		}
	}
	for (int i; k < size && (i = next_waiting(r, placed, &from)) >= 0; k++) {
		r->at[k] = i;
		placed[i] = true;
	}
}

int plane_roster_form(struct plane_roster *r)
{
	bool *placed, *taken;
	int size = r->present, *by_prev;

	if (size > r->max)
		size = r->max;
	compact(r);
	placed = calloc((size_t)r->count, sizeof(*placed));
	taken = calloc((size_t)r->max, sizeof(*taken));
	by_prev = calloc((size_t)r->max, sizeof(*by_prev));
	if (!placed || !taken || !by_prev) {
		free(placed);
		free(taken);
		free(by_prev);
		return -ENOMEM;
	}
	/* the current round's ranks become the previous ones; a node that
	 * waited keeps what it came with (-1, or its rank before a failover) */
	for (int i = 0; i < r->count; i++) {
		if (r->n[i].rank >= 0)
			r->n[i].prev = r->n[i].rank;
		r->n[i].rank = -1;
	}
	r->at[0] = 0;
	placed[0] = taken[0] = true;
	if (r->round == 0)
		place_first(r, size, placed, taken);
	else
		place_next(r, size, placed, by_prev);
	r->world = 0;
	for (int k = 0; k < size; k++) {
		r->n[r->at[k]].rank = k;
		r->base[k] = r->world;
		r->world += r->n[r->at[k]].slots;
	}
	free(placed);
	free(taken);
	free(by_prev);
	r->size = size;
	r->round++;
	return size;
}

void plane_roster_info(const struct plane_roster *r, int k, const char *chief_host,
		       struct plane_round_info *out)
{
	out->round = r->round;
	out->nnodes = r->size;
	out->node_rank = k;
	out->rank_base = r->base[k];
	out->world_size = r->world;
	snprintf(out->master, sizeof(out->master), "%s", chief_host);
	out->ncand = 0;
	for (int j = 1; j < r->size && out->ncand < PLANE_CANDIDATES; j++) {
		out->cand_rank[out->ncand] = j;
		snprintf(out->cand_host[out->ncand], sizeof(out->cand_host[0]), "%s", r->n[r->at[j]].host);
		out->ncand++;
	}
}

/* ---- The end of a round ---- */

static struct plane_round_next ends(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static struct plane_round_next ends(int code, const char *fmt, ...)
{
	struct plane_round_next n = { .end = true, .code = code };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(n.why, sizeof(n.why), fmt, ap);
	va_end(ap);
	return n;
}

struct plane_round_next plane_round_after(const struct plane_round_policy *pol, int round_size,
					  const struct plane_round_end *e)
{
	const struct plane_cause *c = &e->cause;
	int base = round_size - e->dead;

	if (e->told_stop)
		return ends(e->code, "%s", "");
	switch (c->kind) {
	case PLANE_CAUSE_NONE:
		return ends(e->code, "%s", "");
	case PLANE_CAUSE_SIGNAL:
		return ends(e->code, "%s", "");
	case PLANE_CAUSE_GROW:
		if (e->present >= pol->min)
			return (struct plane_round_next){ .delay = 0 };
		break; /* a node of the round left meanwhile: as for a lost one */
	default:
		break;
	}
	const char *lost = e->lost ? e->lost : "";

	if (e->alive * 2 <= base)
		return ends(1, "this side of the job holds %d of the last round's %d node%s%s%s%s: not more than "
			    "half, so it stops rather than go on as a second job beside the other side", e->alive,
			    round_size, round_size == 1 ? "" : "s", lost[0] ? " (lost: " : "", lost,
			    lost[0] ? ")" : "");
	if (e->present < pol->min)
		return ends(e->code, "%d node%s left, fewer than --nnodes' MIN %d%s%s%s", e->present,
			    e->present == 1 ? "" : "s", pol->min, lost[0] ? " (lost: " : "", lost,
			    lost[0] ? ")" : "");
	if (e->restarts >= pol->max_restarts)
		return ends(e->code, "no restart left (--max-restarts %d)", pol->max_restarts);
	if (c->kind == PLANE_CAUSE_RANK) {
		if (!pol->restart || !restart_allowed(pol->restart, c, e->restarts))
			return ends(e->code, "%s", "");
		return (struct plane_round_next){ .counts = true,
						  .delay = restart_delay(pol->restart, e->restarts) };
	}
	return (struct plane_round_next){ .counts = true, .delay = 0 };
}

void plane_round_line(const struct plane_round_info *ri, char *buf, size_t len)
{
	int n = snprintf(buf, len, "round %d: %d node%s, %d rank%s", ri->round, ri->nnodes,
			 ri->nnodes == 1 ? "" : "s", ri->world_size, ri->world_size == 1 ? "" : "s");

	if (ri->why[0] && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " (%s)", ri->why);
}
