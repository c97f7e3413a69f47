// SPDX-License-Identifier: MIT
/* The CPU ring all-reduce over TCP: reduce-scatter then all-gather in
 * 2(n-1) steps (ring_schedule.h), streamed.
 *
 * Each rank runs two byte streams on one thread: what it sends to its right
 * neighbour (the segments of steps 0, 1, ..., 2n-3 back to back) and what
 * it receives from its left one.  For every step s >= 1 the segment sent is
 * the one received at step s - 1, so a byte may be sent as soon as it has
 * been received and reduced: the send stream may run up to the receive
 * stream's position (plus all of step 0, which is our own data).  That is
 * the pipeline, at the granularity of whatever each recv(2) returns rather
 * than of fixed chunks: while the kernel moves one piece, the previous one
 * is reduced and handed on.  Non-blocking sockets and poll(2) keep both
 * directions moving; the control connections are watched at the same time
 * so that a failure elsewhere stops us at once.
 *
 * Reduce-scatter data lands in a staging buffer (j->g->stage, small enough to
 * stay in cache) and is reduced from there straight into the user buffer;
 * all-gather data is received straight into the user buffer.  Sends go
 * straight from the user buffer.  send(2) copies, so overwriting a range
 * after it was sent is safe.
 *
 * Small buffers take the all-gather ring (ring_use_gather) on the same
 * streams: every rank's whole buffer goes round in n-1 steps through the
 * staging buffer (block i at j->g->stage + i * bytes, ours copied in first),
 * and each rank then reduces the n blocks in rank order.  Half the steps of
 * the reduce-scatter ring, and every step is a wake-up of the next rank.
 * The choice depends only on what every rank passes (count, type, n), so
 * ranks that agree take the same path; ranks that disagree fail on the
 * header either way.
 *
 * The first bytes of each stream are an ALLREDUCE frame (count, type, op,
 * sequence number), so ranks that disagree fail with a message instead of
 * exchanging garbage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>

#include "ring_cpu.h"

#include "comm_internal.h"
#include "reduce.h"
#include "ring_schedule.h"
#include "sock.h"
#include "transport.h"

/* Staging buffer for reduce-scatter receives, and the smallest send worth a
 * system call (unless it ends a segment), both chosen with
 * bench/allreduce_sweep. */
#define RING_STAGE_BYTES (512u << 10)
#define RING_MIN_SEND (64u << 10)

/* How long to keep retrying without progress before blocking in poll(2)
 * (ns): a short spin saves the sleep and the wake-up that would cost a
 * small all-reduce more than the spin (bench/allreduce_sweep). */
#define RING_SPIN_NS 50000

/* Up to this many bytes forwarded per rank ((n-1) * buffer), the
 * all-gather ring (ring_use_gather) beats the reduce-scatter ring: with n=2
 * up to 32 KiB buffers, with n=4 up to 16 KiB (bench/allreduce_sweep). */
#define RING_GATHER_FWD_MAX (48u << 10)

#define HDR_BYTES (FRAME_HDR_LEN + FRAME_ALLREDUCE_LEN)

struct stream {
	int step;      /* 0 .. nsteps; nsteps when finished */
	uint64_t off;  /* bytes of this step's segment done (recv: reduced/copied) */
};

struct job {
	struct ring *g;
	uint8_t *buf;
	uint8_t *base;            /* where segments lie: buf, or g->stage (gather) */
	int gather;               /* the all-gather ring (ring_use_gather) */
	uint64_t bytes;           /* count * esize */
	uint64_t count;
	size_t esize;
	enum slotcomm_dtype dtype;
	enum slotcomm_op op;
	reduce_fn fn;
	int nsteps;
	struct stream snd, rcv;
	size_t fill;              /* received bytes in g->stage not reduced yet */
	uint8_t hdr_out[HDR_BYTES];
	uint8_t hdr_in[HDR_BYTES];
	size_t hdr_got;
};

static void seg_bytes(const struct job *j, int seg, uint64_t *off, uint64_t *len)
{
	ring_segment(j->count, j->g->n, seg, off, len);
	*off *= j->esize;
	*len *= j->esize;
}

/* This rank's schedule at `step`, and the segment it sends (sending) or
 * receives there: j->base + *off, *len bytes. */
static void step_of(const struct job *j, int step, int sending, struct ring_step *st,
		    uint64_t *off, uint64_t *len)
{
	if (j->gather) {
		ring_gather_schedule(j->g->n, j->g->pos, step, st);
		*off = (uint64_t)(sending ? st->send_seg : st->recv_seg) * j->bytes;
		*len = j->bytes;
		return;
	}
	ring_schedule(j->g->n, j->g->pos, step, st);
	seg_bytes(j, sending ? st->send_seg : st->recv_seg, off, len);
}

/* Skips finished (and empty) steps. */
static void settle(const struct job *j, struct stream *s, int sending)
{
	while (s->step < j->nsteps) {
		struct ring_step st;
		uint64_t off, len;

		step_of(j, s->step, sending, &st, &off, &len);
		if (s->off < len)
			return;
		s->step++;
		s->off = 0;
	}
}

/* Bytes of the current send step that may be sent now (from snd.off). */
static uint64_t sendable(const struct job *j, uint64_t seglen)
{
	uint64_t upto;

	if (j->snd.step == 0 || j->rcv.step > j->snd.step - 1)
		upto = seglen;
	else if (j->rcv.step == j->snd.step - 1)
		upto = j->rcv.off;
	else
		upto = 0;
	return upto > j->snd.off ? upto - j->snd.off : 0;
}

static int peer_fail(struct slotcomm *c, const struct job *j, int peer, int rc, int step)
{
	char phrase[96];
	int r;

	/* When a neighbour vanishes, the chief's abort message (if one is on
	 * its way) names the rank that failed first; prefer it. */
	if (rc != -ETIMEDOUT) {
		r = comm_watch_grace(c, COMM_ABORT_GRACE_MS, "all-reduce");
		if (r < 0)
			return r;
	}
	comm_io_phrase(c, rc, phrase, sizeof(phrase));
	if (rc == -ETIMEDOUT)
		return comm_fail_timeout(c, peer, "all-reduce",
					 "peer rank %d %s during all-reduce (step %d of %d)", peer,
					 phrase, step, j->nsteps);
	return comm_fail(c, rc, peer, "peer rank %d %s during all-reduce (step %d of %d)", peer,
			 phrase, step, j->nsteps);
}

/* The left neighbour's header: the same all-reduce (number and shape) as
 * ours, or the divergence named.  A BYE instead says it left the job. */
static int check_header(struct slotcomm *c, struct job *j, int left)
{
	struct frame_hdr h;
	struct frame_allreduce m;
	const char *why;
	int r;

	if (frame_decode_hdr(j->hdr_in, UINT64_MAX, &h, &why) < 0)
		return comm_fail(c, -EPROTO, left, "peer rank %d sent a malformed all-reduce header: %s",
				 left, why);
	if (h.type == FRAME_ALLREDUCE && (h.len != FRAME_ALLREDUCE_LEN ||
	    frame_allreduce_decode(j->hdr_in + FRAME_HDR_LEN, h.len, &m, &why) < 0))
		return comm_fail(c, -EPROTO, left, "peer rank %d sent a malformed all-reduce header: %s",
				 left, h.len != FRAME_ALLREDUCE_LEN ? "wrong length" : why);
	r = comm_peer_frame(c, left, &h, h.type == FRAME_ALLREDUCE ? &m : NULL);
	if (r < 0)
		return r;
	if (h.type != FRAME_ALLREDUCE || h.seq != c->seq)
		return comm_fail(c, -EPROTO, left,
				 "peer rank %d sent %s #%llu during all-reduce #%llu", left,
				 frame_type_name(h.type), (unsigned long long)h.seq,
				 (unsigned long long)c->seq);
	return 0;
}

/* One recv(2) and what follows from it.  1 on progress, 0 on EAGAIN. */
static int recv_some(struct slotcomm *c, struct job *j, int left)
{
	struct ring_step st;
	uint64_t off, len;
	ssize_t k;

	if (j->hdr_got < HDR_BYTES) {
		k = recv(j->g->recv_fd, j->hdr_in + j->hdr_got, HDR_BYTES - j->hdr_got, MSG_DONTWAIT);
		if (k > 0) {
			j->hdr_got += (size_t)k;
			/* A BYE is only a header: check it once that is in. */
			if (j->hdr_got >= FRAME_HDR_LEN && j->hdr_got < HDR_BYTES &&
			    j->hdr_in[6] != FRAME_ALLREDUCE)
				return check_header(c, j, left);
			if (j->hdr_got == HDR_BYTES) {
				int r = check_header(c, j, left);
				if (r < 0)
					return r;
				settle(j, &j->rcv, 0);
			}
			return 1;
		}
		goto fail;
	}

	step_of(j, j->rcv.step, 0, &st, &off, &len);
	if (!st.reduce) {
		k = recv(j->g->recv_fd, j->base + off + j->rcv.off, len - j->rcv.off, MSG_DONTWAIT);
		if (k <= 0)
			goto fail;
		j->rcv.off += (uint64_t)k;
	} else {
		uint64_t want = len - j->rcv.off - j->fill;
		size_t room = j->g->stage_len - j->fill, n;
		uint8_t *dst = j->base + off + j->rcv.off;

		k = recv(j->g->recv_fd, j->g->stage + j->fill, want < room ? want : room, MSG_DONTWAIT);
		if (k <= 0)
			goto fail;
		j->fill += (size_t)k;
		n = j->fill / j->esize;
		j->fn(dst, j->g->stage, n);
		if (st.last_reduce && j->op == SLOTCOMM_AVG)
			reduce_avg_finish(dst, n, j->dtype, j->g->n);
		j->rcv.off += n * j->esize;
		j->fill -= n * j->esize;
		if (j->fill)  /* a split element: keep its bytes for the next recv */
			memmove(j->g->stage, j->g->stage + n * j->esize, j->fill);
	}
	settle(j, &j->rcv, 0);
	return 1;

fail:
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return peer_fail(c, j, left, k == 0 ? SOCK_EOF : -errno, j->rcv.step + 1);
}

/* One send(2).  The bytes sent, 0 when nothing could go. */
static int send_some(struct slotcomm *c, struct job *j, int right, int *blocked)
{
	struct ring_step st;
	uint64_t off, len, n;
	ssize_t k;

	*blocked = 0;
	step_of(j, j->snd.step, 1, &st, &off, &len);
	n = sendable(j, len);
	if (n == 0 || (n < RING_MIN_SEND && j->snd.off + n < len))
		return 0;
	k = send(j->g->send_fd, j->base + off + j->snd.off, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (k < 0) {
		if (errno == EAGAIN || errno == EINTR) {
			*blocked = 1;
			return 0;
		}
		return peer_fail(c, j, right, -errno, j->snd.step + 1);
	}
	j->snd.off += (uint64_t)k;
	settle(j, &j->snd, 1);
	return k > INT32_MAX ? INT32_MAX : (int)k;
}

/* Sizes the socket buffers of ring connections to a neighbour on this
 * machine for an all-reduce of `bytes` per rank: COMM_RING_SOCKBUF_MID up to
 * COMM_RING_MID_BYTES, else COMM_RING_SOCKBUF_LOCAL.  Both ranks of a
 * connection pick the same size for the same all-reduce.  Shrinking with
 * bytes queued (a neighbour already in the next collective) loses nothing:
 * the kernel only stops opening the window.  Two setsockopt calls when the
 * size changes; best effort, as at connection time. */
static void local_bufs(struct ring *g, uint64_t bytes)
{
	int want = bytes <= COMM_RING_MID_BYTES ? COMM_RING_SOCKBUF_MID : COMM_RING_SOCKBUF_LOCAL;

	if (want == g->buf)
		return;
	if (g->send_local)
		(void)setsockopt(g->send_fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
	if (g->recv_local)
		(void)setsockopt(g->recv_fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
	g->buf = want;
}

/* ring_run's clock: the deadline, pushed back on progress, and the spin
 * before a sleep. */
struct pace {
	int64_t deadline;
	uint64_t sent;       /* since the deadline was last pushed back */
	int64_t spin_until;  /* -1: not spinning */
};

static int rcv_open(const struct job *j)
{
	return j->hdr_got < HDR_BYTES || j->rcv.step < j->nsteps;
}

/* One recv and one send, where their streams are still open; *blocked
 * when the send found the socket full.  1 when bytes moved, 0 when none
 * did, or the failure. */
static int move_bytes(struct slotcomm *c, struct job *j, struct pace *p, int *blocked)
{
	int progress = 0, moved = 0, r;

	if (rcv_open(j)) {
		r = recv_some(c, j, j->g->left);
		if (r < 0)
			return r;
		progress |= r;
	}
	if (j->snd.step < j->nsteps) {
		r = send_some(c, j, j->g->right, blocked);
		if (r < 0)
			return r;
		moved = r;
		p->sent += (uint64_t)r;
	}
	if (progress || p->sent >= COMM_SEND_PROGRESS) {
		p->deadline = sock_now_ns() + c->timeout_ns;
		p->sent = 0;
		if (c->tp->progress)
			c->tp->progress(c);
	}
	if (progress || moved) {
		p->spin_until = -1;
		return 1;
	}
	return 0;
}

/* Poll again for a while before sleeping: the next bytes are usually
 * microseconds away, and a wake-up from poll(2) costs more than that once
 * ranks outnumber cores.  sched_yield hands the core to a rank that has
 * work meanwhile.  1 while the spin lasts. */
static int keep_spinning(struct pace *p)
{
	if (p->spin_until < 0)
		p->spin_until = sock_now_ns() + RING_SPIN_NS;
	if (sock_now_ns() < p->spin_until) {
		sched_yield();
		return 1;
	}
	return 0;
}

/* Sleeps in poll(2) until a stream can move or a control connection speaks,
 * or the deadline passes (the failure then names the neighbour at fault).
 * 0, or the failure. */
static int wait_ready(struct slotcomm *c, struct job *j, int blocked, int64_t deadline)
{
	int np = 0, nw, ms, r;

	if (rcv_open(j))
		c->pfd[np++] = (struct pollfd){ .fd = j->g->recv_fd, .events = POLLIN };
	if (blocked)
		c->pfd[np++] = (struct pollfd){ .fd = j->g->send_fd, .events = POLLOUT };
	nw = comm_watch_fill(c, c->pfd + np);
	ms = sock_poll_ms(deadline);
	if (ms == 0) {
		/* A full send buffer means the right neighbour stopped
		 * reading; otherwise we wait on the left one. */
		if (blocked)
			return peer_fail(c, j, j->g->right, -ETIMEDOUT, j->snd.step + 1);
		return peer_fail(c, j, j->g->left, -ETIMEDOUT, j->rcv.step + 1);
	}
	r = poll(c->pfd, (nfds_t)(np + nw), ms);
	if (r < 0 && errno != EINTR)
		return comm_fail(c, -errno, -1, "poll: %s", strerror(errno));
	if (r > 0 && nw) {
		r = comm_watch_check(c, c->pfd + np, nw, "all-reduce");
		if (r < 0)
			return r;
	}
	return 0;
}

/* Sends our header, then moves bytes until both streams are done: spins a
 * little when nothing moves, then sleeps in poll(2). */
static int ring_run(struct slotcomm *c, struct job *j)
{
	struct pace p = { .deadline = sock_now_ns() + c->timeout_ns, .spin_until = -1 };
	int r;

	/* Our header first: the socket is empty between collectives, so it
	 * fits. */
	r = sock_send_all(j->g->send_fd, j->hdr_out, HDR_BYTES, p.deadline);
	if (r < 0)
		return peer_fail(c, j, j->g->right, r, 0);
	settle(j, &j->snd, 1);
	comm_watch_init(c);

	for (;;) {
		int blocked = 0;

		if (!rcv_open(j) && j->snd.step >= j->nsteps)
			return 0;
		r = move_bytes(c, j, &p, &blocked);
		if (r < 0)
			return r;
		if (r > 0 || keep_spinning(&p))
			continue;
		r = wait_ready(c, j, blocked, p.deadline);
		if (r < 0)
			return r;
	}
}

int ring_allreduce(struct slotcomm *c, struct ring *g, void *buf, size_t count,
		   enum slotcomm_dtype dtype, enum slotcomm_op op)
{
	struct job j = { .g = g, .buf = buf, .count = count, .dtype = dtype, .op = op };
	/* What the caller of slotcomm_allreduce asked for, which every rank
	 * compares with its own (the hierarchical transport runs an avg as
	 * a sum here). */
	struct frame_allreduce m = { .count = c->cur.count, .dtype = c->cur.dtype,
				     .op = c->cur.op };
	int r;

	j.fn = reduce_get(dtype, op);
	j.esize = slotcomm_dtype_size(dtype);
	if (g->n < 2)
		return 0;
	if (!g->stage) {
		g->stage_len = RING_STAGE_BYTES;
		g->stage = malloc(g->stage_len);
		if (!g->stage)
			return comm_fail(c, -ENOMEM, -1, "out of memory");
	}
	j.bytes = (uint64_t)count * j.esize;
	j.gather = ring_use_gather(g->n, j.bytes, RING_GATHER_FWD_MAX, g->stage_len);
	j.base = j.gather ? g->stage : j.buf;
	j.nsteps = j.gather ? ring_gather_nsteps(g->n) : ring_nsteps(g->n);
	if (j.gather && j.bytes)
		memcpy(g->stage + (size_t)g->pos * j.bytes, buf, j.bytes);
	frame_encode_coll_hdr(j.hdr_out, FRAME_ALLREDUCE, FRAME_COLL_ALLREDUCE, c->seq,
			      FRAME_ALLREDUCE_LEN);
	frame_allreduce_encode(&m, j.hdr_out + FRAME_HDR_LEN);
	local_bufs(g, j.bytes);
	r = ring_run(c, &j);
	if (r < 0 || !j.gather || !j.bytes)
		return r;
	/* Every rank reduces the blocks in ring order: the same result
	 * everywhere, bit for bit. */
	for (int i = 1; i < g->n; i++)
		j.fn(g->stage, g->stage + (size_t)i * j.bytes, count);
	if (op == SLOTCOMM_AVG)
		reduce_avg_finish(g->stage, count, dtype, g->n);
	memcpy(buf, g->stage, j.bytes);
	return 0;
}

static int tcp_allreduce(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype,
			 enum slotcomm_op op)
{
	return ring_allreduce(c, &c->ring, buf, count, dtype, op);
}

static void tcp_describe(const struct slotcomm *c, char *buf, size_t len)
{
	snprintf(buf, len, "ring over tcp (reduce-scatter + all-gather, %d steps)", 2 * (c->size - 1));
}

const struct transport transport_tcp = {
	.name = "tcp",
	.allreduce = tcp_allreduce,
	.describe = tcp_describe,
};
