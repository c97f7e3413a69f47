// SPDX-License-Identifier: MIT
/* A transport: how slotcomm_allreduce moves the data.  slotcomm_init picks one per
 * communicator once the rendezvous is done (comm.c, pick_transport) and
 * connects what it needs; each transport is one file that fills this
 * table.  Internal to the comm library.
 *
 *   tcp       ring_cpu.c  the pipelined ring over TCP through every rank
 *   shm       shm.c       one node's ranks through a shared segment
 *   shm+tcp   hier.c      shm within each node, the TCP ring across leaders
 *
 * Errors go through comm_fail (comm_internal.h), as everywhere. */
#ifndef SLOTRUN_TRANSPORT_H
#define SLOTRUN_TRANSPORT_H

#include <stddef.h>

#include <slotcomm/slotcomm.h>
#include "frame.h"

struct slotcomm;

struct transport {
	const char *name;  /* what slotcomm_transport_name says */

	/* In place, on every rank with the same arguments.  The caller
	 * (slotcomm_allreduce) has checked the communicator, the type and op and
	 * the size in bytes, bumped c->seq, and handled WORLD_SIZE 1. */
	int (*allreduce)(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype,
			 enum slotcomm_op op);

	/* One line for the benchmark's header: what runs where. */
	void (*describe)(const struct slotcomm *c, char *buf, size_t len);

	/* Called once when the communicator breaks, with the failure as the
	 * other ranks should hear it (the rank that saw it first, the rank it
	 * blames, the reason), so that peers blocked on this transport rather
	 * than on a socket learn of it at once.  NULL: nothing to do. */
	void (*broken)(struct slotcomm *c, const struct frame_abort *a);

	/* Called by the TCP ring whenever it makes progress, so that ranks
	 * waiting on this one for other reasons (a node's members while their
	 * leader works across nodes) know that it is not stuck.  Cheap: it
	 * runs on every step.  NULL: nothing to do. */
	void (*progress)(struct slotcomm *c);

	/* Frees what the transport holds (slotcomm_destroy).  NULL: nothing. */
	void (*destroy)(struct slotcomm *c);
};

extern const struct transport transport_tcp, transport_shm, transport_hier;

#endif
