// SPDX-License-Identifier: MIT
#include "stacks_grab.h"

#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

struct stacks_grab {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool ended, abandoned;     /* under lock */
	pid_t pid;
	struct stacks_grab_thread *t; /* the grab's own copy */
	int n;
	struct stacks_grab_py py;
	double thread_wait, until;
	int max_py;
};

/* ---- Reading the process's memory ---- */

/* len bytes at addr, read in page-sized pieces so that a piece past the
 * mapping's end fails alone; returns how many bytes from addr on were read. */
static size_t read_some(pid_t pid, uint64_t addr, uint8_t *buf, size_t len)
{
	enum { PIECE = 4096, PIECES = 64 };
	size_t done = 0;

	while (done < len) {
		struct iovec local = { buf + done, 0 }, remote[PIECES];
		int k = 0;
		ssize_t got;

		for (size_t at = done; at < len && k < PIECES; k++) {
			size_t piece = PIECE - (size_t)((addr + at) % PIECE);

			if (piece > len - at)
				piece = len - at;
			remote[k] = (struct iovec){ (void *)(uintptr_t)(addr + at), piece };
			local.iov_len += piece;
			at += piece;
		}
		got = process_vm_readv(pid, &local, 1, remote, (unsigned long)k, 0);
		if (got <= 0)
			break;
		done += (size_t)got;
		if ((size_t)got < local.iov_len)
			break;
	}
	return done;
}

int stacks_grab_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	if (len == 0)
		return 0;
	return read_some(pid, addr, buf, len) == len ? 0 : -EFAULT;
}

static int read_exact(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return stacks_grab_read(*(const pid_t *)ctx, addr, buf, len);
}

/* ---- One thread ---- */

/* Waits for the stop PTRACE_INTERRUPT asked for: polls its siginfo, a few
 * tens of microseconds apart at first.  0 with *si, or -errno (-ETIME: it
 * did not stop in time, -ESRCH: it is gone). */
static int wait_stop(pid_t tid, double until, siginfo_t *si)
{
	long nap = 20000; /* ns */

	for (;;) {
		struct timespec ts;

		if (ptrace(PTRACE_GETSIGINFO, tid, NULL, si) == 0)
			return 0;
		if (errno != ESRCH)
			return -errno;
		if (clock_mono() >= until)
			return kill(tid, 0) < 0 && errno == ESRCH ? -ESRCH : -ETIME;
		ts = (struct timespec){ 0, nap };
		nanosleep(&ts, NULL);
		if (nap < 2000000)
			nap *= 2;
	}
}

#if STACKS_GRAB_NATIVE
static void copy_stack(pid_t pid, struct stacks_grab_thread *t)
{
	uint64_t sp = t->regs.rsp, at = sp > STACKS_GRAB_REDZONE ? sp - STACKS_GRAB_REDZONE : sp;

	if (!(t->stack = malloc(STACKS_GRAB_STACK)))
		return;
	t->stack_len = read_some(pid, at, t->stack, STACKS_GRAB_STACK);
	if (t->stack_len == 0 && at != sp) /* no red zone: from the pointer on */
		t->stack_len = read_some(pid, at = sp, t->stack, STACKS_GRAB_STACK);
	t->stack_at = at;
	if (t->stack_len == 0) {
		free(t->stack);
		t->stack = NULL;
	}
}
#endif

/* What is read while the thread is stopped. */
static void copy_state(struct stacks_grab *g, struct pyframes *py, struct stacks_grab_thread *t)
{
#if STACKS_GRAB_NATIVE
	struct iovec iov = { &t->regs, sizeof(t->regs) };

	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRSTATUS, &iov) == 0)
		copy_stack(g->pid, t);
#endif
	if (py && t->tstate && g->max_py > 0 && (t->py = calloc((size_t)g->max_py, sizeof(*t->py)))) {
		int n = pyframes_stack(py, t->tstate, t->py, g->max_py, &t->py_complete);

		t->npy = n > 0 ? n : 0;
	}
}

static void take(struct stacks_grab *g, struct pyframes *py, struct stacks_grab_thread *t)
{
	double t0 = clock_mono(), until = t0 + g->thread_wait;
	siginfo_t si;
	int e;

	if (t->why == STACKS_GONE) /* a zombie already */
		return;
	if (t0 >= g->until) {
		t->why = STACKS_NO_TIME;
		return;
	}
	if (until > g->until)
		until = g->until;
	if (ptrace(PTRACE_SEIZE, t->tid, NULL, NULL) < 0) {
		t->why = errno == ESRCH ? STACKS_GONE : STACKS_DENIED;
		t->error = errno;
		return;
	}
	(void)ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
	e = wait_stop(t->tid, until, &si);
	t->waited = clock_mono() - t0;
	if (e < 0) {
		/* still traced, with the interrupt pending: the end of this
		 * thread detaches it (stacks_grab.h) */
		t->why = e == -ESRCH ? STACKS_GONE : STACKS_NOT_STOPPED;
		t->error = -e;
		return;
	}
	copy_state(g, py, t);
	t->why = STACKS_GRAB_NATIVE ? STACKS_TAKEN : STACKS_UNSUPPORTED;
	/* a stop for a signal's delivery hands the signal back */
	(void)ptrace(PTRACE_DETACH, t->tid, NULL,
		     (void *)(uintptr_t)((si.si_code >> 8) == PTRACE_EVENT_STOP ? 0 : si.si_signo));
	t->held = clock_mono() - t0 - t->waited;
}

/* Threads that had not stopped may have by now: detached here, they are
 * not left for the thread's end, and a signal they stopped for since is
 * handed back rather than lost. */
static void detach_late(struct stacks_grab *g)
{
	for (int i = 0; i < g->n; i++) {
		siginfo_t si;

		if (g->t[i].why != STACKS_NOT_STOPPED || ptrace(PTRACE_GETSIGINFO, g->t[i].tid, NULL, &si) < 0)
			continue;
		(void)ptrace(PTRACE_DETACH, g->t[i].tid, NULL,
			     (void *)(uintptr_t)((si.si_code >> 8) == PTRACE_EVENT_STOP ? 0 : si.si_signo));
	}
}

static void grab_free(struct stacks_grab *g)
{
	for (int i = 0; i < g->n; i++)
		stacks_grab_thread_free(&g->t[i]);
	free(g->t);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	free(g);
}

static void *grab_main(void *arg)
{
	struct stacks_grab *g = arg;
	struct pyframes *py = NULL;
	bool abandoned;

	pthread_setname_np(pthread_self(), "slotrun-grab");
	if (g->py.layout && (py = malloc(sizeof(*py))))
		pyframes_init(py, g->py.layout, read_exact, &g->pid, g->py.runtime, g->py.code_type, g->py.str_type,
			      g->py.bytes_type);
	for (int i = 0; i < g->n; i++)
		take(g, py, &g->t[i]);
	detach_late(g);
	if (py) {
		pyframes_free(py);
		free(py);
	}
	pthread_mutex_lock(&g->lock);
	g->ended = true;
	abandoned = g->abandoned;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	if (abandoned)
		grab_free(g);
	return NULL;
}

int stacks_grab_start(struct stacks_grab **gp, pid_t pid, const struct stacks_grab_thread *threads, int n,
		      const struct stacks_grab_py *py, double thread_wait, double until, int max_py)
{
	struct stacks_grab *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;
	sigset_t all, was;
	int e;

	*gp = NULL;
	if (!g || !(g->t = calloc((size_t)(n > 0 ? n : 1), sizeof(*g->t)))) {
		free(g);
		return -ENOMEM;
	}
	memcpy(g->t, threads, (size_t)n * sizeof(*threads));
	g->n = n;
	g->pid = pid;
	g->py = *py;
	g->thread_wait = thread_wait;
	g->until = until;
	g->max_py = max_py;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cond, &ca);
	pthread_condattr_destroy(&ca);
	/* no signal of the process's is handled on it */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	e = -pthread_create(&g->thread, NULL, grab_main, g);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (e < 0) {
		g->n = 0;
		grab_free(g);
		return e;
	}
	*gp = g;
	return 0;
}

bool stacks_grab_wait(struct stacks_grab *g, double give_up, struct stacks_grab_thread *threads)
{
	struct timespec at;
	bool ended;

	/* give_up as CLOCK_MONOTONIC's timespec, which clock_mono() reads */
	at = clock_ts(give_up);
	pthread_mutex_lock(&g->lock);
	while (!g->ended && pthread_cond_timedwait(&g->cond, &g->lock, &at) != ETIMEDOUT)
		;
	ended = g->ended;
	if (!ended)
		g->abandoned = true;
	pthread_mutex_unlock(&g->lock);
	if (!ended) {
		pthread_detach(g->thread);
		return false;
	}
	pthread_join(g->thread, NULL);
	memcpy(threads, g->t, (size_t)g->n * sizeof(*threads));
	g->n = 0; /* handed over */
	grab_free(g);
	return true;
}

void stacks_grab_thread_free(struct stacks_grab_thread *t)
{
	free(t->stack);
	t->stack = NULL;
	for (int i = 0; i < t->npy; i++)
		pyframes_frame_free(&t->py[i]);
	free(t->py);
	t->py = NULL;
	t->npy = 0;
}
