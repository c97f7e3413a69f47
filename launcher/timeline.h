// SPDX-License-Identifier: MIT
/* --timeline: the record of the job's events, kept in memory and written
 * as a Chrome/Perfetto trace (timeline_json.h) at the end of the job and
 * at each restart.  One recorder per process: timeline_event is a no-op
 * until timeline_open, so the modules that see an event (the runner, the
 * job plane) record it without knowing whether anyone wants it.
 *
 * For several nodes: each node records its own events; the chief may take
 * in the others' (timeline_add, after tl_event_from_json) so its file
 * shows the whole job.  Events are merged by their wall-clock time. */
#ifndef SLOTRUN_TIMELINE_H
#define SLOTRUN_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "timeline_json.h"

/* Events kept at most; later ones are counted and dropped. */
#define TL_MAX_EVENTS 100000

/* Starts recording for path.  Returns 0 or -ENOMEM. */
int timeline_open(const char *path);

/* Whether a recorder is open. */
bool timeline_on(void);

/* The wall clock in microseconds since the epoch. */
int64_t timeline_now_us(void);

/* Records an event (args NULL: none).  Nothing when no recorder is open. */
void timeline_event(enum tl_kind kind, int node, int rank, int64_t wall_us, const struct tl_args *args);

/* Records an event as another node sent it. */
void timeline_add(const struct tl_event *e);

/* Every event recorded from now on (timeline_event's, not timeline_add's)
 * also goes to fn: a node that is not the chief ships its events there.
 * fn NULL: none. */
void timeline_forward(void (*fn)(void *arg, const struct tl_event *e), void *arg);

/* The events recorded so far (for shipping them): *ev borrowed until the
 * next call.  Returns how many. */
int timeline_events(const struct tl_event **ev);

/* Names node's process in the trace after host. */
void timeline_host(int node, const char *host);

/* Writes the trace to the path (io_replace_file): 0 or -errno.  Nothing
 * (0) when no recorder is open. */
int timeline_write(void);

/* Stops recording and frees the record (nothing is written). */
void timeline_close(void);

#endif
