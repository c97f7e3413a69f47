// SPDX-License-Identifier: MIT
#include "plane_member.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "clock.h"
#include "plane_conn.h"
#include "plane_query.h"
#include "plane_relay.h"
#include "plane_round.h"
#include "plane_seek.h"
#include "quote.h"
#include "sock.h"

/* How many of the first bytes a stranger on the control port sent are
 * shown. */
#define SHOWN_BYTES 32

/* The chief's CHAL: answer with our JOIN, proving the secret. */
static void send_join(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;
	const struct plane_cfg *g = p->cfg;
	unsigned char out[4 + PLANE_MAX_FRAME];
	struct plane_join j = { .node_rank = g->node_rank, .nnodes = g->nnodes, .slots = g->slots,
				.world_size = g->world_size, .max_restarts = g->max_restarts,
				.hb_timeout_ms = plane_hb_ms(g->hb_timeout), .nnodes_min = g->nnodes_min,
				.settle_ms = plane_hb_ms(g->settle), .admit = g->admit,
				.fanout = g->fanout };
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
		if (plane_seek_failover(p)) {
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
		plane_seek_refused(p);
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
		plane_say(p, "the listener at %s:%d did not prove it holds the job secret: is it this job's %s?",
			  plane_host(p, p->up), g->control_port, p->up ? "relay for this node" : "chief");
		plane_end_job(p, 2, NULL);
		return;
	}
	c->authed = true;
	c->sealed_in = true;
	plane_relay_up(p);
	plane_seek_found(p);
	if (plane_seek_failover(p)) {
		/* the new chief starts the next round once our workers of the
		 * lost one are reaped */
		p->chief_lost = (struct plane_cause){ .kind = PLANE_CAUSE_NONE };
		if (p->local_done)
			plane_conn_send(c, &(struct plane_msg){ .type = PLANE_DONE, .code = 0 });
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
	plane_seek_forget(p);
	p->mstate = M_RUNNING;
	p->ever_started = true;
	p->local_done = false;
	p->h->start(p->arg, &p->round);
}

/* What the chief says once both sides are proved. */
static void upstream_gone(struct plane *p, const struct plane_cause *cause, bool chief_dead);

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
		if (!plane_relay_hold_abort(p, m->code))
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
		/* the chief itself (or our relay) stopped: its silence is
		 * not counted */
		if (m->type == PLANE_RESUME || m->node == 0 || m->node == p->up)
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
		/* our heartbeat rides the wake-up the chief's caused: at a
		 * thousand nodes a wake-up a second of every node is what
		 * heartbeats cost (the tick sends one only when the chief's
		 * stop coming) */
		if (clock_mono() - c->last_tx >= p->interval / 2)
			plane_conn_send(c, &(struct plane_msg){ .type = PLANE_PING });
		return;
	case PLANE_ASK:
		plane_query_ask(p, m);
		return;
	case PLANE_PART:
		plane_query_piece(c, m);
		return;
	case PLANE_FWD: /* the chief's, for the nodes behind us (none when we
			 * could not listen: they joined another relay) */
		plane_relay_down(p, m);
		return;
	case PLANE_GONE: /* the chief's, to a relay: close that node's connection */
		if (p->relay) {
			plane_relay_down(p, m);
			return;
		}
		if (!p->up) /* our relay's: it lost the chief */
			break;
		upstream_gone(p, &m->cause, false);
		return;
	default:
		break;
	}
	plane_conn_lost(c, "it sent a message out of turn");
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

/* What this node joined (the chief, or its relay) is gone, for cause:
 * stop our workers on our own; the job's status is ours to decide once
 * they are reaped.  A relay's nodes hear the cause from it. */
static void upstream_gone(struct plane *p, const struct plane_cause *cause, bool chief_dead)
{
	const char *why = cause->text;
	char line[PLANE_TEXT_MAX];

	if (p->self_stalled) /* the chief gave us up for our stall, said already */
		return;
	if (plane_relay_end_held(p)) /* the join was over: said already */
		return;
	p->chief_lost = *cause;
	plane_relay_upstream_lost(p, &p->chief_lost);
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
	if (plane_elastic(p->cfg) && plane_seek_failover(p)) {
		/* the chief we found is lost in turn: the next one */
		plane_seek_next(p);
		return;
	}
	if (plane_elastic(p->cfg)) {
		plane_seek_successor(p, chief_dead, why);
		return;
	}
	if (p->local_done)
		plane_end_job(p, plane_cause_code(&p->chief_lost), &p->chief_lost);
}

/* The chief (or our relay) is lost for why. */
static void chief_gone(struct plane *p, const char *why, bool chief_dead)
{
	struct plane_cause cause = { .kind = PLANE_CAUSE_LOST, .node = p->up };

	snprintf(cause.host, sizeof(cause.host), "%s", plane_host(p, p->up));
	snprintf(cause.text, sizeof(cause.text), "%s", why);
	upstream_gone(p, &cause, chief_dead);
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
	plane_say(c->p, "%s control port %s:%d answered with something that is not slotrun (it sent \"%s\"): "
		  "is --control-port (or --master-port) the chief's, and free there?",
		  c->p->up ? "this node's relay's" : "the chief's", plane_host(c->p, c->p->up),
		  c->p->cfg->control_port, shown);
	plane_end_job(c->p, 2, NULL);
}

static void on_lost(struct conn *c, const char *why)
{
	if (c->p->mstate == M_REFUSED)
		plane_seek_refused(c->p);
	else if (!c->authed && c->p->mstate == M_HELLO && !may_be_slotrun(c))
		not_slotrun(c);
	else if (!c->authed) /* not our chief yet: try again */
		plane_seek_retry(c->p, why);
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
		plane_seek_retry(p, strerror(err));
		return;
	}
	c->p->mstate = M_HELLO;
}

/* Our loop did not run for longer than the chief waits for a silent
 * node (plane_conn_awake): it gave this node up.  This node names itself,
 * stops its workers and ends with 1 once they are reaped. */
static void on_stalled(struct plane *p, double gap)
{
	char line[PLANE_TEXT_MAX];
	const char *me = ci_addr_known(plane_host(p, p->rank)) ? plane_host(p, p->rank) : "this node";

	if (!p->ever_started || p->self_stalled)
		return;
	p->self_stalled = true;
	plane_seek_forget(p);
	p->chief_lost = (struct plane_cause){ .kind = PLANE_CAUSE_LOST, .node = p->rank };
	snprintf(p->chief_lost.host, sizeof(p->chief_lost.host), "%s", me);
	snprintf(p->chief_lost.text, sizeof(p->chief_lost.text), "it did not run for %.1f s (its slotrun was "
		 "stopped or starved), longer than the other nodes wait", gap);
	plane_cause_line(&p->chief_lost, line, sizeof(line));
	plane_say(p, "this node did not run for %.1f s: the other nodes gave it up: stopping its workers: %s", gap,
		  line);
	if (p->mstate == M_RUNNING)
		p->h->stop(p->arg, 0);
	p->mstate = M_CONNECTING;
	if (p->local_done)
		plane_end_job(p, plane_cause_code(&p->chief_lost), &p->chief_lost);
}

const struct plane_side plane_member_side = {
	.frame = on_frame, .dropped = on_dropped, .lost = on_lost, .connected = on_connected,
	.stalled = on_stalled,
};

int plane_member_open(struct plane *p, char *err, size_t errlen)
{
	return plane_seek_open(p, err, errlen);
}

void plane_member_local_fail(struct plane *p, const struct plane_cause *f)
{
	if (p->chief_conn && p->chief_conn->authed)
		plane_conn_send(p->chief_conn, &(struct plane_msg){ .type = PLANE_FAIL, .cause = *f });
}

void plane_member_local_signal(struct plane *p, int sig, bool stops, const char *why)
{
	if (stops && plane_seek_failover(p)) {
		/* no chief to tell: this node stops; the others find it lost */
		p->chief_lost = (struct plane_cause){ .kind = PLANE_CAUSE_SIGNAL, .node = p->rank, .code = sig };
		plane_seek_forget(p);
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
	plane_relay_pause(p, sig);
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
	if (plane_seek_failover(p)) { /* told the new chief once we have one */
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
	plane_relay_close(p);
	plane_seek_close(p);
}
