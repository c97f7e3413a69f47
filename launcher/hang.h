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

/* wrap_rank holds an unfinished line until its '\n', so a rank that
 * shows progress without newlines (a dot at a time) writes nothing that
 * slotrun reads.  What wrap_rank read counts instead: the rchar line of
 * /proc/PID/io (text, NUL-terminated) in *rchar.  Returns 0, or -EINVAL
 * when text has no such line. */
int hang_parse_rchar(const char *text, unsigned long long *rchar);

/* Whether a worker silent on slotrun's pipes made progress since the last
 * look: *seen holds the last rchar (*known: there is one).  The first look
 * only takes the value; a value that cannot be read is no progress. */
bool hang_progress(unsigned long long *seen, bool *known, int e, unsigned long long rchar);

#endif
