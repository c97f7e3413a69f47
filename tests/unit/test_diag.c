// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "diag.h"
#include "io.h"
#include "leak_check.h"
#include "stack_targets.h"
#include "tmp_dir.h"

/* A process to look at: sleep, in a process group of its own. */
static pid_t start_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		setpgid(0, 0);
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	/* asleep in the kernel, so its state and wait channel are known */
	for (double end = clock_mono() + 10; clock_mono() < end; usleep(10000)) {
		char path[64], *stat, *paren;
		bool asleep;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		stat = io_read_file(path, 1024);
		paren = stat ? strrchr(stat, ')') : NULL;
		asleep = paren && strstr(stat, "(sleep)") && !strncmp(paren, ") S", 3);
		free(stat);
		if (asleep)
			return pid;
	}
	cr_assert_fail("sleep %d did not go to sleep", (int)pid);
	return pid;
}

static void stop_sleeper(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void on_done(void *arg)
{
	*(bool *)arg = true;
}

/* Runs the loop until done or the deadline (a bound on a broken diag, not
 * a timing). */
static void run_until(struct event_base *base, const bool *done, double seconds)
{
	double end = clock_mono() + seconds;

	while (!*done && clock_mono() < end) {
		struct timeval tv = clock_tv(0.05);

		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
}

static void setup(void)
{
	tmp_dir_setup();
}

static void teardown(void)
{
	tmp_dir_teardown();
}

TestSuite(diag, .init = setup, .fini = teardown, .timeout = 30);

LEAK_TEST(diag, shows_state_and_wait_channel_of_each_root)
{
	struct event_base *base = event_base_new();
	pid_t sleeper = start_sleeper(), roots[3] = { 0, sleeper, -1 };
	struct diag *d;
	bool done = false;
	char *t;

	cr_assert_eq(diag_start(&d, base, roots, 3, DIAG_DEADLINE, on_done, &done), 0);
	cr_assert_not(done, "done comes on the loop, not from diag_start");
	run_until(base, &done, 20);
	cr_assert(done);
	cr_assert_null(diag_take(d, 0), "no root, no text");
	cr_assert_null(diag_take(d, 2));
	cr_assert_null(diag_take(d, 3), "out of range");
	t = diag_take(d, 1);
	cr_assert_not_null(t);
	cr_assert_not_null(strstr(t, "(sleep) state S, waiting in "), "%s", t);
	cr_assert_not_null(strstr(t, "nanosleep"), "its native stack, named: %s", t);
	cr_assert_null(diag_take(d, 1), "handed over once");
	free(t);
	diag_free(d);
	stop_sleeper(sleeper);
	event_base_free(base);
}

/* A worker names its own processes: a name with newlines in it must not
 * forge lines of the report, nor another worker's part of it. */
LEAK_TEST(diag, a_process_name_cannot_forge_another_worker_s_lines)
{
	struct event_base *base = event_base_new();
	pid_t named = fork(), sleeper, roots[2];
	struct diag *d;
	bool done = false;
	char *t0, *t1;

	if (named == 0) {
		prctl(PR_SET_NAME, "\n@1\nHACK");
		for (;;)
			pause();
	}
	cr_assert_gt(named, 0);
	sleeper = start_sleeper();
	/* the name is set once /proc shows it */
	for (double end = clock_mono() + 10; clock_mono() < end; usleep(10000)) {
		char path[64], *stat;
		bool set;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)named);
		stat = io_read_file(path, 1024);
		set = stat && strstr(stat, "HACK");
		free(stat);
		if (set)
			break;
	}
	roots[0] = named;
	roots[1] = sleeper;
	cr_assert_eq(diag_start(&d, base, roots, 2, DIAG_DEADLINE, on_done, &done), 0);
	run_until(base, &done, 20);
	cr_assert(done);
	t0 = diag_take(d, 0);
	t1 = diag_take(d, 1);
	cr_assert_not_null(t0);
	cr_assert_not_null(t1);
	cr_expect_not_null(strstr(t0, "(\\x0a@1\\x0aHACK) state "), "%s", t0);
	cr_expect_null(strstr(t1, "HACK"), "worker 1's text was forged: %s", t1);
	cr_expect_not_null(strstr(t1, "(sleep) state S"), "%s", t1);
	free(t0);
	free(t1);
	diag_free(d);
	kill(named, SIGKILL);
	waitpid(named, NULL, 0);
	stop_sleeper(sleeper);
	event_base_free(base);
}

/* Two threads that never stop (state D), each waited for DIAG_THREAD_WAIT:
 * past a deadline shorter than that, the collection ends with what it had
 * (the process's line), and leaves nothing traced. */
LEAK_TEST(diag, the_deadline_ends_a_slow_collection_and_keeps_what_was_collected)
{
	struct event_base *base = event_base_new();
	pid_t target = stack_target(0, 2), roots[1] = { target };
	struct diag *d;
	bool done = false;
	double t0;
	char *t;

	t0 = clock_mono();
	cr_assert_eq(diag_start(&d, base, roots, 1, 0.3, on_done, &done), 0);
	run_until(base, &done, 20);
	cr_assert(done);
	cr_assert_lt(clock_mono() - t0, 2 * DIAG_THREAD_WAIT + 5, "a bound on a broken deadline, not a timing");
	t = diag_take(d, 0);
	cr_assert_not_null(t);
	cr_assert_not_null(strstr(t, "state D"), "%s", t);
	free(t);
	diag_free(d);
	cr_assert(stack_target_untraced(target, 10), "the collection left %d threads traced",
		  stack_target_traced(target));
	stack_target_kill(target);
	event_base_free(base);
}

LEAK_TEST(diag, freeing_a_running_collection_ends_it_without_done)
{
	struct event_base *base = event_base_new();
	pid_t target = stack_target(0, 2), roots[1] = { target };
	struct diag *d;
	bool done = false;

	cr_assert_eq(diag_start(&d, base, roots, 1, DIAG_DEADLINE, on_done, &done), 0);
	/* under way: a thread of the target is being waited for */
	for (double end = clock_mono() + 10; stack_target_traced(target) <= 0 && clock_mono() < end;)
		usleep(1000);
	cr_assert_gt(stack_target_traced(target), 0, "the collection never traced the target");
	diag_free(d);
	cr_assert_not(done);
	cr_assert(stack_target_untraced(target, 10), "the collection left %d threads traced",
		  stack_target_traced(target));
	stack_target_kill(target);
	event_base_free(base);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	++*(int *)arg;
}

/* Two threads that do not stop are waited for DIAG_THREAD_WAIT each: the
 * loop's timers fire all that while. */
LEAK_TEST(diag, the_loop_goes_on_while_stacks_are_taken)
{
	struct event_base *base = event_base_new();
	pid_t target = stack_target(0, 2), roots[1] = { target };
	int ticks = 0;
	struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, &ticks);
	struct timeval every = clock_tv(0.01);
	struct diag *d;
	bool done = false;
	double t0 = clock_mono();

	event_add(tick, &every);
	cr_assert_eq(diag_start(&d, base, roots, 1, DIAG_DEADLINE, on_done, &done), 0);
	run_until(base, &done, 20);
	cr_assert(done);
	cr_assert_geq(clock_mono() - t0, 2 * DIAG_THREAD_WAIT, "both threads were waited for");
	cr_assert_geq(ticks, 10, "the loop ran %d times in %.2f s", ticks, clock_mono() - t0);
	diag_free(d);
	event_free(tick);
	stack_target_kill(target);
	event_base_free(base);
}

LEAK_TEST(diag, freeing_nothing_is_nothing)
{
	diag_free(NULL);
	cr_assert_null(diag_take(NULL, 0));
}
