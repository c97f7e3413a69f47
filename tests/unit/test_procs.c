// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procs.h"
#include "leak_check.h"

/* A descendant that says its pid and waits to be killed: a plain child, one
 * in a session of its own, and an orphan (double fork). */
static void start_descendant(int shape, int out)
{
	pid_t pid = fork();

	if (pid != 0)
		return;
	if (shape == 1)
		setsid();
	if (shape == 2 && fork() != 0)
		_exit(0);
	pid = getpid();
	(void)!write(out, &pid, sizeof(pid));
	for (;;)
		pause();
}

/* The middle process is a subreaper, as wrap_rank's guard is: everything
 * below it, however it got away, is killed and reaped. */
LEAK_TEST_OPTS(procs, kill_subtree_takes_every_escape, .timeout = 20)
{
	pid_t pids[3], mid;
	int p[2], status;
	bool alive[3];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	mid = fork();
	cr_assert_geq(mid, 0);
	if (mid == 0) {
		int d[2], ok = pipe2(d, O_CLOEXEC) == 0;

		prctl(PR_SET_CHILD_SUBREAPER, 1);
		for (int shape = 0; ok && shape < 3; shape++)
			start_descendant(shape, d[1]);
		/* every descendant is up before the kill */
		for (int i = 0; ok && i < 3; i++)
			ok = read(d[0], &pids[i], sizeof(pids[i])) == (ssize_t)sizeof(pids[i]) &&
			     write(p[1], &pids[i], sizeof(pids[i])) == (ssize_t)sizeof(pids[i]);
		ok = ok && procs_kill_subtree() == 0 && waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
		_exit(ok ? 0 : 1);
	}
	close(p[1]);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(read(p[0], &pids[i], sizeof(pids[i])), (ssize_t)sizeof(pids[i]));
	cr_assert_eq(waitpid(mid, &status, 0), mid);
	close(p[0]);
	for (int i = 0; i < 3; i++)
		alive[i] = kill(pids[i], SIGKILL) == 0; /* none should be left to kill */
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "procs_kill_subtree left children");
	for (int i = 0; i < 3; i++)
		cr_assert(!alive[i], "descendant %d (%d) was still there", i, (int)pids[i]);
}
