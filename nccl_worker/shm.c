// SPDX-License-Identifier: MIT
/* The shared-memory transport: all-reduce among the ranks of one node
 * through one segment they all map (shm.h says how it is set up and shared;
 * shm_sched.h how the work is cut; shm_wait.c how a rank waits for the
 * others' counters, and shm_setup.c how the segment is made and shared).
 *
 * Each rank posts three step counters in its control line: `in` (its
 * slot holds its copy of the step's pieces), `red` (it has reduced its own
 * piece into its slot) and `out` (it has copied the others' reduced pieces
 * out and no longer reads anyone's slot of that step).  A rank waits for the
 * counters of the others; data moves with plain memcpy and the reduction
 * kernels, straight from the peers' slots into the destination.  Counters
 * are stored with release and read with acquire semantics, so what was
 * written into a slot before a post is seen by whoever sees the post.
 *
 * Collectives are checked: each rank writes what it was called with (count,
 * type, op, sequence number) into its control line before its first post,
 * and the others compare it after their first wait on it; a rank in a
 * control collective of the same number meanwhile finds it there
 * (shm_check_peers), as every waiter finds a rank that left the job before
 * this collective (its `ended` mark). */
#include "shm_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"

/* --- the collective ------------------------------------------------------ */

struct op {
	uint8_t *buf;
	struct shm_plan p;
	size_t esize;
	enum slotcomm_dtype dtype;
	enum slotcomm_op op;
	reduce_fn fn;
	reduce2_fn fn2;
	int avg_div;        /* divide the result by this (avg), or 0 */
	int out_all;        /* every rank copies the result out (else the leader only) */
	void (*copy)(void *restrict, const void *restrict, size_t);  /* out of the slots */
	uint32_t base;      /* the counters before this collective */
};

static void copy_plain(void *restrict dst, const void *restrict src, size_t n)
{
	memcpy(dst, src, n);
}

/* The others' descriptors against ours (c->cur). */
static int check_desc(struct slotcomm *c, struct shm *s)
{
	for (int i = 0; i < s->m; i++) {
		const struct shm_desc *d = &ctl_of(s, i)->desc[c->seq & 1];
		int peer = s->ranks[i];

		if (i == s->li)
			continue;
		if (d->seq != c->seq || d->count != c->cur.count || d->dtype != c->cur.dtype ||
		    d->op != c->cur.op) {
			struct comm_pos t = { .kind = FRAME_COLL_ALLREDUCE, .seq = d->seq,
					      .shaped = 1, .count = d->count,
					      .dtype = (uint8_t)d->dtype, .op = (uint8_t)d->op };

			return comm_diverged(c, peer, &t);
		}
	}
	return 0;
}

static void write_desc(struct slotcomm *c, struct shm *s)
{
	struct shm_desc *d = &ctl_of(s, s->li)->desc[c->seq & 1];

	/* What the caller of slotcomm_allreduce asked for (the hierarchical
	 * transport reduces an avg as a sum here); the number last, for
	 * shm_check_peers, which reads it first. */
	d->count = c->cur.count;
	d->dtype = c->cur.dtype;
	d->op = c->cur.op;
	__atomic_store_n(&d->seq, c->seq, __ATOMIC_RELEASE);
}

/* dst = src[0] OP src[1] OP ... OP src[m-1] (m >= 2), n elements, in rank
 * order, so that every rank that computes it gets the same bits. */
static void fold(const struct op *o, int m, const uint8_t *const *src, uint8_t *dst, size_t n)
{
	o->fn2(dst, src[0], src[1], n);
	for (int i = 2; i < m; i++)
		o->fn(dst, src[i], n);
	if (o->avg_div)
		reduce_avg_finish(dst, n, o->dtype, o->avg_div);
}

/* The small path: every rank copies its buffer into its slot, and each
 * reduces all of them in rank order into its buffer. */
static int run_small(struct slotcomm *c, struct shm *s, const struct op *o, const char *what)
{
	uint32_t x = o->base;
	int r;

	/* Our slot for this step is free once every rank is done with the
	 * step `depth` before (always true here, but cheap to know). */
	r = shm_wait_all(c, s, CNT_OUT, x + 1 - SHM_DEPTH, what);
	if (r < 0)
		return r;
	write_desc(c, s);
	if (o->p.bytes)
		memcpy(slot_of(s, s->li, x), o->buf, o->p.bytes);
	shm_post(s, CNT_IN, x + 1);
	r = shm_wait_all(c, s, CNT_IN, x + 1, what);
	if (r == 0)
		r = check_desc(c, s);
	if (r < 0)
		return r;
	for (int i = 0; i < s->m; i++)
		s->src[i] = slot_of(s, i, x);
	if (o->out_all || s->li == 0)
		fold(o, s->m, s->src, o->buf, o->p.bytes / o->esize);
	shm_post(s, CNT_RED, x + 1);
	shm_post(s, CNT_OUT, x + 1);
	return 0;
}

static void copy_in(struct shm *s, const struct op *o, uint64_t t)
{
	uint64_t woff, wlen, poff, plen;
	uint8_t *slot = slot_of(s, s->li, o->base + (uint32_t)t);

	shm_plan_step(&o->p, t, &woff, &wlen);
	shm_plan_piece(&o->p, t, s->li, &poff, &plen);
	/* Everything but our own piece, which we reduce from our buffer. */
	if (poff)
		memcpy(slot, o->buf + woff, poff);
	if (poff + plen < wlen)
		memcpy(slot + poff + plen, o->buf + woff + poff + plen, wlen - poff - plen);
}

/* Our piece of step t: the others' copies are reduced straight from their
 * slots into our buffer (ours first, then theirs in rank order), a block
 * at a time, and each reduced block is copied into our slot while in L1,
 * for the others to copy out. */
static void reduce_piece(struct shm *s, const struct op *o, uint64_t t)
{
	uint32_t x = o->base + (uint32_t)t;
	uint64_t woff, wlen, poff, plen;
	size_t per = SHM_BLOCK / o->esize, n;
	uint8_t *mine, *out;

	shm_plan_step(&o->p, t, &woff, &wlen);
	shm_plan_piece(&o->p, t, s->li, &poff, &plen);
	mine = o->buf + woff + poff;
	out = slot_of(s, s->li, x) + poff;
	n = plen / o->esize;
	for (size_t e = 0; e < n; e += per) {
		size_t k = n - e < per ? n - e : per, off = e * o->esize;

		for (int i = 0; i < s->m; i++)
			if (i != s->li)
				o->fn(mine + off, slot_of(s, i, x) + poff + off, k);
		if (o->avg_div)
			reduce_avg_finish(mine + off, k, o->dtype, o->avg_div);
		memcpy(out + off, mine + off, k * o->esize);
	}
}

static void copy_out(struct shm *s, const struct op *o, uint64_t t)
{
	uint32_t x = o->base + (uint32_t)t;
	uint64_t woff, wlen;

	shm_plan_step(&o->p, t, &woff, &wlen);
	for (int i = 0; i < s->m; i++) {
		uint64_t poff, plen;

		if (i == s->li)
			continue;
		shm_plan_piece(&o->p, t, i, &poff, &plen);
		if (plen)
			o->copy(o->buf + woff + poff, slot_of(s, i, x) + poff, plen);
	}
}

/* Reduce-scatter and all-gather through the slots, pipelined: at turn t a
 * rank copies step t in, reduces its piece of step t-1 and copies the
 * others' pieces of step t-2 out, so each wait is for work the others did a
 * turn earlier. */
static int run_steps(struct slotcomm *c, struct shm *s, const struct op *o, const char *what)
{
	uint64_t n = o->p.nsteps;
	int r = 0;

	write_desc(c, s);
	for (uint64_t t = 0; t < n + 2 && r == 0; t++) {
		if (t < n) {
			uint32_t x = o->base + (uint32_t)t;

			r = shm_wait_all(c, s, CNT_OUT, x + 1 - SHM_DEPTH, what);
			if (r < 0)
				break;
			copy_in(s, o, t);
			shm_post(s, CNT_IN, x + 1);
		}
		if (t >= 1 && t - 1 < n) {
			uint32_t x = o->base + (uint32_t)(t - 1);

			r = shm_wait_all(c, s, CNT_IN, x + 1, what);
			if (r == 0 && t == 1)
				r = check_desc(c, s);
			if (r < 0)
				break;
			reduce_piece(s, o, t - 1);
			shm_post(s, CNT_RED, x + 1);
		}
		if (t >= 2) {
			uint32_t x = o->base + (uint32_t)(t - 2);

			if (o->out_all || s->li == 0) {
				r = shm_wait_all(c, s, CNT_RED, x + 1, what);
				if (r < 0)
					break;
				copy_out(s, o, t - 2);
			}
			shm_post(s, CNT_OUT, x + 1);
		}
	}
	return r;
}

static int node_reduce(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype,
		       enum slotcomm_op op, int out_all, int avg_div)
{
	struct shm *s = c->shm;
	struct op o = { .buf = buf, .dtype = dtype, .op = op, .out_all = out_all,
			.avg_div = avg_div, .base = s->step };
	int r;

	o.esize = slotcomm_dtype_size(dtype);
	o.copy = (uint64_t)count * o.esize >= SHM_STREAM_MIN ? reduce_copy_stream : copy_plain;
	o.fn = reduce_get(dtype, op);
	o.fn2 = reduce2_get(dtype, op);
	shm_plan_make(&o.p, (uint64_t)count * o.esize, s->m, s->lay.slot_bytes, SHM_SMALL_MAX);
	comm_watch_init(c);
	r = o.p.small ? run_small(c, s, &o, "all-reduce") : run_steps(c, s, &o, "all-reduce");
	if (r < 0)
		return r;
	s->step += (uint32_t)o.p.nsteps;
	return 0;
}

int shm_reduce(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype, enum slotcomm_op op)
{
	return node_reduce(c, buf, count, dtype, op, 0, 0);
}

int shm_bcast(struct slotcomm *c, void *buf, size_t bytes)
{
	struct shm *s = c->shm;
	struct shm_plan p;
	uint32_t base = s->step;
	int r = 0;

	/* Whole slots at a time: the leader copies in, the others copy out. */
	shm_plan_make(&p, bytes, 1, s->lay.slot_bytes, 0);
	for (uint64_t t = 0; t < p.nsteps && r == 0; t++) {
		uint32_t x = base + (uint32_t)t;
		uint64_t off, len;

		shm_plan_step(&p, t, &off, &len);
		if (s->li == 0) {
			r = shm_wait_all(c, s, CNT_OUT, x + 1 - SHM_DEPTH, "all-reduce");
			if (r == 0) {
				memcpy(slot_of(s, 0, x), (uint8_t *)buf + off, len);
				shm_post(s, CNT_IN, x + 1);
			}
		} else {
			/* The first window comes once the leader is back from
			 * the TCP ring, which takes longer than any spin: sleep
			 * soon, and leave the cores to the leaders meanwhile. */
			r = shm_wait_one(c, s, 0, CNT_IN, x + 1, t == 0 ? SHM_PAUSE_NS : SHM_SPIN_NS,
				     "all-reduce");
			if (r == 0) {
				(bytes >= SHM_STREAM_MIN ? reduce_copy_stream : copy_plain)(
					(uint8_t *)buf + off, slot_of(s, 0, x), len);
				shm_post(s, CNT_OUT, x + 1);
			}
		}
	}
	if (r < 0)
		return r;
	s->step = base + (uint32_t)p.nsteps;
	shm_post_all(s, s->step);
	return 0;
}

static int shm_allreduce(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype,
			 enum slotcomm_op op)
{
	return node_reduce(c, buf, count, dtype, op, 1, op == SLOTCOMM_AVG ? c->size : 0);
}

static void shm_describe(const struct slotcomm *c, char *buf, size_t len)
{
	snprintf(buf, len, "shared memory among %d ranks on one host (each reduces its piece of "
		 "every %u KiB window from the others' slots; up to %u KiB, every rank reduces the "
		 "whole buffers)", c->size, (unsigned)(c->shm->lay.slot_bytes >> 10),
		 SHM_SMALL_MAX >> 10);
}

static void shm_destroy(struct slotcomm *c)
{
	shm_free(c, 1);
}

const struct transport transport_shm = {
	.name = "shm",
	.allreduce = shm_allreduce,
	.describe = shm_describe,
	.broken = shm_transport_broken,
	.destroy = shm_destroy,
};

