// SPDX-License-Identifier: MIT
/* An attempt's workers: starting them (logs, pipes, environment, spawn.h)
 * and reading their output on the loop (output.h, console.h). */
#ifndef SLOTRUN_WORKERS_H
#define SLOTRUN_WORKERS_H

#include <signal.h>

#include "runner_state.h"

/* Forks every worker first and collects their exec reports afterwards, so
 * the children exec in parallel; mask is the workers' signal mask, and
 * the caller blocks runner_signals meanwhile.  A start failure is said,
 * once however many ranks hit the same one, and left in the worker's
 * note.  Returns 0, or a negative errno when some worker could not be
 * started: those have pid <= 0, and the caller counts them failed. */
int workers_spawn(struct runner *r, const sigset_t *mask);

/* Starts reading every started worker's stdout and stderr on the loop.
 * A pipe that cannot be watched (out of memory) is said and closed rather
 * than left to fill and block its worker. */
void workers_watch(struct runner *r);

#endif
