// SPDX-License-Identifier: MIT
/* Ring all-reduce schedule: which segment each rank sends and receives at
 * each step.  Pure arithmetic, no I/O.
 *
 * The buffer of `count` elements is cut into n segments (segment i starts
 * at ring_segment(..., i) and the first count % n segments hold one element
 * more), so any count works, including 0 and counts below n.
 *
 * Steps 0 .. n-2 are the reduce-scatter: at step s rank r sends segment
 * (r - s) mod n to rank r+1 and receives segment (r - s - 1) mod n from rank
 * r-1, reducing it into its own.  After them rank r holds the fully reduced
 * segment (r + 1) mod n (ring_owned_segment).  Steps n-1 .. 2n-3 are the
 * all-gather: at all-gather step t rank r sends segment (r + 1 - t) mod n
 * and receives segment (r - t) mod n, which it copies.
 *
 * The property the pipeline relies on: for every step s >= 1 the segment a
 * rank sends is the one it received at step s - 1, so it can forward each
 * byte as soon as that byte has been received (and reduced). */
#ifndef SLOTRUN_RING_SCHEDULE_H
#define SLOTRUN_RING_SCHEDULE_H

#include <stdint.h>

struct ring_step {
	int send_seg;
	int recv_seg;
	int reduce;      /* 1: reduce the received segment into ours; 0: copy it */
	int last_reduce; /* 1 on the final reduce-scatter step (avg divides here) */
};

/* Element offset and length of segment i (0 <= i < n). */
void ring_segment(uint64_t count, int n, int i, uint64_t *off, uint64_t *len);

/* 2(n-1): the number of steps of an all-reduce over n ranks. */
int ring_nsteps(int n);

/* The schedule of `rank` at `step` (0 <= step < ring_nsteps(n)). */
void ring_schedule(int n, int rank, int step, struct ring_step *st);

/* The segment `rank` holds fully reduced after the reduce-scatter. */
int ring_owned_segment(int n, int rank);

/* Small buffers take the all-gather ring instead: in n-1 steps every rank
 * passes every rank's whole buffer (block i is rank i's buffer; at step s
 * rank r sends block (r - s) mod n and receives block (r - s - 1) mod n,
 * copying it), then reduces the n blocks itself in rank order, so that every
 * rank computes the same result.  It moves n-1 buffers per rank instead of
 * 2(n-1)/n of one but takes half the steps, each of which costs a wake-up
 * of the next rank: the better trade while the buffer is small. */
int ring_gather_nsteps(int n);
void ring_gather_schedule(int n, int rank, int step, struct ring_step *st);

/* Whether an all-reduce of `bytes` per rank over n ranks takes the
 * all-gather ring: n >= 2, each rank forwards (n-1) * bytes <= max_fwd, and
 * the n blocks fit in `room` bytes of staging. */
int ring_use_gather(int n, uint64_t bytes, uint64_t max_fwd, uint64_t room);

#endif
