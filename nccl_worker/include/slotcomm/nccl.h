// SPDX-License-Identifier: MIT
/* slotcomm's NCCL backend: an NCCL communicator beside a slotcomm (whose
 * control plane carries rank 0's ncclUniqueId), and all-reduce on device
 * memory.  Device pointers are plain void *: this header needs neither CUDA's
 * nor NCCL's.
 *
 * Present when the library was built with the CUDA runtime and NCCL
 * (slotcomm_nccl_compiled() is 1); otherwise every function answers "not
 * compiled in".  All functions return 0 or a
 * negative errno; errors go through comm_fail (so slotcomm_error() has them,
 * with the CUDA/NCCL call, file:line and the library's message, and the
 * other ranks are told), except slotcomm_nccl_probe, which only explains.
 *
 * Device: with one visible device (slotrun sets CUDA_VISIBLE_DEVICES to the
 * slot's GPU) that one; with several, the one at LOCAL_RANK.
 *
 * The communicator is non-blocking (ncclCommInitRankConfig with blocking =
 * 0): every NCCL call that answers ncclInProgress, and every wait for the
 * stream, is polled against SLOTRUN_TIMEOUT while ncclCommGetAsyncError is
 * checked and the control connections are watched; on an error or at the
 * deadline the communicator is aborted (ncclCommAbort). */
#ifndef SLOTCOMM_NCCL_H
#define SLOTCOMM_NCCL_H

#include <stddef.h>

#include <slotcomm/slotcomm.h>

#ifdef __cplusplus
extern "C" {
#endif

struct slotcomm_nccl;

/* 1 when built with CUDA and NCCL. */
int slotcomm_nccl_compiled(void);

/* Can this process use NCCL?  Returns the number of visible CUDA devices
 * (> 0), or 0 with the reason in why ("built without NCCL", "no CUDA device
 * is visible (cudaGetDeviceCount: ...)"). */
int slotcomm_nccl_probe(char *why, size_t whylen);

/* Collective over c: selects the device, creates the NCCL communicator. */
int slotcomm_nccl_init(struct slotcomm *c, struct slotcomm_nccl **out);

/* Finalizes (or, after an error, aborts) the communicator.  NULL is fine. */
void slotcomm_nccl_destroy(struct slotcomm_nccl *g);

/* "NVIDIA H100 80GB HBM3 (device 0), NCCL 2.28.3, CUDA runtime 13000" */
const char *slotcomm_nccl_describe(const struct slotcomm_nccl *g);

int slotcomm_nccl_alloc(struct slotcomm_nccl *g, size_t bytes, void **dev);
void slotcomm_nccl_free(struct slotcomm_nccl *g, void *dev);
int slotcomm_nccl_to_device(struct slotcomm_nccl *g, void *dev, const void *host, size_t bytes);
int slotcomm_nccl_to_host(struct slotcomm_nccl *g, void *host, const void *dev, size_t bytes);

/* Enqueues an in-place all-reduce of count elements of dev on the backend's
 * stream; slotcomm_nccl_sync waits for it. */
int slotcomm_nccl_allreduce_start(struct slotcomm_nccl *g, void *dev, size_t count,
			      enum slotcomm_dtype dtype, enum slotcomm_op op);

/* Enqueues an out-of-place all-reduce: the result of reducing every rank's
 * count elements of send lands in recv; send is left as it was.  send ==
 * recv is the in-place all-reduce; otherwise they must not overlap (NCCL's
 * result is undefined there).
 * Numbered as one all-reduce like slotcomm_nccl_allreduce_start, and the
 * same collective to the peers: ranks may mix the two. */
int slotcomm_nccl_allreduce_into(struct slotcomm_nccl *g, const void *send, void *recv,
				 size_t count, enum slotcomm_dtype dtype, enum slotcomm_op op);

/* Waits until everything enqueued has finished. */
int slotcomm_nccl_sync(struct slotcomm_nccl *g);

#ifdef __cplusplus
}
#endif

#endif
