// SPDX-License-Identifier: MIT
/* Stacks of running processes, taken by slotrun itself (no outside
 * program): for each thread its state and native frames (elfutils' libdwfl
 * unwinds them and names the functions from the ELF symbol tables) and,
 * for a CPython 3.11 process, its Python frames (function, file, line) read
 * from the interpreter's memory (pyframes.h), placed among the native ones.
 *
 * Each thread is stopped only while its registers, the top of its stack
 * and its Python frames are copied (PTRACE_SEIZE, PTRACE_INTERRUPT, a
 * bounded wait, PTRACE_GETREGSET, process_vm_readv, PTRACE_DETACH); the
 * unwinding runs from that copy after the thread goes on.  A thread that
 * does not stop within opts.thread_wait (uninterruptible sleep, state D)
 * is skipped and said so.  The ptrace calls of one process run on a thread
 * of their own that ends with that process: the kernel detaches whatever a
 * thread that ends still traces, so nothing is left traced or stopped on
 * any path, a wait given up included.
 *
 * Who may do this: under Yama's ptrace_scope 1 (the default of most
 * distributions) only an ancestor may trace, and slotrun is its workers'
 * ancestor while a process it forks is not (a sibling): so the collection
 * runs on threads of the calling process, never in a child.  Under
 * ptrace_scope 2 or 3, or without CAP_SYS_PTRACE for a worker of another
 * user, the threads are said to be denied (EPERM) and the rest stays.
 *
 * A traced thread's stops are reported to every thread of the tracer's
 * process: a caller that reaps with waitpid(-1, ..., WUNTRACED) sees
 * them and must pass them over (stacks_trace_stop). */
#ifndef SLOTRUN_STACKS_H
#define SLOTRUN_STACKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Defaults for the options left 0. */
#define STACKS_MAX_PROCS 64      /* processes per root */
#define STACKS_MAX_FRAMES 64     /* frames per thread, Python ones included */
#define STACKS_THREAD_WAIT 0.2   /* seconds a thread is given to stop */

struct stacks_opts {
	double deadline;        /* clock_mono() time the collection ends at, whatever is left */
	double proc_time;       /* seconds one process may take, 0: up to the deadline */
	double thread_wait;     /* seconds a thread is given to stop, 0: STACKS_THREAD_WAIT */
	bool descendants;       /* each root's descendants too (lowest pid first) */
	int max_procs;          /* per root, descendants included; 0: STACKS_MAX_PROCS */
	int max_threads;        /* per process; 0: all (the main thread, then the Python
	                         * threads, the GIL's holder first, then the rest) */
	int max_frames;         /* per thread; 0: STACKS_MAX_FRAMES */
};

/* Why a thread has no stack (STACKS_TAKEN: it has one). */
enum stacks_why {
	STACKS_TAKEN,
	STACKS_NOT_STOPPED,     /* it did not stop within thread_wait */
	STACKS_DENIED,          /* ptrace refused (error): another tracer, Yama, another user */
	STACKS_GONE,            /* it exited (before or meanwhile) */
	STACKS_NO_TIME,         /* the process's time or the deadline ran out first */
	STACKS_UNSUPPORTED,     /* native stacks on this architecture (x86-64 only) */
};

struct stacks_frame {
	bool python;            /* a Python frame, else a native one */
	char *function;         /* NULL: unknown (a native one with no symbol) */
	uint64_t pc;            /* native: where it is (a caller's: the return address) */
	uint64_t offset;        /* native: pc less the function's start */
	char *module;           /* native: the ELF's file name, without its folder; NULL: none */
	char *file;             /* Python: co_filename */
	int line;               /* Python: the line, -1 when unknown */
};

struct stacks_thread {
	pid_t tid;
	char name[16];          /* comm, as the kernel has it (not quoted) */
	char state;             /* /proc's letter before the stop (R, S, D, T...), '?' unknown */
	char wchan[64];         /* the kernel function it sleeps in, "" for none */
	enum stacks_why why;
	int error;              /* errno, with STACKS_DENIED */
	double waited;          /* seconds it took to stop, or that were waited */
	double held;            /* seconds it was held stopped (taken) */
	bool python;            /* it has a Python thread state */
	bool gil;               /* ... that holds the GIL */
	struct stacks_frame *frames;
	int nframes;
	bool cut;               /* more frames than max_frames, or the walk stopped early */
};

struct stacks_proc {
	int root;               /* which root it was found under (the index) */
	pid_t pid, ppid;
	char name[16];          /* comm (not quoted) */
	char state;
	char wchan[64];
	char python[16];        /* "3.11.2" when its Python frames were read, else "" */
	char note[128];         /* why not: "Python frames need CPython 3.11 (this is 3.12.1)", or "" */
	struct stacks_thread *threads;
	int nthreads;
	int more_threads;       /* threads it has that are not in threads[] (max_threads) */
	bool stacks;            /* stacks were taken (false: the state alone, out of time) */
};

struct stacks {
	struct stacks_proc *procs;
	int nprocs;
	bool cut;               /* the deadline came before everything was taken */
};

/* Collects the stacks of roots[0..n) (a root <= 0 is skipped) and, with
 * opts->descendants, of their descendants: on the calling thread, with one
 * more thread per process for its ptrace calls.  Returns by
 * opts->deadline, give or take the unwinding of one thread (libdwfl
 * reading an ELF file); a thread of a process it stopped waiting for ends
 * on its own (its threads skipped: STACKS_NO_TIME).  Separate collections
 * may run at once (of one process, the second finds its threads traced:
 * STACKS_DENIED, EPERM).  Returns 0 with *out set (free it with stacks_free), or
 * -errno (-ENOMEM) with nothing. */
int stacks_collect(const pid_t *roots, int n, const struct stacks_opts *opts, struct stacks **out);

void stacks_free(struct stacks *s);

/* The same on a thread of its own, for an event loop: stacks_start returns
 * at once (0, or -errno with nothing started) and stacks_fd becomes
 * readable (CLOEXEC, non-blocking; never read it) once the collection has
 * ended.  stacks_end, called at any time, ends it: what was collected so far
 * (every process's state, the threads taken until then; ->cut when that is
 * not all), or NULL for out of memory; the job is freed.  A collection
 * still running when stacks_end comes is told to stop and left to end on
 * its own: it frees what it holds and detaches what it traces. */
struct stacks_job;

int stacks_start(struct stacks_job **jp, const pid_t *roots, int n, const struct stacks_opts *opts);
int stacks_fd(const struct stacks_job *j);
struct stacks *stacks_end(struct stacks_job *j);

/* What to show of a collection. */
struct stacks_text_opts {
	int root;               /* the processes of this root, -1: all */
	int max_threads;        /* per process, 0: all that were collected */
	int max_frames;         /* per thread, 0: all */
};

/* The collection as text, one line per process, thread and frame, every
 * name from a process quoted (quote.h) so that no line can be forged:
 *
 *   pid 815 (python3) state S, waiting in hrtimer_nanosleep, Python 3.11.2
 *     thread 815 (python3) state S, waiting in hrtimer_nanosleep, holds the GIL
 *       #0  0x00007f2c1a2e6503 clock_nanosleep+0x23 (libc.so.6)
 *       #1  stuck_here (/srv/train.py:4)
 *       #2  0x000000000052b9e0 _PyEval_EvalFrameDefault+0x8f0 (python3.11)
 *     thread 820 (python3) state D, waiting in folio_wait_bit: did not stop within 0.2 s
 *     and 12 more threads
 *
 * A process of one thread has its frames right under its own line.
 * Returns a malloc'd string ("" for nothing to show), NULL for out of
 * memory.  Pure. */
char *stacks_text(const struct stacks *s, const struct stacks_text_opts *o);

/* Whether a waitpid status is a stop that tracing caused (a ptrace event
 * stop, or a stop for a signal that does not stop a process), not a stop
 * of the process itself: a reaper passes it over. */
bool stacks_trace_stop(int status);

#endif
