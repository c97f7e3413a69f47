// SPDX-License-Identifier: MIT
/* The shared-memory transport's arithmetic (shm.c): how an all-reduce is
 * cut into steps and pieces, where each rank's slots lie in the segment,
 * and which ranks share a node.  Pure functions, no I/O.
 *
 * An all-reduce over the m ranks of a node runs in steps.  At each step a
 * window of the buffer (shm_plan_step) is cut into m pieces
 * (shm_plan_piece); piece i belongs to the rank with index i on the node.
 * Every rank copies the pieces it does not own into its slot for that
 * step; the owner of piece i reduces the others' copies straight from
 * their slots into its buffer (its own first, then theirs in rank order)
 * and copies the result into piece i of its own slot; then every rank
 * copies the reduced pieces of the others out of their slots.  Each rank
 * has `depth` slots and step s uses slot
 * s % depth, so a rank may copy the next windows in while the others still
 * reduce and copy out the earlier ones.  Pieces start at multiples of
 * SHM_GRAIN bytes (a cache line: two ranks never write one line), so any
 * count works, including 0 and counts below m (pieces may be empty).
 *
 * Small all-reduces (shm_plan_make's small_max) take one step in which
 * every rank copies its whole buffer into its slot and reduces all m slots
 * in rank order itself: one wait instead of two per step, and every rank
 * computes the same result bit for bit. */
#ifndef SLOTRUN_SHM_SCHED_H
#define SLOTRUN_SHM_SCHED_H

#include <stddef.h>
#include <stdint.h>

#define SHM_GRAIN 64  /* bytes: pieces start at multiples of a cache line */

struct shm_plan {
	uint64_t bytes;   /* the buffer */
	int m;            /* ranks on the node */
	int small;        /* 1: one step, whole buffers (see above) */
	uint64_t nsteps;  /* at least 1, also for 0 bytes: ranks always meet once */
	uint64_t window;  /* bytes of the buffer per step (the last may be shorter) */
	uint64_t piece;   /* bytes per piece of a full window */
};

/* The plan for `bytes` over m >= 1 ranks whose slots hold slot_bytes (at
 * least m * SHM_GRAIN): small when bytes <= small_max and fits a slot. */
void shm_plan_make(struct shm_plan *p, uint64_t bytes, int m, uint64_t slot_bytes,
		   uint64_t small_max);

/* Step s's window: offset into the buffer and length. */
void shm_plan_step(const struct shm_plan *p, uint64_t s, uint64_t *off, uint64_t *len);

/* Piece i (0 <= i < m) of step s: offset into the window -- and into the
 * slot -- and length.  The pieces of a step tile its window in order. */
void shm_plan_piece(const struct shm_plan *p, uint64_t s, int i, uint64_t *off, uint64_t *len);

/* The segment: a header line, one control line per rank (what it has
 * posted; written by that rank only), one line per rank that waiters
 * write (how many sleep on its flags), one abort record per rank (why it
 * failed, for the others), then every rank's slots.  Lines are SHM_LINE
 * bytes apart; slots start on a page. */
#define SHM_LINE 128         /* two cache lines: adjacent-line prefetch shares no line */
#define SHM_ABORT_BYTES 640  /* an abort record: two ranks and a reason */

struct shm_layout {
	int m, depth;        /* depth: a power of two (counters wrap at 2^32) */
	uint64_t slot_bytes;
	uint64_t ctl_off;    /* m lines */
	uint64_t wait_off;   /* m lines */
	uint64_t abort_off;  /* m records of SHM_ABORT_BYTES */
	uint64_t slots_off;  /* m * depth slots of slot_bytes */
	uint64_t total;      /* the segment's size, a multiple of the page */
};

void shm_layout_make(struct shm_layout *l, int m, int depth, uint64_t slot_bytes);

/* Offset of the slot that the rank with index i uses at step counter s. */
uint64_t shm_slot_off(const struct shm_layout *l, int i, uint32_t s);

/* Step counters wrap: has a counter that reads `have` reached `want`? */
static inline int shm_reached(uint32_t have, uint32_t want)
{
	return (int32_t)(have - want) >= 0;
}

/* Nodes from the ranks' node keys (key r at keys + r * stride, a
 * NUL-terminated string; an empty key is a node of its own).  Writes the
 * ranks that share `me`'s node into members, ascending, and returns how
 * many; members[0] is the node's leader. */
int shm_node_members(const char *keys, size_t stride, int n, int me, int *members);

/* Every node's leader (its lowest rank), ascending, into leaders (room
 * for n); returns the number of nodes.  O(n log n): a job of a thousand
 * nodes is not compared pair by pair. */
int shm_node_leaders(const char *keys, size_t stride, int n, int *leaders);

#endif
