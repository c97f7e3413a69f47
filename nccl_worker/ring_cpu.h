// SPDX-License-Identifier: MIT
/* The pipelined CPU ring all-reduce over TCP (ring_cpu.c): the "tcp"
 * transport, and the ring across node leaders of the hierarchical one.
 * Internal to the comm library. */
#ifndef SLOTRUN_RING_CPU_H
#define SLOTRUN_RING_CPU_H

#include <stddef.h>

#include "comm_internal.h"

/* In-place all-reduce over ring g (every rank of g calls it with the same
 * arguments; avg divides by g->n).  Nothing to do when g->n < 2.  c->seq
 * must already count this collective; failures go through comm_fail,
 * naming the neighbour at fault by its rank in c. */
int ring_allreduce(struct slotcomm *c, struct ring *g, void *buf, size_t count,
		   enum slotcomm_dtype dtype, enum slotcomm_op op);

#endif
