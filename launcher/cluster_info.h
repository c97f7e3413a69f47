/* ClusterInfo: where this node stands in the job.
 *
 * Sources, first match wins for each field, flags over everything:
 *   1. flags (--nnodes --node-rank --addrs --slots --master-port --iface)
 *   2. Determined: $SLOTRUN_DET_INFO_DIR (default /run/determined/info)/
 *      rendezvous.json {container_addrs, container_rank, container_slot_counts},
 *      cluster.json {slot_ids}, DET_SLOT_IDS ("[0,1]"),
 *      DET_INTER_NODE_NETWORK_INTERFACE, C10D_PORT
 *   3. Slurm: SLURM_JOB_NODELIST (hostlist syntax, e.g. "gpu[01-04,07],cpu-a[1-2]"),
 *      SLURM_NODEID, SLURM_NNODES, GPUs from SLURM_STEP_GPUS / SLURM_JOB_GPUS
 *   4. SLOTRUN_NNODES SLOTRUN_NODE_RANK SLOTRUN_ADDRS SLOTRUN_SLOTS
 *      SLOTRUN_MASTER_PORT SLOTRUN_IFACE
 *   5. default: one node (127.0.0.1), slots = visible GPUs, else 1,
 *      master port CI_DEFAULT_MASTER_PORT.
 *
 * Pure: the environment and files are read through struct ci_env, so unit
 * tests give both as values. */
#ifndef SLOTRUN_CLUSTER_INFO_H
#define SLOTRUN_CLUSTER_INFO_H

#include <stddef.h>

#define CI_DEFAULT_MASTER_PORT 29400
#define CI_DEFAULT_DET_INFO_DIR "/run/determined/info"
#define CI_MAX_NODES 65536
#define CI_MAX_SLOTS 1024    /* per node */

enum ci_source {
	CI_SRC_DEFAULT,
	CI_SRC_SLOTRUN_ENV,
	CI_SRC_SLURM,
	CI_SRC_DETERMINED,
	CI_SRC_FLAG,
};

/* Raw command-line values; NULL when the flag was not given.  Parsed and
 * checked by ci_load like every other source. */
struct ci_flags {
	const char *nnodes, *node_rank, *addrs, *slots, *master_port, *iface;
};

/* How ci_load sees the world.  getenv returns NULL for unset.
 * read_file returns a malloc'd NUL-terminated copy of the file, or NULL with
 * errno set (ENOENT: the file is absent, which is not an error). */
struct ci_env {
	const char *(*getenv)(void *ctx, const char *name);
	char *(*read_file)(void *ctx, const char *path);
	void *ctx;
};

struct cluster_info {
	int nnodes;
	int node_rank;
	char **addrs;        /* nnodes host names or addresses, chief first */
	int *slot_counts;    /* nnodes entries; slot_counts[node_rank] is ours */
	int slots;           /* slot_counts[node_rank] */
	int rank_base;       /* sum of slot_counts before node_rank */
	int world_size;      /* sum of slot_counts */
	char **gpus;         /* ngpus device ids for this node's slots, or NULL */
	int ngpus;
	int master_port;
	char *iface;         /* NULL when no source names one */
	enum ci_source src_nnodes, src_node_rank, src_addrs, src_slots, src_master_port,
		src_iface, src_gpus;
};

/* Fills ci from the sources above.  visible_gpus: GPUs the topology found
 * on this node (0 for none), used only by the default slot count.
 * Returns 0, or -EINVAL with a one-line reason in err that names the source
 * and the field and says what was expected, e.g.
 *   "SLURM_NODEID='7' is out of range: SLURM_JOB_NODELIST names 4 nodes (0..3)".
 * Nothing is allocated on error. */
int ci_load(const struct ci_flags *flags, const struct ci_env *env, int visible_gpus,
	    struct cluster_info *ci, char *err, size_t errlen);

void ci_free(struct cluster_info *ci);

/* Expands a Slurm hostlist ("gpu[01-04,07],cpu-a[1-2]", zero padding kept)
 * into *n malloc'd names.  Returns 0 or -EINVAL with the reason in err. */
int ci_parse_hostlist(const char *s, char ***hosts, int *n, char *err, size_t errlen);

/* The real environment: getenv(3) and files read from disk. */
extern const struct ci_env ci_process_env;

const char *ci_source_name(enum ci_source s);

#endif
