// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stddef.h>

#include "plane_tree.h"

/* ---- Which node a node joins ----
 * With a fan-out of 4: the chief's group is nodes 0..3, then 4..7 (relay
 * 4), 8..11 (relay 8), ... */

Test(plane_tree_up, the_chief_s_group_and_the_relays_join_the_chief)
{
	cr_assert_eq(plane_tree_up(4, 0), 0, "the chief");
	cr_assert_eq(plane_tree_up(4, 1), 0, "k = 1");
	cr_assert_eq(plane_tree_up(4, 3), 0, "k = F-1: the last of the chief's group");
	cr_assert_eq(plane_tree_up(4, 4), 0, "k = F: a relay joins the chief");
	cr_assert_eq(plane_tree_up(4, 8), 0, "k = 2F: so does every relay");
	cr_assert_eq(plane_tree_up(4, 4000), 0);
}

Test(plane_tree_up, every_other_node_joins_its_group_s_relay)
{
	cr_assert_eq(plane_tree_up(4, 5), 4, "k = F+1");
	cr_assert_eq(plane_tree_up(4, 6), 4);
	cr_assert_eq(plane_tree_up(4, 7), 4, "k = 2F-1: the last of the group");
	cr_assert_eq(plane_tree_up(4, 9), 8, "k = 2F+1: the next group's relay");
	cr_assert_eq(plane_tree_up(4, 11), 8);
	cr_assert_eq(plane_tree_up(2, 3), 2, "the smallest tree");
	cr_assert_eq(plane_tree_up(2, 2), 0);
	cr_assert_eq(plane_tree_up(2, 1), 0);
	cr_assert_eq(plane_tree_up(PLANE_DEFAULT_FANOUT, 63), 0);
	cr_assert_eq(plane_tree_up(PLANE_DEFAULT_FANOUT, 65), 64);
	cr_assert_eq(plane_tree_up(PLANE_DEFAULT_FANOUT, 1023), 960);
}

Test(plane_tree_up, a_star_joins_the_chief_whatever_the_node)
{
	for (int k = 0; k < 300; k++) {
		cr_assert_eq(plane_tree_up(0, k), 0, "fan-out 0, node %d", k);
		cr_assert_eq(plane_tree_up(1, k), 0, "fan-out 1, node %d", k);
	}
}

/* ---- Which nodes relay ---- */

Test(plane_tree_relays, the_first_of_each_group_past_the_chief_s)
{
	cr_assert(!plane_tree_relays(4, 12, 0), "the chief is no relay: nodes join it as in a star");
	cr_assert(!plane_tree_relays(4, 12, 1));
	cr_assert(!plane_tree_relays(4, 12, 3), "k = F-1");
	cr_assert(plane_tree_relays(4, 12, 4), "k = F");
	cr_assert(!plane_tree_relays(4, 12, 5), "k = F+1");
	cr_assert(!plane_tree_relays(4, 12, 7), "k = 2F-1");
	cr_assert(plane_tree_relays(4, 12, 8), "k = 2F");
	cr_assert(!plane_tree_relays(4, 12, 11));
	cr_assert(plane_tree_relays(2, 4, 2));
	cr_assert(!plane_tree_relays(2, 4, 3));
}

Test(plane_tree_relays, a_group_of_the_relay_alone_has_none)
{
	cr_assert(!plane_tree_relays(4, 9, 8), "node 8 is the last group's only node");
	cr_assert(plane_tree_relays(4, 10, 8), "with node 9 beside it, it relays");
	cr_assert(!plane_tree_relays(4, 5, 4), "nnodes = F+1: node F alone in its group");
	cr_assert(plane_tree_relays(4, 6, 4), "nnodes = F+2");
	cr_assert_eq(plane_tree_up(4, 8), 0, "the lone node joins the chief itself");
}

Test(plane_tree_relays, a_job_of_one_group_or_less_has_no_relay)
{
	for (int k = 0; k < 4; k++) {
		cr_assert(!plane_tree_relays(4, 4, k), "nnodes = F, node %d", k);
		cr_assert(!plane_tree_relays(4, 3, k), "nnodes < F, node %d", k);
	}
}

Test(plane_tree_relays, a_star_has_no_relay)
{
	for (int k = 0; k < 100; k++) {
		cr_assert(!plane_tree_relays(0, 100, k), "fan-out 0, node %d", k);
		cr_assert(!plane_tree_relays(1, 100, k), "fan-out 1, node %d", k);
	}
}

/* The two agree, for every shape: a node joins the chief or a node that
 * relays, a relay has someone behind it, and nobody is more than two hops
 * from the chief. */
Test(plane_tree_relays, every_node_joins_the_chief_or_a_relay)
{
	for (int f = 2; f <= 9; f++) {
		for (int n = 1; n <= 60; n++) {
			int behind[60] = { 0 }, relays = 0;

			for (int k = 1; k < n; k++) {
				int up = plane_tree_up(f, k);

				cr_assert(up >= 0 && up < k, "F %d, %d nodes: node %d joins %d", f, n, k, up);
				cr_assert(up == 0 || plane_tree_relays(f, n, up),
					  "F %d, %d nodes: node %d joins %d, which does not relay", f, n, k, up);
				cr_assert(up == 0 || plane_tree_up(f, up) == 0, "two hops at most");
				cr_assert(up == 0 || up / f == k / f, "a node of its own group");
				behind[up]++;
			}
			for (int k = 0; k < n; k++) {
				if (!plane_tree_relays(f, n, k))
					continue;
				relays++;
				cr_assert_eq(behind[k], k + f <= n ? f - 1 : n - 1 - k,
					     "F %d, %d nodes: relay %d carries the rest of its group", f, n, k);
			}
			/* heads: nodes f, 2f, ... below n; the last is no relay when alone */
			int heads = n > f ? (n - 1) / f : 0;

			cr_assert_eq(relays, heads - (heads && (n - 1) % f == 0), "F %d, %d nodes", f, n);
			cr_assert_eq(behind[0], (n < f ? n : f) - 1 + heads,
				     "F %d, %d nodes: the chief's group and every head join the chief", f, n);
		}
	}
}

Test(plane_tree_relays, a_job_of_1024_nodes_has_15_relays_of_63)
{
	int relays = 0;

	for (int k = 0; k < 1024; k++)
		relays += plane_tree_relays(PLANE_DEFAULT_FANOUT, 1024, k);
	cr_assert_eq(relays, 15);
	cr_assert(plane_tree_relays(PLANE_DEFAULT_FANOUT, 1024, 960));
}

/* ---- The fan-out a job runs with ---- */

static char *known[12] = { "10.0.0.0", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5",
			   "10.0.0.6", "10.0.0.7", "10.0.0.8", "10.0.0.9", "10.0.0.10", "10.0.0.11" };

Test(plane_tree_fanout, a_fixed_job_larger_than_a_group_with_its_relays_known_is_a_tree)
{
	cr_assert_eq(plane_tree_fanout(4, 12, false, known), 4);
	cr_assert_eq(plane_tree_fanout(4, 10, false, known), 4);
	cr_assert_eq(plane_tree_fanout(4, 6, false, known), 4, "nnodes = F+2: one relay");
	cr_assert_eq(plane_tree_fanout(4, 5, false, known), 4, "nnodes = F+1: larger than a group");
	cr_assert_eq(plane_tree_fanout(2, 3, false, known), 2, "the smallest tree");
	cr_assert_eq(plane_tree_fanout(11, 12, false, known), 11);
}

Test(plane_tree_fanout, a_star_otherwise)
{
	cr_assert_eq(plane_tree_fanout(4, 4, false, known), 0, "nnodes = F: one group");
	cr_assert_eq(plane_tree_fanout(4, 3, false, known), 0, "fewer nodes than F");
	cr_assert_eq(plane_tree_fanout(4, 1, false, known), 0, "one node");
	cr_assert_eq(plane_tree_fanout(12, 12, false, known), 0);
	cr_assert_eq(plane_tree_fanout(0, 12, false, known), 0, "asked 0: a star whatever the size");
	cr_assert_eq(plane_tree_fanout(1, 12, false, known), 0, "asked 1: no group to relay for");
	cr_assert_eq(plane_tree_fanout(-1, 12, false, known), 0);
	cr_assert_eq(plane_tree_fanout(4, 12, true, known), 0, "elastic: the ranks change from round to round");
	cr_assert_eq(plane_tree_fanout(2, 3, true, known), 0);
}

Test(plane_tree_fanout, a_relay_whose_address_is_unknown_makes_a_star)
{
	char *addrs[12];

	for (int i = 0; i < 12; i++)
		addrs[i] = known[i];
	addrs[4] = CI_ADDR_UNKNOWN;
	cr_assert_eq(plane_tree_fanout(4, 12, false, addrs), 0, "the first relay's");
	addrs[4] = known[4];
	addrs[8] = "?";
	cr_assert_eq(plane_tree_fanout(4, 12, false, addrs), 0, "the last relay's");
	addrs[8] = NULL;
	cr_assert_eq(plane_tree_fanout(4, 12, false, addrs), 0, "none at all");
	addrs[8] = known[8];
	cr_assert_eq(plane_tree_fanout(4, 12, false, addrs), 4);
	cr_assert_eq(plane_tree_fanout(2, 12, false, addrs), 2);
	addrs[6] = CI_ADDR_UNKNOWN;
	cr_assert_eq(plane_tree_fanout(2, 12, false, addrs), 0, "with F 2, node 6 is a relay");
}

Test(plane_tree_fanout, the_other_nodes_addresses_do_not_matter)
{
	char *addrs[12];

	for (int i = 0; i < 12; i++)
		addrs[i] = i % 4 == 0 ? known[i] : CI_ADDR_UNKNOWN;
	cr_assert_eq(plane_tree_fanout(4, 12, false, addrs), 4, "only the relays' are joined at");
	addrs[11] = NULL;
	cr_assert_eq(plane_tree_fanout(4, 12, false, addrs), 4);
}
