// SPDX-License-Identifier: MIT
/* What the topology modules share and nobody else sees: the loaded
 * topology (topology.c), its GPUs (topo_gpu.c), the precomputed binding
 * (topo_bind.c) that the cpuset choice (topo_cpuset.c) fills in. */
#ifndef SLOTRUN_TOPO_PRIV_H
#define SLOTRUN_TOPO_PRIV_H

#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include <hwloc.h>

#include "topology.h"

struct topo_gpu {
	unsigned id;       /* CUDA index: N of cudaN, or rank in bus order */
	hwloc_obj_t dev;   /* the PCI device (or the OS device without one) */
	hwloc_obj_t loc;   /* locality: see topo_gpu.c */
};

struct topo {
	hwloc_topology_t h;
	hwloc_bitmap_t allowed;        /* PUs slots may use */
	hwloc_bitmap_t allowed_nodes;  /* NUMA nodes memory may be bound to */
	struct topo_gpu *gpu;          /* sorted by id */
	int ngpus;
	bool pci_order;
};

/* Precomputed in topo_plan so the child after fork only makes syscalls. */
struct topo_bindmask {
	size_t cpusize;
	cpu_set_t *cpus;
	unsigned long maxnode;
	unsigned long *nodes;          /* NULL: leave the memory policy alone */
};

/* Formats into err when the caller gave one. */
__attribute__((format(printf, 3, 4)))
static inline void topo_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* The object whose memory children are the NUMA nodes local to obj. */
hwloc_obj_t topo_numa_home(hwloc_obj_t obj);

/* Fills t->gpu, t->ngpus and t->pci_order from the loaded topology.
 * Returns 0 or -ENOMEM. */
int topo_find_gpus(struct topo *t);

/* The GPU an id names, or NULL: ids are CUDA indexes in decimal; anything
 * else (UUIDs, MIG names, lists) is not ours to place. */
struct topo_gpu *topo_gpu_by_id(struct topo *t, const char *id);

/* The affinity mask of set and, when binding memory to ns excludes an
 * allowed node, the memory policy's node mask.  Returns 0, -EINVAL for an
 * empty set, or -ENOMEM. */
int topo_bindmask_make(struct topo *t, hwloc_const_bitmap_t set, hwloc_const_bitmap_t ns,
		       struct topo_bindmask **out);
void topo_bindmask_free(struct topo_bindmask *b);

#endif
