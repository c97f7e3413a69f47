// SPDX-License-Identifier: MIT
/* The chief of an elastic job (plane_elastic.h). */
#include "plane_elastic.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "plane_round.h"

enum el_phase {
	EL_GATHER,   /* before the first round (or, after a failover, the round that follows) */
	EL_ROUND,    /* a round runs: the coordinator has the job */
	EL_BETWEEN,  /* every node of the round is done: the next one forms after the delay */
	EL_OVER,     /* the job ended */
};

struct plane_elastic {
	struct plane_roster ro;
	struct plane_round_policy pol;
	enum el_phase phase;
	int restarts;                /* used so far: TORCHELASTIC_RESTART_COUNT */
	double last_arrival;         /* clock_mono() */
	struct event *ev_settle;     /* the first round's settle time; a failover's wait */
	struct event *ev_next;       /* between rounds: the delay */
	int *slots;                  /* per rank of the round, for the coordinator */
	bool *dead;                  /* per rank: lost because its host closed the connection */
	char (*why_lost)[PLANE_TEXT_MAX / 4];  /* per rank: why it was lost */
	char self_host[PLANE_HOST_MAX];  /* ours, as the other nodes reach us (MASTER_ADDR) */
	char why[PLANE_TEXT_MAX];    /* why the next round forms */
	bool said_min;               /* "MIN nodes are in" was said */
	/* after a failover: the round whose chief was lost */
	bool failover;
	int prev_size;               /* its node count */
	int prev_rank;               /* our rank in it */
	int expect;                  /* its nodes that may come back (not the lost chief, not us) */
	int back, done;              /* ... came back; ... and their workers are reaped */
	bool self_done;              /* our own workers are reaped */
	bool window_over;            /* the wait for them ended */
	bool prev_chief_dead;
	struct plane_cause lost;     /* the lost chief */
};

#define apply plane_chief_apply

static void form(struct plane *p);
static void end_job(struct plane *p, int code, const struct plane_cause *cause, const char *why);

/* ---- Opening and closing ---- */

static void on_settle(evutil_socket_t fd, short what, void *arg);
static void on_next(evutil_socket_t fd, short what, void *arg);

int plane_elastic_open(struct plane *p)
{
	const struct plane_cfg *g = p->cfg;
	struct plane_elastic *el = calloc(1, sizeof(*el));
	struct plane_node self = { .slots = g->slots, .pref = 0, .prev = -1 };

	if (!el)
		return -ENOMEM;
	p->el = el;
	memcpy(self.id, p->id, PLANE_ID_LEN);
	snprintf(self.host, sizeof(self.host), "%s", g->addrs[0]);
	snprintf(el->self_host, sizeof(el->self_host), "%s", g->addrs[0]);
	el->pol = (struct plane_round_policy){ .min = g->nnodes_min, .max_restarts = g->max_restarts,
					       .restart = g->restart };
	el->slots = calloc((size_t)g->nnodes, sizeof(*el->slots));
	el->dead = calloc((size_t)g->nnodes, sizeof(*el->dead));
	el->why_lost = calloc((size_t)g->nnodes, sizeof(*el->why_lost));
	el->ev_settle = evtimer_new(p->base, on_settle, p);
	el->ev_next = evtimer_new(p->base, on_next, p);
	if (!el->slots || !el->dead || !el->why_lost || !el->ev_settle || !el->ev_next ||
	    plane_roster_init(&el->ro, g->nnodes_min, g->nnodes, &self) < 0)
		return -ENOMEM;
	el->last_arrival = clock_mono();
	if (g->nnodes_min <= 1) { /* the chief alone is enough: it waits the settle time */
		struct timeval tv = clock_tv(g->settle);

		evtimer_add(el->ev_settle, &tv);
	}
	return 0;
}

void plane_elastic_close(struct plane *p)
{
	struct plane_elastic *el = p->el;

	if (!el)
		return;
	if (el->ev_settle)
		event_free(el->ev_settle);
	if (el->ev_next)
		event_free(el->ev_next);
	plane_roster_free(&el->ro);
	free(el->slots);
	free(el->dead);
	free(el->why_lost);
	free(el);
	p->el = NULL;
}

bool plane_elastic_idle(const struct plane *p)
{
	return p->el->phase != EL_ROUND;
}

/* ---- Telling nodes ---- */

/* Every node that joined hears m: the round's and those that wait. */
static void tell_all(struct plane *p, const struct plane_msg *m)
{
	for (struct conn *c = p->conns; c; c = c->next)
		if (c->authed && !c->closing && (c->waiting || c->node >= 1))
			plane_conn_send(c, m);
}

/* One node alone is refused and told why (status 2 for it); the job goes
 * on without it. */
static void refuse(struct conn *c, const char *line)
{
	struct plane_msg m = { .type = PLANE_ABORT, .code = 2 };

	snprintf(m.text, sizeof(m.text), "%s", line);
	plane_say(c->p, "%s", line);
	c->waiting = false;
	c->node = -1;
	c->closing = true;
	plane_conn_send(c, &m);
}

/* Before the first round: the job will not start.  Every node that
 * joined (and the one joining now) hears why; all exit with code. */
static void abort_join(struct plane *p, int code, const char *line)
{
	struct plane_msg m = { .type = PLANE_ABORT, .code = code };

	snprintf(m.text, sizeof(m.text), "%s", line);
	plane_say(p, "%s", line);
	for (struct conn *c = p->conns; c; c = c->next)
		if (c->authed && c->waiting) {
			c->closing = true;
			plane_conn_send(c, &m);
		}
	p->el->phase = EL_OVER;
	plane_end_job(p, code, NULL);
}

/* The job ends now: every node hears its status, its root cause and why
 * no round follows (why, or ""). */
static void end_job(struct plane *p, int code, const struct plane_cause *cause, const char *why)
{
	struct plane_msg m = { .type = PLANE_END, .code = code, .cause = *cause };

	snprintf(m.text, sizeof(m.text), "%s", why);
	if (why[0])
		plane_say(p, "the job ends: %s", why);
	tell_all(p, &m);
	p->el->phase = EL_OVER;
	plane_end_job(p, code, cause);
}

/* ---- Joining ---- */

/* What a joining node must agree on with us; "" when it does. */
static void disagreement(const struct plane *p, const struct plane_join *j, const char *host, char *line,
			 size_t len)
{
	const struct plane_cfg *g = p->cfg;

	line[0] = '\0';
	if (strcmp(j->version, SLOTRUN_VERSION) != 0)
		snprintf(line, len, "the node at %s runs slotrun %s, node 0 runs %s", host, j->version,
			 SLOTRUN_VERSION);
	else if (j->nnodes != g->nnodes || j->nnodes_min != g->nnodes_min)
		snprintf(line, len, "the node at %s says --nnodes %d:%d, node 0 was told %d:%d", host,
			 j->nnodes_min, j->nnodes, g->nnodes_min, g->nnodes);
	else if (j->max_restarts != g->max_restarts)
		snprintf(line, len, "the node at %s says --max-restarts %d, node 0 was told %d", host,
			 j->max_restarts, g->max_restarts);
	else if (j->hb_timeout_ms != plane_hb_ms(g->hb_timeout))
		snprintf(line, len, "the node at %s says --heartbeat-timeout %g, node 0 was told %g", host,
			 j->hb_timeout_ms / 1000.0, g->hb_timeout);
	else if (j->settle_ms != plane_hb_ms(g->settle))
		snprintf(line, len, "the node at %s says --settle-time %g, node 0 was told %g", host,
			 j->settle_ms / 1000.0, g->settle);
	else if (j->admit != (int)g->admit)
		snprintf(line, len, "the node at %s says --admit %s, node 0 was told %s", host,
			 j->admit == PLANE_ADMIT_NOW ? "now" : "next-round",
			 g->admit == PLANE_ADMIT_NOW ? "now" : "next-round");
	else if (j->slots < 1)
		snprintf(line, len, "the node at %s says %d slots", host, j->slots);
}

/* Before the first round: it starts when MAX nodes are in, or MIN and no
 * new node for the settle time (the timer is re-armed on each arrival). */
static void maybe_first(struct plane *p)
{
	struct plane_elastic *el = p->el;
	int present = plane_roster_present(&el->ro);
	double since = clock_mono() - el->last_arrival;

	if (plane_roster_first_due(&el->ro, since, p->cfg->settle)) {
		form(p);
		return;
	}
	if (present >= el->ro.min) {
		struct timeval tv = clock_tv(p->cfg->settle - since > 0 ? p->cfg->settle - since : 0);

		if (!el->said_min)
			plane_say(p, "%d of at most %d nodes are in: the first round starts when %d are, or "
				  "when no other node has come for %g s (--settle-time)", present, el->ro.max,
				  el->ro.max, p->cfg->settle);
		el->said_min = true;
		evtimer_add(el->ev_settle, &tv);
	}
}

static void failover_check(struct plane *p);

void plane_elastic_join(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;
	struct plane_elastic *el = p->el;
	const struct plane_join *j = &m->join;
	const char *host = j->host[0] ? j->host : c->peer;
	struct plane_node n = { .slots = j->slots, .pref = j->node_rank, .prev = -1, .tag = c };
	bool back = el->failover && j->round == el->ro.round && j->round > 0;
	char line[PLANE_TEXT_MAX];
	struct plane_acts a;
	int i;

	disagreement(p, j, host, line, sizeof(line));
	if (line[0] && el->phase == EL_GATHER && !el->failover) {
		c->waiting = true; /* told with the rest */
		abort_join(p, 2, line);
		return;
	}
	if (line[0] || el->phase == EL_OVER) {
		refuse(c, line[0] ? line : "the job is over");
		return;
	}
	memcpy(n.id, j->id, PLANE_ID_LEN);
	snprintf(n.host, sizeof(n.host), "%s", host);
	if (back)
		n.prev = j->node_rank;
	i = plane_roster_add(&el->ro, &n);
	if (i == -EEXIST) {
		snprintf(line, sizeof(line), "the node at %s joined again (the same slotrun twice): not joined", host);
		refuse(c, line);
		return;
	}
	if (i == -ENOSPC) {
		snprintf(line, sizeof(line), "a node at %s joined, but the job has its --nnodes maximum of %d "
			 "nodes: not joined", host, el->ro.max);
		refuse(c, line);
		return;
	}
	if (i < 0) {
		refuse(c, "the chief is out of memory");
		return;
	}
	c->waiting = true;
	c->node = -1;
	switch (el->phase) {
	case EL_GATHER:
		el->last_arrival = clock_mono();
		if (el->failover) {
			el->back += back;
			failover_check(p);
		} else {
			maybe_first(p);
		}
		return;
	case EL_ROUND:
		if (p->cfg->admit == PLANE_ADMIT_NEXT_ROUND) {
			plane_say(p, "a new node (%s) joined: it waits for the next round (--admit next-round)", host);
			return;
		}
		plane_say(p, "a new node (%s) joined: the job re-forms to take it in", host);
		a = plane_coord_grow(&p->coord, host);
		apply(p, &a, NULL);
		return;
	default: /* between rounds: it is in the next one */
		return;
	}
}

/* A new node stopped before its first round leaves alone: the job goes on
 * without it. */
static void leaves(struct conn *c, int sig)
{
	struct plane *p = c->p;
	struct plane_msg told = { .type = PLANE_ABORT, .code = 128 + sig };
	const char *abbrev = sigabbrev_np(sig);

	plane_say(p, "the node at %s left before its first round (SIG%s)", c->peer, abbrev ? abbrev : "?");
	snprintf(told.text, sizeof(told.text), "stopped by SIG%s before its first round", abbrev ? abbrev : "?");
	plane_roster_drop(&p->el->ro, plane_roster_find(&p->el->ro, c));
	c->waiting = false;
	c->closing = true;
	plane_conn_send(c, &told);
}

/* A node of the job (between rounds, or back after a failover) was told
 * to stop: the job stops, as for a stop during a round. */
static void stops(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;
	struct plane_cause cause = { .kind = PLANE_CAUSE_SIGNAL, .code = m->sig, .node = c->node >= 0 ? c->node : 0 };

	snprintf(cause.host, sizeof(cause.host), "%s", c->node >= 0 ? plane_host(p, c->node) : c->peer);
	snprintf(cause.text, sizeof(cause.text), "%s", m->text);
	if (p->el->phase != EL_OVER)
		end_job(p, 128 + m->sig, &cause, "");
}

void plane_elastic_frame(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;
	struct plane_elastic *el = p->el;
	int i = plane_roster_find(&el->ro, c);

	switch (m->type) {
	case PLANE_STOP_REQ:
		if (c->waiting && (i < 0 || el->ro.n[i].prev < 0))
			leaves(c, m->sig);
		else
			stops(c, m);
		return;
	case PLANE_DONE: /* after a failover: its workers of the lost round are reaped */
		if (c->waiting && el->failover && el->phase == EL_GATHER) {
			el->done++;
			failover_check(p);
		}
		return;
	case PLANE_PAUSE_REQ:
	case PLANE_RESUME_REQ:
		plane_conn_pause(c, m->type == PLANE_PAUSE_REQ);
		return;
	default: /* no workers to speak of: PING, a signal for workers it has not, a late report */
		return;
	}
}

bool plane_elastic_lost(struct conn *c, const char *why)
{
	struct plane *p = c->p;
	struct plane_elastic *el = p->el;
	int i;

	if (c->node >= 1 && c->node < p->nnodes && el->phase == EL_ROUND) {
		el->dead[c->node] = c->peer_gone;
		snprintf(el->why_lost[c->node], sizeof(el->why_lost[0]), "%s", why);
		return false;
	}
	i = plane_roster_find(&el->ro, c);
	if (i < 0 || el->phase == EL_OVER)
		return true;
	if (c->waiting)
		plane_say(p, "the node at %s left before its first round: %s", el->ro.n[i].host, why);
	else
		plane_say(p, "node %d (%s) lost between rounds: %s", c->node, el->ro.n[i].host, why);
	plane_roster_drop(&el->ro, i);
	if (el->phase == EL_GATHER && el->failover)
		failover_check(p);
	return true;
}

void plane_elastic_dropped(struct conn *c)
{
	struct plane_elastic *el = c->p->el;
	int i = plane_roster_find(&el->ro, c);

	if (i >= 0)
		el->ro.n[i].tag = NULL;
}

/* ---- Rounds ---- */

/* Every node of the new round starts: each hears its rank, the round and
 * why it formed; ours start last. */
static void send_starts(struct plane *p)
{
	struct plane_elastic *el = p->el;
	struct plane_msg m = { .type = PLANE_START };
	char line[PLANE_TEXT_MAX + 64];

	for (int k = 1; k < el->ro.size; k++) {
		struct conn *c = p->by_node[k];

		if (!c)
			continue;
		plane_roster_info(&el->ro, k, el->self_host, &m.round);
		m.round.restarts = el->restarts;
		snprintf(m.round.why, sizeof(m.round.why), "%s", el->why);
		plane_conn_send(c, &m);
	}
	plane_roster_info(&el->ro, 0, el->self_host, &p->round);
	p->round.restarts = el->restarts;
	snprintf(p->round.why, sizeof(p->round.why), "%s", el->why);
	plane_round_line(&p->round, line, sizeof(line));
	plane_say(p, "%s", line);
	el->why[0] = '\0';
	p->h->start(p->arg, &p->round);
}

/* The next round: ranks, addresses, the coordinator, and START. */
static void form(struct plane *p)
{
	struct plane_elastic *el = p->el;
	char **hosts;
	int size;

	evtimer_del(el->ev_settle);
	evtimer_del(el->ev_next);
	size = plane_roster_form(&el->ro);
	hosts = size > 0 ? calloc((size_t)size, sizeof(char *)) : NULL;
	if (!hosts) {
		struct plane_cause none = { 0 };

		end_job(p, 1, &none, "the chief is out of memory");
		free(hosts);
		return;
	}
	for (int k = 0; k < size; k++) {
		struct plane_node *n = &el->ro.n[el->ro.at[k]];
		struct conn *c = n->tag;

		hosts[k] = n->host;
		el->slots[k] = n->slots;
		el->dead[k] = false;
		if (k == 0)
			continue;
		p->by_node[k] = c;
		if (c) {
			c->node = k;
			c->waiting = false;
		}
	}
	for (int k = size; k < p->cfg->nnodes; k++)
		p->by_node[k] = NULL;
	if (plane_set_hosts(p, size, hosts) < 0) {
		struct plane_cause none = { 0 };

		free(hosts);
		end_job(p, 1, &none, "the chief is out of memory");
		return;
	}
	free(hosts);
	p->rank = 0;
	plane_coord_free(&p->coord);
	p->ccfg = (struct plane_coord_cfg){ .nnodes = size, .slot_counts = el->slots, .version = SLOTRUN_VERSION,
					    .addrs = p->hosts, .join_timeout = p->cfg->join_timeout,
					    .max_restarts = p->cfg->max_restarts,
					    .hb_timeout_ms = plane_hb_ms(p->cfg->hb_timeout) };
	for (int k = 0; k < size; k++)
		p->ccfg.world_size += el->slots[k];
	if (plane_coord_init_round(&p->coord, &p->ccfg) < 0) {
		struct plane_cause none = { 0 };

		end_job(p, 1, &none, "the chief is out of memory");
		return;
	}
	el->failover = false;
	el->phase = EL_ROUND;
	p->local_done = false;
	send_starts(p);
}

static void on_settle(evutil_socket_t fd, short what, void *arg)
{
	struct plane *p = arg;
	struct plane_elastic *el = p->el;

	if (el->phase != EL_GATHER)
		return;
	if (el->failover) {
		el->window_over = true;
		failover_check(p);
		return;
	}
	maybe_first(p);
}

static void on_next(evutil_socket_t fd, short what, void *arg)
{
	struct plane *p = arg;
	struct plane_elastic *el = p->el;
	int present = plane_roster_present(&el->ro);
	char line[PLANE_TEXT_MAX];

	if (el->phase != EL_BETWEEN)
		return;
	if (present < el->ro.min) { /* a node left during the delay */
		struct plane_cause none = { 0 };

		snprintf(line, sizeof(line), "%d node%s left, fewer than --nnodes' MIN %d", present,
			 present == 1 ? "" : "s", el->ro.min);
		end_job(p, 1, &none, line);
		return;
	}
	form(p);
}

/* A rank that failed naming a rank of a node that was then lost failed of
 * that loss (its collective saw the node's connections end first): the
 * loss is the round's root cause, re-formed at once. */
static void loss_first(struct plane *p, struct plane_round_end *e)
{
	const struct plane_cause *c = &e->cause;
	int k = c->culprit_node;

	if (c->kind != PLANE_CAUSE_RANK || !c->blamed || k < 1 || k >= p->nnodes ||
	    p->coord.st[k] != PLANE_N_LOST)
		return;
	e->cause = (struct plane_cause){ .kind = PLANE_CAUSE_LOST, .node = k };
	snprintf(e->cause.host, sizeof(e->cause.host), "%s", plane_host(p, k));
	snprintf(e->cause.text, sizeof(e->cause.text), "%s", p->el->why_lost[k]);
	e->code = plane_cause_code(&e->cause);
}

void plane_elastic_round_over(struct plane *p)
{
	struct plane_elastic *el = p->el;
	struct plane_coord *co = &p->coord;
	struct plane_round_end e = { .cause = co->cause, .code = co->code, .restarts = el->restarts,
				     .told_stop = co->told_stop };
	struct plane_msg m = { .type = PLANE_RESTART };
	struct plane_round_next next;
	char lost[PLANE_TEXT_MAX / 2] = "";
	size_t o = 0;
	struct timeval tv;

	for (int k = 0; k < el->ro.size; k++) {
		if (co->st[k] != PLANE_N_LOST) {
			e.alive++;
			continue;
		}
		e.dead += el->dead[k];
		if (o + 1 < sizeof(lost)) {
			snprintf(lost + o, sizeof(lost) - o, "%snode %d (%s)", o ? ", " : "", k, plane_host(p, k));
			o += strlen(lost + o);
		}
		plane_roster_drop(&el->ro, el->ro.at[k]);
	}
	e.lost = lost;
	e.present = plane_roster_present(&el->ro);
	loss_first(p, &e);
	next = plane_round_after(&el->pol, el->ro.size, &e);
	if (next.end) {
		end_job(p, next.code, &e.cause, next.why);
		return;
	}
	if (next.counts)
		el->restarts++;
	plane_cause_line(&e.cause, el->why, sizeof(el->why));
	m.code = el->restarts;
	m.delay_ms = (int)(next.delay * 1000);
	m.cause = e.cause;
	plane_chief_broadcast(p, &m, -1);
	el->phase = EL_BETWEEN;
	p->local_done = false;
	p->h->restart(p->arg, el->restarts, next.delay, &e.cause);
	tv = clock_tv(next.delay);
	evtimer_add(el->ev_next, &tv);
}

/* ---- Our own events while no round runs ---- */

void plane_elastic_local_signal(struct plane *p, int sig, bool stops, const char *why)
{
	struct plane_elastic *el = p->el;
	struct plane_cause cause = { .kind = PLANE_CAUSE_SIGNAL, .node = 0, .code = sig };
	const char *abbrev = sigabbrev_np(sig);
	char line[PLANE_TEXT_MAX];

	if (!stops || el->phase == EL_OVER)
		return; /* no worker to tell */
	snprintf(cause.host, sizeof(cause.host), "%s", el->self_host);
	snprintf(cause.text, sizeof(cause.text), "%s", why ? why : "");
	if (el->phase == EL_GATHER && !p->ever_started) {
		snprintf(line, sizeof(line), "job stopped before it started: SIG%s to node 0 (%s)%s%s",
			 abbrev ? abbrev : "?", el->self_host, why && why[0] ? ": " : "", why ? why : "");
		abort_join(p, 128 + sig, line);
		return;
	}
	end_job(p, 128 + sig, &cause, "");
}

void plane_elastic_local_done(struct plane *p)
{
	struct plane_elastic *el = p->el;

	if (el->failover && el->phase == EL_GATHER) {
		el->self_done = true;
		failover_check(p);
	}
}

void plane_elastic_self_lost(struct plane *p, const char *why)
{
	struct plane_cause self = { .kind = PLANE_CAUSE_LOST, .node = 0 };

	if (p->el->phase == EL_OVER || (p->el->phase == EL_GATHER && !p->ever_started))
		return;
	snprintf(self.host, sizeof(self.host), "%s", p->el->self_host);
	snprintf(self.text, sizeof(self.text), "%s", why);
	end_job(p, 1, &self, "");
}

void plane_elastic_join_timeout(struct plane *p)
{
	struct plane_elastic *el = p->el;
	int present = plane_roster_present(&el->ro);
	char line[PLANE_TEXT_MAX];

	if (el->phase != EL_GATHER || el->failover)
		return;
	if (present >= el->ro.min) {
		form(p);
		return;
	}
	snprintf(line, sizeof(line), "only %d of the at least %d nodes (--nnodes %d:%d) joined within %g s",
		 present, el->ro.min, el->ro.min, el->ro.max, p->cfg->join_timeout);
	abort_join(p, 2, line);
}

/* ---- Taking over after the chief's loss ---- */

/* Decides once every node of the lost round came back and is done, or the
 * wait is over and those that came back are done: the next round, or the
 * job's end for want of a majority, of MIN nodes or of a restart. */
static void failover_check(struct plane *p)
{
	struct plane_elastic *el = p->el;
	struct plane_round_end e = { .cause = el->lost, .code = 1, .restarts = el->restarts,
				     .dead = el->prev_chief_dead };
	struct plane_round_next next;

	if (!el->self_done || el->done < el->back || (!el->window_over && el->back < el->expect))
		return;
	e.alive = 1 + el->back;
	e.present = plane_roster_present(&el->ro);
	next = plane_round_after(&el->pol, el->prev_size, &e);
	if (next.end) {
		end_job(p, 1, &el->lost, next.why);
		return;
	}
	el->restarts++;
	plane_cause_line(&el->lost, el->why, sizeof(el->why));
	snprintf(el->why + strlen(el->why), sizeof(el->why) - strlen(el->why),
		 "; node %d (%s) took over as the chief", el->prev_rank, el->self_host);
	form(p);
}

void plane_elastic_failover(struct plane *p, bool chief_dead, const char *lost)
{
	struct plane_elastic *el = p->el;
	struct timeval tv = clock_tv(p->cfg->hb_timeout);
	const struct plane_round_info *last = &p->round;
	struct plane_round_info info = *last;

	evtimer_del(el->ev_settle);
	for (int i = 0; i < info.ncand; i++)
		if (info.cand_rank[i] == info.node_rank)
			snprintf(el->self_host, sizeof(el->self_host), "%s", info.cand_host[i]);
	snprintf(el->ro.n[0].host, sizeof(el->ro.n[0].host), "%s", el->self_host);
	el->ro.n[0].prev = el->prev_rank = last->node_rank;
	el->ro.round = last->round;
	el->restarts = last->restarts;
	el->failover = true;
	el->prev_size = last->nnodes;
	el->expect = last->nnodes - 2;
	el->prev_chief_dead = chief_dead;
	el->self_done = p->local_done;
	el->lost = (struct plane_cause){ .kind = PLANE_CAUSE_LOST, .node = 0 };
	snprintf(el->lost.host, sizeof(el->lost.host), "%s", last->master);
	snprintf(el->lost.text, sizeof(el->lost.text), "%s", lost);
	plane_say(p, "node 0 (%s) lost: %s: this node, node %d (%s), takes over as the chief and waits up to "
		  "%g s for the round's %d other node%s", last->master, lost, el->prev_rank, el->self_host,
		  p->cfg->hb_timeout, el->expect, el->expect == 1 ? "" : "s");
	evtimer_add(el->ev_settle, &tv);
	failover_check(p);
}
