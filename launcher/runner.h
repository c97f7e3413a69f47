// SPDX-License-Identifier: MIT
/* Runs the plan: spawns the workers and supervises them on a libevent
 * loop until everything is reaped, then reports.  The state machine's
 * decisions come from supervisor.c; this file only carries them out. */
#ifndef SLOTRUN_RUNNER_H
#define SLOTRUN_RUNNER_H

#include <stdbool.h>
#include <sys/resource.h>

#include "plan.h"
#include "plane.h"
#include "restart.h"
#include "session.h"
#include "topology.h"

struct runner_cfg {
	struct plan *plan;               /* each round of the job plane rewrites its ranks */
	struct topo *topo;               /* NULL: no binding */
	const char *exec_path;           /* wrap_rank, or the command with --no-wrap */
	bool wrapped;
	bool guarded;                    /* --no-wrap: cmd is wrap_rank as a guard only */
	char *const *cmd;                /* the user's command */
	char *const *base_env;
	const char *log_dir;             /* or NULL */
	const char *error_file;          /* or NULL */
	double grace;
	double hang_timeout;             /* seconds of silence that fail the job; 0: off */
	const struct rlimit *nofile;     /* the fd limit workers get, or NULL */
	const struct plane_cfg *plane;   /* several nodes: the job plane; NULL for one */
	const struct restart_policy *restart;  /* NULL: no restarts */
	const char *secret;              /* the job secret (each restart derives its own) */
	const char *host;                /* this node's address, for the summary */
	enum session_mode on_hangup;     /* whether the end of our session stops the job */
	const char *metrics_addr;        /* --metrics-port's address, NULL: every one */
	int metrics_port;                /* 0: no metrics server */
	const char *metrics_file;        /* --metrics-file, or NULL */
	const char *timeline;            /* --timeline, or NULL */
};

/* Returns slotrun's exit status (slotrun(1), EXIT STATUS).  With a job
 * plane nothing starts before every node has joined, and the status is the
 * job's.  Returns 2 with the reason said when the plane cannot open.  With
 * restarts the status is the last attempt's. */
int runner_run(const struct runner_cfg *cfg);

#endif
