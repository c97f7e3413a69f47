// SPDX-License-Identifier: MIT
/* A rank whose stack the end-to-end tests take (test_stacks.py,
 * test_diag.py):
 *     stack_target [--stubborn] sleep|blocked N|stop
 * sleep: waits in stack_target_sleeps, called from main; blocked: N
 * threads (main's included) in uninterruptible sleep (each vfork()ed a
 * child that never execs nor exits); stop: stops itself (SIGSTOP).  It
 * prints "ready PID" once it is in that state (for blocked: once every
 * thread is in its vfork, which a loaded machine may take long to reach),
 * except stop, which prints it first.  --stubborn ignores SIGTERM and
 * SIGINT, as a rank stuck in a collective may. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static void stack_target_sleeps(void)
{
	for (;;) {
		pause();
		__asm__ volatile("" ::: "memory"); /* not a tail call */
	}
}

/* Each vfork child of blocked() writes a byte here: its parent thread is
 * then blocked in vfork until the child execs or exits, which it never does. */
static int in_vfork[2];
static int nthreads;

static void say_ready(pid_t pid)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "ready %d\n", (int)pid);

	if (write(STDOUT_FILENO, line, (size_t)n) != n)
		_exit(1);
}

/* The child runs on its parent's stack, so it only makes system calls:
 * the main thread's child waits for every other thread's byte and says
 * "ready" for its parent. */
static void *blocked(void *arg)
{
	int last = arg != NULL;

	if (vfork() == 0) {
		char b = 0;

		if (last) {
			for (int k = 1; k < nthreads; k++)
				if (read(in_vfork[0], &b, 1) != 1)
					_exit(1);
			say_ready(getppid());
		} else if (write(in_vfork[1], &b, 1) != 1) {
			_exit(1);
		}
		for (;;)
			pause();
	}
	stack_target_sleeps();
	return NULL;
}

int main(int argc, char **argv)
{
	int i = 1;

	if (i < argc && !strcmp(argv[i], "--stubborn")) {
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		i++;
	}
	if (i >= argc)
		return 2;
	if (!strcmp(argv[i], "blocked") && i + 1 < argc) {
		pthread_t t;

		nthreads = atoi(argv[i + 1]);
		if (pipe(in_vfork) < 0)
			return 1;
		for (int k = 1; k < nthreads; k++)
			pthread_create(&t, NULL, blocked, NULL);
		blocked(&nthreads);
	}
	say_ready(getpid());
	if (!strcmp(argv[i], "stop"))
		raise(SIGSTOP);
	stack_target_sleeps();
	return 0;
}
