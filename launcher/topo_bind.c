// SPDX-License-Identifier: MIT
/* Binding a slot's process: the affinity mask and the memory policy,
 * computed ahead (topo_bindmask_make) so that the child between fork and
 * exec only makes syscalls (topo_bind_self).  Memory is bound (MPOL_BIND)
 * to the NUMA nodes local to the set only when that excludes an allowed
 * node. */
#include <errno.h>
#include <limits.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "topo_priv.h"

void topo_bindmask_free(struct topo_bindmask *b)
{
	if (!b)
		return;
	if (b->cpus)
		CPU_FREE(b->cpus);
	free(b->nodes);
	free(b);
}

int topo_bindmask_make(struct topo *t, hwloc_const_bitmap_t set, hwloc_const_bitmap_t ns,
		       struct topo_bindmask **out)
{
	struct topo_bindmask *b = calloc(1, sizeof(*b));
	int last = hwloc_bitmap_last(set), i;

	if (!b)
		return -ENOMEM;
	if (last < 0) {
		free(b);
		return -EINVAL;
	}
	b->cpus = CPU_ALLOC(last + 1);
	if (!b->cpus)
		goto nomem;
	b->cpusize = CPU_ALLOC_SIZE(last + 1);
	CPU_ZERO_S(b->cpusize, b->cpus);
	hwloc_bitmap_foreach_begin(i, set)
		CPU_SET_S((size_t)i, b->cpusize, b->cpus);
	hwloc_bitmap_foreach_end();

	/* A policy naming every node we may use binds nothing; skipping it
	 * also spares containers whose seccomp profile refuses it. */
	if (!hwloc_bitmap_iszero(ns) && !hwloc_bitmap_isincluded(t->allowed_nodes, ns)) {
		const unsigned bits = sizeof(unsigned long) * CHAR_BIT;
		/* The kernel reads maxnode - 1 bits: leave a spare one. */
		size_t words = ((size_t)hwloc_bitmap_last(ns) + 2 + bits - 1) / bits;

		b->nodes = calloc(words, sizeof(unsigned long));
		if (!b->nodes)
			goto nomem;
		hwloc_bitmap_foreach_begin(i, ns)
			b->nodes[(unsigned)i / bits] |= 1UL << ((unsigned)i % bits);
		hwloc_bitmap_foreach_end();
		b->maxnode = (unsigned long)(words * bits);
	}
	*out = b;
	return 0;
nomem:
	topo_bindmask_free(b);
	return -ENOMEM;
}

int topo_bind_self(struct topo *t, const struct topo_slot *s)
{
	const struct topo_bindmask *b;

	(void)t;
	if (!s)
		return -EINVAL;
	b = s->bindmask;
	if (!b)
		return 0;
	if (sched_setaffinity(0, b->cpusize, b->cpus) < 0)
		return -errno;
	/* EPERM: Docker's default seccomp profile refuses set_mempolicy
	 * without CAP_SYS_NICE; ENOSYS: a kernel without NUMA.  The CPUs are
	 * bound and first-touch allocation already favours their node, so
	 * the launch goes on. */
	if (b->nodes && syscall(SYS_set_mempolicy, MPOL_BIND, b->nodes, b->maxnode) < 0 &&
	    errno != EPERM && errno != ENOSYS)
		return -errno;
	return 0;
}

int topo_format_binding(const struct topo_slot *s, int rank, char *buf, size_t len)
{
	int n;

	if (!s || !buf || len == 0)
		return -EINVAL;
	n = snprintf(buf, len, "rank %d: gpu %s, cpus %s, numa %s%s", rank,
		     s->gpu ? s->gpu : "none",
		     s->cpuset && s->cpus ? s->cpus : "unbound",
		     s->cpuset && s->numa && *s->numa ? s->numa : "unbound",
		     s->shared ? " (shares cores)" : "");
	if (n < 0)
		return -EINVAL;
	return (size_t)n >= len ? -ENOSPC : 0;
}
