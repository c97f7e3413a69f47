// SPDX-License-Identifier: MIT
/* The control plane: gather / broadcast / allgather / barrier /
 * should_preempt over the rendezvous connections (a star around rank 0).
 *
 * Each collective bumps c->seq on every rank; its frames carry it, so a
 * rank that calls collectives in a different order (or with other lengths)
 * is reported instead of reading someone else's bytes.  Failures go
 * through comm_fail.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "comm_internal.h"
#include "shm.h"
#include "sock.h"

/* --- transfers ----------------------------------------------------------- */

/* One framed message to or from one peer on its control connection. */
struct xfer {
	int peer;
	int send;
	unsigned type;
	uint8_t hdr[FRAME_HDR_LEN];
	size_t hdr_done;
	uint8_t *data;
	size_t len, done;
	int lost;   /* the I/O error that ended it (xfer_lose), or 0 */
};

static int xfer_complete(const struct xfer *x)
{
	return x->hdr_done == FRAME_HDR_LEN && x->done == x->len;
}

/* Still to move: neither complete nor lost. */
static int xfer_open(const struct xfer *x)
{
	return !xfer_complete(x) && !x->lost;
}

/* The peer went away.  Not a failure yet: a peer that failed on its own
 * first may have made this one leave (through the node's shared memory)
 * before its abort frame came, which xfer_run then reads, on another
 * connection, during the grace period. */
static int xfer_lose(struct xfer *x, int rc)
{
	x->lost = rc;
	return 0;
}

static int xfer_lost_fail(struct slotcomm *c, const struct xfer *x, const char *what)
{
	char phrase[96];

	comm_io_phrase(c, x->lost, phrase, sizeof(phrase));
	return comm_fail(c, x->lost, x->peer, "peer rank %d %s during %s", x->peer, phrase, what);
}

/* Moves what can move without blocking.  Returns 1 on progress, 0 if
 * nothing moved, or the failure. */
static int xfer_step(struct slotcomm *c, struct xfer *x, const char *what)
{
	int fd = c->ctl[x->peer];
	ssize_t k;
	int r;

	if (x->send) {
		struct iovec iov[2] = {
			{ x->hdr + x->hdr_done, FRAME_HDR_LEN - x->hdr_done },
			{ x->len ? x->data + x->done : NULL, x->len - x->done },
		};
		struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
		size_t h;

		if (iov[0].iov_len == 0) {
			msg.msg_iov = iov + 1;
			msg.msg_iovlen = 1;
		}
		k = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : xfer_lose(x, -errno);
		h = FRAME_HDR_LEN - x->hdr_done;
		if ((size_t)k < h) {
			x->hdr_done += (size_t)k;
		} else {
			x->hdr_done = FRAME_HDR_LEN;
			x->done += (size_t)k - h;
		}
		c->ctl_mid[x->peer] = !xfer_complete(x);
		return k > 0;
	}

	if (x->hdr_done < FRAME_HDR_LEN) {
		struct frame_hdr h;
		const char *why;

		k = recv(fd, x->hdr + x->hdr_done, FRAME_HDR_LEN - x->hdr_done, MSG_DONTWAIT);
		if (k == 0)
			return xfer_lose(x, SOCK_EOF);
		if (k < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : xfer_lose(x, -errno);
		x->hdr_done += (size_t)k;
		if (x->hdr_done < FRAME_HDR_LEN)
			return 1;
		if (frame_decode_hdr(x->hdr, UINT64_MAX, &h, &why) < 0)
			return comm_fail(c, -EPROTO, x->peer,
					 "peer rank %d sent a malformed message during %s: %s",
					 x->peer, what, why);
		if (h.type == FRAME_ABORT)
			return comm_take_abort(c, x->peer, &h, what);
		if (h.type != x->type || h.seq != c->seq || h.coll != c->cur.kind) {
			r = comm_peer_frame(c, x->peer, &h, NULL);
			/* Ahead of us is impossible here: it would have needed
			 * this collective's frame from us first. */
			return r < 0 ? r : comm_fail(c, -EPROTO, x->peer,
						     "peer rank %d sent %s #%llu during %s #%llu",
						     x->peer, frame_type_name(h.type),
						     (unsigned long long)h.seq, what,
						     (unsigned long long)c->seq);
		}
		if (h.len != x->len)
			return comm_fail(c, -EPROTO, x->peer,
					 "peer rank %d passed %llu bytes to %s, this rank %zu", x->peer,
					 (unsigned long long)h.len, what, x->len);
		return 1;
	}
	k = recv(fd, x->data + x->done, x->len - x->done, MSG_DONTWAIT);
	if (k == 0)
		return xfer_lose(x, SOCK_EOF);
	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : xfer_lose(x, -errno);
	x->done += (size_t)k;
	return 1;
}

/* What a control collective watches besides its own transfers: the control
 * connections it is not reading from right now (an abort, or a peer's
 * frame of another collective), the left ring neighbour's stream and the
 * node's shared memory (a peer in an all-reduce meanwhile: a divergence).
 * c->watch holds the control peers watched, rebuilt before each poll in
 * O(size); c->ahead marks the peers found ahead of this rank, no longer
 * watched, and c->reading those a transfer of this collective still reads
 * from (xfer_run keeps it). */
struct side {
	int ring;      /* the ring connection is still worth watching */
	int nw;        /* pollfds of the watched control peers */
	int ring_pfd;  /* index of the ring's pollfd, or -1 */
};

static void side_init(struct slotcomm *c, struct side *w)
{
	memset(c->ahead, 0, (size_t)c->size);
	w->ring = c->ring.n > 1 && c->ring.recv_fd >= 0;
}

/* Adds the side's pollfds after the np of the transfers; returns the new
 * count. */
static int side_fill(struct slotcomm *c, struct side *w, int np)
{
	c->nwatch = 0;
	for (int p = c->rank == 0 ? 1 : 0; p < (c->rank == 0 ? c->size : 1); p++)
		if (c->ctl[p] >= 0 && !c->ahead[p] && !c->reading[p])
			c->watch[c->nwatch++] = p;
	w->nw = comm_watch_fill(c, c->pfd + np);
	np += w->nw;
	w->ring_pfd = -1;
	if (w->ring) {
		w->ring_pfd = np;
		c->pfd[np++] = (struct pollfd){ .fd = c->ring.recv_fd, .events = POLLIN };
	}
	return np;
}

/* After a poll (or a sleep slice): 0, or the failure found. */
static int side_check(struct slotcomm *c, struct side *w, int np0, const char *what)
{
	int r = 0, done;

	if (w->nw) {
		/* Those it stops watching are ahead of us. */
		for (int i = 0; i < c->nwatch; i++)
			c->ahead[c->watch[i]] = 1;
		r = comm_watch_check(c, c->pfd + np0, w->nw, what);
		for (int i = 0; i < c->nwatch; i++)
			c->ahead[c->watch[i]] = 0;
	}
	if (r == 0 && w->ring_pfd >= 0 && c->pfd[w->ring_pfd].revents) {
		r = comm_ring_peek(c, &c->ring, &done);
		if (done)
			w->ring = 0;
	}
	if (r == 0 && c->shm)
		r = shm_check_peers(c);
	return r;
}

/* Runs the transfers to completion.  The deadline restarts whenever they
 * make progress (COMM_SEND_PROGRESS): a slow but live peer is fine, a
 * silent one is not.  With shared memory, sleeps in slices to look at the
 * node's peers between them. */
static int xfer_loop(struct slotcomm *c, struct xfer *x, int nx, const char *what)
{
	int64_t deadline = sock_now_ns() + c->timeout_ns, grace_end = 0;
	uint64_t sent = 0;  /* since the deadline was last pushed back */
	const struct xfer *lost = NULL;  /* the first one lost, during the grace */
	struct side w;

	for (int i = 0; i < nx; i++)
		if (x[i].send)
			frame_encode_coll_hdr(x[i].hdr, x[i].type, c->cur.kind, c->seq, x[i].len);
	side_init(c, &w);

	for (;;) {
		int np = 0, nx_pfd, ms, r;

		for (int i = 0; i < nx; i++)
			if (xfer_open(&x[i]))
				c->pfd[np++] = (struct pollfd){ .fd = c->ctl[x[i].peer],
								.events = x[i].send ? POLLOUT : POLLIN };
		if (np == 0 && !lost)
			return 0;
		nx_pfd = np;
		np = side_fill(c, &w, np);
		if (lost && sock_poll_ms(grace_end) == 0)
			return xfer_lost_fail(c, lost, what);
		ms = sock_poll_ms(lost ? grace_end : deadline);
		if (ms == 0 && !lost) {
			char list[200];
			size_t o = 0;
			int shown = 0, first = -1;

			list[0] = '\0';
			for (int i = 0; i < nx && o < sizeof(list) - 16; i++) {
				if (xfer_complete(&x[i]))
					continue;
				if (first < 0)
					first = x[i].peer;
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%d",
						      shown++ ? ", " : "", x[i].peer);
			}
			return comm_fail_timeout(c, shown == 1 ? first : -1, what,
						 "timed out after %gs (SLOTRUN_TIMEOUT) waiting for peer "
						 "rank%s %s during %s", c->cfg.timeout_s,
						 shown > 1 ? "s" : "", list, what);
		}
		if (c->shm && ms > COMM_SHM_LOOK_MS)
			ms = COMM_SHM_LOOK_MS;
		r = poll(c->pfd, (nfds_t)np, ms);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return comm_fail(c, -errno, -1, "poll: %s", strerror(errno));
		}
		r = side_check(c, &w, nx_pfd, what);
		if (r < 0)
			return r;
		np = 0;
		for (int i = 0; i < nx; i++) {
			if (!xfer_open(&x[i]))
				continue;
			if (c->pfd[np++].revents) {
				size_t before = x[i].hdr_done + x[i].done;

				r = xfer_step(c, &x[i], what);
				if (r < 0)
					return r;
				if (!x[i].send && xfer_complete(&x[i]))
					c->reading[x[i].peer] = 0;
				if (x[i].lost && !lost) {
					int64_t g = (int64_t)COMM_ABORT_GRACE_MS * 1000000;

					lost = &x[i];
					grace_end = sock_now_ns() +
						    (g < c->timeout_ns ? g : c->timeout_ns);
				}
				if (x[i].send)
					sent += x[i].hdr_done + x[i].done - before;
				if ((r > 0 && !x[i].send) || sent >= COMM_SEND_PROGRESS ||
				    (x[i].send && xfer_complete(&x[i]))) {
					deadline = sock_now_ns() + c->timeout_ns;
					sent = 0;
				}
			}
		}
	}
}

/* xfer_loop, with c->reading marking the peers it reads from meanwhile. */
static int xfer_run(struct slotcomm *c, struct xfer *x, int nx, const char *what)
{
	int r;

	for (int i = 0; i < nx; i++)
		c->reading[x[i].peer] |= !x[i].send;
	r = xfer_loop(c, x, nx, what);
	for (int i = 0; i < nx; i++)
		c->reading[x[i].peer] = 0;
	return r;
}

/* --- collectives --------------------------------------------------------- */

static int begin(struct slotcomm *c, enum frame_coll kind)
{
	int r = comm_usable(c);

	if (r == 0) {
		c->seq++;
		c->cur = (struct comm_pos){ .kind = (uint8_t)kind, .seq = c->seq };
	}
	return r;
}

/* Rank 0 receives len bytes from every rank into recv + rank * len. */
static int gather_impl(struct slotcomm *c, const void *send, size_t len, void *recv, const char *what)
{
	struct xfer *x;
	int nx = 0, r;

	if (c->rank == 0) {
		if (len && recv != send)
			memmove(recv, send, len);
		if (c->size == 1)
			return 0;
		x = calloc((size_t)c->size - 1, sizeof(*x));
		if (!x)
			return comm_fail(c, -ENOMEM, -1, "out of memory");
		for (int p = 1; p < c->size; p++)
			x[nx++] = (struct xfer){ .peer = p, .type = FRAME_GATHER,
						 .data = len ? (uint8_t *)recv + (size_t)p * len : NULL,
						 .len = len };
	} else {
		x = calloc(1, sizeof(*x));
		if (!x)
			return comm_fail(c, -ENOMEM, -1, "out of memory");
		x[nx++] = (struct xfer){ .peer = 0, .send = 1, .type = FRAME_GATHER,
					 .data = (uint8_t *)(uintptr_t)send, .len = len };
	}
	r = xfer_run(c, x, nx, what);
	free(x);
	return r;
}

static int bcast_impl(struct slotcomm *c, void *buf, size_t len, const char *what)
{
	struct xfer *x;
	int nx = 0, r;

	if (c->size == 1)
		return 0;
	x = calloc(c->rank == 0 ? (size_t)c->size - 1 : 1, sizeof(*x));
	if (!x)
		return comm_fail(c, -ENOMEM, -1, "out of memory");
	if (c->rank == 0) {
		for (int p = 1; p < c->size; p++)
			x[nx++] = (struct xfer){ .peer = p, .send = 1, .type = FRAME_BCAST,
						 .data = buf, .len = len };
	} else {
		x[nx++] = (struct xfer){ .peer = 0, .type = FRAME_BCAST, .data = buf, .len = len };
	}
	r = xfer_run(c, x, nx, what);
	free(x);
	return r;
}

static int check_total(struct slotcomm *c, size_t len, const char *what)
{
	if (len > SIZE_MAX / (size_t)c->size)
		return comm_fail(c, -EOVERFLOW, -1, "%s of %zu bytes from %d ranks overflows", what,
				 len, c->size);
	return 0;
}

int slotcomm_gather(struct slotcomm *c, const void *send, size_t len, void *recv)
{
	int r = begin(c, FRAME_COLL_GATHER);

	if (r == 0)
		r = check_total(c, len, "gather");
	return r < 0 ? r : gather_impl(c, send, len, recv, "gather");
}

int slotcomm_broadcast(struct slotcomm *c, void *buf, size_t len)
{
	int r = begin(c, FRAME_COLL_BROADCAST);

	return r < 0 ? r : bcast_impl(c, buf, len, "broadcast");
}

int slotcomm_allgather(struct slotcomm *c, const void *send, size_t len, void *recv)
{
	int r = begin(c, FRAME_COLL_ALLGATHER);

	if (r == 0)
		r = check_total(c, len, "allgather");
	if (r == 0)
		r = gather_impl(c, send, len, recv, "allgather");
	if (r == 0)
		r = bcast_impl(c, recv, len * (size_t)c->size, "allgather");
	return r;
}

int slotcomm_barrier(struct slotcomm *c)
{
	uint8_t none = 0;
	int r = begin(c, FRAME_COLL_BARRIER);

	if (r == 0)
		r = gather_impl(c, &none, 0, &none, "barrier");
	if (r == 0)
		r = bcast_impl(c, &none, 0, "barrier");
	return r;
}

int slotcomm_should_preempt(struct slotcomm *c, bool local, bool *out)
{
	uint8_t mine = local ? 1 : 0, *all = NULL;
	int r = begin(c, FRAME_COLL_PREEMPT);

	if (r < 0)
		return r;
	if (c->rank == 0) {
		all = malloc((size_t)c->size);
		if (!all)
			return comm_fail(c, -ENOMEM, -1, "out of memory");
	}
	r = gather_impl(c, &mine, 1, all, "should_preempt");
	if (r == 0 && c->rank == 0)
		for (int i = 0; i < c->size; i++)
			mine |= all[i];  /* the rule: any rank asked */
	free(all);
	if (r == 0)
		r = bcast_impl(c, &mine, 1, "should_preempt");
	if (r == 0)
		*out = mine != 0;
	return r;
}
