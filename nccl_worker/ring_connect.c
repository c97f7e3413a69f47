// SPDX-License-Identifier: MIT
/* The TCP ring's connections (comm_internal.h: comm_ring_connect).
 *
 * Each rank connects to its right neighbour's data plane, says HELLO (its
 * rank and a nonce, sealed with an HMAC bound to the nonce the neighbour's
 * data plane drew for this run, which the authenticated table carried),
 * and accepts its left neighbour's connection.  No round trip: every rank
 * connects before it accepts, and a connection completes in the
 * listener's backlog without accept(), so this cannot deadlock.  A HELLO
 * recorded in another run fails (the nonce differs), and a ring takes one
 * left neighbour only.
 *
 * Until the left neighbour has proved itself, every connection that comes
 * is held, at most RING_CANDIDATES at once, and read as it speaks: a
 * neighbour slow to send its HELLO (a machine so loaded that it is not
 * scheduled for seconds) is not dropped for a stranger, which it would
 * never know, and silent strangers cost a newcomer at most
 * RING_STRANGER_S each (rdv_admit decides, as for rank 0's pending
 * connections). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "comm_internal.h"
#include "rdv_plan.h"
#include "sock.h"

#define LABEL_HELLO "slotrun-ring-hello"
#define RING_CANDIDATES 8
#define RING_STRANGER_S 5

static int resolve(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *res;
	char sport[16];
	int r;

	snprintf(sport, sizeof(sport), "%d", port);
	r = getaddrinfo(host, sport, &hints, &res);
	if (r != 0)
		return r == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void ring_tune(struct ring *g, int fd)
{
	int local = sock_is_local(fd) == 1;

	(void)sock_tune(fd, local ? COMM_RING_SOCKBUF_LOCAL : COMM_RING_SOCKBUF);
	g->buf = COMM_RING_SOCKBUF_LOCAL;
	if (fd == g->send_fd)
		g->send_local = local;
	else
		g->recv_local = local;
}

/* Connects to the right neighbour and says HELLO. */
static int say_hello(struct slotcomm *c, struct ring *g, int64_t deadline)
{
	int right = g->right;
	struct sockaddr_storage ss;
	socklen_t len = 0;
	uint8_t buf[FRAME_HDR_LEN + FRAME_HELLO_LEN];
	struct frame_hello hello = { .rank = (uint32_t)c->rank };
	long n;
	int r;

	r = resolve(c->peers[right].addr, c->peers[right].port, &ss, &len);
	if (r < 0)
		return comm_init_err(c, r, "rank %d's data address %s is not numeric", right,
				     comm_peer_addr(c, right));
	r = sock_connect((struct sockaddr *)&ss, len, 0, deadline, &g->send_fd);
	if (r < 0)
		return comm_init_err(c, r, "cannot connect to ring neighbour rank %d at %s: %s", right,
				     comm_peer_addr(c, right),
				     r == -ETIMEDOUT ? "timed out" : strerror(-r));
	ring_tune(g, g->send_fd);
	auth_nonce(hello.nonce);
	n = frame_hello_encode(&hello, buf + FRAME_HDR_LEN, sizeof(buf) - FRAME_HDR_LEN);
	frame_seal(buf + FRAME_HDR_LEN, (size_t)n, c->cfg.secret, LABEL_HELLO,
		   c->peers[right].ring_nonce, hello.nonce);
	frame_encode_hdr(buf, FRAME_HELLO, 0, (uint64_t)n);
	r = sock_send_all(g->send_fd, buf, FRAME_HDR_LEN + (size_t)n, deadline);
	if (r < 0)
		return comm_init_io_err(c, r, right, "while connecting the ring");
	return 0;
}

/* A connection that may be the left neighbour, and what it said so far. */
struct cand {
	int fd;
	int64_t since;
	size_t got;
	uint8_t buf[FRAME_HDR_LEN + FRAME_HELLO_LEN];
};

struct cands {
	struct cand c[RING_CANDIDATES];
	int n;
};

/* Closes candidate i, after reading what it sent (a little of it): a
 * socket closed with unread bytes is reset rather than ended. */
static void cand_drop(struct cands *cs, int i)
{
	char sink[512];

	for (int k = 0; k < 8 && recv(cs->c[i].fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; k++)
		;
	close(cs->c[i].fd);
	cs->c[i] = cs->c[--cs->n];
}

static int cand_oldest(const struct cands *cs)
{
	int o = 0;

	for (int i = 1; i < cs->n; i++)
		if (cs->c[i].since < cs->c[o].since)
			o = i;
	return o;
}

/* Reads what candidate k has sent: 1 when it proved to be the left
 * neighbour, 0 while its HELLO is not complete, -1 when it is no
 * neighbour (gone, or said something else). */
static int cand_read(struct slotcomm *c, int left, struct cand *k)
{
	size_t need = FRAME_HDR_LEN;
	struct frame_hdr h;
	struct frame_hello got;
	const char *why;
	ssize_t n;

	if (k->got >= FRAME_HDR_LEN)
		need += FRAME_HELLO_LEN;
	n = recv(k->fd, k->buf + k->got, need - k->got, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if (n == 0)
		return -1;
	k->got += (size_t)n;
	if (k->got == FRAME_HDR_LEN &&
	    (frame_decode_hdr(k->buf, FRAME_HELLO_LEN, &h, &why) < 0 || h.type != FRAME_HELLO ||
	     h.len != FRAME_HELLO_LEN))
		return -1;
	if (k->got < FRAME_HDR_LEN + FRAME_HELLO_LEN)
		return 0;
	if (frame_hello_decode(k->buf + FRAME_HDR_LEN, FRAME_HELLO_LEN, &got, &why) < 0 ||
	    got.rank != (uint32_t)left ||
	    !frame_sealed(k->buf + FRAME_HDR_LEN, FRAME_HELLO_LEN, c->cfg.secret, LABEL_HELLO,
			  c->peers[c->rank].ring_nonce, got.nonce))
		return -1;
	return 1;
}

/* Takes the connections waiting on the listener while there is room (the
 * oldest candidate making room once it had RING_STRANGER_S). */
static void cand_accept(struct cands *cs, int dlfd, int64_t now)
{
	for (;;) {
		int64_t since = cs->n ? cs->c[cand_oldest(cs)].since : now, when;
		enum rdv_admit a = rdv_admit(cs->n, RING_CANDIDATES, since, now,
					     (int64_t)RING_STRANGER_S * 1000000000, &when);
		int fd;

		if (a == RDV_WAIT)
			return;
		fd = accept4(dlfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		if (a == RDV_EVICT)
			cand_drop(cs, cand_oldest(cs));
		cs->c[cs->n++] = (struct cand){ .fd = fd, .since = now };
	}
}

/* Accepts the left neighbour's connection on dlfd into g->recv_fd. */
static int take_left(struct slotcomm *c, struct ring *g, int dlfd, int64_t deadline)
{
	struct cands cs = { .n = 0 };
	struct pollfd pfd[RING_CANDIDATES + 1];
	int r = 0;

	while (g->recv_fd < 0 && r == 0) {
		int64_t now = sock_now_ns(), until = deadline;
		int np = 0;

		if (sock_poll_ms(deadline) == 0) {
			r = comm_init_err(c, -ETIMEDOUT, "timed out after %gs waiting for ring "
					  "neighbour peer rank %d to connect", c->cfg.timeout_s,
					  g->left);
			break;
		}
		for (; np < cs.n; np++)
			pfd[np] = (struct pollfd){ .fd = cs.c[np].fd, .events = POLLIN };
		if (cs.n < RING_CANDIDATES || rdv_admit(cs.n, RING_CANDIDATES,
							cs.c[cand_oldest(&cs)].since, now,
							(int64_t)RING_STRANGER_S * 1000000000,
							&until) != RDV_WAIT)
			pfd[np++] = (struct pollfd){ .fd = dlfd, .events = POLLIN };
		if (poll(pfd, (nfds_t)np, sock_poll_ms(until)) < 0 && errno != EINTR) {
			r = comm_init_err(c, -errno, "poll: %s", strerror(errno));
			break;
		}
		/* from the last: dropping one moves the last into its place */
		for (int i = cs.n - 1; i >= 0 && g->recv_fd < 0; i--) {
			int k;

			if (!pfd[i].revents)
				continue;
			k = cand_read(c, g->left, &cs.c[i]);
			if (k < 0) {
				cand_drop(&cs, i);
			} else if (k > 0) {
				g->recv_fd = cs.c[i].fd;
				cs.c[i] = cs.c[--cs.n];
			}
		}
		if (g->recv_fd < 0)
			cand_accept(&cs, dlfd, sock_now_ns());
	}
	while (cs.n > 0)
		cand_drop(&cs, 0);
	if (g->recv_fd >= 0) {
		(void)sock_set_nonblock(g->recv_fd, 0);
		ring_tune(g, g->recv_fd);
	}
	return r;
}

int comm_ring_connect(struct slotcomm *c, struct ring *g, int dlfd, int64_t deadline)
{
	int r = say_hello(c, g, deadline);

	return r < 0 ? r : take_left(c, g, dlfd, deadline);
}

void comm_ring_close(struct ring *g)
{
	if (g->send_fd >= 0)
		close(g->send_fd);
	if (g->recv_fd >= 0)
		close(g->recv_fd);
	g->send_fd = g->recv_fd = -1;
	free(g->stage);
	g->stage = NULL;
}
