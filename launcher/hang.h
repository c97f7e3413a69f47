// SPDX-License-Identifier: MIT
/* --hang-timeout: a worker that neither wrote nor exited for that long
 * fails the job.  Pure: the runner keeps when each worker last wrote and
 * asks on a periodic timer. */
#ifndef SLOTRUN_HANG_H
#define SLOTRUN_HANG_H

#include <stdbool.h>

#include "supervisor.h"

/* How often to look: a tenth of the limit, within 0.05 and 1 seconds. */
double hang_period(double limit);

/* The first of n workers still running (fate) whose last output
 * (active[i], seconds on the caller's clock) is more than limit seconds
 * before now, or -1.  While the consoles hold the output back (held: a
 * slow reader), silence is no sign of a hang: each worker looked at
 * counts as active now (active[] is updated). */
int hang_find(double *active, const enum sup_worker_fate *fate, int n, bool held, double now, double limit);

#endif
