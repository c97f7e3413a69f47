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

struct backend_ops {
	const char *name;  /* "cpu", "nccl" */
	/* Opens the backend on c for buffers of up to cap bytes (collective). */
	int (*open)(struct slotcomm *c, size_t cap, struct backend **out);
	/* One line for the table's header: what runs where. */
	void (*describe)(const struct backend *b, char *buf, size_t len);
	/* host's bytes become the buffer the all-reduces work on (the CPU
	 * backend works on host itself) ... */
	int (*load)(struct backend *b, const void *host, size_t bytes);
	/* ... `times` in-place all-reduces of it, finished on return ... */
	int (*run)(struct backend *b, long times, size_t count, enum slotcomm_dtype t,
		   enum slotcomm_op op);
	/* ... and back into host. */
	int (*fetch)(struct backend *b, void *host, size_t bytes);
	void (*close)(struct backend *b);  /* NULL is fine */
};

extern const struct backend_ops backend_cpu, backend_nccl;

#endif
