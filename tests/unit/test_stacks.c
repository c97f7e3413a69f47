// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "leak_check.h"
#include "stack_targets.h"
#include "stacks.h"

/* ---- The text (pure) ---- */

static struct stacks_frame native(uint64_t pc, const char *function, uint64_t offset, const char *module)
{
	return (struct stacks_frame){ .pc = pc, .function = function ? strdup(function) : NULL, .offset = offset,
				      .module = module ? strdup(module) : NULL };
}

static struct stacks_frame python(const char *function, const char *file, int line)
{
	return (struct stacks_frame){ .python = true, .function = strdup(function), .file = strdup(file),
				      .line = line };
}

/* A collection of two roots: a Python process of three threads (one not
 * stopped, one holding the GIL), and a process of one thread. */
static struct stacks *sample(void)
{
	struct stacks *s = calloc(1, sizeof(*s));
	struct stacks_proc *p;
	struct stacks_thread *t;

	s->procs = calloc(2, sizeof(*s->procs));
	s->nprocs = 2;
	p = &s->procs[0];
	*p = (struct stacks_proc){ .root = 0, .pid = 815, .name = "python3", .state = 'S', .wchan = "do_wait",
				   .python = "3.11.2", .stacks = true, .more_threads = 5 };
	p->threads = t = calloc(3, sizeof(*t));
	p->nthreads = 3;
	t[0] = (struct stacks_thread){ .tid = 815, .name = "python3", .state = 'S', .wchan = "hrtimer_nanosleep",
				       .why = STACKS_TAKEN, .python = true };
	t[0].frames = calloc(4, sizeof(struct stacks_frame));
	t[0].frames[0] = native(0x7f2c1a2e6503, "clock_nanosleep", 0x23, "libc.so.6");
	t[0].frames[1] = python("stuck_here", "/srv/train.py", 4);
	t[0].frames[2] = python("<module>", "/srv/train.py", -1);
	t[0].frames[3] = native(0x52b9e0, NULL, 0, "python3.11");
	t[0].nframes = 4;
	t[0].cut = true;
	t[1] = (struct stacks_thread){ .tid = 820, .name = "loader\nfake", .state = 'D', .wchan = "folio_wait_bit",
				       .why = STACKS_NOT_STOPPED, .waited = 0.2 };
	t[2] = (struct stacks_thread){ .tid = 821, .name = "python3", .state = 'R', .why = STACKS_TAKEN, .python = true,
				       .gil = true };
	t[2].frames = calloc(1, sizeof(struct stacks_frame));
	t[2].frames[0] = native(0x1000, "spin", 0, NULL);
	t[2].nframes = 1;
	p = &s->procs[1];
	*p = (struct stacks_proc){ .root = 1, .pid = 900, .name = "nccl_worker", .state = 'T', .stacks = true,
				   .note = "Python frames need CPython 3.11 (this is 3.12.1)" };
	p->threads = t = calloc(1, sizeof(*t));
	p->nthreads = 1;
	t[0] = (struct stacks_thread){ .tid = 900, .name = "nccl_worker", .state = 'T', .why = STACKS_TAKEN };
	t[0].frames = calloc(1, sizeof(struct stacks_frame));
	t[0].frames[0] = native(0x401000, "main", 0x10, "nccl_worker");
	t[0].nframes = 1;
	return s;
}

LEAK_TEST(stacks, the_text_has_a_line_per_process_thread_and_frame)
{
	struct stacks *s = sample();
	char *t = stacks_text(s, &(struct stacks_text_opts){ .root = -1 });

	cr_assert_not_null(t);
	cr_assert_str_eq(t,
		"pid 815 (python3) state S, waiting in do_wait, Python 3.11.2\n"
		"  thread 815 (python3) state S, waiting in hrtimer_nanosleep\n"
		"    #0  0x00007f2c1a2e6503 clock_nanosleep+0x23 (libc.so.6)\n"
		"    #1  stuck_here (/srv/train.py:4)\n"
		"    #2  <module> (/srv/train.py:?)\n"
		"    #3  0x000000000052b9e0 ?? (python3.11)\n"
		"    ... more frames\n"
		"  thread 820 (loader\\x0afake) state D, waiting in folio_wait_bit: did not stop within 0.2 s\n"
		"  thread 821 (python3) state R, holds the GIL\n"
		"    #0  0x0000000000001000 spin\n"
		"  and 5 more threads\n"
		"pid 900 (nccl_worker) state T; Python frames need CPython 3.11 (this is 3.12.1)\n"
		"  #0  0x0000000000401000 main+0x10 (nccl_worker)\n");
	free(t);
	stacks_free(s);
}

LEAK_TEST(stacks, the_text_shows_one_root_and_as_many_threads_and_frames_as_asked)
{
	struct stacks *s = sample();
	char *t = stacks_text(s, &(struct stacks_text_opts){ .root = 0, .max_threads = 1, .max_frames = 2 });

	cr_assert_str_eq(t,
		"pid 815 (python3) state S, waiting in do_wait, Python 3.11.2\n"
		"  thread 815 (python3) state S, waiting in hrtimer_nanosleep\n"
		"    #0  0x00007f2c1a2e6503 clock_nanosleep+0x23 (libc.so.6)\n"
		"    #1  stuck_here (/srv/train.py:4)\n"
		"    ... 2 more frames and more\n"
		"  and 7 more threads\n");
	free(t);
	t = stacks_text(s, &(struct stacks_text_opts){ .root = 7 });
	cr_assert_str_eq(t, "", "no process of that root");
	free(t);
	stacks_free(s);
}

LEAK_TEST(stacks, the_text_says_why_a_thread_has_no_stack)
{
	static const struct {
		enum stacks_why why;
		int error;
		const char *text;
	} whys[] = {
		{ STACKS_TAKEN, 0, ": no frames found" },
		{ STACKS_DENIED, EPERM, ": cannot trace it: Operation not permitted" },
		{ STACKS_GONE, 0, ": exited" },
		{ STACKS_NO_TIME, 0, ": not taken, out of time" },
		{ STACKS_UNSUPPORTED, 0, ": native stacks are taken on x86-64 only" },
	};

	for (size_t i = 0; i < sizeof(whys) / sizeof(whys[0]); i++) {
		struct stacks_thread th = { .tid = 5, .name = "x", .state = 'S', .why = whys[i].why, .error = whys[i].error };
		struct stacks_proc p = { .pid = 5, .name = "x", .state = 'S', .stacks = true, .threads = &th,
					 .nthreads = 1 };
		struct stacks s = { .procs = &p, .nprocs = 1 };
		char *t = stacks_text(&s, &(struct stacks_text_opts){ .root = -1 }), want[128];

		snprintf(want, sizeof(want), "pid 5 (x) state S%s\n", whys[i].text);
		cr_assert_str_eq(t, want);
		free(t);
	}
	{
		struct stacks_proc p = { .pid = 6, .name = "late", .state = 'R' };
		struct stacks s = { .procs = &p, .nprocs = 1 };
		char *t = stacks_text(&s, &(struct stacks_text_opts){ .root = -1 });

		cr_assert_str_eq(t, "pid 6 (late) state R: no stack, out of time\n");
		free(t);
	}
}

LEAK_TEST(stacks, a_stop_of_the_tracing_is_told_from_a_stop_of_the_process)
{
	cr_assert(stacks_trace_stop(0x7f | SIGTRAP << 8 | PTRACE_EVENT_STOP << 16), "the interrupt's stop");
	cr_assert(stacks_trace_stop(0x7f | SIGSTOP << 8 | PTRACE_EVENT_STOP << 16), "a group stop, traced");
	cr_assert(stacks_trace_stop(0x7f | SIGCHLD << 8), "a signal's delivery, traced");
	cr_assert_not(stacks_trace_stop(0x7f | SIGSTOP << 8), "SIGSTOP");
	cr_assert_not(stacks_trace_stop(0x7f | SIGTSTP << 8));
	cr_assert_not(stacks_trace_stop(0x7f | SIGTTIN << 8));
	cr_assert_not(stacks_trace_stop(0x7f | SIGTTOU << 8));
	cr_assert_not(stacks_trace_stop(0), "an exit");
	cr_assert_not(stacks_trace_stop(0xffff), "continued");
}

/* ---- Taking stacks of live processes ---- */

TestSuite(stacks_live, .timeout = 60);

static struct stacks *collect(pid_t pid, double thread_wait, double seconds)
{
	struct stacks_opts o = { .deadline = clock_mono() + seconds, .thread_wait = thread_wait };
	struct stacks *s;

	cr_assert_eq(stacks_collect(&pid, 1, &o, &s), 0);
	cr_assert_eq(s->nprocs, 1);
	cr_assert_eq(s->procs[0].pid, pid);
	return s;
}

static bool has_function(const struct stacks_thread *t, const char *name)
{
	for (int i = 0; i < t->nframes; i++)
		if (t->frames[i].function && !strcmp(t->frames[i].function, name))
			return true;
	return false;
}

static const struct stacks_thread *thread_in(const struct stacks *s, char state, int k)
{
	for (int i = 0; i < s->procs[0].nthreads; i++)
		if (s->procs[0].threads[i].state == state && k-- == 0)
			return &s->procs[0].threads[i];
	cr_assert_fail("no thread %d in state %c", k, state);
	return NULL;
}

LEAK_TEST_OPTS(stacks_live, a_sleeping_thread_s_frames_are_named, .timeout = 60)
{
	pid_t pid = stack_target(2, 0);
	struct stacks *s = collect(pid, 0, 30);
	const struct stacks_thread *t = &s->procs[0].threads[0];

	cr_assert_eq(s->procs[0].nthreads, 2);
	cr_assert_not(s->cut);
	cr_assert_eq(t->tid, pid, "the main thread first");
	cr_assert_eq(t->why, STACKS_TAKEN);
	cr_assert_gt(t->held, 0, "it was held stopped a while");
	cr_assert(has_function(t, "stack_target_waits_here"), "named from the test's symbol table");
	cr_assert(has_function(&s->procs[0].threads[1], "stack_target_waits_here"));
	cr_assert_not_null(t->frames[0].module);
	cr_assert_eq(stack_target_traced(pid), 0, "detached");
	cr_assert_eq(stack_target_count(pid, 't'), 0, "none left stopped");
	stacks_free(s);
	stack_target_kill(pid);
}

LEAK_TEST_OPTS(stacks_live, a_stopped_process_is_taken_and_left_stopped, .timeout = 60)
{
	pid_t pid = stack_target(2, 0);
	struct stacks *s;

	kill(pid, SIGSTOP);
	for (double end = clock_mono() + 10; stack_target_count(pid, 'T') < 2 && clock_mono() < end;)
		usleep(2000);
	cr_assert_eq(stack_target_count(pid, 'T'), 2);
	s = collect(pid, 0, 30);
	cr_assert_eq(s->procs[0].threads[0].why, STACKS_TAKEN);
	cr_assert(has_function(&s->procs[0].threads[0], "stack_target_waits_here"));
	cr_assert_eq(stack_target_traced(pid), 0);
	cr_assert_eq(stack_target_count(pid, 'T'), 2, "still stopped, as it was");
	stacks_free(s);
	stack_target_kill(pid);
}

static void kill_children(const char *children, void *arg)
{
	for (const char *p = children; *p;) {
		char *end;
		long child = strtol(p, &end, 10);

		if (end == p)
			break;
		kill((pid_t)child, SIGKILL);
		p = end;
	}
}

LEAK_TEST_OPTS(stacks_live, threads_that_do_not_stop_are_skipped_and_left_as_they_were, .timeout = 60)
{
	pid_t pid = stack_target(1, 2);
	double t0 = clock_mono();
	struct stacks *s = collect(pid, 0.1, 30);
	const struct stacks_thread *d = thread_in(s, 'D', 0);

	cr_assert_lt(clock_mono() - t0, 10, "a bound on a wait without one, not a timing");
	cr_assert_eq(d->why, STACKS_NOT_STOPPED);
	cr_assert_geq(d->waited, 0.1);
	cr_assert_eq(thread_in(s, 'D', 1)->why, STACKS_NOT_STOPPED);
	cr_assert_eq(thread_in(s, 'S', 0)->why, STACKS_TAKEN, "the others are taken all the same");
	cr_assert_not(s->cut, "a thread that does not stop is an answer");
	/* the grab thread has ended: the kernel detached what it traced */
	cr_assert_eq(stack_target_traced(pid), 0);
	/* out of D, they run on: the interrupt was dropped with the tracer */
	stack_target_tasks(pid, "children", kill_children, NULL);
	for (double end = clock_mono() + 10; stack_target_count(pid, 'S') < 3 && clock_mono() < end;)
		usleep(2000);
	cr_assert_eq(stack_target_count(pid, 'S'), 3, "%d stopped for a tracer", stack_target_count(pid, 't'));
	stacks_free(s);
	stack_target_kill(pid);
}

LEAK_TEST_OPTS(stacks_live, a_process_whose_main_thread_exited_has_its_other_threads_taken, .timeout = 60)
{
	pid_t pid = fork();
	struct stacks *s;

	if (pid == 0) {
		pthread_t t;

		setpgid(0, 0);
		pthread_create(&t, NULL, stack_target_sleeper, NULL);
		pthread_exit(NULL); /* its memory and maps are the other thread's to show now */
	}
	cr_assert_gt(pid, 0);
	for (double end = clock_mono() + 10; stack_target_count(pid, 'Z') < 1 && clock_mono() < end;)
		usleep(2000);
	cr_assert_eq(stack_target_count(pid, 'Z'), 1);
	s = collect(pid, 0, 30);
	cr_assert_eq(s->procs[0].nthreads, 2);
	cr_assert_eq(s->procs[0].threads[0].why, STACKS_GONE);
	cr_assert_eq(s->procs[0].threads[1].why, STACKS_TAKEN);
	cr_assert(has_function(&s->procs[0].threads[1], "stack_target_waits_here"));
	stacks_free(s);
	stack_target_kill(pid);
}

LEAK_TEST_OPTS(stacks_live, the_deadline_cuts_a_collection, .timeout = 60)
{
	pid_t pid = stack_target(0, 3);
	double t0 = clock_mono();
	struct stacks *s = collect(pid, 0.2, 0.5);
	int taken = 0;

	cr_assert_lt(clock_mono() - t0, 10, "a bound on a wait without one, not a timing");
	cr_assert(s->cut, "three threads of 0.2 s each do not fit in 0.5 s");
	for (int i = 0; i < s->procs[0].nthreads; i++)
		taken += s->procs[0].threads[i].why == STACKS_NOT_STOPPED;
	cr_assert_geq(taken, 1, "what was waited for before the deadline is kept");
	cr_assert_lt(taken, 3);
	cr_assert_eq(stack_target_traced(pid), 0, "the grab ended by the deadline");
	stacks_free(s);
	stack_target_kill(pid);
}

LEAK_TEST_OPTS(stacks_live, a_collection_ended_early_keeps_what_it_has_and_leaves_nothing_traced, .timeout = 60)
{
	pid_t pid = stack_target(1, 3);
	struct stacks_opts o = { .deadline = clock_mono() + 30, .thread_wait = 0.5 };
	struct stacks_job *j;
	struct stacks *s;
	struct pollfd p;

	cr_assert_eq(stacks_start(&j, &pid, 1, &o), 0);
	for (double end = clock_mono() + 10; stack_target_traced(pid) <= 0 && clock_mono() < end;)
		usleep(1000);
	cr_assert_gt(stack_target_traced(pid), 0, "under way");
	p = (struct pollfd){ .fd = stacks_fd(j), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 0), 0, "not ended yet");
	s = stacks_end(j);
	cr_assert_not_null(s);
	cr_assert(s->cut);
	cr_assert_eq(s->nprocs, 1, "the process's state is there from the start");
	cr_assert_eq(s->procs[0].pid, pid);
	cr_assert(stack_target_untraced(pid, 10), "%d threads left traced", stack_target_traced(pid));
	stacks_free(s);
	stack_target_kill(pid);
}

LEAK_TEST_OPTS(stacks_live, a_collection_that_ends_says_so_on_its_fd, .timeout = 60)
{
	pid_t pid = stack_target(1, 0);
	struct stacks_opts o = { .deadline = clock_mono() + 30 };
	struct stacks_job *j;
	struct stacks *s;
	struct pollfd p;

	cr_assert_eq(stacks_start(&j, &pid, 1, &o), 0);
	p = (struct pollfd){ .fd = stacks_fd(j), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 30000), 1);
	s = stacks_end(j);
	cr_assert_not(s->cut);
	cr_assert(has_function(&s->procs[0].threads[0], "stack_target_waits_here"));
	stacks_free(s);
	stack_target_kill(pid);
}

/* A signal that comes while a thread is being taken may stop it for its
 * delivery before the interrupt does: the detach hands it back. */
static volatile sig_atomic_t got;
static int got_fd;

static void on_rt(int sig)
{
	(void)!write(got_fd, "x", 1);
}

LEAK_TEST_OPTS(stacks_live, no_signal_is_lost_to_a_collection, .timeout = 120)
{
	enum { SIGNALS = 3000 };
	int p[2], n = 0;
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_rt };

		got_fd = p[1];
		sigaction(SIGRTMIN, &sa, NULL);
		(void)!write(p[1], "r", 1);
		for (;;)
			pause();
	}
	close(p[1]);
	cr_assert_eq(read(p[0], (char[1]){ 0 }, 1), 1, "the handler is in");
	for (int i = 0; i < SIGNALS; i++) {
		if (i % 100 == 0) {
			struct stacks *s = collect(pid, 0, 30);

			stacks_free(s);
		}
		cr_assert_eq(sigqueue(pid, SIGRTMIN, (union sigval){ 0 }), 0);
		if (i % 3 == 0) {
			struct stacks *s = collect(pid, 0, 30);

			stacks_free(s);
		}
	}
	for (double end = clock_mono() + 20; n < SIGNALS && clock_mono() < end;) {
		char buf[512];
		struct pollfd pf = { p[0], POLLIN, 0 };
		ssize_t k = poll(&pf, 1, 100) == 1 ? read(p[0], buf, sizeof(buf)) : 0;

		n += k > 0 ? (int)k : 0;
	}
	cr_assert_eq(n, SIGNALS, "%d signals lost", SIGNALS - n);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(p[0]);
}
