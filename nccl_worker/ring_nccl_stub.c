// SPDX-License-Identifier: MIT
/* The NCCL backend when the build found no CUDA runtime or NCCL. */
#include <slotcomm/nccl.h>

#include <errno.h>
#include <stdio.h>

int slotcomm_nccl_compiled(void)
{
	return 0;
}

int slotcomm_nccl_probe(char *why, size_t whylen)
{
	snprintf(why, whylen, "built without NCCL (the CUDA runtime or NCCL was not found at build "
		 "time)");
	return 0;
}

int slotcomm_nccl_init(struct slotcomm *c, struct slotcomm_nccl **out)
{
	(void)c;
	*out = NULL;
	return -ENOSYS;
}

void slotcomm_nccl_destroy(struct slotcomm_nccl *g)
{
	(void)g;
}

const char *slotcomm_nccl_describe(const struct slotcomm_nccl *g)
{
	(void)g;
	return "";
}

int slotcomm_nccl_alloc(struct slotcomm_nccl *g, size_t bytes, void **dev)
{
	(void)g;
	(void)bytes;
	*dev = NULL;
	return -ENOSYS;
}

void slotcomm_nccl_free(struct slotcomm_nccl *g, void *dev)
{
	(void)g;
	(void)dev;
}

int slotcomm_nccl_to_device(struct slotcomm_nccl *g, void *dev, const void *host, size_t bytes)
{
	(void)g, (void)dev, (void)host, (void)bytes;
	return -ENOSYS;
}

int slotcomm_nccl_to_host(struct slotcomm_nccl *g, void *host, const void *dev, size_t bytes)
{
	(void)g, (void)dev, (void)host, (void)bytes;
	return -ENOSYS;
}

int slotcomm_nccl_allreduce_start(struct slotcomm_nccl *g, void *dev, size_t count,
			      enum slotcomm_dtype dtype, enum slotcomm_op op)
{
	(void)g, (void)dev, (void)count, (void)dtype, (void)op;
	return -ENOSYS;
}

int slotcomm_nccl_allreduce_into(struct slotcomm_nccl *g, const void *send, void *recv,
				 size_t count, enum slotcomm_dtype dtype, enum slotcomm_op op)
{
	(void)g, (void)send, (void)recv, (void)count, (void)dtype, (void)op;
	return -ENOSYS;
}

int slotcomm_nccl_sync(struct slotcomm_nccl *g)
{
	(void)g;
	return -ENOSYS;
}
