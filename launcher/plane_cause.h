// SPDX-License-Identifier: MIT
/* A job's root cause: what failed, where, and its last words.  The job
 * plane carries it between nodes (plane_proto.h), the restart rule decides
 * on it (restart.h), the summary prints it: a type of its own, so that
 * none of them includes another for it. */
#ifndef SLOTRUN_PLANE_CAUSE_H
#define SLOTRUN_PLANE_CAUSE_H

#include <stdbool.h>
#include <stdint.h>

#define PLANE_HOST_MAX 256
#define PLANE_TEXT_MAX 1024
#define PLANE_TAIL_MAX 8192

enum plane_cause_kind {
	PLANE_CAUSE_NONE,    /* nothing failed */
	PLANE_CAUSE_RANK,    /* a worker failed */
	PLANE_CAUSE_SIGNAL,  /* a node's slotrun was told to stop */
	PLANE_CAUSE_LOST,    /* a node went silent or away */
	PLANE_CAUSE_GROW,    /* elastic: a node arrived, the job re-forms to take it in */
};

/* The job's root cause as every node reports it. */
struct plane_cause {
	enum plane_cause_kind kind;
	int node;
	int rank;                /* RANK: the global rank */
	int code;                /* RANK: exit code or 128+N; SIGNAL: the signal */
	int64_t when_ms;         /* RANK: wall-clock time of the exit, ms since the epoch */
	int64_t after_ms;        /* RANK: ms from that node's start to the exit */
	char host[PLANE_HOST_MAX];
	char text[PLANE_TEXT_MAX];  /* RANK: a note, e.g. why it did not start; LOST: why;
				     * SIGNAL: why the node stopped the job, if not the
				     * signal alone (or ""); GROW: host is the new node's */
	char tail[PLANE_TAIL_MAX];  /* RANK: its last stderr lines, '\n'-separated */
	/* RANK: what the rank said of its failure in its report (rank_report.h),
	 * or "" */
	char message[PLANE_TEXT_MAX];
	/* RANK: the report named another rank at fault: that one is the job's
	 * root cause, the fields above are the rank that named it.  A node
	 * places a culprit of its own (culprit_node, culprit_host); for one
	 * elsewhere culprit_node is -1 until the chief, which knows every
	 * node's ranks, fills both in. */
	bool blamed;
	int culprit, culprit_node;
	char culprit_host[PLANE_HOST_MAX];
};

#endif
