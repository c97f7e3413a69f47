// SPDX-License-Identifier: MIT
#include "timeline_json.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[TL_NKINDS] = {
	[TL_NODE_JOIN] = "node_join", [TL_JOB_START] = "job_start", [TL_RANK_START] = "rank_start",
	[TL_RANK_EXIT] = "rank_exit", [TL_FAILURE] = "failure", [TL_STOP] = "stop", [TL_RESTART] = "restart",
	[TL_STALL] = "stall", [TL_STALL_END] = "stall_end", [TL_JOB_END] = "job_end",
};

const char *tl_kind_name(enum tl_kind k)
{
	return (unsigned)k < TL_NKINDS ? kind_names[k] : "unknown";
}

json_t *tl_event_json(const struct tl_event *e)
{
	return json_pack("{s:s, s:i, s:i, s:I, s:i, s:i, s:i, s:b, s:s}", "kind", tl_kind_name(e->kind),
			 "node", e->node, "rank", e->rank, "wall_us", (json_int_t)e->wall_us, "attempt",
			 e->a.attempt, "code", e->a.code, "sig", e->a.sig, "root_cause", e->a.root_cause, "text",
			 e->a.text);
}

int tl_event_from_json(const json_t *o, struct tl_event *e)
{
	const char *kind = NULL, *text = "";
	json_int_t wall = 0;
	int root = 0, k;

	*e = (struct tl_event){ .rank = -1, .a = { .code = -1 } };
	if (json_unpack((json_t *)o, "{s:s, s:i, s:i, s:I, s?i, s?i, s?i, s?b, s?s}", "kind", &kind, "node", &e->node, "rank",
			&e->rank, "wall_us", &wall, "attempt", &e->a.attempt, "code", &e->a.code, "sig", &e->a.sig,
			"root_cause", &root, "text", &text) < 0)
		return -EINVAL;
	for (k = 0; k < TL_NKINDS && strcmp(kind, kind_names[k]) != 0; k++)
		;
	if (k == TL_NKINDS)
		return -EINVAL;
	e->kind = (enum tl_kind)k;
	e->wall_us = wall;
	e->a.root_cause = root;
	snprintf(e->a.text, sizeof(e->a.text), "%s", text);
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct tl_event *x = *(const struct tl_event *const *)a, *y = *(const struct tl_event *const *)b;

	if (x->wall_us != y->wall_us)
		return (x->wall_us > y->wall_us) - (x->wall_us < y->wall_us);
	return (x > y) - (x < y); /* the order they were recorded in */
}

struct enc {
	json_t *out;           /* the traceEvents array */
	int64_t origin, end;   /* the first and last event's time */
};

static json_t *base(const struct enc *c, const char *ph, const char *name, const struct tl_event *e)
{
	const char *cat = e->kind == TL_RANK_START ? "rank" : tl_kind_name(e->kind);

	return json_pack("{s:s, s:s, s:s, s:i, s:i, s:I}", "ph", ph, "name", name, "cat", cat,
			 "pid", e->node + 1, "tid", e->rank + 1, "ts", (json_int_t)(e->wall_us - c->origin));
}

static void add(struct enc *c, json_t *ev, json_t *args)
{
	if (ev && args)
		json_object_set_new(ev, "args", args);
	else
		json_decref(args);
	if (ev)
		json_array_append_new(c->out, ev);
}

static json_t *exit_args(const struct tl_event *e)
{
	json_t *a = json_pack("{s:i, s:b}", "attempt", e->a.attempt, "root_cause", e->a.root_cause);

	if (a && e->a.code >= 0)
		json_object_set_new(a, "exit_code", json_integer(e->a.code));
	if (a && e->a.sig > 0) {
		json_object_set_new(a, "signal", json_integer(e->a.sig));
		json_object_set_new(a, "signal_name", json_string(sigabbrev_np(e->a.sig) ? sigabbrev_np(e->a.sig) : "?"));
	}
	if (a && e->a.text[0])
		json_object_set_new(a, "note", json_string(e->a.text));
	return a;
}

/* The event that ends the span begun by sorted[i] (same node, rank and
 * kind of span, same attempt for ranks), or NULL: open to the end. */
static const struct tl_event *span_end(const struct tl_event *const *sorted, int n, int i, enum tl_kind end)
{
	const struct tl_event *s = sorted[i];

	for (int k = i + 1; k < n; k++) {
		const struct tl_event *e = sorted[k];

		if (e->node != s->node || e->rank != s->rank)
			continue;
		if (e->kind == s->kind)
			return NULL; /* begun again without an end */
		if (e->kind == end && (end != TL_RANK_EXIT || e->a.attempt == s->a.attempt))
			return e;
	}
	return NULL;
}

/* Whether the job's root cause was rank s's exit in its attempt. */
static bool root_cause(const struct tl_event *const *sorted, int n, const struct tl_event *s)
{
	for (int k = 0; k < n; k++) {
		const struct tl_event *e = sorted[k];

		if (e->kind == TL_FAILURE && e->a.root_cause && e->node == s->node && e->rank == s->rank &&
		    e->a.attempt == s->a.attempt)
			return true;
	}
	return false;
}

static void span(struct enc *c, const struct tl_event *const *sorted, int n, int i)
{
	const struct tl_event *s = sorted[i];
	bool rank = s->kind == TL_RANK_START;
	const struct tl_event *e = span_end(sorted, n, i, rank ? TL_RANK_EXIT : TL_STALL_END);
	char name[64];
	json_t *ev, *args;

	if (rank)
		snprintf(name, sizeof(name), "rank %d, attempt %d", s->rank, s->a.attempt + 1);
	else
		snprintf(name, sizeof(name), "stall");
	ev = base(c, "X", name, s);
	if (ev)
		json_object_set_new(ev, "dur", json_integer((json_int_t)((e ? e->wall_us : c->end) - s->wall_us)));
	args = rank && e ? exit_args(e) : rank ? json_pack("{s:i}", "attempt", s->a.attempt) :
	       json_pack("{s:s}", "why", s->a.text);
	if (args && !e)
		json_object_set_new(args, "running", json_true());
	if (args && rank && root_cause(sorted, n, s))
		json_object_set_new(args, "root_cause", json_true());
	add(c, ev, args);
}

/* An instant's name, e.g. "failure (root cause)", "stop: SIGTERM". */
static void instant_name(const struct tl_event *e, char *buf, size_t size)
{
	const char *sig = e->a.sig > 0 && sigabbrev_np(e->a.sig) ? sigabbrev_np(e->a.sig) : NULL;

	switch (e->kind) {
	case TL_NODE_JOIN: snprintf(buf, size, "node %d joined", e->node); break;
	case TL_JOB_START: snprintf(buf, size, "attempt %d starts", e->a.attempt + 1); break;
	case TL_FAILURE: snprintf(buf, size, "failure%s", e->a.root_cause ? " (root cause)" : ""); break;
	case TL_STOP: snprintf(buf, size, sig ? "stop: SIG%s" : "stop", sig); break;
	case TL_RESTART: snprintf(buf, size, "restart: attempt %d", e->a.attempt + 1); break;
	case TL_JOB_END: snprintf(buf, size, "job ends: status %d", e->a.code); break;
	default: snprintf(buf, size, "%s", tl_kind_name(e->kind)); break;
	}
}

static void instant(struct enc *c, const struct tl_event *e)
{
	char name[96];
	json_t *ev, *args;

	instant_name(e, name, sizeof(name));
	ev = base(c, "i", name, e);
	if (ev)
		json_object_set_new(ev, "s", json_string(e->rank >= 0 ? "t" : "p"));
	args = e->kind == TL_FAILURE ? exit_args(e) : json_pack("{s:i}", "attempt", e->a.attempt);
	if (args && e->kind != TL_FAILURE) {
		if (e->a.code >= 0)
			json_object_set_new(args, "code", json_integer(e->a.code));
		if (e->a.sig > 0)
			json_object_set_new(args, "signal", json_integer(e->a.sig));
		if (e->a.text[0])
			json_object_set_new(args, "note", json_string(e->a.text));
	}
	add(c, ev, args);
}

static void name_meta(struct enc *c, const char *what, int pid, int tid, const char *name, int order)
{
	add(c, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "ph", "M", "name", what, "pid", pid, "tid", tid, "args",
			 "name", name), NULL);
	add(c, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "ph", "M", "name",
			 strcmp(what, "process_name") == 0 ? "process_sort_index" : "thread_sort_index", "pid", pid,
			 "tid", tid, "args", "sort_index", order), NULL);
}

static int by_place(const void *a, const void *b)
{
	const struct tl_event *x = *(const struct tl_event *const *)a, *y = *(const struct tl_event *const *)b;

	if (x->node != y->node)
		return (x->node > y->node) - (x->node < y->node);
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Names every node and every rank seen, once each; byplace: the events
 * sorted by node and rank. */
static void metadata(struct enc *c, const struct tl_event **byplace, int n, char *const *hosts, int nhosts)
{
	char name[160];

	qsort(byplace, (size_t)n, sizeof(*byplace), by_place);
	for (int i = 0; i < n; i++) {
		const struct tl_event *e = byplace[i], *prev = i ? byplace[i - 1] : NULL;

		if (!prev || prev->node != e->node) {
			const char *host = e->node >= 0 && e->node < nhosts && hosts && hosts[e->node] ?
					   hosts[e->node] : "";

			snprintf(name, sizeof(name), host[0] ? "node %d (%s)" : "node %d", e->node, host);
			name_meta(c, "process_name", e->node + 1, 0, name, e->node);
			name_meta(c, "thread_name", e->node + 1, 0, "slotrun", -1);
		}
		if (e->rank >= 0 && (!prev || prev->node != e->node || prev->rank != e->rank)) {
			snprintf(name, sizeof(name), "rank %d", e->rank);
			name_meta(c, "thread_name", e->node + 1, e->rank + 1, name, e->rank);
		}
	}
}

char *tl_encode(const struct tl_event *ev, int n, char *const *hosts, int nhosts)
{
	const struct tl_event **sorted = malloc((n > 0 ? (size_t)n : 1) * sizeof(*sorted));
	struct enc c = { .out = json_array() };
	json_t *doc;
	char *text = NULL;

	if (!sorted || !c.out)
		goto out;
	for (int i = 0; i < n; i++)
		sorted[i] = &ev[i];
	metadata(&c, sorted, n, hosts, nhosts);
	qsort(sorted, (size_t)n, sizeof(*sorted), by_time);
	c.origin = n ? sorted[0]->wall_us : 0;
	c.end = n ? sorted[n - 1]->wall_us : 0;
	for (int i = 0; i < n; i++) {
		enum tl_kind k = sorted[i]->kind;

		if (k == TL_RANK_START || k == TL_STALL)
			span(&c, sorted, n, i);
		else if (k != TL_RANK_EXIT && k != TL_STALL_END)
			instant(&c, sorted[i]);
	}
	doc = json_pack("{s:O, s:s, s:{s:I, s:s}}", "traceEvents", c.out, "displayTimeUnit", "ms", "otherData",
			"origin_us", (json_int_t)c.origin, "generator", "slotrun");
	if (doc)
		text = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(doc);
out:
	json_decref(c.out);
	free(sorted);
	return text;
}
