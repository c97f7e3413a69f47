// SPDX-License-Identifier: MIT
#include "plane_member.h"

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "plane_chief.h"
#include "plane_conn.h"
#include "plane_query.h"
#include "plane_round.h"
#include "quote.h"
#include "sock.h"

#include <sodium.h>

/* How many of the first bytes a stranger on the control port sent are
 * shown. */
#define SHOWN_BYTES 32

static void try_connect(struct plane *p);
static void refused(struct plane *p);
static void next_target(struct plane *p);

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

static void seek_free(struct plane *p)
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
	return p->seek ? p->seek->host[p->seek->at] : plane_host(p, 0);
}

static void on_turn(evutil_socket_t fd, short what, void *arg)
{
	struct plane *p = arg;
	struct conn *c = p->chief_conn;

	if (p->ended || !p->seek || (c && c->authed))
		return;
	if (c && c->connecting)
		snprintf(p->connect_err, sizeof(p->connect_err), "the connection got no answer");
	else if (c)
		snprintf(p->connect_err, sizeof(p->connect_err), "no answer to the handshake");
	if (c)
		plane_conn_drop(c);
	evtimer_del(p->ev_retry);
	next_target(p);
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
		seek_free(p);
		return NULL;
	}
	seek_free(p);
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
		snprintf(where, sizeof(where), "%s:%d", plane_host(p, 0), p->cfg->control_port);
	}
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
static void retry_after(struct plane *p, const char *why)
{
	snprintf(p->connect_err, sizeof(p->connect_err), "%s", why);
	if (p->seek && !p->seek->failover && (!strcmp(why, strerror(ECONNREFUSED)) || p->seek->probe)) {
		evtimer_del(p->seek->ev_turn);
		next_target(p);
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
		retry_after(p, strerror(r));
		return;
	}
	c = plane_conn_new(p, fd, target(p));
	if (!c) {
		close(fd);
		retry_after(p, "out of memory");
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
		refused(p);
		return;
	}
	if (c && c->connecting)
		snprintf(p->connect_err, sizeof(p->connect_err),
			 "the connection got no answer (is a firewall dropping it?)");
	else if (c)
		snprintf(p->connect_err, sizeof(p->connect_err), "no answer to the handshake");
	if (c)
		plane_conn_drop(c);
	evtimer_del(p->ev_retry);
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
	seek_free(p);
	if (p->local_done)
		plane_end_job(p, plane_cause_code(&p->chief_lost), &p->chief_lost);
}

/* Our turn among the lost round's next chiefs: we take over.  When we
 * cannot listen, the next one's turn comes. */
static void take_over(struct plane *p)
{
	struct plane_seek *s = p->seek;
	char err[256];

	evtimer_del(p->ev_retry);
	evtimer_del(s->ev_turn);
	p->chief = true;
	p->side = &plane_chief_side;
	if (plane_chief_take_over(p, s->chief_dead, s->lost, err, sizeof(err)) == 0) {
		seek_free(p);
		return;
	}
	plane_chief_close(p);
	p->chief = false;
	p->side = &plane_member_side;
	plane_say(p, "this node cannot take over as the chief: %s", err);
	next_target(p);
}

/* A node that may be the chief found no running job at the others'
 * addresses: it listens as the chief, or, when another slotrun on its
 * host holds the port (PLANE_MAYBE_CHIEF), joins that one. */
static void probe_over(struct plane *p)
{
	char err[256];
	int r;

	seek_free(p);
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
	p->side = &plane_member_side;
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
static void next_target(struct plane *p)
{
	struct plane_seek *s = p->seek;

	if (!s) {
		schedule_retry(p);
		return;
	}
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
static void seek_successor(struct plane *p, bool chief_dead, const char *why)
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
	next_target(p);
}

/* The chief's CHAL: answer with our JOIN, proving the secret. */
static void send_join(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;
	const struct plane_cfg *g = p->cfg;
	unsigned char out[4 + PLANE_MAX_FRAME];
	struct plane_join j = { .node_rank = g->node_rank, .nnodes = g->nnodes, .slots = g->slots,
				.world_size = g->world_size, .max_restarts = g->max_restarts,
				.hb_timeout_ms = plane_hb_ms(g->hb_timeout), .nnodes_min = g->nnodes_min,
				.settle_ms = plane_hb_ms(g->settle), .admit = g->admit };
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char mine[64] = "";
	int n;

	if (m->type != PLANE_CHAL) {
		plane_conn_lost(c, "it is not a slotrun control port");
		return;
	}
	snprintf(j.version, sizeof(j.version), "%s", SLOTRUN_VERSION);
	memcpy(j.id, p->id, PLANE_ID_LEN);
	if (getsockname(c->fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    sock_addr_host((struct sockaddr *)&ss, mine, sizeof(mine)) < 0)
		mine[0] = '\0';
	if (plane_elastic(g)) {
		/* the address the chief reaches us at; a node that comes back
		 * after a failover says which round it was in, and its rank */
		snprintf(j.host, sizeof(j.host), "%s", mine);
		if (p->seek && p->seek->failover) {
			j.round = p->round.round;
			j.node_rank = p->round.node_rank;
			j.restarts = p->round.restarts;
		}
	} else {
		if (!ci_addr_known(plane_host(p, g->node_rank)) && mine[0])
			plane_learn_host(p, g->node_rank, mine);
		snprintf(j.host, sizeof(j.host), "%s", plane_host(p, g->node_rank));
	}
	auth_nonce(c->nonce);
	memcpy(c->peer_nonce, m->nonce, AUTH_NONCE_LEN);
	n = plane_make_join(g->secret, m->nonce, c->nonce, &j, out, sizeof(out));
	if (n < 0) {
		plane_conn_lost(c, "cannot build the join message");
		return;
	}
	plane_conn_queue(c, out, (size_t)n);
	plane_conn_seal(c, g->secret, m->nonce, c->nonce, false);
	c->sealed_out = true;
	p->mstate = M_WAITING; /* for WELCOME, then START */
}

/* The chief refused our secret and said nothing more: status 2, since
 * retrying with the same secret would not change that. */
static void refused(struct plane *p)
{
	plane_say(p, "the chief at %s:%d refused our job secret: set the same SLOTRUN_JOB_SECRET "
		  "(or --secret-file) on every node", plane_host(p, 0), p->cfg->control_port);
	plane_end_job(p, 2, NULL);
}

/* After a REFUSE, the chief may say whose secret is the odd one before it
 * closes (PLANE_MISMATCH): the join ends on every node with that line.
 * The message is not authenticated (the secrets differ), so it only
 * chooses which line ends this node, as the REFUSE already ends it. */
static void mismatch(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;
	char line[PLANE_TEXT_MAX];
	int odd = m->node;

	if (m->type != PLANE_MISMATCH) {
		refused(p);
		return;
	}
	if (odd >= p->cfg->nnodes || (odd != 0 && odd != p->cfg->node_rank))
		odd = p->cfg->node_rank; /* the chief may only name itself or us */
	plane_secret_line(line, sizeof(line), odd, plane_host(p, odd));
	plane_say(p, "%s", line);
	plane_end_job(p, 2, NULL);
}

/* The chief's answer to our JOIN: it must prove the secret in turn. */
static void check_welcome(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;
	const struct plane_cfg *g = p->cfg;

	if (p->mstate == M_REFUSED) {
		mismatch(c, m);
		return;
	}
	if (m->type == PLANE_REFUSE) {
		p->mstate = M_REFUSED;
		return;
	}
	if (m->type != PLANE_WELCOME || !plane_check_welcome(g->secret, c->nonce, c->peer_nonce, m->mac)) {
		plane_say(p, "the listener at %s:%d did not prove it holds the job secret: is it this job's chief?",
			  plane_host(p, 0), g->control_port);
		plane_end_job(p, 2, NULL);
		return;
	}
	c->authed = true;
	c->sealed_in = true;
	if (p->seek && p->seek->failover) {
		/* the new chief starts the next round once our workers of the
		 * lost one are reaped */
		evtimer_del(p->seek->ev_turn);
		p->chief_lost = (struct plane_cause){ .kind = PLANE_CAUSE_NONE };
		if (p->local_done)
			plane_conn_send(c, &(struct plane_msg){ .type = PLANE_DONE, .code = 0 });
	} else if (p->seek) {
		evtimer_del(p->seek->ev_turn);
	}
}

/* START: this node's place in the round (in an elastic job its rank, the
 * round's nodes and chief, and its next chiefs), then its workers. */
static void start_round(struct plane *p, const struct plane_round_info *ri)
{
	char line[PLANE_TEXT_MAX + 64];

	p->round = *ri;
	p->rank = ri->node_rank;
	if (plane_elastic(p->cfg)) {
		char **hosts = calloc((size_t)ri->nnodes, sizeof(char *));

		if (hosts) {
			hosts[0] = p->round.master;
			for (int i = 0; i < ri->ncand; i++)
				hosts[ri->cand_rank[i]] = p->round.cand_host[i];
			(void)plane_set_hosts(p, ri->nnodes, hosts); /* else the old names */
			free(hosts);
		}
		plane_round_line(ri, line, sizeof(line));
		plane_say(p, "%s", line);
	}
	seek_free(p);
	p->mstate = M_RUNNING;
	p->ever_started = true;
	p->local_done = false;
	p->h->start(p->arg, &p->round);
}

/* What the chief says once both sides are proved. */
static void obey(struct conn *c, struct plane_msg *m)
{
	struct plane *p = c->p;

	switch (m->type) {
	case PLANE_START:
		if (p->mstate == M_WAITING)
			start_round(p, &m->round);
		return;
	case PLANE_RESTART:
		if (p->mstate == M_RUNNING) {
			p->mstate = M_WAITING; /* for the next START */
			p->h->restart(p->arg, m->code, m->delay_ms / 1000.0, &m->cause);
		}
		return;
	case PLANE_ABORT:
		plane_say(p, "%s", m->text);
		plane_end_job(p, m->code, NULL);
		return;
	case PLANE_STOP:
		if (!m->sig && m->node != p->rank) {
			char line[PLANE_TEXT_MAX];

			plane_cause_line(&m->cause, line, sizeof(line));
			plane_say(p, "stopping this node's workers: %s", line);
		}
		p->h->stop(p->arg, m->sig);
		return;
	case PLANE_SIGNAL:
		p->h->signal(p->arg, m->sig);
		return;
	case PLANE_PAUSE:
	case PLANE_RESUME:
		if (m->node >= p->nnodes) {
			plane_conn_lost(c, "it sent a malformed message");
			return;
		}
		/* the chief itself stopped: its silence is not counted */
		if (m->type == PLANE_RESUME || m->node == 0)
			plane_conn_pause(c, m->type == PLANE_PAUSE);
		if (m->type == PLANE_RESUME)
			plane_resume_here(p, m->node);
		else if (m->node != p->rank)
			plane_pause_here(p, m->sig, m->node);
		return;
	case PLANE_END:
		if (m->text[0])
			plane_say(p, "the job ends: %s", m->text);
		plane_end_job(p, m->code, &m->cause);
		return;
	case PLANE_PING:
		return;
	case PLANE_ASK:
		plane_query_ask(p, m);
		return;
	case PLANE_PART:
		plane_query_piece(c, m);
		return;
	default:
		plane_conn_lost(c, "it sent a message out of turn");
	}
}

static void on_frame(struct conn *c, const unsigned char *frame, size_t len)
{
	struct plane_msg m;

	if (plane_decode(frame, len, &m) < 0)
		plane_conn_lost(c, "it sent a malformed message");
	else if (c->p->mstate == M_HELLO)
		send_join(c, &m);
	else if (!c->authed)
		check_welcome(c, &m);
	else
		obey(c, &m);
}

/* The chief is gone: stop our workers on our own; the job's status is ours
 * to decide once they are reaped. */
static void chief_gone(struct plane *p, const char *why, bool chief_dead)
{
	char line[PLANE_TEXT_MAX];

	p->chief_lost = (struct plane_cause){ .kind = PLANE_CAUSE_LOST, .node = 0 };
	snprintf(p->chief_lost.host, sizeof(p->chief_lost.host), "%s", plane_host(p, 0));
	snprintf(p->chief_lost.text, sizeof(p->chief_lost.text), "%s", why);
	plane_cause_line(&p->chief_lost, line, sizeof(line));
	if (!p->ever_started) {
		plane_say(p, "%s before the job started", line);
		plane_end_job(p, 2, NULL);
		return;
	}
	if (p->mstate == M_RUNNING || !plane_elastic(p->cfg))
		plane_say(p, "stopping this node's workers: %s", line);
	p->h->stop(p->arg, 0);
	p->mstate = M_CONNECTING;
	if (plane_elastic(p->cfg) && p->seek && p->seek->failover) {
		/* the chief we found is lost in turn: the next one */
		evtimer_del(p->seek->ev_turn);
		next_target(p);
		return;
	}
	if (plane_elastic(p->cfg)) {
		seek_successor(p, chief_dead, why);
		return;
	}
	if (p->local_done)
		plane_end_job(p, plane_cause_code(&p->chief_lost), &p->chief_lost);
}

/* Whether what c received before our JOIN can still be a slotrun's CHAL:
 * nothing yet or part of a frame can; a frame no slotrun sends cannot. */
static bool may_be_slotrun(const struct conn *c)
{
	long len = plane_frame_len(c->in, c->in_len);
	struct plane_msg m;

	if (len == 0)
		return true;
	return len > 0 && plane_decode(c->in, (size_t)len, &m) == 0 && m.type == PLANE_CHAL;
}

/* The first bytes c received, on one line.  quote_ctl shows a run of
 * text; a NUL (which would end its string) and a byte past ASCII (a
 * binary peer's, not text) are written as \xNN here. */
static void show_received(const struct conn *c, char *out, size_t size)
{
	size_t n = c->in_len < SHOWN_BYTES ? c->in_len : SHOWN_BYTES, o = 0;

	out[0] = '\0';
	for (size_t i = 0, run; i < n && o + 1 < size; i += run) {
		char text[SHOWN_BYTES + 1];

		for (run = 0; i + run < n && c->in[i + run] && c->in[i + run] < 0x80; run++)
			text[run] = (char)c->in[i + run];
		text[run] = '\0';
		if (run) {
			quote_ctl(out + o, size - o, text, run);
		} else {
			snprintf(out + o, size - o, "\\x%02x", c->in[i]);
			run = 1;
		}
		o += strlen(out + o);
	}
	if (c->in_len > n && o + 1 < size)
		snprintf(out + o, size - o, "...");
}

/* Another program holds the chief's control port: no retry will reach a
 * slotrun there (the chief cannot listen on that port), so the node gives
 * up at once and shows what answered. */
static void not_slotrun(struct conn *c)
{
	char shown[QUOTE_SIZE(SHOWN_BYTES)];

	show_received(c, shown, sizeof(shown));
	plane_say(c->p, "the chief's control port %s:%d answered with something that is not slotrun (it sent \"%s\"): "
		  "is --control-port (or --master-port) the chief's, and free there?", plane_host(c->p, 0),
		  c->p->cfg->control_port, shown);
	plane_end_job(c->p, 2, NULL);
}

static void on_lost(struct conn *c, const char *why)
{
	if (c->p->mstate == M_REFUSED)
		refused(c->p);
	else if (!c->authed && c->p->mstate == M_HELLO && !may_be_slotrun(c))
		not_slotrun(c);
	else if (!c->authed) /* not our chief yet: try again */
		retry_after(c->p, why);
	else
		chief_gone(c->p, why, c->peer_gone);
}

static void on_dropped(struct conn *c)
{
	if (c->p->chief_conn == c)
		c->p->chief_conn = NULL;
}

static void on_connected(struct conn *c, int err)
{
	if (err) {
		struct plane *p = c->p;

		plane_conn_drop(c);
		retry_after(p, strerror(err));
		return;
	}
	c->p->mstate = M_HELLO;
}

const struct plane_side plane_member_side = {
	.frame = on_frame, .dropped = on_dropped, .lost = on_lost, .connected = on_connected,
};

int plane_member_open(struct plane *p, char *err, size_t errlen)
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

void plane_member_local_fail(struct plane *p, const struct plane_cause *f)
{
	if (p->chief_conn && p->chief_conn->authed)
		plane_conn_send(p->chief_conn, &(struct plane_msg){ .type = PLANE_FAIL, .cause = *f });
}

void plane_member_local_signal(struct plane *p, int sig, bool stops, const char *why)
{
	if (stops && p->seek && p->seek->failover) {
		/* no chief to tell: this node stops; the others find it lost */
		p->chief_lost = (struct plane_cause){ .kind = PLANE_CAUSE_SIGNAL, .node = p->rank, .code = sig };
		seek_free(p);
		if (p->local_done)
			plane_end_job(p, 128 + sig, &p->chief_lost);
		return;
	}
	if (p->chief_conn && p->chief_conn->authed && p->chief_lost.kind == PLANE_CAUSE_NONE) {
		struct plane_msg m = { .type = stops ? PLANE_STOP_REQ : PLANE_SIGNAL_REQ, .sig = sig };

		snprintf(m.text, sizeof(m.text), "%s", why ? why : "");
		plane_conn_send(p->chief_conn, &m);
		return;
	}
	if (stops && p->mstate != M_RUNNING) {
		/* not in the job yet: nothing started, nothing to tell */
		plane_say(p, "stopped by SIG%s before the job started", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
		plane_end_job(p, 128 + sig, NULL);
	}
}

static bool chief_there(const struct plane *p)
{
	return p->chief_conn && p->chief_conn->authed && p->chief_lost.kind == PLANE_CAUSE_NONE;
}

void plane_member_local_pause(struct plane *p, int sig)
{
	if (chief_there(p))
		plane_conn_send(p->chief_conn, &(struct plane_msg){ .type = PLANE_PAUSE_REQ, .sig = sig });
}

void plane_member_local_resume(struct plane *p)
{
	/* the chief resumes the job; without one, the stop that its loss
	 * brings continues our workers anyway */
	if (chief_there(p))
		plane_conn_send(p->chief_conn, &(struct plane_msg){ .type = PLANE_RESUME_REQ });
	else
		plane_resume_here(p, p->rank);
}

void plane_member_local_done(struct plane *p, int code)
{
	if (p->seek && p->seek->failover) { /* told the new chief once we have one */
		if (p->chief_conn && p->chief_conn->authed)
			plane_conn_send(p->chief_conn, &(struct plane_msg){ .type = PLANE_DONE, .code = code });
		return;
	}
	if (p->chief_lost.kind != PLANE_CAUSE_NONE)
		plane_end_job(p, plane_cause_code(&p->chief_lost), &p->chief_lost);
	else if (p->chief_conn)
		plane_conn_send(p->chief_conn, &(struct plane_msg){ .type = PLANE_DONE, .code = code });
}

void plane_member_close(struct plane *p)
{
	seek_free(p);
	if (p->ev_retry)
		event_free(p->ev_retry);
	if (p->ev_deadline)
		event_free(p->ev_deadline);
	p->ev_retry = p->ev_deadline = NULL;
}
