// SPDX-License-Identifier: MIT
/* What `slotrun status` shows: a row per rank and the job's header, and
 * their JSON, which is also how rows travel between nodes.  Pure.
 *
 * Every row names its node, so rows gathered from several nodes merge by
 * concatenation (status_rows_merge); the header is the node's that
 * answers.  A reader skips members it does not know and takes a missing
 * one as its default: a node of an older or newer slotrun still merges. */
#ifndef SLOTRUN_STATUS_ROW_H
#define SLOTRUN_STATUS_ROW_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample.h"

#define STATUS_HOST_MAX 64
#define STATUS_LINE_MAX 256
#define STATUS_WHY_MAX 256
#define STATUS_ID_MAX 64
#define STATUS_CMD_MAX 256

struct status_row {
	int node;                        /* the node's rank in the job */
	char host[STATUS_HOST_MAX];      /* its address, as the job names it */
	int rank, local_rank;
	pid_t pid;                       /* the command's (0: none yet) */
	bool up;                         /* its worker runs */
	enum sample_state state;
	double state_s;                  /* seconds seen in that state (sampled) */
	double cpu_pct;                  /* over the last interval, % of one CPU; < 0: unknown */
	double cpu_s;                    /* CPU seconds of its processes, this attempt and before */
	unsigned long long rss_bytes;
	long threads;
	int procs;
	double silent_s;                 /* since its last line, or its start if none */
	bool wrote;                      /* it wrote a line in this attempt */
	char line[STATUS_LINE_MAX];      /* that line, without the [rank=N] prefix, escaped */
	unsigned long long out_bytes, out_lines;  /* its output so far, every attempt */
	int restarts;                    /* the job's restarts so far */
	int exit_code;                   /* its last exit code (128+N: signal N), -1: none yet */
	bool lag;                        /* lags the others (lag.h) */
	char why[STATUS_WHY_MAX];        /* ... and why */
};

/* The job as the answering node sees it. */
struct status_job {
	char id[STATUS_ID_MAX];          /* the scheduler's job id, else slotrun's pid */
	pid_t pid;                       /* the answering slotrun */
	int node, nnodes, nodes_joined;
	int world_size;
	int attempt, attempts;           /* 1-based; attempts: 1 + --max-restarts */
	char state[16];                  /* status_job_states */
	int64_t started_us;              /* slotrun's start, wall clock, microseconds */
	double uptime_s;
	char command[STATUS_CMD_MAX];
	char host[STATUS_HOST_MAX];
};

/* The job states, in the order metrics list them. */
#define STATUS_JOB_NSTATES 6
extern const char *const status_job_states[STATUS_JOB_NSTATES];

/* A row or a header as a JSON object (new reference), or NULL out of
 * memory. */
json_t *status_row_json(const struct status_row *r);
json_t *status_job_json(const struct status_job *j);

/* The reverse: 0, or -EINVAL when o is not an object or a member has the
 * wrong type (strings that do not fit are cut). */
int status_row_from_json(const json_t *o, struct status_row *r);
int status_job_from_json(const json_t *o, struct status_job *j);

/* An array of rows, and back: *rows malloc'd (free it), *n entries.
 * Returns 0, -EINVAL or -ENOMEM. */
json_t *status_rows_json(const struct status_row *rows, int n);
int status_rows_from_json(const json_t *a, struct status_row **rows, int *n);

/* Appends more[0..m) to *rows (*n entries, malloc'd or NULL) and sorts
 * the whole by rank (then node): how the chief merges the rows the other
 * nodes sent.  Returns 0 or -ENOMEM (*rows unchanged). */
int status_rows_merge(struct status_row **rows, int *n, const struct status_row *more, int m);

#endif
