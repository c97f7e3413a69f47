// SPDX-License-Identifier: MIT
/* `slotrun status --stacks`: every rank's stacks, taken without stopping
 * the job (stacks.h: each thread held only while it is copied; native
 * frames through libdw, Python frames for CPython 3.11 workers), beside
 * the loop and bounded by a deadline.  done(arg, stacks) comes once, later
 * on the loop, with a JSON array (the callee takes the reference) holding
 * per rank {"node", "rank", "pid", "text"} (frames, one per line) or
 * {"node", "rank", "pid", "error"}; status_table.c renders either. */
#ifndef SLOTRUN_STATUS_STACKS_H
#define SLOTRUN_STATUS_STACKS_H

#include <jansson.h>

#include "status_row.h"

struct event_base;
struct status_stacks;

/* Starts collecting rows[0..n)'s stacks.  Returns 0 with *h set (cancel
 * it, or it frees itself once done was called), or -errno with nothing
 * started (done is not called). */
int status_stacks_start(struct status_stacks **h, struct event_base *base, const struct status_row *rows, int n,
			double deadline, void (*done)(void *arg, json_t *stacks), void *arg);

/* Ends a collection that has not called done yet (done is not called). */
void status_stacks_cancel(struct status_stacks *h);

#endif
