/* ClusterInfo source: the command line's --nnodes, --node-rank, --addrs,
 * --slots, --master-port and --iface, as opt_parse collected them. */
#include "ci_source.h"

int ci_load_flags(struct ci_ctx *c, struct ci_found *f)
{
	const struct ci_flags *fl = c->flags;
	int r;

	if (!fl)
		return 0;
	if ((r = ci_parse_num(c, &f->nnodes, "--nnodes", fl->nnodes, 1, CI_MAX_NODES)) < 0 ||
	    (r = ci_parse_num(c, &f->node_rank, "--node-rank", fl->node_rank, 0, CI_MAX_NODES - 1)) < 0 ||
	    (r = ci_parse_addrs(c, &f->addrs, "--addrs", fl->addrs)) < 0 ||
	    (r = ci_parse_slots(c, &f->slots, "--slots", fl->slots)) < 0 ||
	    (r = ci_parse_num(c, &f->port, "--master-port", fl->master_port, 1, 65535)) < 0 ||
	    (r = ci_parse_iface(c, &f->iface, "--iface", fl->iface)) < 0)
		return r;
	return 0;
}
