// SPDX-License-Identifier: MIT
/* The job plane's relay tree (docs/job-plane.md, "The tree"): which node
 * a node joins, and which nodes relay.  Pure arithmetic on the node ranks.
 *
 * With a fan-out F, nodes form groups of F by node rank: group g is nodes
 * g*F .. g*F+F-1.  The chief relays for its own group (nodes 1..F-1 join it
 * directly, as in a star); in every other group the first node, g*F, is
 * the relay: it joins the chief, and the group's other nodes join it. */
#ifndef SLOTRUN_PLANE_TREE_H
#define SLOTRUN_PLANE_TREE_H

#include <stdbool.h>

#include "cluster_info.h"

/* The fan-out when none is given: PRRTE's (Slurm's is 50, Flux's 32). */
#define PLANE_DEFAULT_FANOUT 64

/* The fan-out a job of nnodes runs with, given the one asked for (0: a
 * star whatever the size) and the node addresses (addrs[k], chief first;
 * CI_ADDR_UNKNOWN where unknown): a tree only for a fixed-size job larger
 * than one group whose relays' addresses are all known (a node joins its
 * relay at that address).  0: a star. */
static inline int plane_tree_fanout(int asked, int nnodes, bool elastic, char *const *addrs)
{
	if (asked < 2 || elastic || nnodes <= asked)
		return 0;
	for (int r = asked; r + 1 < nnodes; r += asked) /* the relays (plane_tree_relays) */
		if (!ci_addr_known(addrs[r]))
			return 0;
	return asked;
}

/* The node that node k joins: 0 (the chief: a node of its group, or a
 * relay) or its group's relay. */
static inline int plane_tree_up(int fanout, int k)
{
	return fanout < 2 || k < fanout || k % fanout == 0 ? 0 : k - k % fanout;
}

/* Whether node k relays for others: the first of a group past the chief's
 * that has a node beside it. */
static inline bool plane_tree_relays(int fanout, int nnodes, int k)
{
	return fanout >= 2 && k >= fanout && k % fanout == 0 && k + 1 < nnodes;
}

#endif
