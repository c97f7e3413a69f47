// SPDX-License-Identifier: MIT
/* ClusterInfo source: torchrun's environment form of its options, which
 * Kubeflow's training operator sets in every pod of a PyTorchJob:
 * PET_NNODES ("N", or an elastic "MIN:MAX"),
 * PET_NODE_RANK, PET_NPROC_PER_NODE (a count, or "auto"/"gpu": the default),
 * PET_MASTER_ADDR (the chief's address only: the other pods' addresses are
 * never given, and the job plane does without them) and PET_MASTER_PORT.
 *
 * The operator also sets MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE with
 * a per-pod meaning; slotrun gives its workers those names with a per-worker
 * meaning, so they are never read here (a slotrun inside a worker would
 * otherwise mistake its parent's worker environment for a job). */
#include "ci_source.h"

int ci_load_torchrun(struct ci_ctx *c, struct ci_found *t)
{
	int r;

	if ((r = ci_parse_nnodes(c, &t->nnodes, "PET_NNODES", ci_get(c, "PET_NNODES"))) < 0 ||
	    (r = ci_parse_num(c, &t->node_rank, "PET_NODE_RANK", ci_get(c, "PET_NODE_RANK"), 0,
			      CI_MAX_NODES - 1)) < 0 ||
	    (r = ci_parse_nproc(c, &t->slots, "PET_NPROC_PER_NODE", ci_get(c, "PET_NPROC_PER_NODE"))) < 0 ||
	    (r = ci_parse_host(c, &t->chief, "PET_MASTER_ADDR", ci_get(c, "PET_MASTER_ADDR"))) < 0 ||
	    (r = ci_parse_num(c, &t->port, "PET_MASTER_PORT", ci_get(c, "PET_MASTER_PORT"), 1,
			      65535)) < 0)
		return r;
	return 0;
}
