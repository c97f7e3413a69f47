// SPDX-License-Identifier: MIT
/* What slotrun says at its exit (summary.h): the failure summary, what
 * output was lost on the way, and the --error-file. */
#ifndef SLOTRUN_REPORT_H
#define SLOTRUN_REPORT_H

#include "runner_state.h"

/* Queues the report on slotrun's stderr (console.h), written from memory
 * so that an unread stderr does not block; nothing when the job ended
 * well at the first attempt and lost nothing.  code: slotrun's exit
 * status. */
void report_print(struct runner *r, int code);

/* Worker i failed and is the root cause f: adds what its failure report
 * says (rank_report.h), the message and a rank it names at fault.  A rank
 * outside the job, or itself, is not named; a rank of another node is
 * placed by the chief (plane_coord_fail). */
void report_fill_cause(const struct runner *r, int i, struct plane_cause *f);

#endif
