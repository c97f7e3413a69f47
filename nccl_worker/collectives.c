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
};

static int xfer_complete(const struct xfer *x)
{
	return x->hdr_done == FRAME_HDR_LEN && x->done == x->len;
}

static int xfer_io_fail(struct slotcomm *c, const struct xfer *x, int rc, const char *what)
{
	char phrase[96];

	comm_io_phrase(c, rc, phrase, sizeof(phrase));
	return comm_fail(c, rc, x->peer, "peer rank %d %s during %s", x->peer, phrase, what);
}

/* Moves what can move without blocking.  Returns 1 on progress, 0 if
 * nothing moved, or the failure. */
static int xfer_step(struct slotcomm *c, struct xfer *x, const char *what)
{
	int fd = c->ctl[x->peer];
	ssize_t k;

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
			return errno == EAGAIN || errno == EINTR ? 0 : xfer_io_fail(c, x, -errno, what);
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
			return xfer_io_fail(c, x, SOCK_EOF, what);
		if (k < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : xfer_io_fail(c, x, -errno, what);
		x->hdr_done += (size_t)k;
		if (x->hdr_done < FRAME_HDR_LEN)
			return 1;
		if (frame_decode_hdr(x->hdr, UINT64_MAX, &h, &why) < 0)
			return comm_fail(c, -EPROTO, x->peer,
					 "peer rank %d sent a malformed message during %s: %s",
					 x->peer, what, why);
		if (h.type == FRAME_ABORT)
			return comm_take_abort(c, x->peer, &h, what);
		if (h.type == FRAME_BYE)
			return comm_fail(c, -EPROTO, x->peer,
					 "peer rank %d has finished (it left the job) while this rank "
					 "is in %s #%llu: every rank must call the same collectives",
					 x->peer, what, (unsigned long long)c->seq);
		if (h.type != x->type || h.seq != c->seq)
			return comm_fail(c, -EPROTO, x->peer,
					 "peer rank %d is in a different collective (its %s #%llu, "
					 "this rank's %s #%llu): collectives must be called in the "
					 "same order on every rank", x->peer, frame_type_name(h.type),
					 (unsigned long long)h.seq, what,
					 (unsigned long long)c->seq);
		if (h.len != x->len)
			return comm_fail(c, -EPROTO, x->peer,
					 "peer rank %d passed %llu bytes to %s, this rank %zu", x->peer,
					 (unsigned long long)h.len, what, x->len);
		return 1;
	}
	k = recv(fd, x->data + x->done, x->len - x->done, MSG_DONTWAIT);
	if (k == 0)
		return xfer_io_fail(c, x, SOCK_EOF, what);
	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : xfer_io_fail(c, x, -errno, what);
	x->done += (size_t)k;
	return 1;
}

/* Runs the transfers to completion.  The deadline restarts whenever they
 * make progress (COMM_SEND_PROGRESS): a slow but live peer is fine, a
 * silent one is not. */
static int xfer_run(struct slotcomm *c, struct xfer *x, int nx, const char *what)
{
	int64_t deadline = sock_now_ns() + c->timeout_ns;
	uint64_t sent = 0;  /* since the deadline was last pushed back */

	for (int i = 0; i < nx; i++)
		if (x[i].send)
			frame_encode_hdr(x[i].hdr, x[i].type, c->seq, x[i].len);

	for (;;) {
		int np = 0, ms, r;

		for (int i = 0; i < nx; i++)
			if (!xfer_complete(&x[i]))
				c->pfd[np++] = (struct pollfd){ .fd = c->ctl[x[i].peer],
								.events = x[i].send ? POLLOUT : POLLIN };
		if (np == 0)
			return 0;
		ms = sock_poll_ms(deadline);
		if (ms == 0) {
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
		r = poll(c->pfd, (nfds_t)np, ms);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return comm_fail(c, -errno, -1, "poll: %s", strerror(errno));
		}
		if (r == 0)
			continue;
		np = 0;
		for (int i = 0; i < nx; i++) {
			if (xfer_complete(&x[i]))
				continue;
			if (c->pfd[np++].revents) {
				size_t before = x[i].hdr_done + x[i].done;

				r = xfer_step(c, &x[i], what);
				if (r < 0)
					return r;
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

/* --- collectives --------------------------------------------------------- */

static int begin(struct slotcomm *c)
{
	int r = comm_usable(c);

	if (r == 0)
		c->seq++;
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
	int r = begin(c);

	if (r == 0)
		r = check_total(c, len, "gather");
	return r < 0 ? r : gather_impl(c, send, len, recv, "gather");
}

int slotcomm_broadcast(struct slotcomm *c, void *buf, size_t len)
{
	int r = begin(c);

	return r < 0 ? r : bcast_impl(c, buf, len, "broadcast");
}

int slotcomm_allgather(struct slotcomm *c, const void *send, size_t len, void *recv)
{
	int r = begin(c);

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
	int r = begin(c);

	if (r == 0)
		r = gather_impl(c, &none, 0, &none, "barrier");
	if (r == 0)
		r = bcast_impl(c, &none, 0, "barrier");
	return r;
}

int slotcomm_should_preempt(struct slotcomm *c, bool local, bool *out)
{
	uint8_t mine = local ? 1 : 0, *all = NULL;
	int r = begin(c);

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
