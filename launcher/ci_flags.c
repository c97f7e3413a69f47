// SPDX-License-Identifier: MIT
/* ClusterInfo source: the command line's --nnodes, --node-rank, --addrs,
 * --master-addr, --slots, --master-port and --iface, as opt_parse collected
 * them (with torchrun's spellings: --nproc-per-node, --node_rank, ...). */
#include "ci_source.h"

#include <string.h>

static const char *spelled(const char *as, const char *canonical)
{
	return as ? as : canonical;
}

int ci_load_flags(struct ci_ctx *c, struct ci_found *f)
{
	const struct ci_flags *fl = c->flags;
	const char *slots_as;
	int r;

	if (!fl)
		return 0;
	slots_as = spelled(fl->slots_flag, "--slots");
	if ((r = ci_parse_nnodes(c, &f->nnodes, "--nnodes", fl->nnodes)) < 0 ||
	    (r = ci_parse_num(c, &f->node_rank, spelled(fl->node_rank_flag, "--node-rank"),
			      fl->node_rank, 0, CI_MAX_NODES - 1)) < 0 ||
	    (r = ci_parse_addrs(c, &f->addrs, "--addrs", fl->addrs)) < 0 ||
	    (r = ci_parse_host(c, &f->chief, spelled(fl->master_addr_flag, "--master-addr"),
			       fl->master_addr)) < 0 ||
	    (r = strncmp(slots_as, "--nproc", 7) == 0 ? ci_parse_nproc(c, &f->slots, slots_as, fl->slots)
						     : ci_parse_slots(c, &f->slots, slots_as, fl->slots)) < 0 ||
	    (r = ci_parse_num(c, &f->port, spelled(fl->master_port_flag, "--master-port"),
			      fl->master_port, 1, 65535)) < 0 ||
	    (r = ci_parse_iface(c, &f->iface, "--iface", fl->iface)) < 0)
		return r;
	return 0;
}
