// SPDX-License-Identifier: MIT
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

/* Most slots topo_plan accepts; more is a caller's bug, not a machine. */
#define TOPO_MAX_SLOTS 4096

struct topo_slot {
	char *gpu;        /* CUDA_VISIBLE_DEVICES value for the slot, NULL: no GPU */
	char *cpus;       /* hwloc list string ("0-3,8"), "" when unbound */
	char *numa;       /* NUMA node list string, "" when unbound */
	int ncpus;        /* cores (not PUs) in the set; 0 when unbound */
	void *cpuset;     /* hwloc_bitmap_t, NULL when unbound */
	void *nodeset;    /* hwloc_bitmap_t: the set's NUMA nodes, NULL when
			   * unbound.  Memory is bound to them only when that
			   * excludes a node (see topo_bind_self). */
	/* Added after the first draft of this header: */
	int gpu_index;    /* which of topo's GPUs the slot's id named (CUDA
			   * numbering), -1: no GPU or an id topo cannot map */
	bool gpu_local;   /* the set lies in the slot's GPU's NUMA node (or
			   * package); false for CPU placement */
	bool shared;      /* the set shares a core with another slot's: there
			   * were fewer cores than slots, or --bind numa */
	void *bindmask;   /* private: what topo_bind_self applies */
};

/* Loads this machine's topology (or HWLOC_XMLFILE's), restricted to the
 * PUs this process may run on: hwloc's allowed set (cgroups; an XML
 * export's allowed_cpuset) and, on the live system, the process's affinity
 * (taskset, Slurm).  An HWLOC_XMLFILE that cannot be read is an error, not
 * a silent fall back to this machine.  hwloc's GPU runtime plugins (cuda,
 * nvml, opencl, ...) are never loaded: they would number GPUs after an
 * inherited CUDA_VISIBLE_DEVICES; cudaN devices therefore come only from
 * XML, and a live machine's GPUs are in PCI bus order.  Returns 0 or a
 * negative errno with the reason in err. */
int topo_open(struct topo **t, char *err, size_t errlen);
void topo_close(struct topo *t);

/* NVIDIA GPUs found; *pci_order is set when they were numbered by PCI bus
 * (then export CUDA_DEVICE_ORDER=PCI_BUS_ID). */
int topo_gpu_count(struct topo *t, bool *pci_order);

/* Plans nslots slots.  gpus: the CUDA device ids (CUDA numbering) the
 * slots use, one per slot, or NULL for CPU slots; an id is an index into the
 * GPUs topo found (UUIDs or ids beyond them: the slot is placed as a CPU
 * slot, not failed).  Returns 0 or a negative errno with the reason in err.
 *
 * Placement (bind auto = gpu when gpus is given, else core):
 * - gpu: a GPU's locality is its NUMA node (the package when there is no
 *   NUMA information).  Each locality's allowed PUs are split among the
 *   slots placed there, ordered by GPU then slot: whole cores first, in
 *   contiguous runs whose sizes differ by at most one, so slots sharing a
 *   GPU split its share.  Fewer cores than slots: PUs (hyperthreads) are
 *   split instead; fewer PUs than slots: slots share PUs.  Sharing a core
 *   sets ->shared.  Slots topo cannot place by a GPU (no id, an unknown id,
 *   a GPU with no allowed PU nearby) split the PUs the others left, or all
 *   allowed PUs when none are left.
 * - core: all allowed PUs split over the slots in order, as above.
 * - numa: a GPU slot gets its GPU's whole locality; other slots whole NUMA
 *   nodes, split as above.
 * - none: nothing bound; gpu strings only.
 * Memory is bound (MPOL_BIND) to the NUMA nodes nearest the set when that
 * excludes one of the allowed nodes.  On failure out[] holds nothing to
 * free; on success free each slot with topo_slot_free. */
int topo_plan(struct topo *t, enum topo_bind bind, int nslots, char *const *gpus,
	      struct topo_slot *out, char *err, size_t errlen);
void topo_slot_free(struct topo_slot *s);

/* Called in the child between fork and exec: binds the calling process's
 * CPUs and memory to the slot.  Returns 0 or a negative errno (the caller
 * names the set in its message).  Only syscalls on masks topo_plan made (no
 * allocation, t is not touched), so it is safe after fork.  An unbound slot
 * is 0.  A memory policy refused with EPERM (Docker's default seccomp
 * profile without CAP_SYS_NICE) or ENOSYS is not an error: the CPUs are
 * bound and first-touch allocation already favours their node. */
int topo_bind_self(struct topo *t, const struct topo_slot *s);

/* Narrows the PUs later plans may use to those in cpulist (hwloc list
 * syntax, "0-5,32"), on top of what the process is allowed.  -EINVAL with
 * the reason in err when the list is malformed or leaves nothing. */
int topo_restrict(struct topo *t, const char *cpulist, char *err, size_t errlen);

/* Formats the --report-bindings line for one slot, without a newline:
 * "rank 3: gpu 5, cpus 24-27,56-59, numa 1".  "gpu none" for a CPU slot,
 * "cpus unbound, numa unbound" under --bind none, and " (shares cores)"
 * appended when s->shared.  Returns 0, -ENOSPC when truncated, -EINVAL. */
int topo_format_binding(const struct topo_slot *s, int rank, char *buf, size_t len);

int topo_parse_bind(const char *s, enum topo_bind *out);
const char *topo_bind_name(enum topo_bind b);

#endif
