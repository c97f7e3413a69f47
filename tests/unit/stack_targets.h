// SPDX-License-Identifier: MIT
/* Processes to take stacks of (test_stacks.c, test_diag.c): each a child of
 * the test in a process group of its own (target_kill ends all of it), and
 * what /proc says of their threads.
 *
 * A thread in uninterruptible sleep (state D) that stays there: one that
 * called vfork(), whose child never execs nor exits, waits for it in the
 * kernel, killable but deaf to ptrace's interrupt. */
#ifndef SLOTRUN_STACK_TARGETS_H
#define SLOTRUN_STACK_TARGETS_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "procs.h"

/* The frame every target sleeps in, named in its stack. */
__attribute__((noinline)) static void stack_target_waits_here(void)
{
	for (;;) {
		pause();
		__asm__ volatile("" ::: "memory"); /* not a tail call */
	}
}

static void *stack_target_sleeper(void *arg)
{
	(void)arg;
	stack_target_waits_here();
	return NULL;
}

static void *stack_target_vfork(void *arg)
{
	(void)arg;
	if (vfork() == 0) /* the child runs on the parent's stack: pause only */
		for (;;)
			pause();
	stack_target_waits_here();
	return NULL;
}

/* A child that sleeps in stack_target_waits_here on `sleepers` threads
 * and stays in state D on `blocked` more (blocked > 0 puts its main thread
 * in D, the others on threads of their own).  Returns once /proc shows
 * them all so. */
static int stack_target_count(pid_t pid, char state);

static pid_t stack_target(int sleepers, int blocked)
{
	pid_t pid = fork();

	if (pid == 0) {
		pthread_t t;

		setpgid(0, 0);
		for (int i = 1; i < sleepers + (blocked > 0 && sleepers > 0 ? 1 : 0); i++)
			pthread_create(&t, NULL, stack_target_sleeper, NULL);
		for (int i = 1; i < blocked; i++)
			pthread_create(&t, NULL, stack_target_vfork, NULL);
		if (blocked > 0)
			stack_target_vfork(NULL);
		stack_target_waits_here();
		_exit(0);
	}
	cr_assert_gt(pid, 0);
	setpgid(pid, pid);
	for (double end = clock_mono() + 10; clock_mono() < end; usleep(5000))
		if (stack_target_count(pid, 'D') == blocked && stack_target_count(pid, 'S') >= sleepers)
			return pid;
	cr_assert_fail("target %d: %d threads in D and %d asleep expected", (int)pid, blocked, sleepers);
	return pid;
}

/* Every process of the target's group (its vfork children too). */
static void stack_target_kill(pid_t pid)
{
	kill(-pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Each of pid's threads' /proc/PID/task/TID/NAME into buf, handed to
 * each(buf, arg); how many were read, -1 for none. */
static int stack_target_tasks(pid_t pid, const char *name, void (*each)(const char *text, void *arg), void *arg)
{
	char path[64];
	struct dirent *e;
	int seen = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return -1;
	while ((e = readdir(d))) {
		char file[64], text[4096];

		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "task/%s/%s", e->d_name, name);
		if (procs_read(pid, file, text, sizeof(text)) > 0) {
			seen++;
			each(text, arg);
		}
	}
	closedir(d);
	return seen ? seen : -1;
}

struct stack_target_tally {
	char state;
	int n;
};

static void stack_target_in_state(const char *stat, void *arg)
{
	struct stack_target_tally *t = arg;
	const char *paren = strrchr(stat, ')');

	t->n += paren && paren[1] == ' ' && paren[2] == t->state;
}

/* How many of pid's threads /proc shows in state (a letter). */
static int stack_target_count(pid_t pid, char state)
{
	struct stack_target_tally t = { state, 0 };

	return stack_target_tasks(pid, "stat", stack_target_in_state, &t) < 0 ? -1 : t.n;
}

static void stack_target_has_tracer(const char *status, void *arg)
{
	const char *tp = strstr(status, "TracerPid:");

	*(int *)arg += tp && atoi(tp + 10) != 0;
}

/* How many of pid's threads have a tracer (TracerPid), -1 for none found. */
static int stack_target_traced(pid_t pid)
{
	int n = 0;

	return stack_target_tasks(pid, "status", stack_target_has_tracer, &n) < 0 ? -1 : n;
}

/* Waits (a bound, not a timing) until none of pid's threads is traced. */
static bool stack_target_untraced(pid_t pid, double seconds)
{
	for (double end = clock_mono() + seconds; clock_mono() < end; usleep(2000))
		if (stack_target_traced(pid) == 0)
			return true;
	return false;
}

#endif
