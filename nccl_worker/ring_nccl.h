// SPDX-License-Identifier: MIT
/* The NCCL backend: an NCCL communicator beside a comm (whose control
 * plane carries rank 0's ncclUniqueId), and all-reduce on device memory.
 *
 * Built when meson finds the CUDA runtime and NCCL (have_nccl); otherwise
 * ring_nccl_stub.c answers "not compiled in".  All functions return 0 or a
 * negative errno; errors go through comm_fail (so comm_error() has them,
 * with the CUDA/NCCL call, file:line and the library's message, and the
 * other ranks are told), except ring_nccl_probe, which only explains.
 *
 * Device: with one visible device (slotrun sets CUDA_VISIBLE_DEVICES to the
 * slot's GPU) that one; with several, the one at LOCAL_RANK.
 *
 * The communicator is non-blocking (ncclCommInitRankConfig with blocking =
 * 0): every NCCL call that answers ncclInProgress, and every wait for the
 * stream, is polled against SLOTRUN_TIMEOUT while ncclCommGetAsyncError is
 * checked and the control connections are watched; on an error or at the
 * deadline the communicator is aborted (ncclCommAbort). */
#ifndef SLOTRUN_RING_NCCL_H
#define SLOTRUN_RING_NCCL_H

#include <stddef.h>

#include "comm.h"

struct ring_nccl;

/* 1 when built with CUDA and NCCL. */
int ring_nccl_compiled(void);

/* Can this process use NCCL?  Returns the number of visible CUDA devices
 * (> 0), or 0 with the reason in why ("built without NCCL", "no CUDA device
 * is visible (cudaGetDeviceCount: ...)"). */
int ring_nccl_probe(char *why, size_t whylen);

/* Collective over c: selects the device, creates the NCCL communicator. */
int ring_nccl_init(struct comm *c, struct ring_nccl **out);

/* Finalizes (or, after an error, aborts) the communicator.  NULL is fine. */
void ring_nccl_destroy(struct ring_nccl *g);

/* "NVIDIA H100 80GB HBM3 (device 0), NCCL 2.28.3, CUDA runtime 13000" */
const char *ring_nccl_describe(const struct ring_nccl *g);

int ring_nccl_alloc(struct ring_nccl *g, size_t bytes, void **dev);
void ring_nccl_free(struct ring_nccl *g, void *dev);
int ring_nccl_to_device(struct ring_nccl *g, void *dev, const void *host, size_t bytes);
int ring_nccl_to_host(struct ring_nccl *g, void *host, const void *dev, size_t bytes);

/* Enqueues an in-place all-reduce of dev on the backend's stream. */
int ring_nccl_allreduce_start(struct ring_nccl *g, void *dev, size_t count,
			      enum comm_dtype dtype, enum comm_op op);

/* Waits until everything enqueued has finished. */
int ring_nccl_sync(struct ring_nccl *g);

#endif
