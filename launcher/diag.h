// SPDX-License-Identifier: MIT
/* What a worker's processes were doing when it had to be killed (or was
 * found hung): each process's state and kernel wait channel from /proc,
 * its threads' native stacks and, for CPython 3.11, their Python frames
 * (stacks.h).
 *
 * Taking stacks can take seconds (many threads, a thread that does not
 * stop), and the node's event loop must go on meanwhile: it serves the job
 * plane's heartbeats and the other workers.  So the collection runs on a
 * thread of slotrun's (slotrun must trace its workers itself: under Yama's
 * ptrace_scope 1 a child of slotrun's may not), bounded by a deadline, and
 * its end is seen on the loop through a non-blocking CLOEXEC pipe.  Each
 * thread is stopped only while it is copied, each process is given
 * DIAG_STACK_TIME; at the deadline what was collected is kept and the rest
 * dropped, and the collection ends on its own (stacks.h: nothing stays
 * traced or stopped). */
#ifndef SLOTRUN_DIAG_H
#define SLOTRUN_DIAG_H

#include <stdbool.h>
#include <sys/types.h>

struct event_base;

/* Processes shown per worker, threads per process, frames per thread. */
#define DIAG_PROCS 4
#define DIAG_THREADS 2
#define DIAG_FRAMES 12
/* Seconds a thread is given to stop, a process to be taken; the
 * collection ends at DIAG_DEADLINE whatever it is doing. */
#define DIAG_THREAD_WAIT 0.2
#define DIAG_STACK_TIME 2.0
#define DIAG_DEADLINE 8.0

struct diag;

/* Starts collecting about n workers: roots[i] is worker i's pid (its
 * process tree is shown), or <= 0 for none; deadline is in seconds from
 * now.  done(arg) is called on the loop once the collection has ended
 * (never from within diag_start).  Returns 0 with *dp set, or -errno with
 * nothing started. */
int diag_start(struct diag **dp, struct event_base *base, const pid_t *roots, int n, double deadline,
	       void (*done)(void *arg), void *arg);

/* Worker i's text, one line per process, thread and stack frame, handed
 * over to the caller to free; NULL when nothing was collected for it (no
 * root, or the collection ended first). */
char *diag_take(struct diag *d, int i);

/* Ends the collection if it still runs (done is not called) and frees d.
 * NULL is nothing. */
void diag_free(struct diag *d);

#endif
