/* The slot plan: for each local slot its ranks, GPU, cpuset and the
 * environment slotrun sets for it (DESIGN.md, "What every worker gets").
 * Pure: built from values; the user's environment is read through ci_env
 * only to leave alone what the user already set. */
#ifndef SLOTRUN_PLAN_H
#define SLOTRUN_PLAN_H

#include <stdbool.h>

#include "cluster_info.h"
#include "topology.h"

#define PLAN_SECRET_VAR "SLOTRUN_JOB_SECRET"

struct plan_slot {
	int rank, local_rank;
	const char *gpu;    /* CUDA_VISIBLE_DEVICES for it, or NULL */
	const char *cpus;   /* hwloc list string, "" when unbound */
	const char *numa;
	int ncpus;
	char **env;         /* "NAME=VALUE" slotrun sets, NULL-terminated */
};

struct plan {
	int nslots;
	int node_rank;
	struct plan_slot *slots;
};

struct plan_opts {
	const char *secret;   /* the job secret (SLOTRUN_JOB_SECRET) */
	const char *iface;    /* interface for NCCL/Gloo, or NULL */
	bool pci_order;       /* GPUs numbered by PCI bus: export CUDA_DEVICE_ORDER */
};

/* tslots: ci->slots entries from topo_plan (or NULL: no GPU, no binding).
 * Returns 0 or -ENOMEM. */
int plan_build(const struct cluster_info *ci, const struct topo_slot *tslots,
	       const struct plan_opts *po, const struct ci_env *env, struct plan *p);
void plan_free(struct plan *p);

/* One --dry-run row: a one-line JSON object, malloc'd.  The secret's value
 * is shown as "<secret>". */
char *plan_slot_json(const struct plan *p, int i);

/* The worker's whole environment: base with the slot's variables set over
 * it.  A malloc'd NULL-terminated array whose strings are borrowed from
 * base and the slot; free only the array. */
char **plan_envp(const struct plan_slot *s, char *const *base);

#endif
