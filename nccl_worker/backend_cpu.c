// SPDX-License-Identifier: MIT
/* The benchmark's CPU backend: slotcomm_allreduce in place on the caller's
 * host buffer, over whatever transport the communicator picked.  The
 * library's CPU all-reduce is in place only, and so is this backend. */
#include "backend.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct backend {
	struct slotcomm *c;
	void *buf;  /* the host buffer last loaded */
};

static int cpu_open(struct slotcomm *c, size_t cap, int out_of_place, struct backend **out)
{
	struct backend *b;

	(void)cap;
	if (out_of_place)
		return -EOPNOTSUPP;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->c = c;
	*out = b;
	return 0;
}

static void cpu_describe(const struct backend *b, char *buf, size_t len)
{
	slotcomm_transport_describe(b->c, buf, len);
}

static int cpu_load(struct backend *b, enum backend_buf which, const void *host, size_t bytes)
{
	(void)which, (void)bytes;
	b->buf = (void *)(uintptr_t)host;
	return 0;
}

static int cpu_run(struct backend *b, long times, size_t count, enum slotcomm_dtype t,
		   enum slotcomm_op op)
{
	for (long i = 0; i < times; i++) {
		int r = slotcomm_allreduce(b->c, b->buf, count, t, op);

		if (r < 0)
			return r;
	}
	return 0;
}

static int cpu_fetch(struct backend *b, enum backend_buf which, void *host, size_t bytes)
{
	(void)which;
	if (host != b->buf)
		memcpy(host, b->buf, bytes);
	return 0;
}

static void cpu_close(struct backend *b)
{
	free(b);
}

const struct backend_ops backend_cpu = {
	.name = "cpu",
	.out_of_place = 0,
	.open = cpu_open,
	.describe = cpu_describe,
	.load = cpu_load,
	.run = cpu_run,
	.fetch = cpu_fetch,
	.close = cpu_close,
};
