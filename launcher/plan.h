// SPDX-License-Identifier: MIT
/* The slot plan: for each local slot its ranks, placement (GPU, cpuset),
 * whether the console shows it, and the environment slotrun sets for it
 * (slotrun(1), the workers' environment); and the job's rendezvous secret.
 * Pure: built from values; the user's environment is read through ci_env
 * (the same injected view ClusterInfo reads), so tests give it as a value.
 * The one exception is the random secret of a one-node job. */
#ifndef SLOTRUN_PLAN_H
#define SLOTRUN_PLAN_H

#include <stdbool.h>

#include "cluster_info.h"
#include "topology.h"

#define PLAN_SECRET_VAR "SLOTRUN_JOB_SECRET"
#define PLAN_SECRET_MAX 128    /* with the NUL; a longer given secret is refused */
/* How a secret over the limit is refused, wherever it was given. */
#define PLAN_SECRET_TOO_LONG "longer than 127 bytes, the most a job secret may be"

struct plan_slot {
	int rank, local_rank;
	struct topo_slot place;   /* owned: its GPU in CUDA's numbering (gpu NULL:
				   * none), cpuset and NUMA node; all unset
				   * (cpus NULL, cpuset NULL) without a topology */
	bool shown;               /* its output is echoed on the console
				   * (--ranks-filter); log files get every slot */
	char **env;               /* "NAME=VALUE" slotrun sets, NULL-terminated */
};

struct plan {
	int nslots;
	int node_rank;
	struct plan_slot *slots;
};

struct plan_opts {
	const char *secret;   /* the job secret (plan_job_secret) */
	const char *iface;    /* interface for NCCL/Gloo, or NULL */
	bool pci_order;       /* GPUs numbered by PCI bus: export CUDA_DEVICE_ORDER */
};

/* Builds this node's plan.  tslots: ci->slots placements from topo_plan, or
 * NULL without a topology (no GPU, no binding).  Each entry is moved into its
 * slot, on failure too: the caller's entries are left zeroed and only the
 * array stays the caller's to free.  Every slot starts shown.
 *
 * A slot's GPU is turned into the numbering CUDA sees in this environment,
 * while placement used physical ids.  They differ inside a container
 * (Determined's slot ids are the agent's devices; the container sees its own
 * GPUs from 0) and under Slurm's device cgroups: then an inherited
 * CUDA_VISIBLE_DEVICES gives the slot's entry, and without one a Determined
 * container numbers its GPUs by position (on bare metal Slurm's ids are
 * CUDA's).  Returns 0 or -ENOMEM (p holds nothing then). */
int plan_build(const struct cluster_info *ci, struct topo_slot *tslots,
	       const struct plan_opts *po, const struct ci_env *env, struct plan *p);

/* Frees the slots, their placements and environments; p is empty after. */
void plan_free(struct plan *p);

/* Where this node stands in a round of the job plane: an elastic job's
 * rounds move it (its node rank, the ranks and the chief change); a
 * fixed-size job's rounds are its plan. */
struct plan_round {
	int node_rank, nnodes;
	int rank_base, world_size;
	const char *master;       /* the chief's address for MASTER_ADDR; NULL: as planned */
};

/* Gives every slot its rank in round r (rank_base + local rank) and
 * rewrites the variables that name the round: RANK, WORLD_SIZE,
 * GROUP_RANK, NODE_RANK, CROSS_RANK, GROUP_WORLD_SIZE, CROSS_SIZE and, with
 * r->master, MASTER_ADDR and DET_CHIEF_IP.  0, or -ENOMEM with the plan
 * unchanged. */
int plan_round(struct plan *p, const struct plan_round *r);

enum plan_secret_kind {
	PLAN_SECRET_GIVEN,     /* the user's SLOTRUN_JOB_SECRET */
	PLAN_SECRET_RANDOM,    /* one node: fresh random bytes, in hex */
	PLAN_SECRET_DERIVED,   /* several nodes: from the scheduler's job id or the
				* chief's address; every node computes it alike,
				* but anyone who knows the job can too */
};

struct plan_secret {
	char value[PLAN_SECRET_MAX];
	enum plan_secret_kind kind;
};

/* The user's secret, text[0..len) (from SLOTRUN_JOB_SECRET or
 * --secret-file): 0, -EINVAL when empty, or -E2BIG when len is
 * PLAN_SECRET_MAX or more (say PLAN_SECRET_TOO_LONG); out is left alone on
 * an error. */
int plan_secret_given(struct plan_secret *out, const char *text, size_t len);

/* The rendezvous secret every rank of the job must share: the user's
 * SLOTRUN_JOB_SECRET; else on one node a fresh random one; else one
 * derived from DET_ALLOCATION_ID, SLURM_JOB_ID or DET_TRIAL_ID (the first
 * set), or from the chief's address and port.  A single node whose random
 * source fails falls back to the derived one.  Returns 0, or -E2BIG when
 * SLOTRUN_JOB_SECRET is too long (out unset): a cut secret would differ
 * from what the user gave elsewhere. */
int plan_job_secret(const struct cluster_info *ci, const struct ci_env *env,
		    struct plan_secret *out);

/* One --dry-run row: a one-line JSON object, malloc'd.  The secret's value
 * is shown as "<secret>".  cmd (NULL-terminated, or NULL to leave it out)
 * is the command each worker runs, as "command". */
char *plan_slot_json(const struct plan *p, int i, char *const *cmd);

/* The worker's whole environment: base with the slot's variables set over
 * it, and extra ("NAME=VALUE", NULL-terminated, or NULL: the attempt's
 * variables) over both.  A malloc'd NULL-terminated array whose strings are
 * borrowed; free only the array. */
char **plan_envp(const struct plan_slot *s, char *const *base, char *const *extra);

#endif
