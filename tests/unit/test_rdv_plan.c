// SPDX-License-Identifier: MIT
/* The rendezvous's decisions at scale (nccl_worker/rdv_plan.h): rank 0
 * takes connections while it has room, sends the oldest away only once it
 * has had its time, and otherwise leaves newcomers in the backlog until
 * then; the descriptors a communicator needs and what RLIMIT_NOFILE
 * becomes; distinct strings counted without comparing every pair. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leak_check.h"
#include "rdv_plan.h"

#define MS 1000000LL

LEAK_TEST(rdv_plan, room_takes_the_next_connection_whatever_the_ages)
{
	int64_t when = -1;

	cr_assert_eq(rdv_admit(0, 64, 0, 5 * MS, 1000 * MS, &when), RDV_TAKE);
	cr_assert_eq(rdv_admit(63, 64, 4 * MS, 5 * MS, 1000 * MS, &when), RDV_TAKE);
	cr_assert_eq(when, -1, "no wait to say");
}

LEAK_TEST(rdv_plan, full_leaves_newcomers_waiting_until_the_oldest_had_its_time)
{
	int64_t when = -1;

	cr_assert_eq(rdv_admit(64, 64, 100 * MS, 600 * MS, 1000 * MS, &when), RDV_WAIT);
	cr_assert_eq(when, 1100 * MS);
	/* a moment before, still waiting; at the moment, the oldest goes */
	cr_assert_eq(rdv_admit(64, 64, 100 * MS, 1100 * MS - 1, 1000 * MS, &when), RDV_WAIT);
	cr_assert_eq(rdv_admit(64, 64, 100 * MS, 1100 * MS, 1000 * MS, &when), RDV_EVICT);
	cr_assert_eq(rdv_admit(64, 64, 100 * MS, 9000 * MS, 1000 * MS, &when), RDV_EVICT);
}

LEAK_TEST(rdv_plan, rank_0_needs_a_descriptor_per_rank_the_others_a_few)
{
	long r0 = rdv_fds_needed(0, 4096, 1, false, 64), r1 = rdv_fds_needed(1, 4096, 1, false, 64);

	cr_assert_geq(r0, 4095 + 64, "a control connection per rank and the pending ones: %ld", r0);
	cr_assert_lt(r0, 4095 + 64 + 16);
	cr_assert_lt(r1, 16, "a member's needs do not grow with the job: %ld", r1);
	cr_assert_eq(rdv_fds_needed(1, 16, 1, false, 64), r1);
	/* a node's leader holds a socket per member of its node */
	cr_assert_geq(rdv_fds_needed(0, 4096, 8, true, 64), r0 + 8);
	cr_assert_geq(rdv_fds_needed(1, 4096, 8, true, 64), r1 + 8);
}

LEAK_TEST(rdv_plan, the_soft_limit_is_raised_to_the_hard_one_only_when_needed)
{
	uint64_t set = 7;

	cr_assert_eq(rdv_nofile_plan(1000, 1024, 4096, &set), 0);
	cr_assert_eq(rdv_nofile_plan(1024, 1024, 4096, &set), 0);
	cr_assert_eq(set, 7, "left alone");
	cr_assert_eq(rdv_nofile_plan(1025, 1024, 4096, &set), 1);
	cr_assert_eq(set, 4096);
	cr_assert_eq(rdv_nofile_plan(4096, 1024, 4096, &set), 1);
	cr_assert_eq(rdv_nofile_plan(5000, 1024, UINT64_MAX, &set), 1);
	cr_assert_eq(set, UINT64_MAX, "RLIM_INFINITY");
	cr_assert_eq(rdv_nofile_plan(4097, 1024, 4096, &set), -EMFILE);
	cr_assert_eq(rdv_nofile_plan(5000, UINT64_MAX, UINT64_MAX, &set), 0);
}

LEAK_TEST(rdv_plan, distinct_strings_are_counted)
{
	enum { N = 3000, STRIDE = 24 };
	char *buf = calloc(N, STRIDE);
	const char **s = malloc(sizeof(*s) * N);
	int *scratch = malloc(sizeof(int) * N);

	cr_assert(buf && s && scratch);
	for (int i = 0; i < N; i++)
		s[i] = buf + (size_t)i * STRIDE;
	cr_assert_eq(rdv_count_distinct(s, 0, scratch), 0);
	cr_assert_eq(rdv_count_distinct(s, 1, scratch), 1);
	cr_assert_eq(rdv_count_distinct(s, N, scratch), 1, "all empty: one");
	/* 3000 ranks on 750 hosts, interleaved, the empty name among them */
	for (int i = 0; i < N; i++)
		if (i % 750)
			snprintf(buf + (size_t)i * STRIDE, STRIDE, "node-%d", (i * 7) % 750);
	cr_assert_eq(rdv_count_distinct(s, N, scratch), 750);
	/* one each */
	for (int i = 0; i < N; i++)
		snprintf(buf + (size_t)i * STRIDE, STRIDE, "h%d", N - i);
	cr_assert_eq(rdv_count_distinct(s, N, scratch), N);
	free(buf);
	free(s);
	free(scratch);
}
