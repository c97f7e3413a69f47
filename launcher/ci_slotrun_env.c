// SPDX-License-Identifier: MIT
/* ClusterInfo source: slotrun's own variables, one per flag
 * (SLOTRUN_NNODES, SLOTRUN_NODE_RANK, SLOTRUN_ADDRS, SLOTRUN_MASTER_ADDR,
 * SLOTRUN_SLOTS, SLOTRUN_MASTER_PORT, SLOTRUN_IFACE), and the GPUs an inherited
 * CUDA_VISIBLE_DEVICES names. */
#include "ci_source.h"

#include <string.h>

static bool cuda_id_ok(const char *s)
{
	if (!strncmp(s, "GPU-", 4) || !strncmp(s, "MIG-", 4))
		return ci_host_ok(s, strlen(s));
	return ci_gpu_index_ok(s);
}

/* CUDA_VISIBLE_DEVICES as CUDA reads it: "", "-1" and Slurm's "NoDevFiles"
 * hide every GPU; otherwise indices or GPU-/MIG- UUIDs, kept as written. */
static int parse_cuda_visible(struct ci_ctx *c, struct ci_strlist *out, const char *s)
{
	static const char name[] = "CUDA_VISIBLE_DEVICES";
	struct ci_quoted q;
	int r;

	if (!s)
		return 0;
	if (!*s || !strcmp(s, "-1") || !strcmp(s, "NoDevFiles")) {
		ci_name_it(out->what, "%s '%s'", name, ci_quote(&q, s));
		out->set = true;
		return 0;
	}
	r = ci_parse_list(c, out, name, s, CI_MAX_SLOTS, cuda_id_ok,
			  " is neither a device index nor a GPU-/MIG- UUID");
	return r < 0 ? r : ci_check_unique(c, out);
}

int ci_load_slotrun_env(struct ci_ctx *c, struct ci_found *e)
{
	int r;

	if ((r = ci_parse_nnodes(c, &e->nnodes, "SLOTRUN_NNODES", ci_get(c, "SLOTRUN_NNODES"))) < 0 ||
	    (r = ci_parse_num(c, &e->node_rank, "SLOTRUN_NODE_RANK", ci_get(c, "SLOTRUN_NODE_RANK"), 0,
			      CI_MAX_NODES - 1)) < 0 ||
	    (r = ci_parse_addrs(c, &e->addrs, "SLOTRUN_ADDRS", ci_get(c, "SLOTRUN_ADDRS"))) < 0 ||
	    (r = ci_parse_host(c, &e->chief, "SLOTRUN_MASTER_ADDR", ci_get(c, "SLOTRUN_MASTER_ADDR"))) < 0 ||
	    (r = ci_parse_slots(c, &e->slots, "SLOTRUN_SLOTS", ci_get(c, "SLOTRUN_SLOTS"))) < 0 ||
	    (r = ci_parse_num(c, &e->port, "SLOTRUN_MASTER_PORT", ci_get(c, "SLOTRUN_MASTER_PORT"), 1,
			      65535)) < 0 ||
	    (r = ci_parse_iface(c, &e->iface, "SLOTRUN_IFACE", ci_get(c, "SLOTRUN_IFACE"))) < 0 ||
	    (r = parse_cuda_visible(c, &e->gpus, ci_get(c, "CUDA_VISIBLE_DEVICES"))) < 0)
		return r;
	return 0;
}
