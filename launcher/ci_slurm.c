/* ClusterInfo source: Slurm.  SLURM_JOB_NODELIST (hostlist syntax),
 * SLURM_NODEID, SLURM_NNODES, GPUs from SLURM_STEP_GPUS, else
 * SLURM_JOB_GPUS. */
#include "ci_source.h"

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

int ci_load_slurm(struct ci_ctx *c, struct ci_found *s)
{
	const char *list = ci_get(c, "SLURM_JOB_NODELIST");
	const char *id = ci_get(c, "SLURM_NODEID");
	int r;

	/* Only a Slurm job or step sets these two; other SLURM_* variables
	 * can leak from an outer shell and must not make Slurm a source. */
	if (!list && !id)
		return 0;
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
