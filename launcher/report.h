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

#endif
