// SPDX-License-Identifier: MIT
/* The report after a failure: the root cause (rank, node, local rank, pid,
 * exit code or signal, time) with the last lines of its stderr, then every
 * other rank's outcome; as text on stderr and as JSON for --error-file. */
#ifndef SLOTRUN_SUMMARY_H
#define SLOTRUN_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "output.h"
#include "plane_proto.h"
#include "supervisor.h"

/* Lines of stderr shown for a rank other than the root cause that failed
 * on its own while being stopped. */
#define SUM_OTHER_TAIL_LINES 5

struct sum_worker {
	int rank, local_rank;
	pid_t pid;
	int code;                  /* exit code or 128+N; -1 if never reaped */
	enum sup_worker_fate fate;
	struct timespec when;      /* CLOCK_REALTIME of the exit */
	double after_start;        /* seconds from start to exit */
	const struct out_tail *tail;
	const char *note;          /* e.g. why it could not start, or NULL */
	const char *diag;          /* lines on what it did when it had to be killed, or NULL */
	bool diag_hung;            /* ... taken when it was found hung, before its SIGTERM */
	bool oom;                  /* the kernel's OOM killer killed it: note says how sure */
	const char *message;       /* what its failure report said (rank_report.h), or NULL */
};

/* One round of an elastic job, as this node took part in it. */
struct sum_round {
	int round, nnodes, ranks, node_rank;   /* its node count and ranks; this node's rank */
	struct timespec start;                 /* CLOCK_REALTIME */
	char why[PLANE_TEXT_MAX];              /* why it formed ("" for the first) */
	char end[PLANE_TEXT_MAX];              /* why it ended ("": it is the last) */
};

struct sum_job {
	int node_rank;
	int nworkers;
	const struct sum_worker *w;
	int root;                  /* index of the rank that failed first, or -1 */
	/* The rank that one's report named at fault, or NULL: the root
	 * cause then, named by w[root]. */
	const struct sum_worker *culprit;
	int stop_signal;           /* signal that stopped slotrun, or 0 */
	int exit_code;
	/* Several nodes: the job's root cause as the chief decided it,
	 * wherever it was; root and stop_signal are then not shown. */
	const struct plane_cause *job;
	/* Restarts: this is attempt `attempt` (0 = the first) of `attempts`;
	 * history[0..attempt) are the root causes of the ones before. */
	const struct plane_cause *history;
	int attempt, attempts;
	/* Stopped while waiting to start attempt `attempt`: it never ran
	 * here, so nworkers is 0. */
	bool between;
	/* An elastic job: every round this node took part in (they replace
	 * the attempts above, which count only restarts); nrounds 0 else. */
	const struct sum_round *rounds;
	int nrounds;
};

/* "exit 1", "exit 137 (SIGKILL)" */
void sum_describe_code(int code, char *buf, size_t len);

void summary_print(FILE *f, const struct sum_job *j);

/* Writes a temporary file beside path and renames it over path: the whole
 * summary or nothing.  Returns 0 or a negative errno (errno set too). */
int summary_write_json(const char *path, const struct sum_job *j);

#endif
