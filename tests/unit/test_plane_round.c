// SPDX-License-Identifier: MIT
/* The rounds of an elastic job (plane_round.h): the roster, the ranks of
 * each round, and what follows the end of a round. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leak_check.h"
#include "plane_round.h"
#include "restart.h"

static struct plane_roster ro;

static struct plane_node node(int id, int slots, int pref)
{
	struct plane_node n = { .slots = slots, .pref = pref, .prev = -1 };

	n.id[0] = (unsigned char)id;
	snprintf(n.host, sizeof(n.host), "10.213.0.%d", id + 1);
	return n;
}

static void setup(void)
{
	struct plane_node chief = node(0, 2, 0);

	cr_assert_eq(plane_roster_init(&ro, 2, 4, &chief), 0);
}

static void teardown(void)
{
	plane_roster_free(&ro);
}

TestSuite(plane_roster, .init = setup, .fini = teardown);

/* The host of the node at rank k of the current round. */
static const char *at(int k)
{
	cr_assert_lt(k, ro.size);
	return ro.n[ro.at[k]].host;
}

Test(plane_roster, the_first_round_waits_for_max_or_min_and_the_settle_time)
{
	cr_assert(!plane_roster_first_due(&ro, 100, 10), "the chief alone is below MIN");
	cr_assert_geq(plane_roster_add(&ro, &(struct plane_node){ .slots = 1, .prev = -1, .id = { 1 } }), 1);
	cr_assert(!plane_roster_first_due(&ro, 3, 10), "MIN present, the settle time not over");
	cr_assert(plane_roster_first_due(&ro, 10, 10), "MIN present, nobody came for the settle time");
	cr_assert_geq(plane_roster_add(&ro, &(struct plane_node){ .slots = 1, .prev = -1, .id = { 2 } }), 1);
	cr_assert_geq(plane_roster_add(&ro, &(struct plane_node){ .slots = 1, .prev = -1, .id = { 3 } }), 1);
	cr_assert(plane_roster_first_due(&ro, 0, 10), "MAX present: at once");
	cr_assert_eq(plane_roster_add(&ro, &(struct plane_node){ .slots = 1, .prev = -1, .id = { 4 } }), -ENOSPC);
}

Test(plane_roster, the_same_slotrun_twice_is_refused)
{
	struct plane_node a = node(1, 1, -1);

	cr_assert_geq(plane_roster_add(&ro, &a), 1);
	cr_assert_eq(plane_roster_add(&ro, &a), -EEXIST);
	plane_roster_drop(&ro, 1);
	cr_assert_geq(plane_roster_add(&ro, &a), 1, "a gone node's id may come back");
}

Test(plane_roster, the_first_round_honours_free_preferences_then_arrival)
{
	struct plane_node a = node(1, 1, 3), b = node(2, 1, -1), c = node(3, 1, 3), d = node(4, 1, 7);

	plane_roster_add(&ro, &a);
	plane_roster_add(&ro, &b);
	plane_roster_add(&ro, &c);
	cr_assert_eq(plane_roster_form(&ro), 4);
	cr_assert_eq(ro.round, 1);
	cr_assert_str_eq(at(0), "10.213.0.1", "the chief is rank 0");
	cr_assert_str_eq(at(3), "10.213.0.2", "node a asked for 3 first");
	cr_assert_str_eq(at(1), "10.213.0.3", "b fills the first free rank");
	cr_assert_str_eq(at(2), "10.213.0.4", "c asked for a taken rank");
	(void)d;
}

Test(plane_roster, preferences_out_of_the_round_are_ignored)
{
	struct plane_node a = node(1, 1, 3), b = node(2, 1, 1);

	plane_roster_add(&ro, &a);
	plane_roster_add(&ro, &b);
	cr_assert_eq(plane_roster_form(&ro), 3);
	cr_assert_str_eq(at(1), "10.213.0.3");
	cr_assert_str_eq(at(2), "10.213.0.2", "rank 3 is not in a round of 3");
}

Test(plane_roster, later_rounds_keep_the_survivors_order_dense_then_newcomers)
{
	struct plane_node a = node(1, 1, 1), b = node(2, 1, 2), c = node(3, 1, 3), d = node(4, 1, 1);
	int ia, ib, ic, id;

	ia = plane_roster_add(&ro, &a);
	ib = plane_roster_add(&ro, &b);
	ic = plane_roster_add(&ro, &c);
	plane_roster_form(&ro);
	plane_roster_drop(&ro, ia);
	id = plane_roster_add(&ro, &d);
	cr_assert_geq(id, 0);
	cr_assert_eq(plane_roster_form(&ro), 4);
	cr_assert_eq(ro.round, 2);
	cr_assert_str_eq(at(1), "10.213.0.3", "b moves down from 2 to 1");
	cr_assert_str_eq(at(2), "10.213.0.4", "c moves down from 3 to 2");
	cr_assert_str_eq(at(3), "10.213.0.5", "the newcomer follows, its preference notwithstanding");
	(void)ib, (void)ic;
}

Test(plane_roster, after_a_failover_those_who_come_back_keep_their_order)
{
	struct plane_roster after;
	struct plane_node me = node(2, 1, -1), a = node(3, 1, -1), b = node(1, 1, -1), c = node(4, 1, -1);

	/* the round before: chief 0 (gone), 1 = me, 2 = b, 3 = a */
	me.prev = 1;
	b.prev = 2;
	a.prev = 3;
	cr_assert_eq(plane_roster_init(&after, 1, 4, &me), 0);
	after.round = 5;
	plane_roster_add(&after, &c); /* a new node, first to arrive */
	plane_roster_add(&after, &a);
	plane_roster_add(&after, &b);
	cr_assert_eq(plane_roster_form(&after), 4);
	cr_assert_eq(after.round, 6);
	cr_assert_str_eq(after.n[after.at[0]].host, "10.213.0.3", "the new chief");
	cr_assert_str_eq(after.n[after.at[1]].host, "10.213.0.2", "b was 2");
	cr_assert_str_eq(after.n[after.at[2]].host, "10.213.0.4", "a was 3");
	cr_assert_str_eq(after.n[after.at[3]].host, "10.213.0.5", "the new node last");
	plane_roster_free(&after);
}

Test(plane_roster, the_round_info_gives_ranks_world_and_candidates)
{
	struct plane_node a = node(1, 3, -1), b = node(2, 1, -1);
	struct plane_round_info ri;

	plane_roster_add(&ro, &a);
	plane_roster_add(&ro, &b);
	plane_roster_form(&ro);
	plane_roster_info(&ro, 2, "10.213.0.1", &ri);
	cr_assert_eq(ri.round, 1);
	cr_assert_eq(ri.nnodes, 3);
	cr_assert_eq(ri.node_rank, 2);
	cr_assert_eq(ri.rank_base, 5, "the chief's 2 slots and a's 3");
	cr_assert_eq(ri.world_size, 6);
	cr_assert_str_eq(ri.master, "10.213.0.1");
	cr_assert_eq(ri.ncand, 2);
	cr_assert_eq(ri.cand_rank[0], 1);
	cr_assert_str_eq(ri.cand_host[0], "10.213.0.2");
	cr_assert_str_eq(ri.cand_host[1], "10.213.0.3");
}

Test(plane_roster, candidates_are_bounded_however_large_the_round)
{
	struct plane_roster big;
	struct plane_node chief = node(0, 1, 0);
	struct plane_round_info ri;

	cr_assert_eq(plane_roster_init(&big, 1, 100, &chief), 0);
	for (int i = 1; i < 100; i++) {
		struct plane_node n = node(i, 1, -1);

		n.id[1] = (unsigned char)(i >> 8);
		cr_assert_eq(plane_roster_add(&big, &n), i);
	}
	cr_assert_eq(plane_roster_form(&big), 100);
	plane_roster_info(&big, 99, "h", &ri);
	cr_assert_eq(ri.ncand, PLANE_CANDIDATES);
	cr_assert_eq(ri.rank_base, 99);
	cr_assert_eq(ri.world_size, 100);
	plane_roster_free(&big);
}

Test(plane_roster, gone_nodes_are_forgotten_so_the_roster_stays_small)
{
	for (int i = 1; i < 200; i++) {
		struct plane_node n = node(i % 250, 1, -1);
		int k = plane_roster_add(&ro, &n);

		cr_assert_geq(k, 1);
		plane_roster_drop(&ro, k);
	}
	cr_assert_leq(ro.cap, 16, "the roster grew with nodes long gone (%d)", ro.cap);
	cr_assert_eq(plane_roster_present(&ro), 1);
}

/* A round of thousands of nodes is formed in passes over them, not a pass
 * per rank, and START tells each its place in O(1): in every rank the
 * node the rules say, with its first global rank summed from every slot
 * before it, through preferences, arrivals, survivors and newcomers. */

enum { BIG = 4096, NEW = 10 };
static int tags[BIG + NEW];

/* Node k (arrival k): odd ones ask for rank k + 1, the last none. */
static struct plane_node big_node(int k)
{
	struct plane_node n = node(0, 1 + k % 3, k % 2 && k + 1 < BIG ? k + 1 : -1);

	memcpy(n.id, &k, sizeof(k));
	snprintf(n.host, sizeof(n.host), "n%d", k);
	n.tag = &tags[k];
	return n;
}

/* The node at rank k must be want, its first rank the sum of the slots
 * of those before it. */
static void check_ranks(const struct plane_roster *r, const int *want, int size)
{
	struct plane_round_info info = { 0 };
	int base = 0;

	for (int k = 0; k < size; k++) {
		plane_roster_info(r, k, "chief", &info);
		if (k)
			cr_assert_eq(atoi(r->n[r->at[k]].host + 1), want[k], "rank %d: %s, not n%d", k,
				     r->n[r->at[k]].host, want[k]);
		cr_assert_eq(info.rank_base, base, "rank %d", k);
		cr_assert_eq(info.nnodes, size);
		base += want[k] ? 1 + want[k] % 3 : 1;
	}
	cr_assert_eq(info.world_size, base);
}

LEAK_TEST(plane_roster_large, a_round_of_4096_nodes_then_one_without_every_third_and_with_newcomers)
{
	struct plane_node chief = node(0, 1, 0), n;
	static int want[BIG + NEW];
	struct plane_roster r;
	int size = 1;

	cr_assert_eq(plane_roster_init(&r, 2, BIG + NEW, &chief), 0);
	for (int k = 1; k < BIG; k++) {
		n = big_node(k);
		cr_assert_geq(plane_roster_add(&r, &n), 1);
	}
	cr_assert_eq(plane_roster_present(&r), BIG);
	cr_assert_eq(plane_roster_form(&r), BIG);
	/* odd nodes took the even ranks they asked for; the rest fill the
	 * odd ranks in arrival order: 2, 4, ..., 4094, then 4095 */
	for (int k = 1; k < BIG; k++)
		want[k] = k % 2 == 0 ? k - 1 : k + 1 < BIG ? k + 1 : k;
	check_ranks(&r, want, BIG);

	for (int k = 3; k < BIG; k += 3)
		plane_roster_drop(&r, plane_roster_find(&r, &tags[k]));
	for (int k = BIG; k < BIG + NEW; k++) {
		n = big_node(k);
		n.pref = 1; /* a newcomer's preference counts in the first round only */
		cr_assert_geq(plane_roster_add(&r, &n), 1);
	}
	/* the survivors in their ranks' order, dense, then the newcomers */
	for (int k = 1; k < BIG; k++)
		if (want[k] % 3)
			want[size++] = want[k];
	for (int k = BIG; k < BIG + NEW; k++)
		want[size++] = k;
	cr_assert_eq(plane_roster_present(&r), size);
	cr_assert_eq(plane_roster_form(&r), size);
	check_ranks(&r, want, size);
	plane_roster_free(&r);
}


/* ---- After a round ---- */

static struct restart_policy pol3;
static struct plane_round_policy pol = { .min = 2, .max_restarts = 3, .restart = &pol3 };

static void policy_setup(void)
{
	restart_init(&pol3);
	pol3.max_restarts = 3;
}

TestSuite(plane_round_after, .init = policy_setup);

static struct plane_round_end lost_one(int alive, int dead)
{
	struct plane_round_end e = { .cause = { .kind = PLANE_CAUSE_LOST, .node = 2 }, .code = 1,
				     .alive = alive, .dead = dead, .present = alive };

	strcpy(e.cause.host, "10.213.0.3");
	strcpy(e.cause.text, "connection closed");
	return e;
}

Test(plane_round_after, success_and_a_stop_by_signal_end_the_job)
{
	struct plane_round_end e = { .code = 0, .alive = 3, .present = 3 };
	struct plane_round_next n = plane_round_after(&pol, 3, &e);

	cr_assert(n.end);
	cr_assert_eq(n.code, 0);
	e.cause.kind = PLANE_CAUSE_SIGNAL;
	e.cause.code = 15;
	e.code = 143;
	n = plane_round_after(&pol, 3, &e);
	cr_assert(n.end);
	cr_assert_eq(n.code, 143);
}

Test(plane_round_after, a_lost_node_re_forms_at_once_and_counts_a_restart)
{
	struct plane_round_end e = lost_one(2, 1);
	struct plane_round_next n = plane_round_after(&pol, 3, &e);

	cr_assert(!n.end);
	cr_assert(n.counts);
	cr_assert_eq(n.delay, 0);
	e = lost_one(2, 0); /* cut off, not dead: 2 of 3 is still more than half */
	n = plane_round_after(&pol, 3, &e);
	cr_assert(!n.end);
}

Test(plane_round_after, a_side_without_the_majority_stops)
{
	struct plane_round_end e = lost_one(1, 0);
	struct plane_round_next n = plane_round_after(&(struct plane_round_policy){ .min = 1, .max_restarts = 3,
										   .restart = &pol3 }, 2, &e);

	cr_assert(n.end, "one of two, the other maybe alive behind a cut: no second job");
	cr_assert_eq(n.code, 1);
	cr_assert(strstr(n.why, "holds 1 of the last round's 2 nodes"), "%s", n.why);
	e = lost_one(1, 1); /* the other's host closed its connection: it is gone */
	n = plane_round_after(&(struct plane_round_policy){ .min = 1, .max_restarts = 3, .restart = &pol3 }, 2, &e);
	cr_assert(!n.end, "%s", n.why);
	e = lost_one(2, 0);
	n = plane_round_after(&pol, 4, &e);
	cr_assert(n.end, "two of four is not more than half");
}

Test(plane_round_after, fewer_than_min_or_no_restart_left_ends)
{
	struct plane_round_end e = lost_one(2, 1);
	struct plane_round_next n;

	e.present = 2;
	n = plane_round_after(&(struct plane_round_policy){ .min = 3, .max_restarts = 3 }, 3, &e);
	cr_assert(n.end);
	cr_assert_eq(n.code, 1);
	cr_assert_str_eq(n.why, "2 nodes left, fewer than --nnodes' MIN 3");
	e.lost = "node 2 (10.213.0.3)";
	n = plane_round_after(&(struct plane_round_policy){ .min = 3, .max_restarts = 3 }, 3, &e);
	cr_assert_str_eq(n.why, "2 nodes left, fewer than --nnodes' MIN 3 (lost: node 2 (10.213.0.3))");
	e.lost = NULL;
	e.restarts = 3;
	n = plane_round_after(&pol, 3, &e);
	cr_assert(n.end);
	cr_assert_str_eq(n.why, "no restart left (--max-restarts 3)");
	n = plane_round_after(&(struct plane_round_policy){ .min = 2 }, 3, &(struct plane_round_end){
		.cause = e.cause, .code = 1, .alive = 2, .dead = 1, .present = 2 });
	cr_assert(n.end, "no --max-restarts: a lost node ends the job");
}

Test(plane_round_after, a_stop_during_the_round_ends_it_whatever_failed_first)
{
	struct plane_round_end e = { .cause = { .kind = PLANE_CAUSE_RANK, .code = 3, .when_ms = 1 }, .code = 3,
				     .alive = 3, .present = 3, .told_stop = true };
	struct plane_round_next n = plane_round_after(&pol, 3, &e);

	cr_assert(n.end);
	cr_assert_eq(n.code, 3);
}

Test(plane_round_after, a_failed_rank_re_forms_after_the_restart_delay_by_the_policy)
{
	struct plane_round_end e = { .cause = { .kind = PLANE_CAUSE_RANK, .code = 3, .when_ms = 1 }, .code = 3, .alive = 3,
				     .present = 3, .restarts = 1 };
	struct plane_round_next n = plane_round_after(&pol, 3, &e);

	cr_assert(!n.end);
	cr_assert(n.counts);
	cr_assert_float_eq(n.delay, 2.0, 1e-9, "1 s doubled once");
	e.cause.code = e.code = 127;
	n = plane_round_after(&pol, 3, &e);
	cr_assert(n.end, "127 never restarts");
	cr_assert_eq(n.code, 127);
}

Test(plane_round_after, a_new_node_re_forms_at_once_without_a_restart)
{
	struct plane_round_end e = { .cause = { .kind = PLANE_CAUSE_GROW }, .code = 143, .alive = 3,
				     .present = 4, .restarts = 3 };
	struct plane_round_next n = plane_round_after(&pol, 3, &e);

	cr_assert(!n.end, "%s", n.why);
	cr_assert(!n.counts);
	cr_assert_eq(n.delay, 0);
}

Test(plane_round_after, the_round_line)
{
	struct plane_round_info ri = { .round = 3, .nnodes = 2, .world_size = 4 };
	char line[256];

	strcpy(ri.why, "node 2 (10.213.0.3) lost: no heartbeat for 5 s");
	plane_round_line(&ri, line, sizeof(line));
	cr_assert_str_eq(line, "round 3: 2 nodes, 4 ranks (node 2 (10.213.0.3) lost: no heartbeat for 5 s)");
	ri = (struct plane_round_info){ .round = 1, .nnodes = 1, .world_size = 1 };
	plane_round_line(&ri, line, sizeof(line));
	cr_assert_str_eq(line, "round 1: 1 node, 1 rank");
}
