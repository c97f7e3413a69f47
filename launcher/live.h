// SPDX-License-Identifier: MIT
/* Seeing inside the running job: the runner's glue to `slotrun status`
 * (status_server.h), the sampler (sampler.h), the lag rule (lag.h), the
 * metrics (--metrics-port, --metrics-file: metrics.h) and the timeline
 * (--timeline: timeline.h).  The runner calls the hooks below at the
 * moments they name; each is a no-op without a live (r->live NULL).
 *
 * Cost when unused: the status socket listens and is otherwise idle, the
 * output counters add a pass over each batch of lines, and nothing else
 * runs: the sampler samples only while a status client asks (and
 * LIVE_KEEP seconds after) or for the job's life with --metrics-port,
 * --metrics-file or --timeline.
 *
 * Several nodes (docs/observability.md, "Seams"): live_rows gives this
 * node's rows, which the job plane carries to the node that answers;
 * gather() in live.c is where they are asked for and merged;
 * live_nodes_joined and timeline_add take what the plane learns. */
#ifndef SLOTRUN_LIVE_H
#define SLOTRUN_LIVE_H

#include "runner_state.h"
#include "status_row.h"

/* Seconds between samples while sampling. */
#define LIVE_INTERVAL 1.0
/* A status request keeps the sampler going this long. */
#define LIVE_KEEP 10.0
/* A request that finds no recent sample waits this long for a second one,
 * so that CPU use over an interval is known. */
#define LIVE_SETTLE 0.3

struct live;

/* Before anything starts: the status socket, the metrics listener and
 * files, the timeline.  Returns 0, or 2 (slotrun's exit status) with the
 * reason said when --metrics-port cannot listen; a status socket that
 * cannot be made is said and done without. */
int live_open(struct runner *r);

/* The job ended with code: the last metrics file and the timeline are
 * written (a failure said). */
void live_end(struct runner *r, int code);

/* Removes the socket, closes everything. */
void live_close(struct runner *r);

/* Rank i's output count, for its streams (out_stream_count), or NULL. */
struct out_count *live_count(struct runner *r, int i);

/* An attempt's workers were started. */
void live_attempt_start(struct runner *r);

/* Worker i was reaped with wait status `status`. */
void live_rank_exit(struct runner *r, int i, int status);

/* The attempt is over on this node (its root cause, if any, is final). */
void live_attempt_done(struct runner *r);

/* The supervisor stopped running on ev: a stop, unless every worker
 * simply ended. */
void live_stopping(struct runner *r, const struct sup_event *ev);

/* Attempt `attempt` (0-based) comes next, after why. */
void live_restart(struct runner *r, int attempt, const char *why);

/* The job plane's count of nodes in the job so far. */
void live_nodes_joined(struct runner *r, int n);

/* This node's rows as last sampled (lags not marked), malloc'd into *rows
 * (free it).  Returns 0 or -ENOMEM. */
int live_rows(struct runner *r, struct status_row **rows, int *n);

/* This node's view of the job's header. */
void live_job(struct runner *r, struct status_job *j);

/* The job plane's hooks (plane.h): this node's part of a status the chief
 * gathers (answered with plane_answer), the chief's merge of every node's
 * part, and another node's timeline event for the chief. */
void live_ask(struct runner *r, uint32_t id, bool stacks);
char *live_merge(struct runner *r, char *const *docs, const size_t *lens, int n, const char *missing, size_t *len);
void live_event(struct runner *r, const char *json, size_t len, const char *host);

#endif
