// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
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

/* A chain of depth processes below the caller's child (each the parent of
 * the next), the last with fan children of its own: every one says its
 * pid on out and waits to be killed.  Returns the chain's first process. */
static pid_t start_chain(int depth, int fan, int out)
{
	pid_t first = fork();

	if (first != 0)
		return first;
	for (int level = 1; level < depth; level++) {
		pid_t pid = getpid();

		(void)!write(out, &pid, sizeof(pid));
		if (fork() != 0)
			for (;;)
				pause();
	}
	for (int i = 0; i < fan; i++)
		start_descendant(0, out);
	first = getpid();
	(void)!write(out, &first, sizeof(first));
	for (;;)
		pause();
}

static int by_pid(const void *a, const void *b)
{
	return *(const pid_t *)a - *(const pid_t *)b;
}

LEAK_TEST_OPTS(procs, tree_finds_a_deep_chain_and_a_fan, .timeout = 20)
{
	enum { DEPTH = 40, FAN = 30, ALL = DEPTH + FAN };
	pid_t want[ALL], got[ALL + 10], root;
	int p[2], n;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	root = start_chain(DEPTH, FAN, p[1]);
	cr_assert_gt(root, 0);
	close(p[1]);
	for (int i = 0; i < ALL; i++)
		cr_assert_eq(read(p[0], &want[i], sizeof(want[i])), (ssize_t)sizeof(want[i]));
	close(p[0]);
	n = procs_tree(root, got, ALL + 10);
	cr_assert_eq(n, ALL, "found %d of %d", n, ALL);
	cr_assert_eq(got[0], root, "root comes first");
	qsort(want, ALL, sizeof(want[0]), by_pid);
	qsort(got, ALL, sizeof(got[0]), by_pid);
	for (int i = 0; i < ALL; i++)
		cr_assert_eq(got[i], want[i]);
	cr_assert_eq(procs_tree(root, got, 5), 5, "max bounds the list");
	/* every one below root, none twice; root itself is not signalled */
	cr_assert_eq(procs_signal_descendants(root, SIGKILL), ALL - 1);
	cr_assert_eq(kill(root, 0), 0);
	kill(root, SIGKILL);
	cr_assert_eq(waitpid(root, NULL, 0), root);
}

LEAK_TEST_OPTS(procs, zombies_are_not_descendants, .timeout = 20)
{
	pid_t child = fork(), list[4];
	siginfo_t si;

	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	/* a zombie once it can be waited for (WNOWAIT keeps it one) */
	cr_assert_eq(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT), 0);
	cr_assert_eq(procs_tree(getpid(), list, 4), 1, "only the root");
	cr_assert_eq(procs_signal_descendants(getpid(), 0), 0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
}

LEAK_TEST_OPTS(procs, have_children_sees_live_children_and_zombies, .timeout = 20)
{
	pid_t child;
	siginfo_t si;
	int p[2];
	char c;

	cr_assert(!procs_have_children());
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		close(p[1]);
		_exit(read(p[0], &c, 1) == 0 ? 0 : 1);
	}
	close(p[0]);
	cr_assert(procs_have_children(), "a live child");
	close(p[1]);
	cr_assert_eq(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT), 0);
	cr_assert(procs_have_children(), "a zombie is still a child");
	cr_assert(procs_have_children(), "and the check reaps nothing");
	cr_assert_eq(waitpid(child, NULL, 0), child);
	cr_assert(!procs_have_children());
}

LEAK_TEST(procs, signal_descendants_of_a_process_without_children)
{
	pid_t list[2];

	cr_assert_eq(procs_signal_descendants(getpid(), 0), 0);
	cr_assert_eq(procs_tree(getpid(), list, 2), 1);
	cr_assert_eq(list[0], getpid());
}

LEAK_TEST(procs, read_gives_a_file_of_proc_terminated_and_cut)
{
	char buf[64], small[4];
	pid_t gone = fork();

	if (gone == 0)
		_exit(0);
	cr_assert_gt(gone, 0);
	cr_assert_eq(waitpid(gone, NULL, 0), gone);
	prctl(PR_SET_NAME, "procs-read");
	cr_assert_eq(procs_read(getpid(), "comm", buf, sizeof(buf)), 11);
	cr_assert_str_eq(buf, "procs-read\n");
	cr_assert_eq(procs_read(getpid(), "comm", small, sizeof(small)), 3, "cut to len - 1");
	cr_assert_str_eq(small, "pro");
	cr_assert_eq(procs_read(gone, "comm", buf, sizeof(buf)), -ENOENT, "a reaped process is gone");
	cr_assert_eq(procs_read(getpid(), "comm", buf, 0), -EINVAL);
}
