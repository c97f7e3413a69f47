// SPDX-License-Identifier: MIT
/* The NCCL backend when the build found no CUDA runtime or NCCL. */
#include "ring_nccl.h"

#include <errno.h>
#include <stdio.h>

int ring_nccl_compiled(void)
{
	return 0;
}

int ring_nccl_probe(char *why, size_t whylen)
{
	snprintf(why, whylen, "built without NCCL (the CUDA runtime or NCCL was not found at build "
		 "time)");
	return 0;
}

int ring_nccl_init(struct comm *c, struct ring_nccl **out)
{
	(void)c;
	*out = NULL;
	return -ENOSYS;
}

void ring_nccl_destroy(struct ring_nccl *g)
{
	(void)g;
}

const char *ring_nccl_describe(const struct ring_nccl *g)
{
	(void)g;
	return "";
}

int ring_nccl_alloc(struct ring_nccl *g, size_t bytes, void **dev)
{
	(void)g;
	(void)bytes;
	*dev = NULL;
	return -ENOSYS;
}

void ring_nccl_free(struct ring_nccl *g, void *dev)
{
	(void)g;
	(void)dev;
}

int ring_nccl_to_device(struct ring_nccl *g, void *dev, const void *host, size_t bytes)
{
	(void)g, (void)dev, (void)host, (void)bytes;
	return -ENOSYS;
}

int ring_nccl_to_host(struct ring_nccl *g, void *host, const void *dev, size_t bytes)
{
	(void)g, (void)dev, (void)host, (void)bytes;
	return -ENOSYS;
}

int ring_nccl_allreduce_start(struct ring_nccl *g, void *dev, size_t count,
			      enum comm_dtype dtype, enum comm_op op)
{
	(void)g, (void)dev, (void)count, (void)dtype, (void)op;
	return -ENOSYS;
}

int ring_nccl_sync(struct ring_nccl *g)
{
	(void)g;
	return -ENOSYS;
}
