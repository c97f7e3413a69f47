// SPDX-License-Identifier: MIT
/* The part of a stack collection that stops threads (stacks.h): for each
 * thread of one process, PTRACE_SEIZE, PTRACE_INTERRUPT, a bounded wait
 * for the stop, its registers, a copy of the top of its stack and its
 * Python frames, PTRACE_DETACH.
 *
 * The stop is awaited by asking for the stop's siginfo (PTRACE_GETSIGINFO
 * fails with ESRCH until the thread is stopped), never with waitpid: every
 * thread of the tracer's process may reap a tracee's reports, and a wait
 * here could take a worker's exit from the runner's reaper.  The siginfo
 * also says which stop it is: the interrupt's (or a group stop's,
 * si_code >> 8 == PTRACE_EVENT_STOP), or a signal's delivery, whose signal
 * the detach hands back.
 *
 * All of a process's ptrace calls run on one thread started for it, which
 * then ends: the kernel detaches whatever an ending thread traces, so a
 * thread that never stopped (uninterruptible sleep) is left neither traced
 * nor stopped, however the collection ends.  A grab the caller stops
 * waiting for (it is blocked in the kernel) is abandoned: it frees itself
 * when it ends. */
#ifndef SLOTRUN_STACKS_GRAB_H
#define SLOTRUN_STACKS_GRAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pyframes.h"
#include "stacks.h"

/* Bytes of stack copied from the stack pointer up (a little below it
 * too: the x86-64 red zone). */
#define STACKS_GRAB_STACK (128 * 1024)
#define STACKS_GRAB_REDZONE 128

/* Registers as PTRACE_GETREGSET (NT_PRSTATUS) gives them. */
#if defined(__x86_64__)
#include <sys/user.h>
typedef struct user_regs_struct stacks_grab_regs;
#define STACKS_GRAB_NATIVE 1
#else
typedef struct {
	uint64_t unused;
} stacks_grab_regs;
#define STACKS_GRAB_NATIVE 0
#endif

/* What is known of the process's CPython, for its Python frames. */
struct stacks_grab_py {
	const struct pyframes_layout *layout;   /* NULL: no Python frames */
	uint64_t runtime, code_type, str_type, bytes_type;
};

/* One thread: in, tid and tstate (and why: STACKS_GONE for one not to
 * try); out, the rest. */
struct stacks_grab_thread {
	pid_t tid;
	uint64_t tstate;                 /* its Python thread state, 0: none */
	enum stacks_why why;
	int error;
	double waited, held;
	stacks_grab_regs regs;
	uint64_t stack_at;               /* the copy's address in the process */
	uint8_t *stack;                  /* malloc'd */
	size_t stack_len;
	struct pyframes_frame *py;       /* malloc'd, npy of them */
	int npy;
	bool py_complete;
};

struct stacks_grab;

/* Starts a thread that takes threads[0..n) of pid in turn (copied: the
 * grab works on its own), each given thread_wait seconds to stop, none
 * started past until (clock_mono()), at most max_py Python frames each.
 * Returns 0 or -errno (nothing started). */
int stacks_grab_start(struct stacks_grab **gp, pid_t pid, const struct stacks_grab_thread *threads, int n,
		      const struct stacks_grab_py *py, double thread_wait, double until, int max_py);

/* Waits until the grab has ended or until give_up (clock_mono()).  True:
 * it ended, threads[0..n) are filled in (the caller frees what they hold:
 * stacks_grab_thread_free) and the grab is freed.  False: it is abandoned
 * (it frees itself when it ends) and threads[] is left as it was. */
bool stacks_grab_wait(struct stacks_grab *g, double give_up, struct stacks_grab_thread *threads);

/* Reads len bytes at addr in pid's memory (process_vm_readv): 0, or
 * -EFAULT when not all of them could be read. */
int stacks_grab_read(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Frees what a thread's entry holds (its stack copy and Python frames). */
void stacks_grab_thread_free(struct stacks_grab_thread *t);

#endif
