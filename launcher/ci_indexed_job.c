// SPDX-License-Identifier: MIT
/* ClusterInfo source: a Kubernetes Indexed Job.  Each pod gets its index in
 * JOB_COMPLETION_INDEX, which is its node rank; the node count and the
 * addresses come from elsewhere (--addrs or SLOTRUN_ADDRS as a hostlist
 * pattern of the pods' names, e.g. "train-[0-3].train", or --nnodes with
 * --master-addr).
 *
 * The index counts only in a job of several nodes (rank_needs_nodes): an
 * Indexed Job also runs independent one-node pods (a sweep, a shard each),
 * whose index is no node rank. */
#include "ci_source.h"

int ci_load_indexed_job(struct ci_ctx *c, struct ci_found *k)
{
	int r = ci_parse_num(c, &k->node_rank, "JOB_COMPLETION_INDEX", ci_get(c, "JOB_COMPLETION_INDEX"),
			     0, CI_MAX_NODES - 1);

	k->rank_needs_nodes = true;
	return r;
}
