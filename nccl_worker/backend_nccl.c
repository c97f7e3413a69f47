// SPDX-License-Identifier: MIT
/* The benchmark's NCCL backend: <slotcomm/nccl.h> on a device buffer (or, built
 * without NCCL, its stub, which the benchmark never opens). */
#include "backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <slotcomm/nccl.h>

struct backend {
	struct slotcomm_nccl *g;
	void *dev;
};

static int nccl_open(struct slotcomm *c, size_t cap, struct backend **out)
{
	struct backend *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return -ENOMEM;
	r = slotcomm_nccl_init(c, &b->g);
	if (r == 0)
		r = slotcomm_nccl_alloc(b->g, cap, &b->dev);
	if (r < 0) {
		slotcomm_nccl_destroy(b->g);
		free(b);
		return r;
	}
	*out = b;
	return 0;
}

static void nccl_describe(const struct backend *b, char *buf, size_t len)
{
	snprintf(buf, len, "%s", slotcomm_nccl_describe(b->g));
}

static int nccl_load(struct backend *b, const void *host, size_t bytes)
{
	return slotcomm_nccl_to_device(b->g, b->dev, host, bytes);
}

static int nccl_run(struct backend *b, long times, size_t count, enum slotcomm_dtype t,
		    enum slotcomm_op op)
{
	for (long i = 0; i < times; i++) {
		int r = slotcomm_nccl_allreduce_start(b->g, b->dev, count, t, op);

		if (r < 0)
			return r;
	}
	return slotcomm_nccl_sync(b->g);
}

static int nccl_fetch(struct backend *b, void *host, size_t bytes)
{
	return slotcomm_nccl_to_host(b->g, host, b->dev, bytes);
}

static void nccl_close(struct backend *b)
{
	if (!b)
		return;
	slotcomm_nccl_free(b->g, b->dev);
	slotcomm_nccl_destroy(b->g);
	free(b);
}

const struct backend_ops backend_nccl = {
	.name = "nccl",
	.open = nccl_open,
	.describe = nccl_describe,
	.load = nccl_load,
	.run = nccl_run,
	.fetch = nccl_fetch,
	.close = nccl_close,
};
