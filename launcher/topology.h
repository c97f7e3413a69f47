/* Topology: which cores (and NUMA node) each slot gets, from hwloc.
 *
 * GPU slots: NVIDIA GPUs found in the hwloc topology (CUDA OS devices
 * "cudaN" when hwloc has them; otherwise NVIDIA PCI devices in bus order,
 * in which case CUDA_DEVICE_ORDER=PCI_BUS_ID must be exported so CUDA
 * numbers them the same way).  Each slot gets cores local to its GPU (its
 * NUMA node, else its package), split exclusively among the GPUs that share
 * them, whole cores before hyperthreads; memory bound to that NUMA node.
 * CPU slots: the allowed cores spread over the slots, exclusively when
 * there are enough.  Only PUs allowed to this process are used.
 * A topology given through HWLOC_XMLFILE is honoured (hwloc reads it). */
#ifndef SLOTRUN_TOPOLOGY_H
#define SLOTRUN_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>

enum topo_bind {
	TOPO_BIND_AUTO,   /* gpu on GPU slots, core on CPU slots */
	TOPO_BIND_NONE,
	TOPO_BIND_CORE,   /* exclusive cores */
	TOPO_BIND_NUMA,   /* the whole NUMA node(s) of the slot */
	TOPO_BIND_GPU,    /* the cores local to the slot's GPU, split among its GPUs */
};

struct topo;

struct topo_slot {
	char *gpu;        /* CUDA_VISIBLE_DEVICES value for the slot, NULL: no GPU */
	char *cpus;       /* hwloc list string ("0-3,8"), "" when unbound */
	char *numa;       /* NUMA node list string, "" when unbound */
	int ncpus;        /* cores (not PUs) in the set; 0 when unbound */
	void *cpuset;     /* hwloc_bitmap_t, NULL when unbound */
	void *nodeset;    /* hwloc_bitmap_t, NULL when no memory binding */
};

/* Loads this machine's topology (or HWLOC_XMLFILE's), restricted to the
 * PUs this process may run on.  Returns 0 or a negative errno with the
 * reason in err. */
int topo_open(struct topo **t, char *err, size_t errlen);
void topo_close(struct topo *t);

/* NVIDIA GPUs found; *pci_order is set when they were numbered by PCI bus
 * (then export CUDA_DEVICE_ORDER=PCI_BUS_ID). */
int topo_gpu_count(struct topo *t, bool *pci_order);

/* Plans nslots slots.  gpus: the CUDA device ids (CUDA numbering) the
 * slots use, one per slot, or NULL for CPU slots; an id is an index into the
 * GPUs topo found (UUIDs or ids beyond them: the slot is placed as a CPU
 * slot, not failed).  Returns 0 or a negative errno with the reason in err. */
int topo_plan(struct topo *t, enum topo_bind bind, int nslots, char *const *gpus,
	      struct topo_slot *out, char *err, size_t errlen);
void topo_slot_free(struct topo_slot *s);

/* Called in the child between fork and exec: binds the calling process's
 * CPUs and memory to the slot.  Returns 0 or a negative errno (the caller
 * names the set in its message). */
int topo_bind_self(struct topo *t, const struct topo_slot *s);

/* One --report-bindings line: "rank 3: gpu 5, cpus 24-31, numa 1". */
int topo_format_binding(const struct topo_slot *s, int rank, char *buf, size_t len);

int topo_parse_bind(const char *s, enum topo_bind *out);
const char *topo_bind_name(enum topo_bind b);

#endif
