// SPDX-License-Identifier: MIT
/* Which ranks lag the others, and why.  Pure: the rows come in sampled.
 *
 * A running rank is idle when it wrote no line for LAG_SILENT seconds and
 * used less than LAG_CPU % of a CPU over the last interval; it progresses
 * when it wrote a line within LAG_SILENT seconds or used at least LAG_CPU
 * %.  An idle rank lags when some other rank progresses and the idle ones
 * are no more than the progressing ones: a job whose ranks all wait
 * (loading data, at a barrier) has no laggard, and neither does one where
 * most wait on one busy rank.  A rank seen uninterruptible (D) or stopped
 * (T) for LAG_STATE seconds lags whatever the others do.  Nothing lags
 * while the job is paused (a terminal stop) or ending. */
#ifndef SLOTRUN_LAG_H
#define SLOTRUN_LAG_H

#include <stdbool.h>

#include "status_row.h"

#define LAG_SILENT 5.0
#define LAG_CPU 1.0
#define LAG_STATE 10.0

/* Sets lag and why on each of rows[0..n) (clearing them first); running:
 * the job runs (not paused, not ending).  The rows may come from several
 * nodes.  why reads "no output for 42 s and 0% CPU while ranks 0-1,3
 * progress" or "uninterruptible (D) for 12 s".  Returns how many lag. */
int lag_mark(struct status_row *rows, int n, bool running);

/* ranks[0..n) (sorted or not) as a short list: "0-3,5,7-8".  Returns buf. */
const char *lag_ranks_text(const int *ranks, int n, char *buf, size_t size);

#endif
