// SPDX-License-Identifier: MIT
/* ClusterInfo: where this node stands in the job.
 *
 * Sources, first match wins for each field, flags over everything:
 *   1. flags (--nnodes --node-rank --addrs --master-addr --slots --master-port
 *      --iface; torchrun's spellings --nproc-per-node, --node_rank, ... too)
 *   2. Determined: $SLOTRUN_DET_INFO_DIR (default /run/determined/info)/
 *      rendezvous.json {container_addrs, container_rank, container_slot_counts},
 *      cluster.json {slot_ids}, DET_SLOT_IDS ("[0,1]"),
 *      DET_INTER_NODE_NETWORK_INTERFACE, C10D_PORT
 *   3. Slurm: SLURM_JOB_NODELIST (hostlist syntax, e.g. "gpu[01-04,07],cpu-a[1-2]"),
 *      SLURM_NODEID, SLURM_NNODES, GPUs from SLURM_STEP_GPUS / SLURM_JOB_GPUS
 *   4. torchrun's environment form, which Kubeflow's training operator sets
 *      for a PyTorchJob: PET_NNODES ("N" or "N:N"), PET_NODE_RANK,
 *      PET_NPROC_PER_NODE (a count, or "auto"/"gpu": the default),
 *      PET_MASTER_ADDR (the chief's address only), PET_MASTER_PORT
 *   5. a Kubernetes Indexed Job: JOB_COMPLETION_INDEX is the node rank
 *   6. SLOTRUN_NNODES SLOTRUN_NODE_RANK SLOTRUN_ADDRS SLOTRUN_MASTER_ADDR
 *      SLOTRUN_SLOTS SLOTRUN_MASTER_PORT SLOTRUN_IFACE
 *   7. default: one node (127.0.0.1), slots = visible GPUs, else 1,
 *      master port CI_DEFAULT_MASTER_PORT.
 * The schedulers' own variables (2-5) rank above slotrun's (6): they describe
 * this very allocation, while SLOTRUN_* may be set once in a profile; flags
 * override both.
 *
 * Pure: the environment and files are read through struct ci_env, so unit
 * tests give both as values.  Each source is one file, ci_<name>.c behind
 * ci_source.h; their precedence is the table in cluster_info.c.
 *
 * Rules beyond "first match wins" (each is tested):
 * - A source's node count is its explicit count (--nnodes, SLURM_NNODES,
 *   PET_NNODES, SLOTRUN_NNODES), else the length of its address list
 *   (--addrs, container_addrs, SLURM_JOB_NODELIST, SLOTRUN_ADDRS), else the
 *   length of its per-node slot list; within one source these must agree.
 * - --addrs and SLOTRUN_ADDRS are comma lists or Slurm hostlists (a '['
 *   makes it one: "trainer-[0-3].trainer" is four names), so a pattern of
 *   host names (an Indexed Job's pods) is one short value.
 * - The chief's address alone (--master-addr, SLOTRUN_MASTER_ADDR,
 *   PET_MASTER_ADDR) is enough for several nodes: the job plane needs no
 *   other address.  The other nodes' addresses are then CI_ADDR_UNKNOWN
 *   ("?"), and the job plane names each node by the address it joined from.
 *   A chief address from a source at least as high as the address list's
 *   replaces the list's first entry; within one source (--master-addr with
 *   --addrs, SLOTRUN_MASTER_ADDR with SLOTRUN_ADDRS) the two must agree.
 * - JOB_COMPLETION_INDEX names the node rank only in a job of several
 *   nodes: an Indexed Job also runs independent one-node pods, whose index
 *   is no node rank.
 * - Every source that is present is parsed and checked, even where a higher
 *   one overrides it: a malformed value is an error wherever it comes from.
 * - Slurm counts as a source only when SLURM_JOB_NODELIST or SLURM_NODEID is
 *   set, so SLURM_* left over from an outer shell (SLURM_CONF, SLURM_NNODES
 *   exported by hand) are ignored.  slotrun is one per node: a Slurm step
 *   with more tasks than nodes (SLURM_STEP_NUM_TASKS > SLURM_STEP_NUM_NODES,
 *   or SLURM_LOCALID > 0) is an error on every one of its tasks, which
 *   names the fix (srun --ntasks-per-node=1).
 * - nnodes > 1 needs the chief's address and this node's rank from some
 *   source (the default 127.0.0.1 / rank 0 only apply to a single node).
 * - An elastic range (--nnodes, SLOTRUN_NNODES or PET_NNODES MIN:MAX with
 *   MIN < MAX) needs only the chief's address: the chief assigns node
 *   ranks in every round, so a rank a source names is a preference
 *   (rank_given) and none is looked for in the list.  An address list may
 *   name 1..MAX nodes (where to look for the chief; addrs is padded with
 *   CI_ADDR_UNKNOWN to MAX), and each node gives its own slot count: a
 *   per-node slot list is refused.  slot_counts, rank_base and world_size
 *   then describe a full job with this node at node_rank: the round's are
 *   the chief's to give.
 *   With a list of every node's address (--addrs, SLOTRUN_ADDRS, ...) and
 *   no rank, the rank is this node's place in the list, found by
 *   ci_env.self_rank (ci_self.h; reported as "self").
 * - Slots: --slots / SLOTRUN_SLOTS are "N" (every node has N) or a comma
 *   list with one count per node; container_slot_counts is per node;
 *   PET_NPROC_PER_NODE and --nproc-per-node are "N" (or "auto"/"gpu", which
 *   leave the count to the default; "cpu" is refused).
 *   Without a per-node list every node is assumed to have this node's count.
 *   Otherwise slots = the number of GPUs the GPU source names, else
 *   visible_gpus when > 0, else 1.  An explicit count that differs from a
 *   known, non-empty GPU list is an error.
 * - GPUs: DET_SLOT_IDS, else cluster.json slot_ids (determined), else
 *   SLURM_STEP_GPUS, else SLURM_JOB_GPUS (slurm), else an inherited
 *   CUDA_VISIBLE_DEVICES (reported as "env"; entries kept as strings, so
 *   GPU-/MIG- UUIDs pass through).  A source that names no GPUs ("[]", an
 *   empty or "-1"/"NoDevFiles" CUDA_VISIBLE_DEVICES) sets gpus_none.  When
 *   no source names GPUs, gpus stays NULL and the planner numbers the
 *   topology's GPUs itself.
 * - Empty values are errors, except DET_INTER_NODE_NETWORK_INTERFACE=""
 *   (no interface), empty SLURM_STEP_GPUS/SLURM_JOB_GPUS (absent) and
 *   CUDA_VISIBLE_DEVICES="" (no GPUs, as CUDA reads it). */
#ifndef SLOTRUN_CLUSTER_INFO_H
#define SLOTRUN_CLUSTER_INFO_H

#include <stdbool.h>
#include <stddef.h>

#define CI_DEFAULT_MASTER_PORT 29400
#define CI_DEFAULT_DET_INFO_DIR "/run/determined/info"
#define CI_MAX_NODES 65536
#define CI_MAX_SLOTS 1024    /* per node */
#define CI_MAX_FILE_SIZE (1 << 20)  /* ci_process_env refuses larger info files */
/* addrs[k] of a node no source names (only the chief's address is known) */
#define CI_ADDR_UNKNOWN "?"

enum ci_source {
	CI_SRC_DEFAULT,
	CI_SRC_SLOTRUN_ENV,
	CI_SRC_INDEXED_JOB,
	CI_SRC_TORCHRUN,
	CI_SRC_SLURM,
	CI_SRC_DETERMINED,
	CI_SRC_FLAG,
	CI_SRC_SELF,            /* node_rank only: found by ci_env.self_rank */
};

/* Raw command-line values; NULL when the flag was not given.  Parsed and
 * checked by ci_load like every other source.  The *_flag members say how
 * the user spelled a flag that has torchrun aliases ("--nproc-per-node",
 * "--node_rank", ...), for messages; NULL is the canonical spelling.  Slots
 * given as --nproc-per-node / --nproc_per_node take torchrun's values too. */
struct ci_flags {
	const char *nnodes, *node_rank, *addrs, *master_addr, *slots, *master_port, *iface;
	const char *node_rank_flag, *master_addr_flag, *slots_flag, *master_port_flag;
};

/* How ci_load sees the world.  getenv returns NULL for unset.
 * read_file returns a malloc'd NUL-terminated copy of the file, or NULL with
 * errno set (ENOENT: the file is absent, which is not an error; EFBIG: it is
 * larger than CI_MAX_FILE_SIZE; EINVAL: it is not a regular file; anything
 * else: it cannot be read). */
struct ci_env {
	const char *(*getenv)(void *ctx, const char *name);
	char *(*read_file)(void *ctx, const char *path);
	/* This node's place in addrs (n entries, chief first; what names the
	 * list in messages, e.g. "--addrs 'n[1-4]'"), asked when no source
	 * names the node rank.  0 with *rank, or a negative errno with one
	 * line in err.  NULL: the missing rank is an error. */
	int (*self_rank)(void *ctx, char *const *addrs, int n, const char *what, int *rank, char *err,
			 size_t errlen);
	void *ctx;
};

struct cluster_info {
	int nnodes;          /* an elastic job's MAX */
	int nnodes_min;      /* an elastic job's MIN; nnodes in a fixed-size job */
	int node_rank;       /* elastic: the rank given (a preference), else 0 */
	bool rank_given;     /* a source named node_rank (always, with several
	                      * fixed nodes); elastic: else the chief assigns it */
	char **addrs;        /* nnodes host names or addresses, chief first;
	                      * CI_ADDR_UNKNOWN where no source names one */
	int *slot_counts;    /* nnodes entries; slot_counts[node_rank] is ours */
	int slots;           /* slot_counts[node_rank] */
	int rank_base;       /* sum of slot_counts before node_rank */
	int world_size;      /* sum of slot_counts */
	char **gpus;         /* ngpus device ids for this node's slots, or NULL */
	int ngpus;
	int gpus_none;       /* 1: the GPU source names no GPUs (DET_SLOT_IDS "[]",
	                      * CUDA_VISIBLE_DEVICES ""): run CPU slots even if the
	                      * topology sees GPUs.  gpus is NULL then. */
	int master_port;
	char *iface;         /* NULL when no source names one */
	enum ci_source src_nnodes, src_node_rank, src_addrs, src_slots, src_master_port,
		src_iface, src_gpus;
};

/* Fills ci from the sources above.  flags may be NULL (no flags).
 * visible_gpus: GPUs the topology found on this node (0 for none), used only
 * by the default slot count.
 * Returns 0, or -EINVAL with a one-line reason in err that names the source
 * and the field and says what was expected, e.g.
 *   "SLURM_NODEID '7' is out of range: SLURM_JOB_NODELIST 'n[1-4]' names 4 nodes (0..3)"
 * (-ENOMEM with "out of memory" when malloc fails).  On error ci is zeroed
 * (ci_free on it is harmless) and nothing is allocated. */
int ci_load(const struct ci_flags *flags, const struct ci_env *env, int visible_gpus,
	    struct cluster_info *ci, char *err, size_t errlen);

void ci_free(struct cluster_info *ci);

/* Whether addrs[k] names the node (not CI_ADDR_UNKNOWN). */
bool ci_addr_known(const char *addr);

/* The real environment: getenv(3) and files read from disk. */
extern const struct ci_env ci_process_env;

/* "flag", "determined", "slurm", "torchrun", "indexed-job", "env", "self"
 * or "default", for messages and --dry-run. */
const char *ci_source_name(enum ci_source s);

#endif
