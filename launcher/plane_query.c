// SPDX-License-Identifier: MIT
/* Documents across the job plane (plane_query.h). */
#include "plane_query.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

/* A document being put together from its pieces. */
struct doc {
	char *text;
	size_t len;
	bool whole;
	bool over;           /* past PLANE_DOC_MAX: dropped */
};

/* The chief gathers one status from the round's nodes. */
struct pq_gather {
	struct plane *p;
	uint32_t id;               /* what its ASKs carry */
	struct conn *asker;        /* a node's QUERY (answered with asker_id), or NULL */
	uint32_t asker_id;
	plane_doc_fn done;         /* ... else our own */
	void *ctx;
	int n, left;               /* nodes asked (the round's), answers still to come */
	struct doc *docs;          /* per node of the round, 0 ours */
	struct event *timer;
	struct pq_gather *next;
};

/* A node's query, waiting for the chief's answer. */
struct pq_asked {
	struct plane *p;
	uint32_t id;
	plane_doc_fn done;
	void *ctx;
	struct doc doc;
	struct event *timer;
	struct pq_asked *next;
};

#define SMALL_ERROR "{\"error\":\"%s\"}"

/* Appends a piece; false once the document would be too large. */
static bool take_piece(struct doc *d, const char *data, bool more)
{
	size_t n = strlen(data);
	char *t;

	d->whole = !more;
	if (d->over)
		return false;
	if (d->len + n > PLANE_DOC_MAX || !(t = realloc(d->text, d->len + n + 1))) {
		free(d->text);
		d->text = NULL;
		d->len = 0;
		d->over = true;
		return false;
	}
	memcpy(t + d->len, data, n);
	d->len += n;
	t[d->len] = '\0';
	d->text = t;
	return true;
}

/* Sends doc to c in pieces, under id; one too large goes as an error. */
static void send_doc(struct conn *c, uint32_t id, const char *doc, size_t len)
{
	struct plane_msg m = { .type = PLANE_PART, .id = id };
	char small[128];

	if (!doc || len > PLANE_DOC_MAX) {
		snprintf(small, sizeof(small), SMALL_ERROR, doc ? "the answer is too large to carry over the job "
			 "plane: ask on node 0, the chief" : "no answer");
		doc = small;
		len = strlen(small);
	}
	do {
		size_t n = len > PLANE_PIECE_MAX ? PLANE_PIECE_MAX : len;

		memcpy(m.data, doc, n);
		m.data[n] = '\0';
		doc += n;
		len -= n;
		m.more = len > 0;
		plane_conn_send(c, &m);
	} while (len > 0 && plane_conn_open(c));
}

/* ---- The chief ---- */

static void unlink_gather(struct plane *p, struct pq_gather *g)
{
	for (struct pq_gather **pp = &p->gathers; *pp; pp = &(*pp)->next)
		if (*pp == g) {
			*pp = g->next;
			return;
		}
}

static void free_gather(struct pq_gather *g)
{
	for (int k = 0; g->docs && k < g->n; k++)
		free(g->docs[k].text);
	free(g->docs);
	if (g->timer)
		event_free(g->timer);
	free(g);
}

/* Every node answered, or the deadline came: the whole status to the one
 * who asked. */
static void finish(struct plane *p, struct pq_gather *g)
{
	char missing[PLANE_TEXT_MAX] = "", **docs = calloc((size_t)g->n, sizeof(char *)), *doc = NULL;
	size_t *lens = calloc((size_t)g->n, sizeof(size_t)), len = 0, o = 0;

	unlink_gather(p, g);
	for (int k = 0; docs && lens && k < g->n; k++) {
		if (g->docs[k].whole && g->docs[k].text) {
			docs[k] = g->docs[k].text;
			lens[k] = g->docs[k].len;
		} else if (o + 1 < sizeof(missing)) {
			snprintf(missing + o, sizeof(missing) - o, "%snode %d (%s) %s", o ? "; " : "", k,
				 plane_host(p, k), g->docs[k].over ? "sent too much" : "did not answer in time");
			o += strlen(missing + o);
		}
	}
	if (docs && lens && p->h->merge)
		doc = p->h->merge(p->arg, docs, lens, g->n, missing, &len);
	if (g->asker)
		send_doc(g->asker, g->asker_id, doc, len);
	if (g->done)
		g->done(g->ctx, doc, len);
	else
		free(doc);
	free(docs);
	free(lens);
	free_gather(g);
}

static void on_gather_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct pq_gather *g = arg;

	(void)fd;
	(void)what;
	finish(g->p, g);
}

/* The chief asks every node of the round (itself through the ask hook)
 * for its part. */
static int gather(struct plane *p, bool stacks, double timeout, struct conn *asker, uint32_t asker_id,
		  plane_doc_fn done, void *ctx)
{
	struct pq_gather *g = calloc(1, sizeof(*g));
	struct plane_msg ask = { .type = PLANE_ASK, .flags = stacks ? PLANE_Q_STACKS : 0 };
	struct timeval tv = clock_tv(timeout);

	if (!g || !(g->docs = calloc((size_t)p->nnodes, sizeof(*g->docs))) ||
	    !(g->timer = evtimer_new(p->base, on_gather_deadline, g))) {
		if (g)
			free_gather(g);
		return -ENOMEM;
	}
	*g = (struct pq_gather){ .p = p, .id = ++p->next_id, .asker = asker, .asker_id = asker_id, .done = done, .ctx = ctx,
				 .n = p->nnodes, .left = p->nnodes, .docs = g->docs, .timer = g->timer,
				 .next = p->gathers };
	p->gathers = g;
	ask.id = g->id;
	evtimer_add(g->timer, &tv);
	for (int k = 1; k < g->n; k++)
		if (p->by_node[k] && p->by_node[k]->authed)
			plane_conn_send(p->by_node[k], &ask);
	if (p->h->ask)
		p->h->ask(p->arg, g->id, stacks);
	return 0;
}

void plane_query_asked(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;

	if (gather(p, m->flags & PLANE_Q_STACKS, (m->flags & PLANE_Q_STACKS) ? 12.0 : 5.0, c, m->id, NULL, NULL) < 0)
		send_doc(c, m->id, NULL, 0);
}

static struct pq_gather *find_gather(struct plane *p, uint32_t id)
{
	for (struct pq_gather *g = p->gathers; g; g = g->next)
		if (g->id == id)
			return g;
	return NULL;
}

/* A part: from node k (0: ours). */
static void part(struct plane *p, int k, uint32_t id, const char *data, bool more)
{
	struct pq_gather *g = find_gather(p, id);

	if (!g || k < 0 || k >= g->n || g->docs[k].whole)
		return;
	take_piece(&g->docs[k], data, more);
	if (!more && --g->left == 0)
		finish(p, g);
}

void plane_query_event(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;

	if (p->h->event)
		p->h->event(p->arg, m->data, strlen(m->data), c->node >= 0 ? plane_host(p, c->node) : c->peer);
}

/* ---- A node ---- */

static void free_asked(struct pq_asked *a)
{
	if (a->timer)
		event_free(a->timer);
	free(a->doc.text);
	free(a);
}

static void unlink_asked(struct plane *p, struct pq_asked *a)
{
	for (struct pq_asked **pp = &p->asked; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			return;
		}
}

/* The query gets its answer, or none. */
static void answered(struct plane *p, struct pq_asked *a, bool ok)
{
	char *doc = ok && a->doc.whole ? a->doc.text : NULL;
	size_t len = doc ? a->doc.len : 0;

	unlink_asked(p, a);
	if (doc)
		a->doc.text = NULL;
	a->done(a->ctx, doc, len);
	free_asked(a);
}

static void on_asked_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct pq_asked *a = arg;

	(void)fd;
	(void)what;
	answered(a->p, a, false);
}

/* A node's query: to the chief, which gathers and answers. */
static int ask_chief(struct plane *p, bool stacks, double timeout, plane_doc_fn done, void *ctx)
{
	struct pq_asked *a;
	struct timeval tv = clock_tv(timeout);

	if (!p->chief_conn || !p->chief_conn->authed || p->chief_lost.kind != PLANE_CAUSE_NONE)
		return -ENOTCONN;
	if (!(a = calloc(1, sizeof(*a))) || !(a->timer = evtimer_new(p->base, on_asked_deadline, a))) {
		free(a);
		return -ENOMEM;
	}
	a->p = p;
	a->id = ++p->next_id;
	a->done = done;
	a->ctx = ctx;
	a->next = p->asked;
	p->asked = a;
	evtimer_add(a->timer, &tv);
	plane_conn_send(p->chief_conn, &(struct plane_msg){ .type = PLANE_QUERY, .id = a->id,
							    .flags = stacks ? PLANE_Q_STACKS : 0 });
	return 0;
}

void plane_query_ask(struct plane *p, const struct plane_msg *m)
{
	if (p->h->ask)
		p->h->ask(p->arg, m->id, m->flags & PLANE_Q_STACKS);
	else
		plane_answer(p, m->id, NULL, 0);
}

void plane_query_piece(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;

	if (p->chief) {
		part(p, c->node, m->id, m->data, m->more);
		return;
	}
	for (struct pq_asked *a = p->asked; a; a = a->next)
		if (a->id == m->id) {
			take_piece(&a->doc, m->data, m->more);
			if (!m->more)
				answered(p, a, !a->doc.over);
			return;
		}
}

void plane_query_dropped(struct conn *c)
{
	struct plane *p = c->p;

	for (struct pq_gather *g = p->gathers; g; g = g->next)
		if (g->asker == c)
			g->asker = NULL;
}

void plane_query_close(struct plane *p)
{
	while (p->gathers) {
		struct pq_gather *g = p->gathers;

		p->gathers = g->next;
		free_gather(g);
	}
	while (p->asked) {
		struct pq_asked *a = p->asked;

		p->asked = a->next;
		free_asked(a);
	}
}

/* ---- The entry points (plane.h) ---- */

int plane_query(struct plane *p, bool stacks, double timeout, plane_doc_fn done, void *ctx)
{
	if (!p || p->ended)
		return -ENOTCONN;
	if (p->chief)
		return p->by_node ? gather(p, stacks, timeout, NULL, 0, done, ctx) : -ENOTCONN;
	return ask_chief(p, stacks, timeout, done, ctx);
}

/* Our own part of a gather, on the chief: whole at once. */
static void own_part(struct plane *p, uint32_t id, const char *doc, size_t len)
{
	struct pq_gather *g = find_gather(p, id);
	char small[64];

	if (!g || g->docs[0].whole)
		return;
	if (!doc || len > PLANE_DOC_MAX) {
		snprintf(small, sizeof(small), SMALL_ERROR, doc ? "too large" : "no answer");
		doc = small;
		len = strlen(small);
	}
	if (!(g->docs[0].text = strndup(doc, len)))
		return; /* missing at the deadline */
	g->docs[0].len = strlen(g->docs[0].text);
	g->docs[0].whole = true;
	if (--g->left == 0)
		finish(p, g);
}

void plane_answer(struct plane *p, uint32_t id, const char *doc, size_t len)
{
	if (!p)
		return;
	if (p->chief)
		own_part(p, id, doc, len);
	else if (p->chief_conn && p->chief_conn->authed)
		send_doc(p->chief_conn, id, doc, len);
}

void plane_event(struct plane *p, const char *json, size_t len)
{
	struct plane_msg m = { .type = PLANE_EVENT };

	if (!p || p->chief || !p->chief_conn || !p->chief_conn->authed || len > PLANE_PIECE_MAX)
		return;
	memcpy(m.data, json, len);
	m.data[len] = '\0';
	plane_conn_send(p->chief_conn, &m);
}

bool plane_is_chief(const struct plane *p)
{
	return p && p->chief;
}
