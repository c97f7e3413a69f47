// SPDX-License-Identifier: MIT
#include "plane_conn.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "plane_tunnel.h"
#include "sock.h"

/* A peer that stops reading gets this much queued before it counts as lost
 * (a relay's connection: for each node behind it). */
#define OUT_MAX (1 << 20)
#define OUT_MAX_BATCH (64 << 20)
/* A read takes up to this much, or the rest of a larger frame under way;
 * a connection that carries many nodes' frames (batch) takes more. */
#define IN_CHUNK 1024
#define IN_CHUNK_BATCH 65536

/* The side that handles c: its own, or the plane's. */
static const struct plane_side *side_of(const struct conn *c)
{
	return c->side ? c->side : c->p->side;
}

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);

struct conn *plane_conn_new(struct plane *p, int fd, const char *peer)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->p = p;
	c->fd = fd;
	c->node = -1;
	c->born = c->last_rx = c->last_tx = clock_mono();
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->ev_read = event_new(p->base, fd, EV_READ | EV_PERSIST, on_read, c);
	c->ev_write = event_new(p->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
	if (!c->ev_read || !c->ev_write) {
		if (c->ev_read)
			event_free(c->ev_read);
		if (c->ev_write)
			event_free(c->ev_write);
		free(c);
		return NULL;
	}
	c->next = p->conns;
	p->conns = c;
	return c;
}

struct conn *plane_conn_new_virtual(struct plane *p, struct conn *via, uint32_t tid, const char *peer)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	*c = (struct conn){ .p = p, .fd = -1, .node = -1, .virt = true, .via = via, .tid = tid };
	c->born = c->last_rx = c->last_tx = clock_mono();
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->next = p->conns;
	p->conns = c;
	return c;
}

static void unlink_conn(struct conn *c)
{
	for (struct conn **pp = &c->p->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
}

/* A node behind a relay: the relay closes its connection (unless the
 * relay's is gone). */
static void drop_virtual(struct conn *c)
{
	struct plane *p = c->p;

	unlink_conn(c);
	side_of(c)->dropped(c);
	plane_tunnel_dropped(c);
	c->via = NULL;
	c->next = p->dead;
	p->dead = c;
}

void plane_conn_drop(struct conn *c)
{
	struct plane *p = c->p;

	if (c->virt) {
		if (c->via)
			drop_virtual(c);
		return;
	}
	if (c->fd < 0)
		return;
	event_del(c->ev_read);
	event_del(c->ev_write);
	close(c->fd);
	c->fd = -1;
	unlink_conn(c);
	side_of(c)->dropped(c);
	c->next = p->dead;
	p->dead = c;
}

static void conn_free(struct conn *c)
{
	if (c->ev_read)
		event_free(c->ev_read);
	if (c->ev_write)
		event_free(c->ev_write);
	plane_tunnel_free(c);
	free(c->in);
	free(c->out);
	free(c);
}

static void bury(struct plane *p)
{
	while (p->dead) {
		struct conn *c = p->dead;
		p->dead = c->next;
		conn_free(c);
	}
}

void plane_conn_lost(struct conn *c, const char *why)
{
	plane_conn_drop(c);
	if (!c->p->ended)
		side_of(c)->lost(c, why);
}

void plane_conn_abandon(struct conn *c)
{
	struct plane *p = c->p;

	if (c->fd < 0)
		return;
	event_del(c->ev_read);
	event_del(c->ev_write);
	unlink_conn(c);
	side_of(c)->dropped(c);
	c->next = p->abandoned;
	p->abandoned = c;
}

/* Writes what the socket takes now; the rest waits for EV_WRITE. */
static void conn_flush(struct conn *c)
{
	while (c->fd >= 0 && c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			c->out_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			event_add(c->ev_write, NULL);
			return;
		}
		c->peer_gone = n < 0 && (errno == EPIPE || errno == ECONNRESET);
		plane_conn_lost(c, "connection closed");
		return;
	}
	if (c->fd < 0)
		return;
	free(c->out);
	c->out = NULL;
	c->out_off = c->out_len = c->out_cap = 0;
	event_del(c->ev_write);
	if (c->closing && !c->draining) {
		/* A close with unread bytes in our queue would reset the
		 * connection, and the peer's kernel would throw away what we
		 * just sent: end our side, read until the peer closes. */
		c->draining = true;
		c->born = clock_mono();
		shutdown(c->fd, SHUT_WR);
	}
}

/* Room for n more bytes in c->out: 0, or -ENOMEM.  Most frames leave at
 * once (conn_flush frees the queue then), so it starts at their size. */
static int out_room(struct conn *c, size_t n)
{
	size_t cap = c->out_cap ? c->out_cap : 256;
	unsigned char *b;

	if (c->out_len + n <= c->out_cap)
		return 0;
	if (c->out_off > 0) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	while (cap < c->out_len + n)
		cap *= 2;
	if (cap == c->out_cap)
		return 0;
	b = realloc(c->out, cap);
	if (!b)
		return -ENOMEM;
	c->out = b;
	c->out_cap = cap;
	return 0;
}

void plane_conn_seal(struct conn *c, const char *secret, const unsigned char nc[AUTH_NONCE_LEN],
		     const unsigned char nn[AUTH_NONCE_LEN], bool chief)
{
	plane_seal_init(&c->seal, secret, nc, nn, chief);
}

void plane_conn_queue(struct conn *c, const unsigned char *frame, size_t n)
{
	unsigned char sealed[4 + PLANE_MAX_FRAME];

	if (c->virt) {
		if (c->via)
			plane_tunnel_send(c, frame, n);
		return;
	}
	if (c->fd < 0)
		return;
	if (c->sealed_out) {
		int len;

		if (n > sizeof(sealed) || (memcpy(sealed, frame, n),
					   (len = plane_seal(&c->seal, sealed, n, sizeof(sealed)))) < 0) {
			plane_conn_lost(c, "cannot seal a message");
			return;
		}
		frame = sealed;
		n = (size_t)len;
	}
	if (c->out_len - c->out_off + n > (c->batch ? OUT_MAX_BATCH : OUT_MAX)) {
		plane_conn_lost(c, "it stopped reading");
		return;
	}
	if (out_room(c, n) < 0) {
		plane_conn_lost(c, "out of memory");
		return;
	}
	memcpy(c->out + c->out_len, frame, n);
	c->out_len += n;
	c->last_tx = clock_mono();
	if (c->connecting)
		return;
	if (c->batch) /* the rest of this pass's frames join it: one write */
		event_active(c->ev_write, EV_WRITE, 1);
	else
		conn_flush(c);
}

void plane_conn_close_soon(struct conn *c)
{
	if (c->virt) {
		plane_conn_drop(c);
		return;
	}
	c->closing = true;
	if (c->fd >= 0 && !c->connecting && !c->draining)
		conn_flush(c);
}

void plane_conn_send(struct conn *c, const struct plane_msg *m)
{
	unsigned char frame[4 + PLANE_MAX_FRAME];
	int n = plane_encode(m, frame, sizeof(frame));

	if (n > 0) /* our own fields are bounded: it always fits */
		plane_conn_queue(c, frame, (size_t)n);
}

/* connect(2) finished: its outcome goes to the side. */
static void on_connected(struct conn *c)
{
	int e = 0;
	socklen_t el = sizeof(e);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	if (!e) {
		c->connecting = false;
		c->born = c->last_rx = clock_mono();
		event_del(c->ev_write);
		event_add(c->ev_read, NULL);
	}
	side_of(c)->connected(c, e);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	if (c->connecting)
		on_connected(c);
	else
		conn_flush(c);
}

/* Hands every whole frame in c->in to the side, keeps the rest. */
static void take_frames(struct conn *c)
{
	/* A connection that carries many nodes' frames takes them in place
	 * and moves the rest once: one move per frame would copy a read's
	 * bytes once for every frame in it.  Any other keeps its first frame
	 * at c->in, where its side may look (the bytes a stranger sent). */
	bool batch = c->batch;
	size_t off = 0;

	while (c->fd >= 0 && !c->p->ended) {
		unsigned char *f = c->in + off;
		long len = plane_frame_len(f, c->in_len - off);

		if (len <= 0)
			break;
		if (c->sealed_in) {
			long plain = plane_open_frame(&c->seal, f, (size_t)len);

			if (plain < 0) {
				plane_conn_lost(c, "it sent a message that failed authentication (forged, "
						"replayed or reordered)");
				return;
			}
			side_of(c)->frame(c, f, (size_t)plain);
		} else {
			side_of(c)->frame(c, f, (size_t)len);
		}
		if (c->fd < 0)
			return;
		if (batch) {
			off += (size_t)len;
		} else {
			memmove(c->in, c->in + len, c->in_len - (size_t)len);
			c->in_len -= (size_t)len;
		}
	}
	if (c->fd < 0)
		return;
	if (off) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
	/* lost, also before the handshake: the side decides what that means
	 * (a node names a stranger on its chief's port, the chief drops one) */
	if (!c->p->ended && plane_frame_len(c->in, c->in_len) < 0)
		plane_conn_lost(c, "it sent a malformed message");
}

/* Room in c->in for the next read: IN_CHUNK, or the whole of a larger
 * frame whose header came.  0, or -ENOMEM. */
static int in_room(struct conn *c)
{
	long size = plane_frame_size(c->in, c->in_len);
	size_t chunk = c->batch ? IN_CHUNK_BATCH : IN_CHUNK;
	size_t want = size > 0 && (size_t)size > c->in_len + chunk ? (size_t)size : c->in_len + chunk;
	unsigned char *b;

	if (c->in_cap - c->in_len >= chunk || (size > 0 && c->in_cap >= (size_t)size))
		return 0;
	b = realloc(c->in, want);
	if (!b)
		return -ENOMEM;
	c->in = b;
	c->in_cap = want;
	return 0;
}

/* Between frames a connection holds no input buffer. */
static void in_release(struct conn *c)
{
	if (c->fd < 0 || c->in_len)
		return;
	free(c->in);
	c->in = NULL;
	c->in_cap = 0;
}

/* A member with its chief's connection alone puts its tick off while the
 * chief's heartbeats come: each of them wakes the member once (it answers
 * them, plane_member.c), and no tick of its own wakes it besides.  The
 * tick comes QUIET_TICKS heartbeat intervals after the last word, then
 * every half interval again (on_tick), so a silence is still judged
 * within half an interval of the timeout. */
#define QUIET_TICKS 1.5

static void quiet_tick(struct conn *c)
{
	struct plane *p = c->p;
	struct timeval tv;

	if (p->chief || c != p->conns || c->next || !c->authed || c->fd < 0 || !p->ev_tick)
		return;
	tv = clock_tv(QUIET_TICKS * p->interval);
	event_add(p->ev_tick, &tv); /* for a persistent event: its period too */
	p->tick_quiet = true;
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	ssize_t n;

	/* a stall of ours comes first: what this read brings (a peer that gave
	 * us up closed its end) is its consequence */
	plane_conn_awake(c->p);
	if (c->fd < 0 || c->p->ended)
		return;
	if (c->connecting)
		return;
	if (c->draining) {
		unsigned char sink[4096];

		n = read(c->fd, sink, sizeof(sink));
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			plane_conn_drop(c);
		return;
	}
	if (in_room(c) < 0) {
		plane_conn_lost(c, "out of memory");
		return;
	}
	n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		in_release(c);
		return;
	}
	if (n <= 0) {
		/* a reset is a close too: the peer's process ended with our
		 * bytes unread, which one word describes for the user */
		c->peer_gone = n == 0 || errno == ECONNRESET;
		plane_conn_lost(c, c->peer_gone ? "connection closed" : strerror(errno));
		return;
	}
	c->in_len += (size_t)n;
	c->last_rx = clock_mono();
	take_frames(c);
	in_release(c);
	quiet_tick(c);
}

/* A connection whose secret differs, held until the join names the odd
 * secret (the chief's side), or refused and waiting to hear it (a
 * node's): the join timeout bounds it, and the chief holds at most one
 * per node. */
static bool waits_for_verdict(const struct conn *c)
{
	if (c->side) /* a relay's: until the chief's verdict comes through it */
		return c->held;
	return c->p->chief ? c->node >= 0 : c->p->mstate == M_REFUSED;
}

/* Seconds since the peer's host last acknowledged what we sent (TCP's
 * own ACKs, which a host sends whether or not its slotrun runs), or -1. */
static double host_ago(const struct conn *c)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 || len < sizeof(ti))
		return -1;
	return ti.tcpi_last_ack_recv / 1000.0;
}

/* c's peer is lost for silence: a node of an elastic job that gave its
 * chief up does not close the connection (docs/job-plane.md, "No two
 * jobs"). */
static void silent_lost(struct conn *c, const char *why)
{
	struct plane *p = c->p;

	if (!p->chief && plane_elastic(p->cfg) && p->ever_started) {
		plane_conn_abandon(c);
		side_of(c)->lost(c, why);
	} else {
		plane_conn_lost(c, why);
	}
}

/* One connection's deadlines at now: a drain or a handshake that took too
 * long, a peer silent too long (plane_silence: unless its host still
 * answers, for a while); and our heartbeat when it is due. */
static void check(struct conn *c, double now, const char *silent)
{
	struct plane *p = c->p;
	enum plane_silence verdict;

	if (c->fd < 0 || c->connecting)
		return;
	if (c->draining) {
		if (now - c->born > PLANE_AUTH_DEADLINE)
			plane_conn_drop(c);
		return;
	}
	if (!c->authed) {
		if (now - c->born > PLANE_AUTH_DEADLINE && !waits_for_verdict(c))
			plane_conn_lost(c, "no answer to the handshake");
		return;
	}
	/* told, stopped, or a refused duplicate (an elastic node waiting for
	 * its round is in the job: it hears heartbeats and must send them) */
	if (c->closing || c->paused || (p->chief && c->node < 0 && !c->waiting))
		return;
	/* the host's last ACK is asked for only when the silence alone does
	 * not settle it: no system call per connection and tick otherwise (a
	 * thousand at the chief) */
	verdict = plane_silence(now - c->last_rx, -1, p->cfg->hb_timeout);
	if (verdict != PLANE_HEARD)
		verdict = plane_silence(now - c->last_rx, host_ago(c), p->cfg->hb_timeout);
	switch (verdict) {
	case PLANE_LOST_SILENT:
		silent_lost(c, silent);
		return;
	case PLANE_LOST_STALLED: {
		char why[128];

		snprintf(why, sizeof(why), "it did not answer for %g s (its host did: its slotrun is stopped or "
			 "starved)", PLANE_STALL_BOUND * p->cfg->hb_timeout);
		silent_lost(c, why);
		return;
	}
	default: /* heard, or waited for: it still gets our heartbeats */
		break;
	}
	if (now - c->last_tx >= p->interval * 0.95)
		plane_conn_send(c, &(struct plane_msg){ .type = PLANE_PING });
}

void plane_conn_pause(struct conn *c, bool paused)
{
	double hb = c->p->cfg->hb_timeout;
	int on = paused, idle = (int)hb + 1, intvl = (int)(hb / PLANE_HB_PER_TIMEOUT) + 1,
	    cnt = PLANE_HB_PER_TIMEOUT, user_ms = paused ? (int)(2 * hb * 1000) : 0;

	if (c->fd < 0 || c->paused == paused)
		return;
	c->paused = paused;
	c->last_rx = clock_mono();
	/* Best effort: without keepalive a host that vanishes while its
	 * slotrun is stopped is found only when its slotrun would have
	 * answered (TCP's own retransmission timeout). */
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms));
	(void)setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
}

void plane_conn_flush_now(struct plane *p, double seconds)
{
	double deadline = clock_mono() + seconds;

	for (struct conn *c = p->conns, *next; c; c = next) {
		next = c->next; /* a loss unlinks c */
		while (c->fd >= 0 && !c->connecting && c->out_off < c->out_len) {
			struct pollfd pf = { .fd = c->fd, .events = POLLOUT };
			double left = deadline - clock_mono();
			int n;

			if (left <= 0)
				return;
			n = poll(&pf, 1, (int)(left * 1000) + 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return;
			conn_flush(c);
		}
	}
}

void plane_conn_woke(struct plane *p)
{
	double now = clock_mono();

	p->last_run = now;
	for (struct conn *c = p->conns; c; c = c->next)
		c->last_rx = now;
}

void plane_conn_awake(struct plane *p)
{
	double now = clock_mono(), gap = now - p->last_run;

	p->last_run = now;
	if (p->ended || !plane_self_stalled(gap, p->cfg->hb_timeout))
		return;
	plane_conn_woke(p); /* what we did not read meanwhile is no silence of theirs */
	if (plane_self_given_up(gap, p->cfg->hb_timeout) && p->side->stalled)
		p->side->stalled(p, gap);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct plane *p = arg;
	double now;
	char silent[64];

	if (p->tick_quiet) { /* silence: every half interval again */
		struct timeval tv = clock_tv(p->interval / 2);

		event_add(p->ev_tick, &tv);
		p->tick_quiet = false;
	}
	bury(p);
	plane_conn_awake(p);
	now = clock_mono();
	snprintf(silent, sizeof(silent), "no heartbeat for %g s", p->cfg->hb_timeout);
	/* (a loss may close others, this one's next too: closed ones link
	 * only to closed ones) */
	for (struct conn *c = p->conns, *next; c && !p->ended; c = next) {
		next = c->next;
		check(c, now, silent);
	}
}

int plane_conn_start_tick(struct plane *p)
{
	struct timeval tv = clock_tv(p->interval / 2);

	p->last_run = clock_mono();
	p->ev_tick = event_new(p->base, -1, EV_PERSIST, on_tick, p);
	if (!p->ev_tick)
		return -ENOMEM;
	event_add(p->ev_tick, &tv);
	return 0;
}

/* One connection at our exit (linger). */
struct last_word {
	struct conn *c;
	bool shut;                /* our side is ended: all that was queued went out */
};

/* Writes what the socket takes of what is queued for lw's connection, and
 * ends our side once it is all out; then it waits only for a peer of the
 * job (authed) to close.  Returns the poll events it still waits for (0:
 * done with it). */
static short last_word_step(struct last_word *lw)
{
	struct conn *c = lw->c;

	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0)
			c->out_off += (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return POLLOUT | ((c->authed || c->draining) ? POLLIN : 0);
		else
			return 0; /* the peer is gone: nothing more to say or hear */
	}
	if (!lw->shut) {
		shutdown(c->fd, SHUT_WR);
		lw->shut = true;
	}
	return (c->authed || c->draining) ? POLLIN : 0;
}

/* Reads and discards what the peer sent: false at its close (or an error). */
static bool last_word_read(struct last_word *lw)
{
	unsigned char sink[4096];
	ssize_t got = read(lw->c->fd, sink, sizeof(sink));

	return got > 0 || (got < 0 && (errno == EAGAIN || errno == EINTR));
}

/* Every connection, however many (a chief of thousands of nodes), gets
 * what is queued for it and the end of our side, and each peer of the job
 * is read until it closes, all within a second in all.  A connection
 * closed with unread bytes would be reset, and a reset throws away what
 * the peer had not read yet of ours: the END or ABORT. */
static void linger(struct plane *p)
{
	double deadline = clock_mono() + 1.0;
	struct last_word *lw;
	struct pollfd *pf;
	nfds_t n = 0, cap = 0, open = 0;

	for (struct conn *c = p->conns; c; c = c->next)
		cap++;
	lw = calloc(cap ? cap : 1, sizeof(*lw));
	pf = calloc(cap ? cap : 1, sizeof(*pf));
	for (struct conn *c = p->conns; lw && pf && c; c = c->next)
		if (c->fd >= 0 && !c->connecting) {
			lw[n] = (struct last_word){ .c = c };
			pf[n].events = last_word_step(&lw[n]);
			pf[n].fd = pf[n].events ? c->fd : -1;
			open += pf[n].events != 0;
			n++;
		}
	while (open > 0 && clock_mono() < deadline) {
		int ms = (int)((deadline - clock_mono()) * 1000) + 1, r = poll(pf, n, ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (nfds_t i = 0; i < n; i++) {
			short ev = pf[i].revents;

			if (pf[i].fd < 0 || !ev)
				continue;
			pf[i].revents = 0;
			pf[i].events = ev & (POLLIN | POLLHUP | POLLERR) && !last_word_read(&lw[i]) ? 0 :
				       last_word_step(&lw[i]);
			if (!pf[i].events) {
				pf[i].fd = -1;
				open--;
			}
		}
	}
	free(lw);
	free(pf);
}

void plane_conn_close_all(struct plane *p)
{
	linger(p);
	while (p->conns)
		plane_conn_drop(p->conns);
	while (p->abandoned) {
		struct conn *c = p->abandoned;

		p->abandoned = c->next;
		close(c->fd);
		c->fd = -1;
		conn_free(c);
	}
	bury(p);
	if (p->ev_tick)
		event_free(p->ev_tick);
	p->ev_tick = NULL;
}
