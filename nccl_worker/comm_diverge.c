// SPDX-License-Identifier: MIT
/* Naming a divergence: ranks that call different collectives, a different
 * number of them, or the same one with another shape.
 *
 * Every collective carries what it is: control frames their collective's
 * kind and sequence number in the header, the ring's ALLREDUCE header and
 * the shared-memory descriptor the all-reduce's shape too.  A rank that
 * meets a peer's frame it did not expect -- on a control connection it
 * watches during an all-reduce, on its ring connection during a control
 * collective, or a peer's BYE -- compares it with where it is itself: a
 * peer in a later collective, or one that finished after this collective,
 * is merely ahead; anything else is a divergence, named at once with both
 * positions and sent to every rank (comm_fail), instead of a wait until
 * SLOTRUN_TIMEOUT or an exchange of the wrong bytes. */
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>

#include "comm_internal.h"

static void pos_text(const struct comm_pos *p, char *buf, size_t len)
{
	if (p->ended) {
		snprintf(buf, len, "ended after #%llu", (unsigned long long)p->seq);
		return;
	}
	if (p->shaped)
		snprintf(buf, len, "%s #%llu of %llu %s %s", frame_coll_name(p->kind),
			 (unsigned long long)p->seq, (unsigned long long)p->count,
			 slotcomm_dtype_name((enum slotcomm_dtype)p->dtype),
			 slotcomm_op_name((enum slotcomm_op)p->op));
	else
		snprintf(buf, len, "%s #%llu", frame_coll_name(p->kind),
			 (unsigned long long)p->seq);
}

int comm_diverged(struct slotcomm *c, int peer, const struct comm_pos *theirs)
{
	char mine[128], other[128];
	struct comm_pos cur = c->cur;

	/* Both shapes or neither: a shape on one side only says nothing. */
	if (!theirs->shaped || theirs->ended)
		cur.shaped = 0;
	pos_text(&cur, mine, sizeof(mine));
	pos_text(theirs, other, sizeof(other));
	/* nobody is blamed: which side went astray (the rank that ran one
	 * step fewer, or the one that ran one more?) only the program knows,
	 * and a culprit would make the launcher's headline pick one */
	return comm_fail(c, -EPROTO, -1,
			 "rank %d is at %s, rank %d %s%s: every rank must call the same "
			 "collectives in the same order with the same arguments", c->rank, mine, peer,
			 theirs->ended ? "" : "at ", other);
}

int comm_peer_frame(struct slotcomm *c, int peer, const struct frame_hdr *h,
		    const struct frame_allreduce *m)
{
	struct comm_pos theirs = { .kind = h->coll, .seq = h->seq };

	if (h->type == FRAME_BYE) {
		if (h->seq >= c->seq)
			return 1;  /* it finished this collective too */
		theirs.ended = 1;
		return comm_diverged(c, peer, &theirs);
	}
	if (h->coll == FRAME_COLL_NONE || h->seq > c->seq)
		return 1;
	if (h->seq == c->seq && h->coll == c->cur.kind && !m)
		return 1;
	if (m) {
		theirs.shaped = 1;
		theirs.count = m->count;
		theirs.dtype = m->dtype;
		theirs.op = m->op;
		if (h->seq == c->seq && h->coll == c->cur.kind && c->cur.shaped &&
		    m->count == c->cur.count && m->dtype == c->cur.dtype && m->op == c->cur.op)
			return 1;
	}
	return comm_diverged(c, peer, &theirs);
}

int comm_ring_peek(struct slotcomm *c, struct ring *g, int *done)
{
	uint8_t b[FRAME_HDR_LEN + FRAME_ALLREDUCE_LEN];
	struct frame_hdr h;
	struct frame_allreduce m;
	const char *why;
	ssize_t k;
	int r;

	*done = 0;
	k = recv(g->recv_fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* A closed ring connection is the control plane's to explain (the
	 * neighbour's control connection closes too, or it said BYE). */
	if (k <= 0 || frame_decode_hdr(b, UINT64_MAX, &h, &why) < 0) {
		*done = 1;
		return 0;
	}
	if (k < FRAME_HDR_LEN)
		return 0;  /* the rest is on its way */
	if (h.type == FRAME_ALLREDUCE && h.len == FRAME_ALLREDUCE_LEN) {
		if ((size_t)k < sizeof(b))
			return 0;
		if (frame_allreduce_decode(b + FRAME_HDR_LEN, h.len, &m, &why) < 0) {
			*done = 1;
			return 0;
		}
		r = comm_peer_frame(c, g->left, &h, &m);
	} else {
		r = comm_peer_frame(c, g->left, &h, NULL);
	}
	if (r > 0)
		*done = 1;
	return r < 0 ? r : 0;
}
