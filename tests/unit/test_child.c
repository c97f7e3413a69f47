// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "leak_check.h"

static int fail_prepare(void *ctx)
{
	return -*(int *)ctx;
}

LEAK_TEST_OPTS(child, failed_prepare_is_reported_with_its_errno, .timeout = 10)
{
	char *argv[] = { "true", NULL };
	int code = ENOTSUP, report, err = 0, status;
	sigset_t none;
	pid_t pid;
	struct child_spec s;

	sigemptyset(&none);
	s = (struct child_spec){ .argv = argv, .mask = &none, .stdio = { -1, -1, -1 },
				 .prepare = fail_prepare, .ctx = &code };
	cr_assert_eq(child_start(&s, &pid, &report), 0);
	cr_assert_eq(child_read_report(report, &err), CHILD_PREPARE);
	cr_assert_eq(err, ENOTSUP);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

LEAK_TEST_OPTS(child, path_lookup_failure_is_127_and_mask_and_dispositions_are_set, .timeout = 10)
{
	char *missing[] = { "no-such-command-xyz", NULL };
	char *show[] = { "grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL };
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit, old_pipe;
	int reset[] = { SIGINT }, report, err = 0, status, p[2];
	unsigned long long blk = 0, ignd = 0;
	char buf[256] = "";
	sigset_t mask;
	pid_t pid;
	struct child_spec s;

	sigemptyset(&mask);
	s = (struct child_spec){ .argv = missing, .mask = &mask, .stdio = { -1, -1, -1 } };
	cr_assert_eq(child_start(&s, &pid, &report), 0);
	cr_assert_eq(child_read_report(report, &err), CHILD_EXEC);
	cr_assert_eq(err, ENOENT);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 127);

	/* Ignored here: SIGINT (listed: back to default), SIGPIPE (given as
	 * ignored) and SIGQUIT (not listed: stays ignored).  Mask: SIGUSR2. */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGPIPE, &ign, &old_pipe);
	sigaddset(&mask, SIGUSR2);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	s = (struct child_spec){ .argv = show, .mask = &mask, .reset_signals = reset, .nreset = 1,
				 .sigpipe = &ign, .stdio = { -1, p[1], -1 } };
	cr_assert_eq(child_start(&s, &pid, &report), 0);
	close(p[1]);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	cr_assert_eq(child_read_report(report, &err), CHILD_OK);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_gt(read(p[0], buf, sizeof(buf) - 1), 0);
	close(p[0]);
	cr_assert_eq(sscanf(buf, "SigBlk: %llx SigIgn: %llx", &blk, &ignd), 2, "%s", buf);
	cr_assert_eq(blk, 1ull << (SIGUSR2 - 1), "%s", buf);
	cr_assert_eq(ignd & ((1ull << (SIGINT - 1)) | (1ull << (SIGQUIT - 1)) | (1ull << (SIGPIPE - 1))),
		     (1ull << (SIGQUIT - 1)) | (1ull << (SIGPIPE - 1)), "%s", buf);
}

static bool gone(pid_t pid)
{
	char path[64], st[512];
	FILE *f;
	bool dead;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	dead = !fgets(st, sizeof(st), f) || strstr(st, ") Z ") != NULL;
	fclose(f);
	return dead;
}

/* The program gets its parent-death signal: a middle process starts
 * `sleep` with SIGKILL as that signal, says its pid, and exits. */
LEAK_TEST_OPTS(child, program_dies_with_its_parent, .timeout = 20)
{
	int p[2];
	pid_t mid, pid = 0;
	struct timespec t0, t;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	mid = fork();
	cr_assert_geq(mid, 0);
	if (mid == 0) {
		char *argv[] = { "sleep", "60", NULL };
		sigset_t none;
		int report, err;
		struct child_spec s;

		sigemptyset(&none);
		s = (struct child_spec){ .argv = argv, .mask = &none, .death_signal = SIGKILL,
					 .stdio = { -1, -1, -1 } };
		if (child_start(&s, &pid, &report) < 0 || child_read_report(report, &err) != CHILD_OK)
			_exit(1);
		(void)!write(p[1], &pid, sizeof(pid));
		_exit(0);
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &pid, sizeof(pid)), (ssize_t)sizeof(pid));
	close(p[0]);
	waitpid(mid, NULL, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (gone(pid))
			return;
		usleep(1000); /* polling interval of a deadline wait */
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 10);
	kill(pid, SIGKILL);
	cr_assert_fail("sleep outlived its parent");
}
