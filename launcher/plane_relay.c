// SPDX-License-Identifier: MIT
#include "plane_relay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "plane_chief.h"
#include "plane_conn.h"

struct plane_relay {
	uint32_t next_id;         /* the last id given to a node's connection */
	bool ready;               /* the chief welcomed us: frames go up at once */
	unsigned char *backlog;   /* until then, the frames for the chief (encoded, plain) */
	size_t blen, bcap;
	/* The job will not start: as the chief does, the relay stays until
	 * every node of its group has heard why (or the join timeout), since
	 * a node that joins later reaches the chief only through it. */
	bool *told;               /* per node of the group (index: node - our rank) */
	int ntold, group;         /* how many were told, of the group's other nodes */
	bool holding;             /* our own ABORT came: we end once all are told */
	int code;
	struct event *ev_give_up; /* the join deadline, while holding */
};

static bool ours(const struct conn *c)
{
	return c->side == &plane_relay_side;
}

/* One encoded frame for the chief: sent, or kept until it welcomed us. */
static void up_frame(struct plane *p, const unsigned char *frame, size_t n)
{
	struct plane_relay *r = p->relay;

	if (r->ready) {
		if (p->chief_conn && p->chief_conn->authed)
			plane_conn_queue(p->chief_conn, frame, n);
		return;
	}
	if (r->blen + n > r->bcap) {
		size_t cap = r->bcap ? r->bcap : 4096;
		unsigned char *b;

		while (cap < r->blen + n)
			cap *= 2;
		if (!(b = realloc(r->backlog, cap)))
			return; /* the node's JOIN is lost: it times out, and says so */
		r->backlog = b;
		r->bcap = cap;
	}
	memcpy(r->backlog + r->blen, frame, n);
	r->blen += n;
}

/* A frame of c's node, for the chief. */
static void up_fwd(struct conn *c, const unsigned char *frame, size_t n, unsigned flags, const char *peer)
{
	unsigned char out[4 + PLANE_MAX_FRAME];
	struct plane_fwd f = { .id = c->tid, .flags = flags, .frame = frame, .len = n };
	int len;

	snprintf(f.peer, sizeof(f.peer), "%s", peer);
	len = plane_encode_fwd(&f, out, sizeof(out));
	if (len > 0)
		up_frame(c->p, out, (size_t)len);
}

/* A node's JOIN: the relay checks the MAC as the chief would, and sends
 * it up either way: the chief decides, as for its own nodes (a MAC that
 * failed may be evidence of another secret; the connection then waits for
 * the chief's verdict). */
static void join(struct conn *c, const unsigned char *frame, size_t len)
{
	struct plane *p = c->p;
	const char *secret = p->cfg->secret;
	struct plane_msg *m = malloc(sizeof(*m));
	unsigned flags = 0;

	if (!m || plane_decode(frame, len, m) < 0 || m->type != PLANE_JOIN) {
		free(m);
		plane_conn_drop(c);
		return;
	}
	p->npending--; /* its handshake is over: room under the cap */
	c->tid = ++p->relay->next_id;
	c->node = m->join.node_rank;
	if (plane_check_join(secret, c->nonce, frame, len, m)) {
		struct plane_msg *w = m; /* reused: the JOIN is read */
		unsigned char nn[AUTH_NONCE_LEN];

		memcpy(nn, m->nonce, sizeof(nn));
		c->authed = true;
		plane_conn_seal(c, secret, c->nonce, nn, true);
		c->sealed_in = true;
		*w = (struct plane_msg){ .type = PLANE_WELCOME };
		plane_welcome_mac(secret, nn, c->nonce, w->mac);
		plane_conn_send(c, w);
		c->sealed_out = true;
		flags = PLANE_FWD_PROVED;
	} else {
		c->held = true;
	}
	free(m);
	up_fwd(c, frame, len, flags, c->peer);
}

static void on_frame(struct conn *c, const unsigned char *frame, size_t len)
{
	unsigned type = frame[4];

	if (!c->authed) {
		if (!c->held && !c->closing)
			join(c, frame, len);
		return;
	}
	if (c->closing)
		return;
	if (type == PLANE_PING) /* heartbeats are per hop */
		return;
	if (type == PLANE_FWD || type == PLANE_GONE || type > PLANE_TYPE_LAST) {
		plane_conn_lost(c, "it sent a message out of turn");
		return;
	}
	if (type == PLANE_PAUSE_REQ || type == PLANE_RESUME_REQ) /* its silence, as the chief counts it */
		plane_conn_pause(c, type == PLANE_PAUSE_REQ);
	up_fwd(c, frame, len, 0, "");
}

static void on_dropped(struct conn *c)
{
	if (!c->authed && !c->held && !c->tid)
		c->p->npending--;
}

/* A node's connection was lost: the chief hears it, and decides. */
static void on_lost(struct conn *c, const char *why)
{
	struct plane_msg *m;
	unsigned char out[4 + PLANE_MAX_FRAME];
	int n;

	if (!c->tid || !(m = calloc(1, sizeof(*m))))
		return;
	m->type = PLANE_GONE;
	m->fwd.id = c->tid;
	m->fwd.flags = c->peer_gone ? PLANE_FWD_HOST_GONE : 0;
	snprintf(m->cause.text, sizeof(m->cause.text), "%s", why);
	n = plane_encode(m, out, sizeof(out));
	free(m);
	if (n > 0)
		up_frame(c->p, out, (size_t)n);
}

static void on_connected(struct conn *c, int err)
{
	(void)c;
	(void)err; /* accepted, never connected */
}

const struct plane_side plane_relay_side = {
	.frame = on_frame, .dropped = on_dropped, .lost = on_lost, .connected = on_connected,
};

static void on_give_up(evutil_socket_t fd, short what, void *arg);

int plane_relay_open(struct plane *p, char *err, size_t errlen)
{
	char why[256];
	int f = p->cfg->fanout, r, last = p->rank + f - 1 < p->cfg->nnodes - 1 ? p->rank + f - 1 : p->cfg->nnodes - 1;

	if (!(p->relay = calloc(1, sizeof(*p->relay))) ||
	    !(p->relay->told = calloc((size_t)f, sizeof(bool))) ||
	    !(p->relay->ev_give_up = evtimer_new(p->base, on_give_up, p))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->relay->group = last - p->rank;
	r = plane_chief_listen(p, why, sizeof(why));
	if (r == -EADDRINUSE) {
		/* Another slotrun of this host listens there (the chief, or
		 * another relay: several nodes on one host): our group's nodes
		 * join it, and it passes them on as any relay does. */
		plane_say(p, "note: node %d cannot relay for nodes %d-%d: %s; they join the slotrun that listens there "
			  "(another node of this host)", p->rank, p->rank + 1, last, why);
		plane_chief_close(p);
		plane_relay_close(p);
		return 0;
	}
	if (r < 0)
		snprintf(err, errlen, "node %d cannot relay for nodes %d-%d: %s", p->rank, p->rank + 1, last, why);
	return r;
}

bool plane_relay_end_held(struct plane *p)
{
	if (!p->relay || !p->relay->holding)
		return false;
	plane_end_job(p, p->relay->code, NULL);
	return true;
}

bool plane_relay_hold_abort(struct plane *p, int code)
{
	struct plane_relay *r = p->relay;
	struct timeval tv;

	if (!r || r->ntold == r->group)
		return false;
	r->holding = true;
	r->code = code;
	tv = clock_tv(p->join_deadline > clock_mono() ? p->join_deadline - clock_mono() : 0);
	evtimer_add(r->ev_give_up, &tv);
	return true;
}

void plane_relay_up(struct plane *p)
{
	struct plane_relay *r = p->relay;

	if (!r || r->ready)
		return;
	r->ready = true;
	p->chief_conn->batch = true;
	for (size_t off = 0; off < r->blen;) {
		long n = plane_frame_len(r->backlog + off, r->blen - off);

		if (n <= 0)
			break;
		plane_conn_queue(p->chief_conn, r->backlog + off, (size_t)n);
		off += (size_t)n;
	}
	free(r->backlog);
	r->backlog = NULL;
	r->blen = r->bcap = 0;
}

static struct conn *find(struct plane *p, uint32_t id)
{
	for (struct conn *c = p->conns; c; c = c->next)
		if (ours(c) && c->tid == id)
			return c;
	return NULL;
}

/* Node c claimed to be heard why the job will not start. */
static void told(struct conn *c)
{
	struct plane_relay *r = c->p->relay;
	int i = c->node - c->p->rank;

	if (i >= 1 && i <= r->group && !r->told[i - 1]) {
		r->told[i - 1] = true;
		r->ntold++;
	}
}

static void end_held(struct plane *p)
{
	struct plane_relay *r = p->relay;

	if (r->holding && !p->ended && r->ntold == r->group)
		plane_end_job(p, r->code, NULL);
}

static void on_give_up(evutil_socket_t fd, short what, void *arg)
{
	struct plane *p = arg;

	(void)fd;
	(void)what;
	p->relay->ntold = p->relay->group; /* those missing will not hear it */
	end_held(p);
}

/* The chief's frame for one node of ours. */
static void pass_on(struct conn *c, const unsigned char *frame, size_t n, bool close)
{
	unsigned type = frame[4];

	if (type == PLANE_ABORT || type == PLANE_MISMATCH || (type == PLANE_REFUSE && close))
		told(c);
	if (close || type == PLANE_END || type == PLANE_ABORT)
		c->closing = true; /* shut once it is written, then read to the node's close */
	if (type == PLANE_REFUSE || type == PLANE_MISMATCH)
		c->held = type == PLANE_REFUSE && !close; /* MISMATCH may follow */
	plane_conn_queue(c, frame, n);
	if (c->closing)
		plane_conn_close_soon(c);
}

void plane_relay_down(struct plane *p, const struct plane_msg *m)
{
	struct conn *c;

	if (!p->relay)
		return;
	if (m->type == PLANE_GONE) {
		if ((c = find(p, m->fwd.id)))
			plane_conn_close_soon(c);
		return;
	}
	if (m->fwd.id != PLANE_FWD_ALL) {
		if ((c = find(p, m->fwd.id)))
			pass_on(c, m->fwd.frame, m->fwd.len, m->fwd.flags & PLANE_FWD_CLOSE);
		end_held(p);
		return;
	}
	/* a PAUSE for our own stop: our nodes heard it from us already */
	if (m->fwd.frame[4] == PLANE_PAUSE && m->fwd.len >= 13 &&
	    (int)((uint32_t)m->fwd.frame[9] << 24 | (uint32_t)m->fwd.frame[10] << 16 |
		  (uint32_t)m->fwd.frame[11] << 8 | m->fwd.frame[12]) == p->rank)
		return;
	for (struct conn *n, *k = p->conns; k; k = n) {
		n = k->next; /* a pass_on may close k */
		if (ours(k) && k->authed && !k->closing && k->tid != m->fwd.except)
			pass_on(k, m->fwd.frame, m->fwd.len, false);
	}
}

void plane_relay_upstream_lost(struct plane *p, const struct plane_cause *cause)
{
	struct plane_msg *m;

	if (!p->relay || !(m = calloc(1, sizeof(*m))))
		return;
	m->type = PLANE_GONE;
	m->cause = *cause;
	for (struct conn *n, *c = p->conns; c; c = n) {
		n = c->next;
		if (ours(c) && c->authed && !c->closing) {
			c->closing = true;
			plane_conn_send(c, m);
			plane_conn_close_soon(c);
		}
	}
	free(m);
}

void plane_relay_pause(struct plane *p, int sig)
{
	struct plane_msg *m;

	if (!p->relay || !(m = calloc(1, sizeof(*m))))
		return;
	m->type = PLANE_PAUSE;
	m->sig = sig;
	m->node = p->rank;
	for (struct conn *c = p->conns; c; c = c->next)
		if (ours(c) && c->authed && !c->closing)
			plane_conn_send(c, m);
	free(m);
}

void plane_relay_close(struct plane *p)
{
	if (!p->relay)
		return;
	if (p->relay->ev_give_up)
		event_free(p->relay->ev_give_up);
	free(p->relay->told);
	free(p->relay->backlog);
	free(p->relay);
	p->relay = NULL;
}
