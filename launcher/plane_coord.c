// SPDX-License-Identifier: MIT
/* The chief's decisions (plane_proto.h): who joined, when the job starts,
 * fails, pauses or ends, and what each node is told.  Pure: no sockets, no
 * clock of its own; plane_chief.c carries the actions out. */
#include "plane_proto.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "restart.h"
#include "status.h"

/* Every change of a node's state goes through here, so that the counts
 * stay true. */
static void set_st(struct plane_coord *c, int k, enum plane_node_state s)
{
	c->nst[c->st[k]]--;
	c->nst[s]++;
	c->st[k] = s;
}

int plane_coord_init(struct plane_coord *c, const struct plane_coord_cfg *cfg)
{
	*c = (struct plane_coord){ .cfg = cfg, .phase = PLANE_JOINING, .joined = 1 };
	c->st = calloc((size_t)cfg->nnodes, sizeof(*c->st));
	c->done_code = calloc((size_t)cfg->nnodes, sizeof(*c->done_code));
	c->paused = calloc((size_t)cfg->nnodes, sizeof(*c->paused));
	c->other_secret = calloc((size_t)cfg->nnodes, sizeof(*c->other_secret));
	c->ids = calloc((size_t)cfg->nnodes, sizeof(*c->ids));
	if (!c->st || !c->done_code || !c->paused || !c->other_secret || !c->ids) {
		plane_coord_free(c);
		return -ENOMEM;
	}
	c->nst[PLANE_N_ABSENT] = cfg->nnodes;
	set_st(c, 0, PLANE_N_JOINED);
	if (cfg->nnodes == 1)
		c->phase = PLANE_RUNNING;
	return 0;
}

int plane_coord_init_round(struct plane_coord *c, const struct plane_coord_cfg *cfg)
{
	int r = plane_coord_init(c, cfg);

	if (r < 0)
		return r;
	for (int k = 0; k < cfg->nnodes; k++)
		set_st(c, k, PLANE_N_JOINED);
	c->joined = cfg->nnodes;
	c->phase = PLANE_RUNNING;
	return 0;
}

void plane_coord_free(struct plane_coord *c)
{
	free(c->st);
	free(c->done_code);
	free(c->paused);
	free(c->other_secret);
	free(c->ids);
	c->st = NULL;
	c->done_code = NULL;
	c->paused = NULL;
	c->other_secret = NULL;
	c->ids = NULL;
}

static bool everyone_told(const struct plane_coord *c)
{
	return c->nst[PLANE_N_ABSENT] == 0;
}

/* The job will not start: tell every node that joined; the chief stays
 * for those still to come. */
static struct plane_acts abort_with(struct plane_coord *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static struct plane_acts abort_with(struct plane_coord *c, int code, const char *fmt, ...)
{
	struct plane_acts a = { .abort = true, .first = true, .code = code, .origin = -1 };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a.text, sizeof(a.text), fmt, ap);
	va_end(ap);
	snprintf(c->why, sizeof(c->why), "%s", a.text);
	c->phase = PLANE_ABORTING;
	c->code = code;
	for (int k = 1; k < c->cfg->nnodes; k++)
		if (c->st[k] == PLANE_N_JOINED)
			set_st(c, k, PLANE_N_TOLD);
	a.exit = everyone_told(c);
	return a;
}

/* A node that joins an aborted job hears why, and counts as told. */
static struct plane_acts tell_late(struct plane_coord *c, int node)
{
	struct plane_acts a = { .abort = true, .code = c->code, .origin = -1 };

	snprintf(a.text, sizeof(a.text), "%s", c->why);
	if (node >= 1 && node < c->cfg->nnodes && c->st[node] == PLANE_N_ABSENT)
		set_st(c, node, PLANE_N_TOLD);
	a.exit = everyone_told(c);
	return a;
}

#define SECRET_FIX "give every node the same --secret-file / SLOTRUN_JOB_SECRET"

void plane_secret_line(char *buf, size_t len, int node, const char *host)
{
	if (node == 0)
		snprintf(buf, len, "node 0 (%s), the chief, holds another job secret than the other nodes: "
			 SECRET_FIX, host);
	else
		snprintf(buf, len, "node %d (%s) presented another job secret: " SECRET_FIX, node, host);
}

/* Whether the evidence of the join names whose secret is the odd one; if
 * so, *a aborts the join with the line.  At the join timeout (final) the
 * nodes that presented another secret are odd, whatever came. */
static bool secret_verdict(struct plane_coord *c, bool final, struct plane_acts *a)
{
	const struct plane_coord_cfg *g = c->cfg;
	char names[PLANE_TEXT_MAX / 2] = "", line[PLANE_TEXT_MAX];
	int presented = 0, named = 0;
	bool twins = false;
	size_t len = 0;

	if (!c->presented) /* the usual join: no pass over every node for each JOIN */
		return false;
	for (int k = 1; k < g->nnodes; k++) {
		if (!c->other_secret[k])
			continue;
		presented++;
		for (int i = 1; i < k; i++)
			twins = twins || (c->other_secret[i] && memcmp(c->ids[i], c->ids[k], AUTH_MAC_LEN) == 0);
	}
	if (!presented)
		return false;
	if (c->joined > 1)
		c->chief_odd = false; /* a node proved ours */
	else if (twins)
		c->chief_odd = true;  /* two nodes agree against the chief */
	else if (presented == g->nnodes - 1 || final)
		c->chief_odd = false; /* no one else is left to ask */
	else
		return false;
	for (int k = 1; k < g->nnodes; k++) {
		if (!c->other_secret[k])
			continue;
		if (c->st[k] == PLANE_N_ABSENT)
			set_st(c, k, PLANE_N_TOLD); /* told by MISMATCH, or gone */
		if (len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%snode %d (%s)",
						named++ ? ", " : "", k, g->addrs[k]);
	}
	if (c->chief_odd)
		plane_secret_line(line, sizeof(line), 0, g->addrs[0]);
	else if (named == 1)
		snprintf(line, sizeof(line), "%s presented another job secret: " SECRET_FIX, names);
	else
		snprintf(line, sizeof(line), "%s presented other job secrets than node 0's: " SECRET_FIX, names);
	*a = abort_with(c, 2, "%s", line);
	return true;
}

struct plane_acts plane_coord_secret(struct plane_coord *c, int node, const unsigned char id[AUTH_MAC_LEN])
{
	struct plane_acts a = { .origin = -1 };

	if (node < 1 || node >= c->cfg->nnodes)
		return a;
	if (c->phase == PLANE_ABORTING && c->st[node] == PLANE_N_ABSENT) {
		/* refused alone, and that tells it the join is over */
		set_st(c, node, PLANE_N_TOLD);
		a.code = c->code;
		a.exit = everyone_told(c);
		return a;
	}
	if (c->phase != PLANE_JOINING || c->st[node] != PLANE_N_ABSENT || c->other_secret[node])
		return a;
	c->other_secret[node] = true;
	c->presented++;
	memcpy(c->ids[node], id, AUTH_MAC_LEN);
	secret_verdict(c, false, &a);
	a.held = true;
	return a;
}

int plane_coord_odd(const struct plane_coord *c, int node)
{
	return c->chief_odd ? 0 : node;
}

struct plane_acts plane_coord_misplaced(struct plane_coord *c, int node, int other, const char *from)
{
	const struct plane_coord_cfg *g = c->cfg;

	if (node < 1 || node >= g->nnodes || other < 0 || other >= g->nnodes || other == node)
		return (struct plane_acts){ .origin = -1 };
	if (c->phase == PLANE_ABORTING)
		return tell_late(c, node);
	if (c->phase != PLANE_JOINING)
		return (struct plane_acts){ .origin = -1 };
	if (c->st[node] == PLANE_N_ABSENT)
		set_st(c, node, PLANE_N_TOLD);
	return abort_with(c, 2, "node %d joined from %s, which the node list gives node %d (%s), not node %d "
			  "(%s): check the node rank given to the slotrun on %s (--node-rank)", node, from, other,
			  g->addrs[other], node, g->addrs[node], from);
}

struct plane_acts plane_coord_join(struct plane_coord *c, const struct plane_join *j)
{
	const struct plane_coord_cfg *g = c->cfg;
	struct plane_acts none = { .origin = -1 };
	int k = j->node_rank;

	if (c->phase == PLANE_ABORTING)
		return tell_late(c, k);
	if (c->phase != PLANE_JOINING) {
		struct plane_acts a = { .refuse = true, .code = 2, .origin = -1 };

		snprintf(a.text, sizeof(a.text), "node %d (%s) joined after the job had started: not joined, "
			 "the job runs on without it (was the same node started twice?)", k, j->host);
		return a;
	}
	if (strcmp(j->version, g->version) != 0)
		return abort_with(c, 2, "node %d (%s) runs slotrun %s, node 0 runs %s", k, j->host,
				  j->version, g->version);
	if (j->nnodes != g->nnodes)
		return abort_with(c, 2, "node %d (%s) says %d nodes, node 0 was told %d", k, j->host,
				  j->nnodes, g->nnodes);
	if (k < 1 || k >= g->nnodes)
		return abort_with(c, 2, "a node at %s says it is node %d, but the job's other nodes are 1..%d",
				  j->host, k, g->nnodes - 1);
	if (c->st[k] != PLANE_N_ABSENT)
		return abort_with(c, 2, "node %d joined twice (the second from %s): two slotruns were given "
				  "the same node rank", k, j->host);
	if (j->slots != g->slot_counts[k]) {
		set_st(c, k, PLANE_N_TOLD);
		return abort_with(c, 2, "node %d (%s) says %d slots, node 0 was told %d", k, j->host,
				  j->slots, g->slot_counts[k]);
	}
	if (j->world_size != g->world_size) {
		set_st(c, k, PLANE_N_TOLD);
		return abort_with(c, 2, "node %d (%s) says world size %d, node 0 was told %d", k, j->host,
				  j->world_size, g->world_size);
	}
	if (j->max_restarts != g->max_restarts) {
		set_st(c, k, PLANE_N_TOLD);
		return abort_with(c, 2, "node %d (%s) says --max-restarts %d, node 0 was told %d", k, j->host,
				  j->max_restarts, g->max_restarts);
	}
	if (j->hb_timeout_ms != g->hb_timeout_ms) {
		set_st(c, k, PLANE_N_TOLD);
		return abort_with(c, 2, "node %d (%s) says --heartbeat-timeout %g, node 0 was told %g", k,
				  j->host, j->hb_timeout_ms / 1000.0, g->hb_timeout_ms / 1000.0);
	}
	if (j->fanout != g->fanout) {
		set_st(c, k, PLANE_N_TOLD);
		return abort_with(c, 2, "node %d (%s) joins a relay tree of fan-out %d, node 0 one of %d (0: a "
				  "star): give every node the same --fanout and the same node addresses", k,
				  j->host, j->fanout, g->fanout);
	}
	set_st(c, k, PLANE_N_JOINED);
	++c->joined;
	if (secret_verdict(c, false, &none))
		return none; /* it proved ours: those that presented another are odd */
	if (c->joined == g->nnodes) {
		c->phase = PLANE_RUNNING;
		none.start = true;
	}
	return none;
}

struct plane_acts plane_coord_join_timeout(struct plane_coord *c)
{
	const struct plane_coord_cfg *g = c->cfg;
	char list[PLANE_TEXT_MAX / 2] = "";
	struct plane_acts a;
	size_t len = 0;
	int named = 0, missing = 0;

	if (c->phase == PLANE_ABORTING) { /* those still missing will not hear why */
		c->phase = PLANE_ENDED;
		return (struct plane_acts){ .exit = true, .code = c->code, .origin = -1 };
	}
	if (c->phase != PLANE_JOINING)
		return (struct plane_acts){ .origin = -1 };
	if (secret_verdict(c, true, &a)) {
		a.exit = true;
		c->phase = PLANE_ENDED;
		return a;
	}
	for (int k = 1; k < g->nnodes; k++) {
		if (c->st[k] != PLANE_N_ABSENT)
			continue;
		missing++;
		if (named < 4 && len < sizeof(list)) {
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%snode %d (%s)",
						named ? ", " : "", k, g->addrs[k]);
			named++;
		}
	}
	if (missing > named)
		a = abort_with(c, 2, "%s and %d more nodes did not join within %g s", list, missing - named,
			       g->join_timeout);
	else
		a = abort_with(c, 2, "%s did not join within %g s", list, g->join_timeout);
	a.exit = true; /* those missing are not waited for past the timeout */
	c->phase = PLANE_ENDED;
	return a;
}

static bool all_done(const struct plane_coord *c)
{
	return c->nst[PLANE_N_DONE] + c->nst[PLANE_N_LOST] == c->cfg->nnodes;
}

int plane_cause_code(const struct plane_cause *cause)
{
	switch (cause->kind) {
	case PLANE_CAUSE_RANK:
		return cause->code;
	case PLANE_CAUSE_SIGNAL:
		return 128 + cause->code;
	case PLANE_CAUSE_LOST:
		return 1;
	default:
		return 0;
	}
}

void plane_cause_line(const struct plane_cause *cause, char *buf, size_t len)
{
	char status[48], where[16];
	const char *abbrev;
	int sig;

	switch (cause->kind) {
	case PLANE_CAUSE_RANK:
		sig = status_code_signal(cause->code);
		abbrev = sig ? sigabbrev_np(sig) : NULL;
		if (sig)
			snprintf(status, sizeof(status), "exit %d (SIG%s)", cause->code, abbrev ? abbrev : "?");
		else
			snprintf(status, sizeof(status), "exit %d", cause->code);
		if (!cause->blamed) {
			snprintf(buf, len, "rank %d on node %d (%s) %s", cause->rank, cause->node, cause->host,
				 status);
			return;
		}
		snprintf(where, sizeof(where), "%d", cause->culprit_node);
		snprintf(buf, len, "rank %d on node %s (%s), named by rank %d on node %d (%s) (%s)",
			 cause->culprit, cause->culprit_node >= 0 ? where : "?",
			 cause->culprit_node >= 0 ? cause->culprit_host : "?", cause->rank, cause->node,
			 cause->host, status);
		return;
	case PLANE_CAUSE_SIGNAL:
		abbrev = sigabbrev_np(cause->code);
		if (cause->text[0])
			snprintf(buf, len, "node %d (%s): %s (SIG%s)", cause->node, cause->host,
				 cause->text, abbrev ? abbrev : "?");
		else
			snprintf(buf, len, "SIG%s to node %d (%s)", abbrev ? abbrev : "?", cause->node,
				 cause->host);
		return;
	case PLANE_CAUSE_LOST:
		snprintf(buf, len, "node %d (%s) lost: %s", cause->node, cause->host, cause->text);
		return;
	case PLANE_CAUSE_GROW:
		snprintf(buf, len, "a new node (%s) joined", cause->host);
		return;
	default:
		snprintf(buf, len, "%s", "");
	}
}

static bool any_lost(const struct plane_coord *c)
{
	return c->nst[PLANE_N_LOST] > 0;
}

static struct plane_acts end_now(struct plane_coord *c, struct plane_acts a)
{
	c->phase = PLANE_ENDED;
	a.end = true;
	return a;
}

static struct plane_acts maybe_end(struct plane_coord *c, struct plane_acts a)
{
	if (c->phase != PLANE_RUNNING || !all_done(c))
		return a;
	if (c->cfg->restart && !any_lost(c) && !c->told_stop &&
	    restart_allowed(c->cfg->restart, &c->cause, c->restarts)) {
		c->delay = restart_delay(c->cfg->restart, c->restarts);
		c->restarts++;
		c->ended = c->cause;
		c->cause = (struct plane_cause){ .kind = PLANE_CAUSE_NONE };
		for (int k = 0; k < c->cfg->nnodes; k++)
			set_st(c, k, PLANE_N_JOINED);
		c->phase = PLANE_RESTARTING;
		a.restart = true;
		return a;
	}
	c->code = plane_cause_code(&c->cause);
	/* no root cause, yet a node did not finish cleanly: its own status */
	for (int k = 0; c->cause.kind == PLANE_CAUSE_NONE && k < c->cfg->nnodes; k++)
		if (c->st[k] == PLANE_N_DONE && c->done_code[k] != 0) {
			c->code = c->done_code[k];
			break;
		}
	return end_now(c, a);
}

struct plane_acts plane_coord_restart_now(struct plane_coord *c)
{
	struct plane_acts a = { .origin = -1 };

	if (c->phase != PLANE_RESTARTING)
		return a;
	c->phase = PLANE_RUNNING;
	a.start = true;
	return a;
}

/* The node of the rank a failing rank named at fault (plane_cause.h), from
 * every node's slot count: a rank outside the job is no culprit. */
static void place_culprit(const struct plane_coord_cfg *g, struct plane_cause *f)
{
	int base = 0;

	f->culprit_node = -1;
	f->culprit_host[0] = '\0';
	for (int k = 0; f->blamed && k < g->nnodes; base += g->slot_counts[k++])
		if (f->culprit >= base && f->culprit < base + g->slot_counts[k]) {
			f->culprit_node = k;
			snprintf(f->culprit_host, sizeof(f->culprit_host), "%s", g->addrs[k]);
			return;
		}
	f->blamed = false;
}

static bool crash_replaces(const struct plane_coord *c, const struct plane_cause *f, double now)
{
	return c->cause.kind == PLANE_CAUSE_RANK && !status_code_signal(c->cause.code) &&
	       status_code_signal(f->code) && now - c->cause_t <= PLANE_ROOT_WINDOW;
}

struct plane_acts plane_coord_fail(struct plane_coord *c, int node, const struct plane_cause *f,
				   double now)
{
	struct plane_acts a = { .origin = node };

	if (c->phase != PLANE_RUNNING || node < 0 || node >= c->cfg->nnodes || f->kind != PLANE_CAUSE_RANK)
		return a;
	if (c->cause.kind == PLANE_CAUSE_NONE) {
		a.stop = true;
		c->cause_t = now;
	} else if (!crash_replaces(c, f, now) && !(c->cause.kind == PLANE_CAUSE_RANK && c->cause.node == node)) {
		return a;
	}
	/* the first failure; or a crash that beat it; or the node refined
	 * its own root cause by the same rule */
	c->cause = *f;
	c->cause.node = node;
	snprintf(c->cause.host, sizeof(c->cause.host), "%s", c->cfg->addrs[node]);
	place_culprit(c->cfg, &c->cause);
	return a;
}

struct plane_acts plane_coord_signal(struct plane_coord *c, int node, int sig, bool stops)
{
	return plane_coord_signal_why(c, node, sig, stops, NULL);
}

struct plane_acts plane_coord_signal_why(struct plane_coord *c, int node, int sig, bool stops,
					 const char *why)
{
	struct plane_acts a = { .origin = node };
	const char *host;

	if (node < 0 || node >= c->cfg->nnodes || c->phase == PLANE_ENDED || c->phase == PLANE_ABORTING)
		return a;
	host = c->cfg->addrs[node];
	if (c->phase == PLANE_RESTARTING) {
		if (!stops)
			return a; /* no worker to tell */
		c->cause = (struct plane_cause){ .kind = PLANE_CAUSE_SIGNAL, .node = node, .code = sig };
		snprintf(c->cause.host, sizeof(c->cause.host), "%s", host);
		snprintf(c->cause.text, sizeof(c->cause.text), "%s", why ? why : "");
		c->code = 128 + sig;
		return end_now(c, a);
	}
	if (c->phase == PLANE_JOINING) {
		if (!stops)
			return a; /* no worker to tell yet */
		/* told to stop: no waiting for nodes still to come */
		a = abort_with(c, 128 + sig, "job stopped before it started: SIG%s to node %d (%s)%s%s",
			       sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", node, host,
			       why && why[0] ? ": " : "", why ? why : "");
		a.exit = true;
		c->phase = PLANE_ENDED;
		return a;
	}
	if (!stops) {
		a.signal = sig;
		return a;
	}
	if (c->cause.kind == PLANE_CAUSE_NONE) {
		c->cause = (struct plane_cause){ .kind = PLANE_CAUSE_SIGNAL, .node = node, .code = sig };
		snprintf(c->cause.host, sizeof(c->cause.host), "%s", host);
		snprintf(c->cause.text, sizeof(c->cause.text), "%s", why ? why : "");
	}
	c->told_stop = true; /* after a failure too: whatever failed, no restart */
	a.stop = true;
	a.stop_sig = sig;
	return a;
}

struct plane_acts plane_coord_done(struct plane_coord *c, int node, int code)
{
	struct plane_acts a = { .origin = node };

	if (node < 0 || node >= c->cfg->nnodes || c->st[node] != PLANE_N_JOINED || c->phase != PLANE_RUNNING)
		return a;
	set_st(c, node, PLANE_N_DONE);
	c->done_code[node] = code;
	return maybe_end(c, a);
}

struct plane_acts plane_coord_lost(struct plane_coord *c, int node, const char *why)
{
	struct plane_acts a = { .origin = node };
	const char *host;

	if (node < 1 || node >= c->cfg->nnodes || c->phase == PLANE_ENDED || c->phase == PLANE_ABORTING ||
	    c->st[node] == PLANE_N_LOST || c->st[node] == PLANE_N_ABSENT)
		return a;
	host = c->cfg->addrs[node];
	if (c->phase == PLANE_JOINING)
		return abort_with(c, 2, "node %d (%s) left before the job started: %s", node, host, why);
	/* gone after it finished: its workers are reaped, nothing is lost */
	if (c->st[node] == PLANE_N_DONE)
		return a;
	set_st(c, node, PLANE_N_LOST);
	c->paused[node] = 0; /* it will not be continued */
	if (c->cause.kind == PLANE_CAUSE_NONE) {
		c->cause = (struct plane_cause){ .kind = PLANE_CAUSE_LOST, .node = node };
		snprintf(c->cause.host, sizeof(c->cause.host), "%s", host);
		snprintf(c->cause.text, sizeof(c->cause.text), "%s", why);
		a.stop = c->phase == PLANE_RUNNING;
	}
	if (c->phase == PLANE_RESTARTING) { /* it will not come back: no next attempt */
		c->code = plane_cause_code(&c->cause);
		return end_now(c, a);
	}
	return maybe_end(c, a);
}

struct plane_acts plane_coord_self_lost(struct plane_coord *c, const char *host, const char *why)
{
	struct plane_acts a = { .origin = -1 };
	struct plane_cause self = { .kind = PLANE_CAUSE_LOST, .node = 0 };

	snprintf(self.host, sizeof(self.host), "%s", host);
	snprintf(self.text, sizeof(self.text), "%s", why);
	if (c->phase == PLANE_RESTARTING) { /* nothing runs: the job ends now */
		c->cause = self;
		c->code = plane_cause_code(&self);
		return end_now(c, a);
	}
	if (c->phase != PLANE_RUNNING)
		return a;
	c->told_stop = true;
	if (c->cause.kind != PLANE_CAUSE_LOST) /* a node lost meanwhile was lost of this */
		c->cause = self;
	a.stop = true;
	return a;
}

struct plane_acts plane_coord_grow(struct plane_coord *c, const char *host)
{
	struct plane_acts a = { .origin = -1 };

	if (c->phase != PLANE_RUNNING || c->cause.kind != PLANE_CAUSE_NONE)
		return a; /* the round ends anyway: the node is in the next one */
	c->cause = (struct plane_cause){ .kind = PLANE_CAUSE_GROW, .node = -1 };
	snprintf(c->cause.host, sizeof(c->cause.host), "%s", host);
	a.stop = true;
	return a;
}

struct plane_acts plane_coord_pause(struct plane_coord *c, int node, int sig)
{
	struct plane_acts a = { .origin = node };

	if (node < 0 || node >= c->cfg->nnodes || sig <= 0 || c->phase == PLANE_ENDED ||
	    c->phase == PLANE_ABORTING)
		return a;
	c->paused[node] = sig;
	if (c->phase == PLANE_RUNNING) {
		a.pause = sig;
		a.pause_node = node;
	}
	return a;
}

struct plane_acts plane_coord_resume(struct plane_coord *c, int node)
{
	struct plane_acts a = { .origin = node };

	if (node < 0 || node >= c->cfg->nnodes || !c->paused[node])
		return a;
	c->paused[node] = 0;
	if (c->phase != PLANE_RUNNING)
		return a;
	for (int k = 0; k < c->cfg->nnodes; k++)
		if (c->paused[k]) {
			a.pause = c->paused[k];
			a.pause_node = k;
			a.still = true;
			return a;
		}
	a.resume = true;
	return a;
}
