// SPDX-License-Identifier: MIT
/* What the benchmark runs its all-reduces on (bench.c): the CPU ring of the
 * comm library, or NCCL on the GPU.  bench.c picks one and calls it only
 * through this table; each backend is one file (backend_cpu.c,
 * backend_nccl.c).  Every function returns 0 or a negative errno, with the
 * reason in slotcomm_error(c) of the communicator it was opened on. */
#ifndef SLOTRUN_BACKEND_H
#define SLOTRUN_BACKEND_H

#include <stddef.h>

#include <slotcomm/slotcomm.h>

struct backend;

/* The all-reduces' input and their result; in place, the one buffer. */
enum backend_buf { BACKEND_SEND, BACKEND_RECV };

struct backend_ops {
	const char *name;  /* "cpu", "nccl" */
	int out_of_place;  /* 1: open may be asked for out-of-place all-reduces */
	/* Opens the backend on c for buffers of up to cap bytes (collective):
	 * in place, or out of place (two buffers). */
	int (*open)(struct slotcomm *c, size_t cap, int out_of_place, struct backend **out);
	/* One line for the table's header: what runs where. */
	void (*describe)(const struct backend *b, char *buf, size_t len);
	/* host's bytes become the buffer `which` (the CPU backend works on
	 * host itself) ... */
	int (*load)(struct backend *b, enum backend_buf which, const void *host, size_t bytes);
	/* ... `times` all-reduces, in place or from the send buffer into the
	 * receive buffer, finished on return ... */
	int (*run)(struct backend *b, long times, size_t count, enum slotcomm_dtype t,
		   enum slotcomm_op op);
	/* ... and the buffer `which` back into host. */
	int (*fetch)(struct backend *b, enum backend_buf which, void *host, size_t bytes);
	void (*close)(struct backend *b);  /* NULL is fine */
};

extern const struct backend_ops backend_cpu, backend_nccl;

#endif
