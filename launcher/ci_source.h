// SPDX-License-Identifier: MIT
/* One ClusterInfo source: how it reports what it found.  Internal to the
 * launcher.
 *
 * A source is one function, in its own file ci_<name>.c, that reads the
 * flags, the environment or files through ctx (never getenv(3) or the disk
 * directly) and fills a zeroed struct ci_found with what it finds, checking
 * each value on its own with the helpers of ci_parse.h.  It neither looks at
 * other sources nor decides precedence: cluster_info.c runs every source in
 * the order of its table, checks each one's agreement with itself, lets the
 * first that sets a field win, and checks the winners against each other.
 *
 * Adding a source: a file with its load function (declared below and
 * listed in launcher/meson.build), an entry in the table in cluster_info.c
 * at its place in the precedence, and its enum ci_source value in
 * cluster_info.h. */
#ifndef SLOTRUN_CI_SOURCE_H
#define SLOTRUN_CI_SOURCE_H

#include "ci_parse.h"
#include "cluster_info.h"

/* A source's raw findings.  An unset field is one the source says nothing
 * about.  The per-node slot list, the address list and the explicit node
 * count each imply a node count; cluster_info.c checks they agree. */
struct ci_found {
	struct ci_num nnodes;      /* an explicit count */
	struct ci_num node_rank;
	bool rank_needs_nodes;     /* node_rank counts only in a job of several
	                            * nodes (JOB_COMPLETION_INDEX) */
	struct ci_strlist addrs;   /* chief first */
	struct ci_str chief;       /* the chief's address alone; with addrs it
	                            * must be addrs.v[0] */
	struct ci_slotspec slots;
	struct ci_num port;
	struct ci_str iface;
	struct ci_strlist gpus;    /* set with n == 0: the source says "no GPUs" */
};

/* Fills out from one source.  A source that is absent returns 0 with
 * nothing set.  Returns 0, or -EINVAL / -ENOMEM with the reason in c->err
 * (see ci_parse.h); what it set in out is freed by the caller either way. */
typedef int ci_load_fn(struct ci_ctx *c, struct ci_found *out);

struct ci_source_def {
	enum ci_source id;
	const char *name;     /* ci_source_name */
	ci_load_fn *load;
};

ci_load_fn ci_load_flags;          /* ci_flags.c: --nnodes, --node-rank, ... */
ci_load_fn ci_load_determined;     /* ci_determined.c: info files, DET_* */
ci_load_fn ci_load_slurm;          /* ci_slurm.c: SLURM_* */
ci_load_fn ci_load_torchrun;       /* ci_torchrun.c: PET_* (Kubeflow's PyTorchJob) */
ci_load_fn ci_load_indexed_job;    /* ci_indexed_job.c: JOB_COMPLETION_INDEX */
ci_load_fn ci_load_slotrun_env;    /* ci_slotrun_env.c: SLOTRUN_*, CUDA_VISIBLE_DEVICES */

#endif
