// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <string.h>

#include "lag.h"
#include "leak_check.h"

static struct status_row busy(int rank)
{
	return (struct status_row){ .rank = rank, .up = true, .state = SAMPLE_RUNNING, .cpu_pct = 99,
				    .silent_s = 0.1 };
}

static struct status_row idle(int rank, double silent)
{
	return (struct status_row){ .rank = rank, .up = true, .state = SAMPLE_SLEEPING, .cpu_pct = 0,
				    .silent_s = silent };
}

LEAK_TEST(lag, an_idle_rank_among_progressing_ones_lags_with_why)
{
	struct status_row rows[] = { busy(0), busy(1), idle(2, 42), busy(3) };

	cr_assert_eq(lag_mark(rows, 4, true), 1);
	cr_assert(rows[2].lag && !rows[0].lag && !rows[1].lag && !rows[3].lag);
	cr_assert_str_eq(rows[2].why, "no output for 42 s and 0% CPU while ranks 0-1,3 progress");
}

LEAK_TEST(lag, progress_is_output_or_cpu)
{
	struct status_row rows[] = { idle(0, 30), idle(1, 1), idle(2, 30) };

	rows[2].cpu_pct = 5;
	cr_assert_eq(lag_mark(rows, 3, true), 1, "rank 1 wrote lately, rank 2 computes");
	cr_assert(rows[0].lag);
	cr_assert_str_eq(rows[0].why, "no output for 30 s and 0% CPU while ranks 1-2 progress");
}

LEAK_TEST(lag, nobody_lags_when_all_wait_or_most_wait)
{
	struct status_row all[] = { idle(0, 30), idle(1, 30) };
	struct status_row most[] = { idle(0, 30), idle(1, 30), idle(2, 30), busy(3) };
	struct status_row half[] = { idle(0, 30), idle(1, 30), busy(2), busy(3) };

	cr_assert_eq(lag_mark(all, 2, true), 0, "everybody waits: no laggard");
	cr_assert_eq(lag_mark(most, 4, true), 0, "three wait on one busy rank");
	cr_assert_eq(lag_mark(half, 4, true), 2, "as many idle as busy: both idle lag");
}

LEAK_TEST(lag, short_silence_or_unknown_cpu_is_no_lag)
{
	struct status_row rows[] = { busy(0), idle(1, LAG_SILENT - 0.5), idle(2, 60) };

	rows[2].cpu_pct = -1;
	cr_assert_eq(lag_mark(rows, 3, true), 0);
}

LEAK_TEST(lag, ranks_that_ended_neither_lag_nor_progress)
{
	struct status_row rows[] = { busy(0), idle(1, 60), idle(2, 60) };

	rows[0].up = false;
	rows[2].up = false;
	cr_assert_eq(lag_mark(rows, 3, true), 0, "nobody left progresses");
}

LEAK_TEST(lag, long_in_d_or_t_lags_whatever_the_others_do)
{
	struct status_row rows[] = { idle(0, 60), idle(1, 60), idle(2, 0) };

	rows[0].state = SAMPLE_DISK;
	rows[0].state_s = 12;
	rows[1].state = SAMPLE_STOPPED;
	rows[1].state_s = LAG_STATE - 1;
	cr_assert_eq(lag_mark(rows, 3, true), 1);
	cr_assert_str_eq(rows[0].why, "uninterruptible (D) for 12 s");
	cr_assert(!rows[1].lag, "not long enough yet");
	rows[1].state_s = 200;
	lag_mark(rows, 3, true);
	cr_assert_str_eq(rows[1].why, "stopped (T) for 3 min 20 s");
}

LEAK_TEST(lag, nothing_lags_while_the_job_does_not_run_and_marks_are_cleared)
{
	struct status_row rows[] = { busy(0), idle(1, 60) };

	rows[1].lag = true;
	strcpy(rows[1].why, "old");
	cr_assert_eq(lag_mark(rows, 2, false), 0);
	cr_assert(!rows[1].lag);
	cr_assert_str_eq(rows[1].why, "");
}

LEAK_TEST(lag, one_progressing_rank_is_named_alone)
{
	struct status_row rows[] = { busy(7), idle(3, 7200) };

	lag_mark(rows, 2, true);
	cr_assert_str_eq(rows[1].why, "no output for 2 h 0 min and 0% CPU while rank 7 progresses");
}

LEAK_TEST(lag, rank_lists_are_ranges)
{
	char buf[64];
	int r[] = { 8, 0, 1, 2, 5, 7, 3 };

	cr_assert_str_eq(lag_ranks_text(r, 7, buf, sizeof(buf)), "0-3,5,7-8");
	cr_assert_str_eq(lag_ranks_text(r, 0, buf, sizeof(buf)), "");
	cr_assert_str_eq(lag_ranks_text(r, 1, buf, sizeof(buf)), "8");
}
