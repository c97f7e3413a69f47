// SPDX-License-Identifier: MIT
/* The runner's workers and attempts on a small runner of two slots: real
 * children, their output read on the loop into consoles over pipes (the
 * test reads those), log files in a temporary folder. */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attempt.h"
#include "clock.h"
#include "io.h"
#include "leak_check.h"
#include "procs.h"
#include "tmp_dir.h"
#include "workers.h"

#define NSLOTS 2

static char *env0[] = { "RANK=0", NULL }, *env1[] = { "RANK=1", NULL };
static struct plan_slot slots[NSLOTS];
static struct plan plan = { .nslots = NSLOTS, .slots = slots };
static char *cmd[] = { "sh", "-c", "echo out-$RANK-$SLOTRUN_RESTART_COUNT; echo err-$RANK >&2; exit 3", NULL };
static struct restart_policy policy = { .max_restarts = 2 };
static struct runner_cfg cfg;
static struct runner r;
static struct worker w[NSLOTS];
static enum sup_worker_fate fate[NSLOTS];
static int code[NSLOTS];
static double active[NSLOTS];
static struct plane_cause history[3];
static int out_pipe[2], err_pipe[2];

static bool not_stopping(void *arg)
{
	return false;
}

static void no_pause(void *arg, int k, bool paused)
{
}

static const struct console_hooks hooks = { .stopping = not_stopping, .pause = no_pause };

static void setup(void)
{
	tmp_dir_setup();
	slots[0] = (struct plan_slot){ .rank = 0, .shown = true, .env = env0 };
	slots[1] = (struct plan_slot){ .rank = 1, .shown = true, .env = env1 };
	cfg = (struct runner_cfg){ .plan = &plan, .exec_path = "/bin/sh", .cmd = cmd, .log_dir = tmpdir,
				   .grace = 1, .restart = &policy };
	cr_assert_eq(pipe2(out_pipe, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(err_pipe, O_CLOEXEC), 0);
	cr_assert_eq(fcntl(out_pipe[0], F_SETFL, O_NONBLOCK), 0);
	cr_assert_eq(fcntl(err_pipe[0], F_SETFL, O_NONBLOCK), 0);
	r = (struct runner){ .cfg = &cfg, .n = NSLOTS, .w = w, .fate = fate, .code = code, .active = active,
			     .history = history, .self = getpid(), .t0 = clock_mono() };
	cr_assert_not_null(r.base = event_base_new());
	cr_assert_eq(console_init(&r.cons, r.base, out_pipe[1], err_pipe[1], &hooks, NULL), 0);
	sup_init(&r.sup, NSLOTS, fate, code);
	for (int i = 0; i < NSLOTS; i++) {
		w[i] = (struct worker){ .runner = &r };
		out_stream_init(&w[i].out, -1, NULL, -1, NULL);
		out_stream_init(&w[i].err, -1, NULL, -1, NULL);
	}
}

static void teardown(void)
{
	attempt_end(&r);
	for (int i = 0; i < NSLOTS; i++)
		free(w[i].diag);
	console_free(&r.cons);
	event_base_free(r.base);
	for (int k = 0; k < 2; k++) {
		close(out_pipe[k]);
		close(err_pipe[k]);
	}
	tmp_dir_teardown();
}

TestSuite(workers, .init = setup, .fini = teardown, .timeout = 60);

static void spawn(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	cr_assert_eq(workers_spawn(&r, &mask), 0);
	for (int i = 0; i < NSLOTS; i++)
		cr_assert_gt(w[i].pid, 0);
	workers_watch(&r);
}

/* Runs the loop until every worker's pipes are at EOF, then reaps them
 * and feeds their exits to the supervisor. */
static void run_to_exit(void)
{
	for (double end = clock_mono() + 30; clock_mono() < end;) {
		bool open = false;

		for (int i = 0; i < NSLOTS; i++)
			open = open || w[i].out.fd >= 0 || w[i].err.fd >= 0;
		if (!open)
			break;
		event_base_loop(r.base, EVLOOP_ONCE);
	}
	for (int i = 0; i < NSLOTS; i++) {
		int status;
		struct sup_event ev = { .type = SUP_EV_EXIT, .worker = i };

		cr_assert_eq(waitpid(w[i].pid, &status, 0), w[i].pid);
		ev.code = WEXITSTATUS(status);
		ev.t = (double)i;
		sup_step(&r.sup, &ev);
	}
	console_flush(&r.cons);
}

/* Everything the pipe holds, as a string (static, overwritten). */
static const char *drain(int fd)
{
	static char buf[65536];
	size_t len = 0;
	ssize_t got;

	while (len < sizeof(buf) - 1 && (got = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)got;
	buf[len] = '\0';
	return buf;
}

static char *log_file(int rank, const char *stream)
{
	char name[32];

	snprintf(name, sizeof(name), "rank-%d.%s", rank, stream);
	return io_read_file(tmp_path(name), 65536);
}

LEAK_TEST(workers, start_read_and_log_then_the_next_attempt_appends)
{
	struct plane_cause cause;
	const char *said;
	char *log;

	spawn();
	run_to_exit();
	said = drain(out_pipe[0]);
	cr_assert_not_null(strstr(said, "out-0-0\n"), "%s", said);
	cr_assert_not_null(strstr(said, "out-1-0\n"), "%s", said);
	cr_assert_not_null(log = log_file(1, "stderr"));
	cr_assert_str_eq(log, "err-1\n");
	free(log);

	/* worker 0 is the root cause: its status and last stderr line */
	cr_assert_eq(r.sup.root_cause, 0);
	attempt_cause(&r, &cause);
	cr_assert_eq(cause.kind, PLANE_CAUSE_RANK);
	cr_assert_eq(cause.rank, 0);
	cr_assert_eq(cause.code, 3);
	cr_assert_str_eq(cause.tail, "err-0\n");

	attempt_next(&r, 1, 0.5, &cause);
	cr_assert_eq(r.attempt, 1);
	cr_assert_eq(history[0].code, 3, "the cause joins the history");
	cr_assert_eq(r.sup.state, SUP_RUNNING);
	said = drain(err_pipe[0]);
	cr_assert_not_null(strstr(said, "slotrun: attempt 2 of 3 in 0.5 s, after "), "%s", said);

	spawn();
	run_to_exit();
	said = drain(out_pipe[0]);
	cr_assert_not_null(strstr(said, "out-0-1\n"), "the restart count: %s", said);
	cr_assert_not_null(log = log_file(0, "stdout"));
	cr_assert_str_eq(log, "out-0-0\n==== slotrun: attempt 2 of 3 ====\nout-0-1\n");
	free(log);
}

LEAK_TEST(workers, a_command_that_cannot_run_is_said_once_for_all_ranks)
{
	sigset_t mask;
	const char *said;

	cfg.exec_path = "/nonexistent/cmd";
	sigemptyset(&mask);
	cr_assert_eq(workers_spawn(&r, &mask), 0, "the forks worked; the execs failed");
	workers_watch(&r);
	run_to_exit();
	for (int i = 0; i < NSLOTS; i++)
		cr_assert_str_eq(w[i].note, "cannot execute '/nonexistent/cmd': No such file or directory");
	said = drain(err_pipe[0]);
	cr_assert_str_eq(said, "slotrun: rank 0 (node 0): cannot execute '/nonexistent/cmd': No such file or "
			       "directory\nslotrun: (the same on 1 other rank)\n");
}

LEAK_TEST(workers, a_log_folder_that_cannot_take_files_fails_the_start)
{
	sigset_t mask;
	const char *said;

	cfg.log_dir = "/nonexistent/logs";
	sigemptyset(&mask);
	cr_assert_lt(workers_spawn(&r, &mask), 0);
	for (int i = 0; i < NSLOTS; i++)
		cr_assert_leq(w[i].pid, 0, "nothing started");
	said = drain(err_pipe[0]);
	cr_assert_str_eq(said, "slotrun: cannot open log file /nonexistent/logs/rank-0.stdout: No such file or "
			       "directory\n");
	cr_assert_str_eq(w[0].note, "cannot open log file /nonexistent/logs/rank-0.stdout: No such file or "
				    "directory");
}

/* Until pid has exec'd its command and the exec is through, or the
 * deadline.  A fork that has not exec'd yet shows the test's own
 * environment, without RANK; and an exec names the process (comm) before
 * it sets the new image's environment: /proc/PID/environ reads empty in
 * between (a probe that read it as soon as comm changed found it empty
 * 500 times of 500), so wait for both. */
static void wait_exec(pid_t pid, const char *name)
{
	static char env[1 << 16];
	char comm[32];

	for (int tries = 0; tries < 1000; tries++) {
		ssize_t n = 0;

		if (procs_read(pid, "comm", comm, sizeof(comm)) > 0 && strncmp(comm, name, strlen(name)) == 0)
			n = procs_read(pid, "environ", env, sizeof(env));

		for (ssize_t k = 0; k < n; k += (ssize_t)strlen(env + k) + 1)
			if (strncmp(env + k, "RANK=", 5) == 0)
				return;
		usleep(10000);
	}
	cr_assert_fail("pid %d never became %s with RANK in its environment", (int)pid, name);
}

LEAK_TEST(workers, leftovers_are_named_with_their_rank)
{
	static char *sleeper[] = { "sh", "-c", "exec sleep 30", NULL };
	char want[64];
	const char *said, *at;

	cfg.cmd = sleeper;
	spawn();
	for (int i = 0; i < NSLOTS; i++)
		wait_exec(w[i].pid, "sleep");
	workers_say_leftovers(&r, 2.5);
	console_flush(&r.cons);
	said = drain(err_pipe[0]);
	for (int i = 0; i < NSLOTS; i++) {
		snprintf(want, sizeof(want), "pid %d (", (int)w[i].pid);
		at = strstr(said, want);
		cr_assert_not_null(at, "%s", said);
		snprintf(want, sizeof(want), ") of rank %d", i);
		cr_assert_not_null(strstr(at, want), "%s", said);
	}
	cr_assert_not_null(strstr(said, "they get SIGKILL in 2.5 s (--grace)\n"), "%s", said);
	cr_assert_eq(strchr(said, '\n'), said + strlen(said) - 1, "one line: %s", said);
	for (int i = 0; i < NSLOTS; i++) {
		kill(w[i].pid, SIGKILL);
		cr_assert_eq(waitpid(w[i].pid, NULL, 0), w[i].pid);
	}
}

LEAK_TEST(workers, no_leftover_says_nothing)
{
	workers_say_leftovers(&r, 2.5);
	console_flush(&r.cons);
	cr_assert_str_eq(drain(err_pipe[0]), "");
}
