// SPDX-License-Identifier: MIT
/* What a worker's processes were doing when it had to be killed: each
 * process's state and kernel wait channel from /proc and, with elfutils'
 * eu-stack in PATH, its native stack.
 *
 * Taking a stack can take seconds (many threads, a process slow to stop
 * for the tracer), and the node's event loop must go on meanwhile: it
 * serves the job plane's heartbeats and the other workers.  So everything
 * is collected in a child process (no shell), bounded by a deadline, and
 * its output read on the loop through a non-blocking CLOEXEC pipe.  The
 * collector leads its own process group (it and the eu-stacks it starts):
 * when the collection ends, by EOF or by the deadline, the whole group is
 * sent SIGKILL, so nothing of it outlives the collection. */
#ifndef SLOTRUN_DIAG_H
#define SLOTRUN_DIAG_H

#include <stdbool.h>
#include <sys/types.h>

struct event_base;

/* Processes shown per worker, frames per stack. */
#define DIAG_PROCS 4
#define DIAG_FRAMES 8
/* Stacks are taken while the collection is younger than DIAG_BUDGET
 * seconds, each given DIAG_STACK_TIME; the collector is killed at
 * DIAG_DEADLINE whatever it is doing. */
#define DIAG_BUDGET 5.0
#define DIAG_STACK_TIME 2.0
#define DIAG_DEADLINE (DIAG_BUDGET + DIAG_STACK_TIME + 1.0)

struct diag;

/* Starts collecting about n workers: roots[i] is worker i's pid (its
 * process tree is shown), or <= 0 for none.  Signals are blocked around
 * the fork and the collector sets every disposition back to its default,
 * so no handler of the caller's (libevent's) runs in it.  done(arg) is
 * called on the loop once the collection has ended (never from within
 * diag_start); the collector has been sent SIGKILL by then.  Returns 0
 * with *dp set, or -errno with nothing started. */
int diag_start(struct diag **dp, struct event_base *base, const pid_t *roots, int n, double deadline,
	       void (*done)(void *arg), void *arg);

/* Worker i's text, one line per process and stack frame, handed over to
 * the caller to free; NULL when nothing was collected for it (no root, or
 * the collection ended first). */
char *diag_take(struct diag *d, int i);

/* For a caller that reaps with waitpid(-1): whether pid, just reaped, was
 * d's collector (d then never signals that pid again).  d may be NULL. */
bool diag_reaped(struct diag *d, pid_t pid);

/* Ends the collection if it still runs (done is not called), SIGKILLs the
 * collector if it is not reaped yet and waits for it, and frees d.  NULL
 * is nothing. */
void diag_free(struct diag *d);

#endif
