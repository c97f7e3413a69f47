// SPDX-License-Identifier: MIT
/* The job's timeline: its event record and the encoder that writes the
 * record as Chrome/Perfetto trace-event JSON.  Pure.
 *
 * An event is what happened (kind), where (node; rank, or -1 for the node
 * itself), when (wall clock, microseconds since the epoch, so that events
 * from several nodes merge by time) and its details.  In the trace every
 * node is a process (pid node + 1) and every rank a thread of its node
 * (tid rank + 1; tid 0 is the node's slotrun), named by "M" metadata; a
 * rank's life in an attempt is an "X" span from its start to its exit
 * (exit code and signal in args), a stall an "X" span while it lasted,
 * and everything else an "i" instant.  Times in the trace count from the
 * first event; otherData.origin_us says when that was. */
#ifndef SLOTRUN_TIMELINE_JSON_H
#define SLOTRUN_TIMELINE_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TL_TEXT_MAX 256

enum tl_kind {
	TL_NODE_JOIN,        /* a node joined (text: its address) */
	TL_JOB_START,        /* an attempt started on the node (attempt) */
	TL_RANK_START,       /* a rank started (attempt) */
	TL_RANK_EXIT,        /* a rank exited (attempt, code, sig, root_cause, text) */
	TL_FAILURE,          /* the root cause of a failure (rank, code, sig, root_cause, text) */
	TL_STOP,             /* the job is being stopped (sig, text) */
	TL_RESTART,          /* the next attempt begins (attempt, text: why) */
	TL_STALL,            /* a rank began to lag (text: why) */
	TL_STALL_END,        /* ... and no longer does */
	TL_JOB_END,          /* the job ended (code, text) */
	TL_NKINDS
};

struct tl_args {
	int attempt;         /* 0 for the first */
	int code;            /* exit code or status, -1: none */
	int sig;             /* the signal that ended it, 0: none */
	bool root_cause;
	char text[TL_TEXT_MAX];
};

struct tl_event {
	enum tl_kind kind;
	int node;
	int rank;            /* -1: the node's slotrun */
	int64_t wall_us;
	struct tl_args a;
};

/* "node_join", "rank_exit", ...: how kinds are named in JSON. */
const char *tl_kind_name(enum tl_kind k);

/* One event as a JSON object (new reference; NULL out of memory) and
 * back (0 or -EINVAL): how events travel between nodes. */
json_t *tl_event_json(const struct tl_event *e);
int tl_event_from_json(const json_t *o, struct tl_event *e);

/* The trace of ev[0..n) (any order; several nodes welcome), with node
 * names from hosts (nhosts entries, NULL or "" where unknown): a malloc'd
 * JSON text ({"traceEvents": [...], ...}), or NULL out of memory.  A span
 * still open at the last event ends there, with args.running true. */
char *tl_encode(const struct tl_event *ev, int n, char *const *hosts, int nhosts);

#endif
