// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "leak_check.h"
#include "sample.h"

/* "pid (comm) S ppid" and fields 5..24, with utime..cstime, threads and
 * rss as given. */
static const char *stat_text(char *buf, size_t size, int pid, const char *comm, char state, int ppid,
			     int utime, int stime, int cutime, int cstime, int threads, int rss)
{
	snprintf(buf, size, "%d (%s) %c %d 1 1 0 -1 4194304 10 0 0 0 %d %d %d %d 20 0 %d 0 100 999 %d 1 2 3\n",
		 pid, comm, state, ppid, utime, stime, cutime, cstime, threads, rss);
	return buf;
}

LEAK_TEST(sample, stat_fields_are_counted_from_the_last_paren)
{
	char t[512];
	struct sample_proc p;

	cr_assert_eq(sample_parse_stat(stat_text(t, sizeof(t), 42, "a) b (c", 'D', 7, 1, 2, 3, 4, 5, 6), &p), 0);
	cr_assert_eq(p.pid, 42);
	cr_assert_eq(p.ppid, 7);
	cr_assert_eq(p.state, 'D');
	cr_assert_eq(p.cpu_ticks, 10, "utime + stime + cutime + cstime");
	cr_assert_eq(p.threads, 5);
	cr_assert_eq(p.rss_pages, 6);
}

LEAK_TEST(sample, a_real_stat_line_parses)
{
	struct sample_proc p;
	const char *t = "14989 (cat) R 14967 14967 2646 0 -1 4194304 99 0 0 0 0 1 0 0 20 0 1 0 86597 3133440 414 "
			"18446744073709551615 94785202155520 94785202175401 140727253899200 0 0 0 0 0 0 0 0 0 17 0 0 0 "
			"0 0 0\n";

	cr_assert_eq(sample_parse_stat(t, &p), 0);
	cr_assert_eq(p.pid, 14989);
	cr_assert_eq(p.ppid, 14967);
	cr_assert_eq(p.cpu_ticks, 1);
	cr_assert_eq(p.rss_pages, 414);
}

LEAK_TEST(sample, cut_or_malformed_stat_is_refused)
{
	struct sample_proc p;
	const char *bad[] = {
		"", "42", "42 (x)", "42 (x) S", "42 (x) S 1 1 1 0 -1 4 10 0 0 0 1 2 3", "x (y) S 1",
		"42 (x) S 1 1 1 0 -1 4 10 0 0 0 1 -2 3 4 20 0 1 0 100 999 5\n", "0 (x) S 1 1 1 0 -1 4 10 0 0 0 1 2 3 4 20 0 1 0 100 999 5\n",
		"42 x) S 1 1 1 0 -1 4 10 0 0 0 1 2 3 4 20 0 1 0 100 999 5\n",
		"42 (x) S 1 1 1 0 -1 4 10 0 0 0 1 2 3 4 20 0 1 0 100 999 5z\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(sample_parse_stat(bad[i], &p), -EINVAL, "'%s'", bad[i]);
}

LEAK_TEST(sample, state_letters_and_names)
{
	enum sample_state s;

	cr_assert_eq(sample_state_of('R'), SAMPLE_RUNNING);
	cr_assert_eq(sample_state_of('S'), SAMPLE_SLEEPING);
	cr_assert_eq(sample_state_of('I'), SAMPLE_SLEEPING);
	cr_assert_eq(sample_state_of('D'), SAMPLE_DISK);
	cr_assert_eq(sample_state_of('T'), SAMPLE_STOPPED);
	cr_assert_eq(sample_state_of('t'), SAMPLE_STOPPED);
	cr_assert_eq(sample_state_of('Z'), SAMPLE_ZOMBIE);
	cr_assert_eq(sample_state_of('X'), SAMPLE_ZOMBIE);
	for (int k = SAMPLE_GONE; k <= SAMPLE_RUNNING; k++) {
		cr_assert_eq(sample_state_parse(sample_state_name((enum sample_state)k), &s), 0);
		cr_assert_eq(s, (enum sample_state)k);
	}
	cr_assert_str_eq(sample_state_name(SAMPLE_DISK), "uninterruptible");
	cr_assert_eq(sample_state_parse("busy", &s), -EINVAL);
}

/* slotrun 1 - wrap_rank 10 - guard 11 - command 12 - child 13 (and 14,
 * a zombie child); 15 was left by the command and reparented to the
 * guard; 20 is another worker's; 30 is nobody's. */
static struct sample_proc tree[] = {
	{ 10, 1, 'S', 100, 1, 10 }, { 11, 10, 'S', 100, 1, 10 }, { 12, 11, 'S', 5, 3, 100 },
	{ 13, 12, 'R', 7, 2, 50 }, { 14, 12, 'Z', 1, 1, 0 }, { 15, 11, 'D', 2, 1, 20 },
	{ 20, 1, 'R', 900, 9, 900 }, { 30, 0, 'R', 900, 9, 900 },
};
#define NTREE (int)(sizeof(tree) / sizeof(tree[0]))

LEAK_TEST(sample, a_wrapped_rank_is_its_command_and_what_it_left_not_the_wrapper)
{
	struct sample_proc p[NTREE];
	struct sample_rank r;

	memcpy(p, tree, sizeof(p));
	sample_sort(p, NTREE);
	sample_fold(p, NTREE, 10, 12, true, 4096, &r);
	cr_assert_eq(r.pid, 12);
	cr_assert_eq(r.procs, 4, "12, 13, 14 and 15: not 10 (wrap_rank) nor 11 (the guard)");
	cr_assert_eq(r.cpu_ticks, 5 + 7 + 1 + 2);
	cr_assert_eq(r.threads, 3 + 2 + 1, "a zombie has no threads");
	cr_assert_eq(r.rss_bytes, (100 + 50 + 20) * 4096ull);
	cr_assert_eq(r.state, SAMPLE_RUNNING, "one running process makes the rank running");
}

LEAK_TEST(sample, without_the_command_pid_the_guard_is_left_out_by_place)
{
	struct sample_proc p[NTREE];
	struct sample_rank r;

	memcpy(p, tree, sizeof(p));
	sample_sort(p, NTREE);
	sample_fold(p, NTREE, 10, 0, true, 4096, &r);
	cr_assert_eq(r.pid, 10, "the worker's pid stands in");
	cr_assert_eq(r.procs, 4, "everything below the guard");
	sample_fold(p, NTREE, 10, 99, true, 4096, &r);
	cr_assert_eq(r.procs, 4, "a command gone: the same");
}

LEAK_TEST(sample, unwrapped_the_worker_is_the_command)
{
	struct sample_proc p[NTREE];
	struct sample_rank r;

	memcpy(p, tree, sizeof(p));
	sample_sort(p, NTREE);
	sample_fold(p, NTREE, 12, 0, false, 4096, &r);
	cr_assert_eq(r.pid, 12);
	cr_assert_eq(r.procs, 3, "12, 13 and 14");
	sample_fold(p, NTREE, 20, 0, false, 1, &r);
	cr_assert_eq(r.procs, 1);
	cr_assert_eq(r.rss_bytes, 900);
}

LEAK_TEST(sample, states_take_the_most_active)
{
	struct sample_proc p[] = { { 12, 10, 'S', 0, 1, 1 }, { 13, 12, 'D', 0, 1, 1 }, { 14, 12, 'T', 0, 1, 1 } };
	struct sample_proc z[] = { { 12, 10, 'Z', 0, 1, 0 } };
	struct sample_rank r;

	sample_sort(p, 3);
	sample_fold(p, 3, 12, 0, false, 1, &r);
	cr_assert_eq(r.state, SAMPLE_DISK, "D over T over S");
	sample_fold(z, 1, 12, 0, false, 1, &r);
	cr_assert_eq(r.state, SAMPLE_ZOMBIE);
	sample_fold(z, 1, 77, 0, false, 1, &r);
	cr_assert_eq(r.state, SAMPLE_GONE, "no process");
	cr_assert_eq(r.procs, 0);
}

LEAK_TEST(sample, a_loop_of_recycled_parents_ends)
{
	struct sample_proc p[] = { { 50, 51, 'R', 1, 1, 1 }, { 51, 50, 'R', 1, 1, 1 }, { 52, 10, 'S', 1, 1, 1 } };
	struct sample_rank r;

	sample_sort(p, 3);
	sample_fold(p, 3, 10, 0, false, 1, &r);
	cr_assert_eq(r.procs, 1, "52 only: 50 and 51 are never reached from 10");
}

LEAK_TEST(sample, cpu_percent)
{
	cr_assert_float_eq(sample_cpu_pct(100, 150, 0.5, 100), 100.0, 1e-9, "50 ticks in 0.5 s at 100 Hz");
	cr_assert_float_eq(sample_cpu_pct(100, 500, 1.0, 100), 400.0, 1e-9, "4 CPUs");
	cr_assert_float_eq(sample_cpu_pct(100, 90, 1.0, 100), 0.0, 1e-9, "ticks that went back");
	cr_assert_lt(sample_cpu_pct(1, 2, 0, 100), 0, "no interval: unknown");
}
