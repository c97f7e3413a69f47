// SPDX-License-Identifier: MIT
#include "plane_seek.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "plane_chief.h"
#include "plane_conn.h"
#include "sock.h"

#include <sodium.h>

static void try_connect(struct plane *p);

/* Where an elastic node looks for its chief: a new node cycles through the
 * addresses it was given until the join timeout; a node whose chief was
 * lost tries the round's next chiefs in rank order, once, each for the
 * heartbeat timeout (its own turn: it takes over). */
struct plane_seek {
	int n, at;
	char (*host)[PLANE_HOST_MAX];
	int *rank;                /* failover: each one's rank in the lost round */
	bool failover;
	bool probe;               /* a node that may be the chief looks for a running job
				   * first (one pass over the others' addresses) */
	bool chief_dead;          /* failover: the lost chief's host closed its connection */
	double per;               /* seconds each target gets */
	struct event *ev_turn;    /* the end of the current target's turn */
	char lost[PLANE_TEXT_MAX];  /* failover: why the chief was lost */
};

void plane_seek_forget(struct plane *p)
{
	struct plane_seek *s = p->seek;

	if (!s)
		return;
	if (s->ev_turn)
		event_free(s->ev_turn);
	free(s->host);
	free(s->rank);
	free(s);
	p->seek = NULL;
}

/* The address this node connects to now. */
static const char *target(const struct plane *p)
{
	return p->seek ? p->seek->host[p->seek->at] : plane_host(p, p->up);
}

/* A try at the chief that time ran out on: what went unanswered (the
 * connect, said as unconnected; or the handshake) becomes the last error,
 * and the connection and any retry are dropped. */
static void drop_unanswered(struct plane *p, struct conn *c, const char *unconnected)
{
	if (c && c->connecting)
		snprintf(p->connect_err, sizeof(p->connect_err), "%s", unconnected);
	else if (c)
		snprintf(p->connect_err, sizeof(p->connect_err), "no answer to the handshake");
	if (c)
		plane_conn_drop(c);
	evtimer_del(p->ev_retry);
}

static void on_turn(evutil_socket_t fd, short what, void *arg)
{
	struct plane *p = arg;
	struct conn *c = p->chief_conn;

	if (p->ended || !p->seek || (c && c->authed))
		return;
	drop_unanswered(p, c, "the connection got no answer");
	plane_seek_next(p);
}

static struct plane_seek *seek_new(struct plane *p, int n, double per)
{
	struct plane_seek *s = calloc(1, sizeof(*s));

	if (s) {
		s->host = calloc((size_t)n, sizeof(*s->host));
		s->rank = calloc((size_t)n, sizeof(*s->rank));
		s->ev_turn = evtimer_new(p->base, on_turn, p);
		s->per = per;
	}
	if (!s || !s->host || !s->rank || !s->ev_turn) {
		p->seek = s;
		plane_seek_forget(p);
		return NULL;
	}
	plane_seek_forget(p);
	p->seek = s;
	return s;
}

/* A new elastic node's targets: every address it was given, the chief's
 * first; a node that may be the chief probes the others (probe) once, for
 * a job that runs already (its chief lost and replaced) before it listens
 * itself.  None when there is only the chief's. */
static int seek_list(struct plane *p, bool probe)
{
	const struct plane_cfg *g = p->cfg;
	struct plane_seek *s;
	int n = 0;

	for (int k = probe; k < g->nnodes; k++)
		n += ci_addr_known(g->addrs[k]);
	if (n < (probe ? 1 : 2))
		return 0;
	if (!(s = seek_new(p, n, probe ? 1.0 : 2.0)))
		return -ENOMEM;
	s->probe = probe;
	for (int k = probe; k < g->nnodes; k++)
		if (ci_addr_known(g->addrs[k]))
			snprintf(s->host[s->n++], sizeof(s->host[0]), "%s", g->addrs[k]);
	return 0;
}

static void begin_turn(struct plane *p)
{
	struct timeval tv = clock_tv(p->seek->per);

	p->retry_delay = 0.05;
	evtimer_add(p->seek->ev_turn, &tv);
}

/* The one deadline of the join (connect, handshake, retries): the node
 * gives up with the last reason (status 2). */
static void give_up(struct plane *p)
{
	char where[512] = "";
	size_t o = 0;

	if (p->seek && !p->seek->failover) {
		for (int i = 0; i < p->seek->n && o + 1 < sizeof(where); i++) {
			snprintf(where + o, sizeof(where) - o, "%s%s:%d", i ? ", " : "any of ", p->seek->host[i],
				 p->cfg->control_port);
			o += strlen(where + o);
		}
	} else {
		snprintf(where, sizeof(where), "%s:%d", plane_host(p, p->up), p->cfg->control_port);
	}
	if (p->up)
		plane_say(p, "could not join this node's relay, node %d, at %s within %g s: %s", p->up, where,
			  p->cfg->join_timeout, p->connect_err[0] ? p->connect_err : "no answer");
	else
		plane_say(p, "could not join the chief at %s within %g s: %s", where, p->cfg->join_timeout,
			  p->connect_err[0] ? p->connect_err : "no answer");
	plane_end_job(p, 2, NULL);
}

/* Another try after a short, growing delay, spread at random
 * (plane_retry_wait); none that would start past the join deadline (its
 * timer gives up then). */
static void schedule_retry(struct plane *p)
{
	double left = p->join_deadline - clock_mono(), wait;
	struct timeval tv;

	if (p->ended)
		return;
	p->mstate = M_CONNECTING;
	wait = plane_retry_wait(p->retry_delay, randombytes_random());
	if (wait >= left)
		return;
	tv = clock_tv(wait);
	evtimer_add(p->ev_retry, &tv);
	p->retry_delay = p->retry_delay * 2 > 1.0 ? 1.0 : p->retry_delay * 2;
}

/* Why this try failed, then the next one: at the same address, or, for a
 * new elastic node whose connection was refused (nobody listens there:
 * not the chief), at the next. */
void plane_seek_retry(struct plane *p, const char *why)
{
	snprintf(p->connect_err, sizeof(p->connect_err), "%s", why);
	if (p->seek && !p->seek->failover && (!strcmp(why, strerror(ECONNREFUSED)) || p->seek->probe)) {
		plane_seek_next(p);
		return;
	}
	schedule_retry(p);
}

/* A non-blocking connect(2) to the chief: 0, or the errno. */
static int open_socket(struct plane *p, int *fd)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	char port[16];
	int r;

	snprintf(port, sizeof(port), "%d", p->cfg->control_port);
	r = getaddrinfo(target(p), port, &hints, &res);
	if (r != 0) {
		snprintf(p->connect_err, sizeof(p->connect_err), "cannot resolve %s: %s", target(p),
			 gai_strerror(r));
		return -1;
	}
	*fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (*fd < 0) {
		r = errno;
		freeaddrinfo(res);
		return r;
	}
	(void)sock_tune(*fd, 0);
	r = connect(*fd, res->ai_addr, res->ai_addrlen) < 0 && errno != EINPROGRESS ? errno : 0;
	freeaddrinfo(res);
	if (r)
		close(*fd);
	return r;
}

static void try_connect(struct plane *p)
{
	struct conn *c;
	int fd, r;

	r = open_socket(p, &fd);
	if (r < 0) { /* connect_err says why */
		schedule_retry(p);
		return;
	}
	if (r > 0) {
		plane_seek_retry(p, strerror(r));
		return;
	}
	c = plane_conn_new(p, fd, target(p));
	if (!c) {
		close(fd);
		plane_seek_retry(p, "out of memory");
		return;
	}
	p->chief_conn = c;
	c->connecting = true;
	p->mstate = M_CONNECTING;
	event_add(c->ev_write, NULL);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	try_connect(arg);
}

/* The join deadline: a connect the network never answered, a handshake
 * still under way or the last failed try ends the join here. */
static void on_join_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct plane *p = arg;
	struct conn *c = p->chief_conn;

	if (p->ended || p->chief || p->ever_started || (c && c->authed))
		return;
	if (p->mstate == M_REFUSED) {
		plane_seek_refused(p);
		return;
	}
	drop_unanswered(p, c, "the connection got no answer (is a firewall dropping it?)");
	give_up(p);
}

/* ---- After the chief's loss (elastic) ---- */

/* No node of the lost round took over: this node ends, as a node that
 * lost its chief in a fixed-size job does (status 1, once its workers are
 * reaped). */
static void no_successor(struct plane *p)
{
	char names[512] = "";
	size_t o = 0;

	for (int i = 0; i < p->seek->n && o + 1 < sizeof(names); i++) {
		snprintf(names + o, sizeof(names) - o, "%s%s", i ? ", " : "", p->seek->host[i]);
		o += strlen(names + o);
	}
	plane_say(p, "no node that could take over as the chief answered (%s, %g s each; the last: %s): this "
		  "node stops", names, p->seek->per, p->connect_err[0] ? p->connect_err : "no answer");
	plane_seek_forget(p);
	if (p->local_done)
		plane_end_job(p, plane_cause_code(&p->chief_lost), &p->chief_lost);
}

/* Our turn among the lost round's next chiefs: we take over.  When we
 * cannot listen, the next one's turn comes. */
static void take_over(struct plane *p)
{
	struct plane_seek *s = p->seek;
	const struct plane_side *was = p->side;
	char err[256];

	evtimer_del(p->ev_retry);
	evtimer_del(s->ev_turn);
	p->chief = true;
	p->side = &plane_chief_side;
	if (plane_chief_take_over(p, s->chief_dead, s->lost, err, sizeof(err)) == 0) {
		plane_seek_forget(p);
		return;
	}
	plane_chief_close(p);
	p->chief = false;
	p->side = was;
	plane_say(p, "this node cannot take over as the chief: %s", err);
	plane_seek_next(p);
}

/* A node that may be the chief found no running job at the others'
 * addresses: it listens as the chief, or, when another slotrun on its
 * host holds the port (PLANE_MAYBE_CHIEF), joins that one. */
static void probe_over(struct plane *p)
{
	const struct plane_side *was = p->side;
	char err[256];
	int r;

	plane_seek_forget(p);
	evtimer_del(p->ev_retry);
	p->chief = true;
	p->side = &plane_chief_side;
	r = plane_chief_open(p, err, sizeof(err));
	if (r == 0) {
		evtimer_del(p->ev_deadline);
		return;
	}
	plane_chief_close(p);
	p->chief = false;
	p->side = was;
	if (r != -EADDRINUSE || p->cfg->role != PLANE_MAYBE_CHIEF) {
		plane_say(p, "%s", err);
		plane_end_job(p, 2, NULL);
		return;
	}
	if (seek_list(p, false) < 0) {
		plane_say(p, "out of memory");
		plane_end_job(p, 2, NULL);
		return;
	}
	if (p->seek)
		begin_turn(p);
	try_connect(p);
}

/* The current target's turn is over: the next one's, from the start of
 * the list again for a new node (until the join deadline), or, after the
 * chief's loss, the next chief's (ours: we take over). */
void plane_seek_next(struct plane *p)
{
	struct plane_seek *s = p->seek;

	if (!s) {
		schedule_retry(p);
		return;
	}
	evtimer_del(s->ev_turn);
	if (++s->at == s->n) {
		if (s->failover) {
			no_successor(p);
			return;
		}
		if (s->probe) {
			probe_over(p);
			return;
		}
		s->at = 0;
	}
	if (s->failover && s->rank[s->at] == p->rank) {
		take_over(p);
		return;
	}
	begin_turn(p);
	p->mstate = M_CONNECTING;
	if (s->at == 0) /* a whole pass over the list: the usual backoff */
		schedule_retry(p);
	else
		try_connect(p);
}

/* The chief of the round this node was in is lost: its next chiefs, in
 * rank order from the round's candidates, each get the heartbeat timeout
 * to answer (they learn of the loss about when we do); the first that
 * answers is the new chief.  Ours: we take over. */
void plane_seek_successor(struct plane *p, bool chief_dead, const char *why)
{
	const struct plane_round_info *ri = &p->round;
	struct plane_seek *s = seek_new(p, ri->ncand, p->cfg->hb_timeout);

	if (!s) {
		plane_say(p, "cannot look for a new chief: out of memory");
		if (p->local_done)
			plane_end_job(p, plane_cause_code(&p->chief_lost), &p->chief_lost);
		return;
	}
	s->failover = true;
	s->chief_dead = chief_dead;
	snprintf(s->lost, sizeof(s->lost), "%s", why);
	for (int i = 0; i < ri->ncand; i++) {
		s->rank[s->n] = ri->cand_rank[i];
		snprintf(s->host[s->n++], sizeof(s->host[0]), "%s", ri->cand_host[i]);
	}
	if (!s->n) {
		no_successor(p);
		return;
	}
	s->at = -1;
	plane_seek_next(p);
}

/* The chief refused our secret and said nothing more: status 2, since
 * retrying with the same secret would not change that. */
void plane_seek_refused(struct plane *p)
{
	plane_say(p, "%s at %s:%d refused our job secret: set the same SLOTRUN_JOB_SECRET "
		  "(or --secret-file) on every node", p->up ? "this node's relay" : "the chief",
		  plane_host(p, p->up), p->cfg->control_port);
	plane_end_job(p, 2, NULL);
}


int plane_seek_open(struct plane *p, char *err, size_t errlen)
{
	struct timeval tv = clock_tv(p->cfg->join_timeout);

	p->ev_retry = evtimer_new(p->base, on_retry, p);
	p->ev_deadline = evtimer_new(p->base, on_join_deadline, p);
	if (!p->ev_retry || !p->ev_deadline) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->join_deadline = clock_mono() + p->cfg->join_timeout;
	evtimer_add(p->ev_deadline, &tv);
	if (plane_elastic(p->cfg) && seek_list(p, p->cfg->role != PLANE_MEMBER) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (p->seek)
		begin_turn(p);
	try_connect(p);
	return 0;
}

bool plane_seek_failover(const struct plane *p)
{
	return p->seek && p->seek->failover;
}

void plane_seek_found(struct plane *p)
{
	if (p->seek)
		evtimer_del(p->seek->ev_turn);
}

void plane_seek_close(struct plane *p)
{
	plane_seek_forget(p);
	if (p->ev_retry)
		event_free(p->ev_retry);
	if (p->ev_deadline)
		event_free(p->ev_deadline);
	p->ev_retry = p->ev_deadline = NULL;
}
