// SPDX-License-Identifier: MIT
/* A rank whose stack the end-to-end tests take (test_stacks.py):
 *     stack_target [--stubborn] sleep|blocked N|stop
 * sleep: waits in stack_target_sleeps, called from main; blocked: N
 * threads (main's included) in uninterruptible sleep (each vfork()ed a
 * child that never execs nor exits); stop: stops itself (SIGSTOP).  It
 * prints "ready PID" first.  --stubborn ignores SIGTERM and SIGINT, as a
 * rank stuck in a collective may. */
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

static void *blocked(void *arg)
{
	(void)arg;
	if (vfork() == 0) /* the child runs on our stack: pause only */
		for (;;)
			pause();
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
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(argv[i], "blocked") && i + 1 < argc) {
		pthread_t t;

		for (int k = 1; k < atoi(argv[i + 1]); k++)
			pthread_create(&t, NULL, blocked, NULL);
		blocked(NULL);
	} else if (!strcmp(argv[i], "stop")) {
		raise(SIGSTOP);
	}
	stack_target_sleeps();
	return 0;
}
