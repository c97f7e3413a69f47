// SPDX-License-Identifier: MIT
/* ClusterInfo source: Slurm.  SLURM_JOB_NODELIST (hostlist syntax),
 * SLURM_NODEID, SLURM_NNODES, GPUs from SLURM_STEP_GPUS, else
 * SLURM_JOB_GPUS.
 *
 * slotrun is one per node: under `srun -n 8 -N 2` each of the eight tasks
 * would start a whole node's workers, and two jobs would run side by side
 * without knowing it.  So a step with more tasks than nodes is an error on
 * every one of its tasks (each sees the same SLURM_STEP_NUM_TASKS and
 * SLURM_STEP_NUM_NODES), and so is a SLURM_LOCALID above 0 where those are
 * missing.  Taking SLURM_LOCALID as a slot instead would make slotrun a
 * per-task wrapper with several supervisors per node, which is what it is
 * there to replace. */
#include "ci_source.h"

#include <stdint.h>

#include "hostlist.h"

/* Slurm's GPU variables: comma lists of device indices. */
static int parse_slurm_gpus(struct ci_ctx *c, struct ci_strlist *out, const char *name, const char *s)
{
	int r;

	if (!s || !*s)
		return 0;
	r = ci_parse_list(c, out, name, s, CI_MAX_SLOTS, ci_gpu_index_ok,
			  ": expected a comma list of GPU indices");
	return r < 0 ? r : ci_check_unique(c, out);
}

/* Refuses a step that put more than one task on some node. */
static int one_per_node(struct ci_ctx *c)
{
	struct ci_num tasks = { 0 }, nodes = { 0 }, local = { 0 };
	int r;

	if ((r = ci_parse_num(c, &tasks, "SLURM_STEP_NUM_TASKS", ci_get(c, "SLURM_STEP_NUM_TASKS"), 1,
			      INT32_MAX)) < 0 ||
	    (r = ci_parse_num(c, &nodes, "SLURM_STEP_NUM_NODES", ci_get(c, "SLURM_STEP_NUM_NODES"), 1,
			      CI_MAX_NODES)) < 0 ||
	    (r = ci_parse_num(c, &local, "SLURM_LOCALID", ci_get(c, "SLURM_LOCALID"), 0, INT32_MAX)) < 0)
		return r;
	if (tasks.set && nodes.set && tasks.v > nodes.v)
		return ci_fail(c, "Slurm started %ld tasks on %ld node%s (%s, %s): slotrun runs once per "
			       "node and starts one worker per slot itself: use srun --ntasks-per-node=1 "
			       "(with --slots N for N workers a node)", tasks.v, nodes.v,
			       nodes.v == 1 ? "" : "s", tasks.what, nodes.what);
	if (local.set && local.v > 0)
		return ci_fail(c, "%s: this is not the first Slurm task on this node, and slotrun runs "
			       "once per node: use srun --ntasks-per-node=1 (with --slots N for N "
			       "workers a node)", local.what);
	return 0;
}

int ci_load_slurm(struct ci_ctx *c, struct ci_found *s)
{
	const char *list = ci_get(c, "SLURM_JOB_NODELIST");
	const char *id = ci_get(c, "SLURM_NODEID");
	int r;

	/* Only a Slurm job or step sets these two; other SLURM_* variables
	 * can leak from an outer shell and must not make Slurm a source. */
	if (!list && !id)
		return 0;
	if ((r = one_per_node(c)) < 0)
		return r;
	if (list) {
		struct ci_quoted q;
		r = hostlist_parse("SLURM_JOB_NODELIST", list, &s->addrs.v, &s->addrs.n, c->err,
				   c->errlen);
		if (r < 0)
			return r;
		s->addrs.set = true;
		ci_name_it(s->addrs.what, "SLURM_JOB_NODELIST '%s'", ci_quote(&q, list));
	}
	if ((r = ci_parse_num(c, &s->nnodes, "SLURM_NNODES", ci_get(c, "SLURM_NNODES"), 1,
			      CI_MAX_NODES)) < 0 ||
	    (r = ci_parse_num(c, &s->node_rank, "SLURM_NODEID", id, 0, CI_MAX_NODES - 1)) < 0)
		return r;
	r = parse_slurm_gpus(c, &s->gpus, "SLURM_STEP_GPUS", ci_get(c, "SLURM_STEP_GPUS"));
	if (r == 0) {
		/* SLURM_JOB_GPUS is checked too, but the step's list wins */
		struct ci_strlist job = { 0 };
		r = parse_slurm_gpus(c, &job, "SLURM_JOB_GPUS", ci_get(c, "SLURM_JOB_GPUS"));
		if (r == 0 && !s->gpus.set)
			s->gpus = job;
		else
			ci_strv_free(job.v, job.n);
	}
	return r;
}
