// SPDX-License-Identifier: MIT
#include "live.h"

#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "io.h"
#include "lag.h"
#include "metrics.h"
#include "metrics_http.h"
#include "sampler.h"
#include "status.h"
#include "status_server.h"
#include "status_sock.h"
#include "status_stacks.h"
#include "timeline.h"
#include "workers.h"

/* Stacks are given this long (status_stacks.h). */
#define LIVE_STACKS_DEADLINE 10.0
/* The chief waits this long for the other nodes' parts of a status. */
#define LIVE_QUERY_DEADLINE 5.0

struct live_rank {
	struct out_count count;
	int exit_code;               /* -1: none yet */
	int exit_sig;                /* ... the signal that ended it, 0: none */
	bool lagging;                /* at the last sample (timeline stalls) */
};

/* A status request waiting for a fresh sample. */
struct waiter {
	status_reply_fn reply;
	void *ctx;
	bool stacks;
};

/* This node's part of a status the chief gathers. */
struct part_req {
	struct runner *r;
	uint32_t id;
};

/* A status request waiting for its stacks. */
struct stacks_req {
	struct runner *r;
	status_reply_fn reply;
	void *ctx;
	json_t *doc;
	struct status_stacks *h;
	struct stacks_req *next;
};

struct live {
	struct live_rank *ranks;
	struct sampler sampler;
	bool sampler_open;
	struct status_server *server;
	struct event *settle;        /* the second sample for waiting requests */
	struct waiter *waiters;
	int nwaiters, capwaiters;
	struct stacks_req *stacks;
	struct metrics_http *http;
	bool file_said;              /* a metrics file failure was said */
	int64_t started_us;
	double started;              /* clock_mono() */
	char id[STATUS_ID_MAX];
	char command[STATUS_CMD_MAX];
	int nodes_joined;
};

/* ---- This node's view ---- */

static const char *job_state(const struct runner *r)
{
	if (r->finished)
		return "done";
	if (!r->started)
		return r->attempt ? "restarting" : "starting";
	if (r->paused)
		return "paused";
	if (r->sup.state == SUP_RUNNING)
		return "running";
	return r->sup.state == SUP_DONE ? "done" : "stopping";
}

void live_job(struct runner *r, struct status_job *j)
{
	const struct runner_cfg *c = r->cfg;
	struct live *l = r->live;

	*j = (struct status_job){
		.pid = r->self, .node = c->plan->node_rank, .nnodes = c->plane ? c->plane->nnodes : 1,
		.world_size = c->plane ? c->plane->world_size : c->plan->nslots, .attempt = r->attempt + 1,
		.attempts = runner_attempts(r), .started_us = l ? l->started_us : 0,
		.uptime_s = l ? clock_mono() - l->started : 0, .nodes_joined = l ? l->nodes_joined : 1,
	};
	snprintf(j->id, sizeof(j->id), "%s", l ? l->id : "");
	snprintf(j->state, sizeof(j->state), "%s", job_state(r));
	snprintf(j->command, sizeof(j->command), "%s", l ? l->command : "");
	snprintf(j->host, sizeof(j->host), "%s", c->host ? c->host : "");
}

/* text without wrap_rank's "[rank=N] ", escaped (out_tail_escape) into
 * buf, never cut inside a UTF-8 character. */
static void line_text(const char *text, size_t len, char *buf, size_t size)
{
	const char *end = memchr(text, ']', len);
	char *esc;
	size_t n;

	if (len > 6 && memcmp(text, "[rank=", 6) == 0 && end && (size_t)(end - text) + 1 < len && end[1] == ' ') {
		len -= (size_t)(end + 2 - text);
		text = end + 2;
	}
	buf[0] = '\0';
	if (!(esc = out_tail_escape(text, len)))
		return;
	n = strlen(esc);
	if (n >= size)
		for (n = size - 1; n > 0 && (esc[n] & 0xc0) == 0x80; n--)
			;
	memcpy(buf, esc, n);
	buf[n] = '\0';
	free(esc);
}

static void row(struct runner *r, int i, double now, struct status_row *out)
{
	const struct runner_cfg *c = r->cfg;
	struct live *l = r->live;
	const struct live_rank *lr = &l->ranks[i];
	const struct sampler_rank *s = &l->sampler.ranks[i];
	bool up = r->started && r->fate[i] == SUP_W_RUNNING && r->w[i].pid > 0;

	*out = (struct status_row){
		.node = c->plan->node_rank, .rank = c->plan->slots[i].rank, .local_rank = c->plan->slots[i].local_rank,
		.up = up, .pid = up ? s->now.pid : 0, .state = up ? s->now.state : SAMPLE_GONE,
		.state_s = up && s->state_since > 0 ? now - s->state_since : 0, .cpu_pct = up ? s->cpu_pct : -1,
		.cpu_s = s->cpu_s, .rss_bytes = up ? s->now.rss_bytes : 0, .threads = up ? s->now.threads : 0,
		.procs = up ? s->now.procs : 0, .out_bytes = lr->count.bytes, .out_lines = lr->count.lines,
		.restarts = r->attempt, .exit_code = lr->exit_code,
	};
	if (up && out->pid <= 0)
		out->pid = r->w[i].pid;
	snprintf(out->host, sizeof(out->host), "%s", c->host ? c->host : "");
	out->wrote = r->started && lr->count.last_at >= r->t0;
	out->silent_s = !r->started ? 0 : out->wrote ? now - lr->count.last_at : now - r->t0;
	line_text(lr->count.last, lr->count.last_len, out->line, sizeof(out->line));
}

int live_rows(struct runner *r, struct status_row **rows, int *n)
{
	double now = clock_mono();

	*rows = NULL;
	*n = 0;
	if (!r->live)
		return 0;
	if (!(*rows = calloc((size_t)r->n, sizeof(**rows))))
		return -ENOMEM;
	for (int i = 0; i < r->n; i++)
		row(r, i, now, &(*rows)[i]);
	*n = r->n;
	return 0;
}

static bool job_runs(const struct runner *r)
{
	return r->started && !r->paused && r->sup.state == SUP_RUNNING;
}

/* ---- Status requests ---- */

static json_t *hello(void *arg)
{
	struct status_job j;

	live_job(arg, &j);
	return status_job_json(&j);
}

static void on_stacks(void *arg, json_t *stacks)
{
	struct stacks_req *q = arg, **p;
	struct live *l = q->r->live;

	for (p = &l->stacks; *p && *p != q; p = &(*p)->next)
		;
	if (*p)
		*p = q->next;
	json_object_set_new(q->doc, "stacks", stacks);
	q->reply(q->ctx, q->doc);
	free(q);
}

/* The reply, with stacks when asked for (then later, on_stacks). */
static void answer(struct runner *r, json_t *doc, bool stacks, status_reply_fn reply, void *ctx,
		   const struct status_row *rows, int n)
{
	struct live *l = r->live;
	struct stacks_req *q;

	if (!stacks || !doc) {
		reply(ctx, doc);
		return;
	}
	if (!(q = calloc(1, sizeof(*q)))) {
		reply(ctx, doc);
		return;
	}
	*q = (struct stacks_req){ .r = r, .reply = reply, .ctx = ctx, .doc = doc, .next = l->stacks };
	if (status_stacks_start(&q->h, r->base, rows, n, LIVE_STACKS_DEADLINE, on_stacks, q) < 0) {
		json_object_set_new(doc, "stacks", json_pack("[{s:s}]", "error", "stacks: out of memory"));
		free(q);
		reply(ctx, doc);
		return;
	}
	l->stacks = q;
}

static void note_stalls(struct runner *r, const struct status_row *rows, int n);

/* This node's part: its rows (the lags marked over them alone: the
 * node that merges marks them again over the whole job) and, when asked,
 * its ranks' stacks. */
static void local(struct runner *r, bool stacks, status_reply_fn reply, void *ctx)
{
	struct status_row *rows;
	struct status_job j;
	json_t *doc = NULL;
	int n;

	if (live_rows(r, &rows, &n) == 0) {
		lag_mark(rows, n, job_runs(r));
		note_stalls(r, rows, n);
		live_job(r, &j);
		doc = json_pack("{s:o, s:o}", "job", status_job_json(&j), "rows", status_rows_json(rows, n));
	}
	answer(r, doc, stacks, reply, ctx, rows, n);
	free(rows);
}

static void on_local(void *arg, bool stacks, status_reply_fn reply, void *ctx);

/* A status request waiting for the whole job's status from the chief. */
struct asked {
	status_reply_fn reply;
	void *ctx;
};

static void on_job_doc(void *arg, char *text, size_t len)
{
	struct asked *a = arg;
	json_t *doc = text ? json_loadb(text, len, 0, NULL) : NULL;

	if (!doc)
		doc = json_pack("{s:s}", "error", "the chief did not answer in time: ask again, or on node 0");
	a->reply(a->ctx, doc);
	free(text);
	free(a);
}

/* The job's rows for a status request: on several nodes the chief asks
 * every node for its part (live_ask there) with a deadline, merges them
 * (live_merge) and marks the lags over the whole job; alone, this node's. */
static void gather(struct runner *r, bool stacks, status_reply_fn reply, void *ctx)
{
	struct asked *a;

	if (!r->plane) {
		on_local(r, stacks, reply, ctx);
		return;
	}
	if (!(a = malloc(sizeof(*a)))) {
		reply(ctx, json_pack("{s:s}", "error", "out of memory"));
		return;
	}
	*a = (struct asked){ .reply = reply, .ctx = ctx };
	if (plane_query(r->plane, stacks, stacks ? LIVE_STACKS_DEADLINE + 4 : LIVE_QUERY_DEADLINE, on_job_doc, a) < 0) {
		free(a);
		on_local(r, stacks, reply, ctx); /* no chief to ask now: what this node knows */
	}
}

/* ---- Other nodes (the job plane's hooks) ---- */

static void to_plane(void *arg, json_t *doc)
{
	struct part_req *q = arg;
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	if (q->r->plane)
		plane_answer(q->r->plane, q->id, text, text ? strlen(text) : 0);
	free(text);
	json_decref(doc);
	free(q);
}

void live_ask(struct runner *r, uint32_t id, bool stacks)
{
	struct part_req *q;

	if (!r->live || !(q = malloc(sizeof(*q)))) {
		plane_answer(r->plane, id, NULL, 0);
		return;
	}
	*q = (struct part_req){ .r = r, .id = id };
	on_local(r, stacks, to_plane, q);
}

/* The stacks of one node's part, appended to all. */
static void add_stacks(json_t *all, json_t *part)
{
	size_t k;
	json_t *v;

	json_array_foreach(json_object_get(part, "stacks"), k, v)
		json_array_append(all, v);
}

char *live_merge(struct runner *r, char *const *docs, const size_t *lens, int n, const char *missing, size_t *len)
{
	struct status_row *rows = NULL, *more;
	struct status_job j;
	json_t *stacks = json_array(), *out;
	char *text = NULL;
	int nrows = 0, m;
	bool any_stacks = false;

	for (int k = 0; k < n; k++) {
		json_t *part = docs[k] ? json_loadb(docs[k], lens[k], 0, NULL) : NULL;

		if (part && status_rows_from_json(json_object_get(part, "rows"), &more, &m) == 0) {
			(void)status_rows_merge(&rows, &nrows, more, m);
			free(more);
		}
		if (part && json_object_get(part, "stacks")) {
			any_stacks = true;
			add_stacks(stacks, part);
		}
		json_decref(part);
	}
	lag_mark(rows, nrows, job_runs(r));
	live_job(r, &j);
	out = json_pack("{s:o, s:o}", "job", status_job_json(&j), "rows", status_rows_json(rows, nrows));
	if (out && any_stacks)
		json_object_set(out, "stacks", stacks);
	if (out && missing[0])
		json_object_set_new(out, "missing", json_string(missing));
	if (out)
		text = json_dumps(out, JSON_COMPACT);
	*len = text ? strlen(text) : 0;
	json_decref(out);
	json_decref(stacks);
	free(rows);
	return text;
}

void live_event(struct runner *r, const char *json, size_t len, const char *host)
{
	json_t *o = json_loadb(json, len, 0, NULL);
	struct tl_event e;

	(void)r;
	if (o && tl_event_from_json(o, &e) == 0) {
		timeline_host(e.node, host);
		timeline_add(&e);
	}
	json_decref(o);
}

/* A node that is not the chief ships its timeline events to the chief. */
static void forward_event(void *arg, const struct tl_event *e)
{
	struct runner *r = arg;
	json_t *o;
	char *text;

	if (!r->plane || plane_is_chief(r->plane) || !(o = tl_event_json(e)))
		return;
	if ((text = json_dumps(o, JSON_COMPACT))) {
		plane_event(r->plane, text, strlen(text));
		free(text);
	}
	json_decref(o);
}

static void on_settle(evutil_socket_t fd, short what, void *arg)
{
	struct runner *r = arg;
	struct live *l = r->live;
	int n = l->nwaiters;

	sampler_take(&l->sampler);
	l->nwaiters = 0;
	for (int k = 0; k < n; k++)
		local(r, l->waiters[k].stacks, l->waiters[k].reply, l->waiters[k].ctx);
}

/* A request for this node's rows: at once when a sample is fresh, else
 * after a second one. */
static void on_local(void *arg, bool stacks, status_reply_fn reply, void *ctx)
{
	struct runner *r = arg;
	struct live *l = r->live;
	struct timeval tv = clock_tv(LIVE_SETTLE);

	sampler_want(&l->sampler, LIVE_KEEP);
	if (sampler_fresh(&l->sampler, LIVE_INTERVAL * 1.5)) {
		local(r, stacks, reply, ctx);
		return;
	}
	if (l->nwaiters == l->capwaiters) {
		int cap = l->capwaiters ? l->capwaiters * 2 : 4;
		struct waiter *m = realloc(l->waiters, (size_t)cap * sizeof(*m));

		if (!m) {
			reply(ctx, json_pack("{s:s}", "error", "out of memory"));
			return;
		}
		l->waiters = m;
		l->capwaiters = cap;
	}
	l->waiters[l->nwaiters++] = (struct waiter){ .reply = reply, .ctx = ctx, .stacks = stacks };
	if (!evtimer_pending(l->settle, NULL)) {
		sampler_take(&l->sampler); /* the interval's start */
		evtimer_add(l->settle, &tv);
	}
}

/* `slotrun status` on this node: the whole job's. */
static void on_status(void *arg, bool stacks, status_reply_fn reply, void *ctx)
{
	gather(arg, stacks, reply, ctx);
}

static const struct status_server_hooks server_hooks = { .hello = hello, .status = on_status };

/* ---- Sampling ---- */

static void root(void *arg, int i, struct sampler_root *out)
{
	struct runner *r = arg;
	struct worker *w = &r->w[i];

	if (!r->started || r->fate[i] != SUP_W_RUNNING || w->pid <= 0)
		return;
	out->worker = w->pid;
	out->cmd = workers_cmd_pid(r, i);
	out->wrapped = r->cfg->wrapped || r->cfg->guarded;
}

static int render(void *arg, enum metrics_format fmt, char **text, size_t *len)
{
	struct runner *r = arg;
	struct status_row *rows;
	struct status_job j;
	int n, e;

	if ((e = live_rows(r, &rows, &n)) < 0)
		return e;
	lag_mark(rows, n, job_runs(r));
	live_job(r, &j);
	e = metrics_render(&j, rows, n, fmt, text, len);
	free(rows);
	return e;
}

static void write_metrics_file(struct runner *r)
{
	const char *path = r->cfg->metrics_file;
	struct live *l = r->live;
	char *text = NULL;
	size_t len;
	int e;

	if (!path)
		return;
	if ((e = render(r, METRICS_TEXT, &text, &len)) == 0)
		e = io_replace_file(path, text, len, 0644);
	free(text);
	if (e < 0 && !l->file_said)
		note(r, "slotrun: --metrics-file %s: cannot write it: %s (tried again every %g s)", path, strerror(-e),
		     LIVE_INTERVAL);
	l->file_said = e < 0;
}

/* A rank that begins or ends to lag in this node's rows (lags marked) is
 * a stall on the timeline. */
static void note_stalls(struct runner *r, const struct status_row *rows, int n)
{
	struct live *l = r->live;

	if (!timeline_on())
		return;
	for (int i = 0; i < n; i++) {
		struct tl_args a = { .attempt = r->attempt, .code = -1 };

		if (rows[i].lag == l->ranks[i].lagging)
			continue;
		l->ranks[i].lagging = rows[i].lag;
		snprintf(a.text, sizeof(a.text), "%s", rows[i].why);
		timeline_event(rows[i].lag ? TL_STALL : TL_STALL_END, rows[i].node, rows[i].rank, timeline_now_us(),
			       &a);
	}
}

/* After each sample.  The lag rule counts the time since a rank's last
 * line up to now, so a status request between two samples may be the
 * first to see a stall: it notes it too (local), lest the timeline miss
 * a stall the user was shown. */
static void record_stalls(struct runner *r)
{
	struct status_row *rows;
	int n;

	if (!timeline_on() || live_rows(r, &rows, &n) < 0)
		return;
	lag_mark(rows, n, job_runs(r));
	note_stalls(r, rows, n);
	free(rows);
}

static void sampled(void *arg)
{
	write_metrics_file(arg);
	record_stalls(arg);
}

static const struct sampler_hooks sampler_hooks = { .root = root, .sampled = sampled };

/* ---- Opening and closing ---- */

static void job_id(struct live *l, pid_t self)
{
	static const char *const vars[] = { "SLURM_JOB_ID", "DET_ALLOCATION_ID", "DET_TRIAL_ID", "TORCHELASTIC_RUN_ID" };
	const char *v;

	for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++)
		if ((v = getenv(vars[k])) && *v) {
			snprintf(l->id, sizeof(l->id), "%s", v);
			return;
		}
	snprintf(l->id, sizeof(l->id), "%d", (int)self);
}

/* The user's command as one line (a guard's wrap_rank and its options
 * left out). */
static void command_text(struct live *l, const struct runner_cfg *c)
{
	char *const *a = c->cmd;
	size_t len = 0;

	if (c->guarded)
		for (char *const *k = a; *k; k++)
			if (strcmp(*k, "--") == 0) {
				a = k + 1;
				break;
			}
	for (; *a && len + 1 < sizeof(l->command); a++)
		len += (size_t)snprintf(l->command + len, sizeof(l->command) - len, "%s%s", len ? " " : "", *a);
}

/* The status socket; without one the job runs all the same. */
static void open_socket(struct runner *r)
{
	struct live *l = r->live;
	char dir[PATH_MAX], path[PATH_MAX], err[PATH_MAX + 128] = "";
	int fd, e;

	if ((e = status_dir_make(dir, sizeof(dir), err, sizeof(err))) < 0) {
		fprintf(stderr, "slotrun: warning: `slotrun status` will not see this job: %s\n",
			err[0] ? err : strerror(-e));
		return;
	}
	(void)status_sock_sweep(dir, r->self, true);
	if ((e = status_sock_path(dir, r->self, path, sizeof(path))) < 0 || (fd = e = status_sock_listen(path)) < 0 ||
	    (e = status_server_open(&l->server, r->base, fd, path, &server_hooks, r)) < 0)
		fprintf(stderr, "slotrun: warning: `slotrun status` will not see this job: %s/%d.sock: %s\n", dir,
			(int)r->self, strerror(-e));
}

int live_open(struct runner *r)
{
	const struct runner_cfg *c = r->cfg;
	struct live *l = calloc(1, sizeof(*l));
	char err[512];

	if (!l || !(l->ranks = calloc((size_t)r->n, sizeof(*l->ranks))) ||
	    sampler_open(&l->sampler, r->base, r->n, LIVE_INTERVAL, &sampler_hooks, r) < 0 ||
	    !(l->settle = evtimer_new(r->base, on_settle, r))) {
		if (l && l->sampler.tick)
			sampler_close(&l->sampler);
		if (l)
			free(l->ranks);
		free(l);
		fprintf(stderr, "slotrun: warning: `slotrun status` will not see this job: out of memory\n");
		return c->metrics_port || c->metrics_file || c->timeline ? 2 : 0;
	}
	r->live = l;
	l->sampler_open = true;
	l->started = clock_mono();
	l->started_us = timeline_now_us();
	l->nodes_joined = 1;
	for (int i = 0; i < r->n; i++)
		l->ranks[i].exit_code = -1;
	job_id(l, r->self);
	command_text(l, c);
	if (c->metrics_port &&
	    metrics_http_open(&l->http, r->base, c->metrics_addr, c->metrics_port, render, r, err, sizeof(err)) < 0) {
		fprintf(stderr, "slotrun: %s\n", err);
		return 2;
	}
	if (c->timeline && timeline_open(c->timeline) == 0) {
		timeline_forward(forward_event, r);
		timeline_host(c->plan->node_rank, c->host);
		timeline_event(TL_NODE_JOIN, c->plan->node_rank, -1, l->started_us,
			       &(struct tl_args){ .code = -1, .text = "this node" });
	}
	open_socket(r);
	if (c->metrics_port || c->metrics_file || c->timeline)
		sampler_hold(&l->sampler);
	return 0;
}

void live_end(struct runner *r, int code)
{
	const char *path = r->cfg->timeline;
	int e;

	if (!r->live)
		return;
	timeline_event(TL_JOB_END, r->cfg->plan->node_rank, -1, timeline_now_us(),
		       &(struct tl_args){ .attempt = r->attempt, .code = code });
	if (r->live->sampler_open && (r->cfg->metrics_file || path))
		sampler_take(&r->live->sampler); /* the ranks as they ended */
	/* on several nodes the chief writes the job's (the others shipped
	 * theirs to it, plane_event) */
	if (path && (!r->cfg->plane || r->chief) && (e = timeline_write()) < 0)
		note(r, "slotrun: --timeline %s: cannot write it: %s", path, strerror(-e));
}

void live_close(struct runner *r)
{
	struct live *l = r->live;

	if (!l)
		return;
	/* nothing owed to a client survives its connection */
	while (l->stacks) {
		struct stacks_req *q = l->stacks;

		l->stacks = q->next;
		status_stacks_cancel(q->h);
		json_decref(q->doc);
		free(q);
	}
	l->nwaiters = 0;
	status_server_close(l->server);
	metrics_http_close(l->http);
	if (l->settle)
		event_free(l->settle);
	sampler_close(&l->sampler);
	timeline_close();
	free(l->waiters);
	free(l->ranks);
	free(l);
	r->live = NULL;
}

/* ---- The runner's moments ---- */

struct out_count *live_count(struct runner *r, int i)
{
	return r->live ? &r->live->ranks[i].count : NULL;
}

void live_attempt_start(struct runner *r)
{
	int node = r->cfg->plan->node_rank;
	int64_t now = timeline_now_us();
	struct tl_args a = { .attempt = r->attempt, .code = -1 };

	if (!r->live)
		return;
	if (r->attempt)
		sampler_next_attempt(&r->live->sampler);
	for (int i = 0; i < r->n; i++)
		r->live->ranks[i].lagging = false;
	timeline_event(TL_JOB_START, node, -1, now, &a);
	for (int i = 0; i < r->n; i++)
		if (r->w[i].pid > 0)
			timeline_event(TL_RANK_START, node, r->cfg->plan->slots[i].rank, now, &a);
}

void live_rank_exit(struct runner *r, int i, int status)
{
	struct worker *w = &r->w[i];
	struct tl_args a = { .attempt = r->attempt, .code = status_exit_code(status) };
	struct live_rank *lr;

	if (!r->live)
		return;
	lr = &r->live->ranks[i];
	/* wrap_rank exits 128+N for its command's death by signal N */
	a.sig = WIFSIGNALED(status) ? WTERMSIG(status) : a.code > 128 && a.code <= 128 + SUP_SIG_MAX ? a.code - 128 : 0;
	if (lr->lagging) { /* a stall ends with its rank */
		lr->lagging = false;
		timeline_event(TL_STALL_END, r->cfg->plan->node_rank, r->cfg->plan->slots[i].rank,
			       (int64_t)w->when.tv_sec * 1000000 + w->when.tv_nsec / 1000, &(struct tl_args){ .code = -1 });
	}
	r->live->ranks[i].exit_code = a.code;
	r->live->ranks[i].exit_sig = a.sig;
	snprintf(a.text, sizeof(a.text), "%s", w->note);
	timeline_event(TL_RANK_EXIT, r->cfg->plan->node_rank, r->cfg->plan->slots[i].rank,
		       (int64_t)w->when.tv_sec * 1000000 + w->when.tv_nsec / 1000, &a);
}

void live_attempt_done(struct runner *r)
{
	int i = r->sup.root_cause;
	struct worker *w;
	struct tl_args a = { .attempt = r->attempt, .root_cause = true };

	if (!r->live || i < 0)
		return;
	w = &r->w[i];
	a.code = r->code[i];
	a.sig = r->live->ranks[i].exit_sig;
	snprintf(a.text, sizeof(a.text), "%s", w->note);
	timeline_event(TL_FAILURE, r->cfg->plan->node_rank, r->cfg->plan->slots[i].rank,
		       (int64_t)w->when.tv_sec * 1000000 + w->when.tv_nsec / 1000, &a);
}

void live_stopping(struct runner *r, const struct sup_event *ev)
{
	struct tl_args a = { .attempt = r->attempt, .code = -1 };
	int i = r->sup.root_cause;

	if (!r->live)
		return;
	if (ev->type == SUP_EV_SIGNAL || ev->type == SUP_EV_STOP_SIGNAL) {
		a.sig = ev->sig;
		snprintf(a.text, sizeof(a.text), "slotrun got SIG%s", sigabbrev_np(ev->sig) ? sigabbrev_np(ev->sig) : "?");
	} else if (ev->type == SUP_EV_STOP) {
		snprintf(a.text, sizeof(a.text), "the job failed on another node");
	} else if (i >= 0) {
		snprintf(a.text, sizeof(a.text), "rank %d failed", r->cfg->plan->slots[i].rank);
	} else {
		return; /* the workers ended on their own */
	}
	timeline_event(TL_STOP, r->cfg->plan->node_rank, -1, timeline_now_us(), &a);
}

void live_restart(struct runner *r, int attempt, const char *why)
{
	struct tl_args a = { .attempt = attempt, .code = -1 };
	int e;

	if (!r->live)
		return;
	snprintf(a.text, sizeof(a.text), "%s", why);
	timeline_event(TL_RESTART, r->cfg->plan->node_rank, -1, timeline_now_us(), &a);
	if (timeline_on() && (!r->cfg->plane || r->chief) && (e = timeline_write()) < 0)
		note(r, "slotrun: --timeline %s: cannot write it: %s", r->cfg->timeline, strerror(-e));
}

void live_nodes_joined(struct runner *r, int n)
{
	if (r->live)
		r->live->nodes_joined = n;
}
