// SPDX-License-Identifier: MIT
/* An attempt's workers: starting them (logs, pipes, environment, spawn.h)
 * and reading their output on the loop (output.h, console.h). */
#ifndef SLOTRUN_WORKERS_H
#define SLOTRUN_WORKERS_H

#include <signal.h>

#include "runner_state.h"

/* Starts every worker, one after the other (each start returns once its
 * wrap_rank has exec'd: spawn.h); mask is the workers' signal mask, and
 * the caller blocks runner_signals meanwhile.  A start failure is said,
 * once however many ranks hit the same one, and left in the worker's
 * note.  Returns 0, or a negative errno when some worker could not be
 * started: those have pid <= 0, and the caller counts them failed. */
int workers_spawn(struct runner *r, const sigset_t *mask);

/* Worker i ended with code (exit code, or 128+N): before the supervisor
 * hears of it, a SIGKILL slotrun did not send is looked into (oom.h), with
 * the pid its wrap_rank said its command has, and a kill by the OOM killer
 * left in the worker's note (w->oom set). */
void workers_ended(struct runner *r, int i, int code);

/* The pid worker i's wrap_rank said its command has (read once, then
 * kept), or 0 when it has not said yet or cannot. */
pid_t workers_cmd_pid(struct runner *r, int i);

/* Starts reading every started worker's stdout and stderr on the loop.
 * A pipe that cannot be watched (out of memory) is said and closed rather
 * than left to fill and block its worker. */
void workers_watch(struct runner *r);

/* --hang-timeout: whether worker i, silent on slotrun's pipes, made
 * progress since the last look (hang.h: what its wrap_rank read).  Reads
 * /proc, so the caller asks only for workers silent a while. */
bool workers_progress(struct runner *r, int i);

/* A finished job whose leftover processes outlive the SIGTERM waits
 * --grace for them: says once which (pid, name, rank) and that they get
 * SIGKILL in `left` seconds.  Nothing when none is left. */
void workers_say_leftovers(struct runner *r, double left);

#endif
