// SPDX-License-Identifier: MIT
/* NCCL backend; compiled only when meson found the CUDA runtime and NCCL.
 *
 * Internally every step returns a small result (enum nres) and the CHECK
 * macros record the failing call with file:line and the library's message;
 * the exported functions turn that into comm_fail (one line, peers told)
 * and abort the NCCL communicator. */
#include <slotcomm/nccl.h>

#include <cuda_runtime_api.h>
#include <errno.h>
#include <nccl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_internal.h"
#include "sock.h"

#ifndef __FILE_NAME__
#define __FILE_NAME__ __FILE__
#endif

/* Spin on the stream this long before polling with sleeps (keeps small
 * all-reduces quick without burning a core on long ones). */
#define SPIN_NS 1000000

/* After the spin, each sleep lasts a 32nd of the time waited so far,
 * between NAP_MIN_NS and NAP_MAX_NS: the wait ends at most about 3% (plus
 * the kernel's timer slack) after the GPU is done.  A fixed 1 ms nap made
 * 20 all-reduces of 256 MiB (2.6 ms of work) end up to 1 ms late: 20% of
 * their algbw on an H200. */
#define NAP_MIN_NS 20000
#define NAP_MAX_NS 1000000

enum nres {
	NR_OK,
	NR_CUDA,     /* a CUDA call failed */
	NR_NCCL,     /* an NCCL call failed, or the communicator reported an error */
	NR_TIMEOUT,  /* SLOTRUN_TIMEOUT passed */
	NR_PEER,     /* the control plane failed (already in slotcomm_error) */
};

struct slotcomm_nccl {
	struct slotcomm *c;
	int device;
	cudaStream_t stream;
	ncclComm_t nc;
	int failed;
	char desc[256];
	char err[SLOTCOMM_ERR_MAX];
};

static enum nres nccl_msg(struct slotcomm_nccl *g, const char *file, int line, const char *call,
			  ncclResult_t r)
{
	const char *last = g->nc ? ncclGetLastError(g->nc) : NULL;

	snprintf(g->err, sizeof(g->err), "%s:%d: %s: %s%s%s", file, line, call,
		 ncclGetErrorString(r), last && *last ? ": " : "", last ? last : "");
	for (char *p = g->err; *p; p++)  /* one line */
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return NR_NCCL;
}

#define CUDACHECK(g, call)                                                               \
	do {                                                                             \
		cudaError_t e_ = (call);                                                 \
		if (e_ != cudaSuccess) {                                                 \
			snprintf((g)->err, sizeof((g)->err), "%s:%d: %s: %s", __FILE_NAME__,    \
				 __LINE__, #call, cudaGetErrorString(e_));               \
			return NR_CUDA;                                                  \
		}                                                                        \
	} while (0)

/* For a non-blocking communicator ncclInProgress means "started": wait
 * until it is done. */
#define NCCLCHECK(g, call)                                                               \
	do {                                                                             \
		ncclResult_t r_ = (call);                                                \
		if (r_ == ncclInProgress) {                                              \
			enum nres w_ = wait_ready(g, #call, __FILE_NAME__, __LINE__);     \
			if (w_ != NR_OK)                                                 \
				return w_;                                               \
		} else if (r_ != ncclSuccess) {                                          \
			return nccl_msg(g, __FILE_NAME__, __LINE__, #call, r_);          \
		}                                                                        \
	} while (0)

/* Sleeps up to ns watching the control connections; a peer that died or
 * aborted ends the wait with NR_PEER. */
static enum nres nap(struct slotcomm_nccl *g, const char *what, int64_t ns)
{
	struct slotcomm *c = g->c;
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };
	int n = comm_watch_fill(c, c->pfd);

	if (ppoll(c->pfd, (nfds_t)n, &ts, NULL) > 0 && comm_watch_check(c, c->pfd, n, what) < 0)
		return NR_PEER;
	return NR_OK;
}

static enum nres wait_ready(struct slotcomm_nccl *g, const char *call, const char *file, int line)
{
	int64_t deadline = sock_now_ns() + g->c->timeout_ns;

	comm_watch_init(g->c);
	for (;;) {
		ncclResult_t st = ncclSuccess, r = ncclCommGetAsyncError(g->nc, &st);

		if (r != ncclSuccess)
			return nccl_msg(g, file, line, "ncclCommGetAsyncError", r);
		if (st == ncclSuccess)
			return NR_OK;
		if (st != ncclInProgress)
			return nccl_msg(g, file, line, call, st);
		if (sock_now_ns() > deadline) {
			snprintf(g->err, sizeof(g->err), "%s:%d: %s did not finish within %gs "
				 "(SLOTRUN_TIMEOUT)", file, line, call, g->c->cfg.timeout_s);
			return NR_TIMEOUT;
		}
		if (nap(g, "NCCL setup", NAP_MAX_NS) != NR_OK)
			return NR_PEER;
	}
}

static ncclDataType_t nccl_type(enum slotcomm_dtype t)
{
	static const ncclDataType_t map[SLOTCOMM_DTYPE_COUNT] = {
		[SLOTCOMM_FLOAT32] = ncclFloat32, [SLOTCOMM_FLOAT64] = ncclFloat64,
		[SLOTCOMM_INT32] = ncclInt32,     [SLOTCOMM_INT64] = ncclInt64,
		[SLOTCOMM_BF16] = ncclBfloat16,   [SLOTCOMM_FP16] = ncclFloat16,
	};
	return map[t];
}

static ncclRedOp_t nccl_op(enum slotcomm_op op)
{
	static const ncclRedOp_t map[SLOTCOMM_OP_COUNT] = {
		[SLOTCOMM_SUM] = ncclSum, [SLOTCOMM_PROD] = ncclProd, [SLOTCOMM_MIN] = ncclMin,
		[SLOTCOMM_MAX] = ncclMax, [SLOTCOMM_AVG] = ncclAvg,
	};
	return map[op];
}

/* Turns a failed step into the communicator's error. */
static int fail(struct slotcomm_nccl *g, enum nres r)
{
	g->failed = 1;
	if (g->nc) {
		ncclCommAbort(g->nc);
		g->nc = NULL;
	}
	if (r == NR_PEER)
		return g->c->broken ? -ECONNABORTED : comm_fail(g->c, -ECONNABORTED, -1, "NCCL aborted");
	return comm_fail(g->c, r == NR_TIMEOUT ? -ETIMEDOUT : -EIO, -1, "%s", g->err);
}

int slotcomm_nccl_compiled(void)
{
	return 1;
}

int slotcomm_nccl_probe(char *why, size_t whylen)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		snprintf(why, whylen, "no CUDA device is visible (cudaGetDeviceCount: %s)",
			 cudaGetErrorString(e));
		return 0;
	}
	if (n <= 0) {
		snprintf(why, whylen, "no CUDA device is visible");
		return 0;
	}
	return n;
}

static enum nres init_impl(struct slotcomm_nccl *g)
{
	struct slotcomm *c = g->c;
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	struct cudaDeviceProp prop;
	ncclUniqueId id;
	int ndev = 0, nver = 0, cver = 0;

	CUDACHECK(g, cudaGetDeviceCount(&ndev));
	g->device = ndev == 1 ? 0 : c->cfg.local_rank;
	if (g->device >= ndev) {
		snprintf(g->err, sizeof(g->err), "LOCAL_RANK=%d, but only %d CUDA devices are visible",
			 c->cfg.local_rank, ndev);
		return NR_CUDA;
	}
	CUDACHECK(g, cudaSetDevice(g->device));
	CUDACHECK(g, cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));

	memset(&id, 0, sizeof(id));
	if (c->rank == 0)
		NCCLCHECK(g, ncclGetUniqueId(&id));
	if (slotcomm_broadcast(c, &id, sizeof(id)) < 0)
		return NR_PEER;
	config.blocking = 0;
	NCCLCHECK(g, ncclCommInitRankConfig(&g->nc, c->size, id, c->rank, &config));

	memset(&prop, 0, sizeof(prop));
	if (cudaGetDeviceProperties(&prop, g->device) != cudaSuccess)
		snprintf(prop.name, sizeof(prop.name), "?");
	(void)ncclGetVersion(&nver);
	(void)cudaRuntimeGetVersion(&cver);
	if (snprintf(g->desc, sizeof(g->desc), "%s (device %d), NCCL %d.%d.%d, CUDA runtime %d",
		     prop.name, g->device, nver / 10000, nver / 100 % 100, nver % 100, cver) < 0)
		g->desc[0] = '\0';
	return NR_OK;
}

int slotcomm_nccl_init(struct slotcomm *c, struct slotcomm_nccl **out)
{
	struct slotcomm_nccl *g = calloc(1, sizeof(*g));
	enum nres r;
	int rc;

	*out = NULL;
	if (!g)
		return comm_fail(c, -ENOMEM, -1, "out of memory");
	g->c = c;
	rc = comm_usable(c);
	if (rc < 0) {
		free(g);
		return rc;
	}
	r = init_impl(g);
	if (r != NR_OK) {
		rc = fail(g, r);
		slotcomm_nccl_destroy(g);
		return rc;
	}
	*out = g;
	return 0;
}

static enum nres finalize(struct slotcomm_nccl *g)
{
	NCCLCHECK(g, ncclCommFinalize(g->nc));
	return NR_OK;
}

void slotcomm_nccl_destroy(struct slotcomm_nccl *g)
{
	if (!g)
		return;
	if (g->nc) {
		if (!g->failed && !g->c->broken && finalize(g) == NR_OK)
			ncclCommDestroy(g->nc);
		else
			ncclCommAbort(g->nc);
	}
	if (g->stream)
		cudaStreamDestroy(g->stream);
	free(g);
}

const char *slotcomm_nccl_describe(const struct slotcomm_nccl *g)
{
	return g->desc;
}

static enum nres alloc_impl(struct slotcomm_nccl *g, size_t bytes, void **dev)
{
	CUDACHECK(g, cudaMalloc(dev, bytes ? bytes : 1));
	return NR_OK;
}

int slotcomm_nccl_alloc(struct slotcomm_nccl *g, size_t bytes, void **dev)
{
	enum nres r = alloc_impl(g, bytes, dev);

	return r == NR_OK ? 0 : fail(g, r);
}

void slotcomm_nccl_free(struct slotcomm_nccl *g, void *dev)
{
	(void)g;
	if (dev)
		cudaFree(dev);
}

static enum nres copy_impl(struct slotcomm_nccl *g, void *dst, const void *src, size_t bytes,
			   enum cudaMemcpyKind kind)
{
	CUDACHECK(g, cudaMemcpy(dst, src, bytes, kind));
	return NR_OK;
}

int slotcomm_nccl_to_device(struct slotcomm_nccl *g, void *dev, const void *host, size_t bytes)
{
	enum nres r = bytes ? copy_impl(g, dev, host, bytes, cudaMemcpyHostToDevice) : NR_OK;

	return r == NR_OK ? 0 : fail(g, r);
}

int slotcomm_nccl_to_host(struct slotcomm_nccl *g, void *host, const void *dev, size_t bytes)
{
	enum nres r = bytes ? copy_impl(g, host, dev, bytes, cudaMemcpyDeviceToHost) : NR_OK;

	return r == NR_OK ? 0 : fail(g, r);
}

static enum nres allreduce_impl(struct slotcomm_nccl *g, const void *send, void *recv,
				size_t count, enum slotcomm_dtype dtype, enum slotcomm_op op)
{
	NCCLCHECK(g, ncclAllReduce(send, recv, count, nccl_type(dtype), nccl_op(op), g->nc,
				   g->stream));
	return NR_OK;
}

/* The in-place and the out-of-place all-reduce are one collective to the
 * peers (and to NCCL): each rank may pick either. */
static int allreduce_enqueue(struct slotcomm_nccl *g, const void *send, void *recv, size_t count,
			     enum slotcomm_dtype dtype, enum slotcomm_op op)
{
	enum nres r;
	int rc = comm_usable(g->c);

	if (rc < 0)
		return rc;
	if ((unsigned)dtype >= SLOTCOMM_DTYPE_COUNT || (unsigned)op >= SLOTCOMM_OP_COUNT)
		return comm_fail(g->c, -EINVAL, -1, "all-reduce: unknown type or op");
	/* Numbered like every collective, so that a peer's control frame met
	 * while waiting for the GPU says where that peer is (comm_peer_frame);
	 * the data itself goes through NCCL, unchecked. */
	g->c->seq++;
	g->c->cur = (struct comm_pos){ .kind = FRAME_COLL_ALLREDUCE, .seq = g->c->seq, .shaped = 1,
				       .count = count, .dtype = (uint8_t)dtype, .op = (uint8_t)op };
	if (count == 0)
		return 0;
	r = allreduce_impl(g, send, recv, count, dtype, op);
	return r == NR_OK ? 0 : fail(g, r);
}

int slotcomm_nccl_allreduce_start(struct slotcomm_nccl *g, void *dev, size_t count,
			      enum slotcomm_dtype dtype, enum slotcomm_op op)
{
	return allreduce_enqueue(g, dev, dev, count, dtype, op);
}

int slotcomm_nccl_allreduce_into(struct slotcomm_nccl *g, const void *send, void *recv,
				 size_t count, enum slotcomm_dtype dtype, enum slotcomm_op op)
{
	return allreduce_enqueue(g, send, recv, count, dtype, op);
}

static enum nres sync_impl(struct slotcomm_nccl *g)
{
	int64_t start = sock_now_ns(), deadline = start + g->c->timeout_ns;

	comm_watch_init(g->c);
	for (;;) {
		cudaError_t e = cudaStreamQuery(g->stream);
		ncclResult_t st = ncclSuccess;

		if (e == cudaSuccess)
			return NR_OK;
		if (e != cudaErrorNotReady)
			CUDACHECK(g, e);
		ncclResult_t q = ncclCommGetAsyncError(g->nc, &st);

		if (q != ncclSuccess)
			return nccl_msg(g, __FILE_NAME__, __LINE__, "ncclCommGetAsyncError", q);
		if (st != ncclSuccess && st != ncclInProgress)
			return nccl_msg(g, __FILE_NAME__, __LINE__, "all-reduce (asynchronous error)", st);
		if (sock_now_ns() > deadline) {
			snprintf(g->err, sizeof(g->err), "%s:%d: all-reduce on the GPU did not finish "
				 "within %gs (SLOTRUN_TIMEOUT)", __FILE_NAME__, __LINE__,
				 g->c->cfg.timeout_s);
			return NR_TIMEOUT;
		}
		int64_t waited = sock_now_ns() - start;

		if (waited > SPIN_NS) {
			int64_t ns = waited / 32;

			ns = ns < NAP_MIN_NS ? NAP_MIN_NS : ns > NAP_MAX_NS ? NAP_MAX_NS : ns;
			if (nap(g, "all-reduce", ns) != NR_OK)
				return NR_PEER;
		}
	}
}

int slotcomm_nccl_sync(struct slotcomm_nccl *g)
{
	enum nres r;
	int rc = comm_usable(g->c);

	if (rc < 0)
		return rc;
	r = sync_impl(g);
	return r == NR_OK ? 0 : fail(g, r);
}
