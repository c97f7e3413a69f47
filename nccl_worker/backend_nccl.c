// SPDX-License-Identifier: MIT
/* The benchmark's NCCL backend: <slotcomm/nccl.h> on device buffers (or, built
 * without NCCL, its stub, which the benchmark never opens).  In place one
 * buffer; out of place a send and a receive buffer. */
#include "backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <slotcomm/nccl.h>

struct backend {
	struct slotcomm_nccl *g;
	void *send, *recv;  /* the same buffer in place */
};

static void nccl_close(struct backend *b)
{
	if (!b)
		return;
	if (b->recv != b->send)
		slotcomm_nccl_free(b->g, b->recv);
	slotcomm_nccl_free(b->g, b->send);
	slotcomm_nccl_destroy(b->g);
	free(b);
}

static int nccl_open(struct slotcomm *c, size_t cap, int out_of_place, struct backend **out)
{
	struct backend *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return -ENOMEM;
	r = slotcomm_nccl_init(c, &b->g);
	if (r == 0)
		r = slotcomm_nccl_alloc(b->g, cap, &b->send);
	b->recv = b->send;
	if (r == 0 && out_of_place)
		r = slotcomm_nccl_alloc(b->g, cap, &b->recv);
	if (r < 0) {
		nccl_close(b);
		return r;
	}
	*out = b;
	return 0;
}

static void nccl_describe(const struct backend *b, char *buf, size_t len)
{
	snprintf(buf, len, "%s", slotcomm_nccl_describe(b->g));
}

static void *buffer(struct backend *b, enum backend_buf which)
{
	return which == BACKEND_SEND ? b->send : b->recv;
}

static int nccl_load(struct backend *b, enum backend_buf which, const void *host, size_t bytes)
{
	return slotcomm_nccl_to_device(b->g, buffer(b, which), host, bytes);
}

static int nccl_run(struct backend *b, long times, size_t count, enum slotcomm_dtype t,
		    enum slotcomm_op op)
{
	for (long i = 0; i < times; i++) {
		int r = b->recv == b->send
				? slotcomm_nccl_allreduce_start(b->g, b->send, count, t, op)
				: slotcomm_nccl_allreduce_into(b->g, b->send, b->recv, count, t, op);

		if (r < 0)
			return r;
	}
	return slotcomm_nccl_sync(b->g);
}

static int nccl_fetch(struct backend *b, enum backend_buf which, void *host, size_t bytes)
{
	return slotcomm_nccl_to_host(b->g, host, buffer(b, which), bytes);
}

const struct backend_ops backend_nccl = {
	.name = "nccl",
	.out_of_place = 1,
	.open = nccl_open,
	.describe = nccl_describe,
	.load = nccl_load,
	.run = nccl_run,
	.fetch = nccl_fetch,
	.close = nccl_close,
};
