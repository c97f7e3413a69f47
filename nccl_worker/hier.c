// SPDX-License-Identifier: MIT
/* The hierarchical transport: shared memory within each node, the TCP ring
 * across the nodes' leaders.  An all-reduce is three phases: the node's
 * ranks reduce into their leader through the segment (shm_reduce), the
 * leaders all-reduce over the ring (ring_allreduce), and each leader
 * broadcasts the result through its segment (shm_bcast).  avg is a sum
 * until the leader divides by WORLD_SIZE, before the broadcast.
 *
 * Why this and not one ring through every rank, shared-memory hops within a
 * node and TCP ones between: docs/comm.md, "Shared memory and TCP". */
#include <stdio.h>

#include "reduce.h"
#include "ring_cpu.h"
#include "shm.h"

static int hier_allreduce(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype,
			  enum slotcomm_op op)
{
	enum slotcomm_op sum = op == SLOTCOMM_AVG ? SLOTCOMM_SUM : op;
	int r = 0;

	if (c->shm)
		r = shm_reduce(c, buf, count, dtype, sum);
	if (r == 0 && c->ring.n > 1) {
		r = ring_allreduce(c, &c->ring, buf, count, dtype, sum);
		if (r == 0 && op == SLOTCOMM_AVG)
			reduce_avg_finish(buf, count, dtype, c->size);
	}
	if (r == 0 && c->shm)
		r = shm_bcast(c, buf, count * slotcomm_dtype_size(dtype));
	return r;
}

static void hier_describe(const struct slotcomm *c, char *buf, size_t len)
{
	snprintf(buf, len, "shared memory within each of %d nodes (this one: %d ranks), TCP ring "
		 "over the node leaders (reduce in the node, all-reduce across, broadcast in the "
		 "node)", c->nnodes, shm_local_size(c));
}

static void hier_destroy(struct slotcomm *c)
{
	shm_free(c, 1);
}

const struct transport transport_hier = {
	.name = "shm+tcp",
	.allreduce = hier_allreduce,
	.describe = hier_describe,
	.broken = shm_transport_broken,
	.progress = shm_progress,
	.destroy = hier_destroy,
};
