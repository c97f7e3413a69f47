// SPDX-License-Identifier: MIT
/* Attempts of the job: our root cause as the job plane and the restart
 * history carry it, the end of an attempt, and the start of the next one
 * (restart.h decides whether there is one). */
#ifndef SLOTRUN_ATTEMPT_H
#define SLOTRUN_ATTEMPT_H

#include <stdbool.h>

#include "runner_state.h"

/* The root cause (sup.root_cause, which must be set) as a plane cause:
 * its rank, status, times, note and the newest lines of its stderr that
 * fit. */
void attempt_cause(struct runner *r, struct plane_cause *f);

/* The attempt is over: its pipes are read to the end and closed, a
 * collection still running is stopped. */
void attempt_end(struct runner *r);

/* The next attempt, number `attempt`, starts from nothing but the
 * history, which cause joins; said with the delay before it starts (in
 * an elastic job the round line that START brings says it). */
void attempt_next(struct runner *r, int attempt, double delay, const struct plane_cause *cause);

/* The workers' state reset for the next start, the output of the last one
 * read to its end (attempt_next's part that a round after a failover,
 * which no RESTART announced, needs too). */
void attempt_reset(struct runner *r);

/* One node: whether the attempt that just ended restarts; if so it is
 * begun and the backoff timer armed. */
bool attempt_restart_alone(struct runner *r);

#endif
