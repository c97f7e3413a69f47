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

/* An eu-stack that never answers: it leaves its pid in tmpdir/asked. */
static void slow_eu_stack(void)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/eu-stack", tmpdir);
	cr_assert_not_null(f = fopen(path, "w"));
	fprintf(f, "#!/bin/sh\necho $$ > '%s/asked.tmp'; mv '%s/asked.tmp' '%s/asked'; exec sleep 60\n", tmpdir,
		tmpdir, tmpdir);
	fclose(f);
	chmod(path, 0755);
	snprintf(path, sizeof(path), "%s:/usr/bin:/bin", tmpdir);
	setenv("PATH", path, 1);
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

static pid_t asked_pid(void)
{
	char *s = io_read_file(tmp_path("asked"), 64);
	pid_t pid = s ? (pid_t)atoi(s) : 0;

	free(s);
	return pid;
}

/* The tests set PATH (where eu-stack is found); the teardown needs rm. */
static char *saved_path;

static void setup(void)
{
	saved_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	cr_assert_not_null(saved_path);
	tmp_dir_setup();
}

static void teardown(void)
{
	setenv("PATH", saved_path, 1);
	free(saved_path);
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

	setenv("PATH", "/nonexistent", 1); /* no stacks */
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
	setenv("PATH", "/nonexistent", 1); /* no stacks */
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

LEAK_TEST(diag, the_deadline_ends_a_slow_stack_and_keeps_what_was_collected)
{
	struct event_base *base = event_base_new();
	pid_t sleeper = start_sleeper(), roots[1] = { sleeper }, asked;
	struct diag *d;
	bool done = false;
	char *t;

	slow_eu_stack();
	cr_assert_eq(diag_start(&d, base, roots, 1, 0.5, on_done, &done), 0);
	run_until(base, &done, 20);
	cr_assert(done);
	asked = asked_pid();
	cr_assert_gt(asked, 0, "the stack source was asked");
	t = diag_take(d, 0);
	cr_assert_not_null(t);
	cr_assert_not_null(strstr(t, "(sleep) state S"), "%s", t);
	free(t);
	diag_free(d);
	/* the collector's group, the stack source with it, was killed (it is
	 * init's to reap now: wait for that) */
	for (double end = clock_mono() + 10; kill(asked, 0) == 0 && clock_mono() < end;)
		usleep(10000);
	cr_assert_eq(kill(asked, 0), -1, "the stack source %d still runs", (int)asked);
	stop_sleeper(sleeper);
	event_base_free(base);
}

LEAK_TEST(diag, freeing_a_running_collection_kills_it_without_done)
{
	struct event_base *base = event_base_new();
	pid_t sleeper = start_sleeper(), roots[1] = { sleeper }, asked = 0;
	struct diag *d;
	bool done = false;

	slow_eu_stack();
	cr_assert_eq(diag_start(&d, base, roots, 1, DIAG_DEADLINE, on_done, &done), 0);
	for (double end = clock_mono() + 20; !(asked = asked_pid()) && clock_mono() < end;) {
		struct timeval tv = clock_tv(0.05);

		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
	cr_assert_gt(asked, 0, "the stack source was asked");
	diag_free(d);
	cr_assert_not(done);
	for (double end = clock_mono() + 10; kill(asked, 0) == 0 && clock_mono() < end;)
		usleep(10000);
	cr_assert_eq(kill(asked, 0), -1, "the stack source %d still runs", (int)asked);
	stop_sleeper(sleeper);
	event_base_free(base);
}

LEAK_TEST(diag, reaped_knows_only_its_collector)
{
	cr_assert_not(diag_reaped(NULL, 1));
	diag_free(NULL);
}
