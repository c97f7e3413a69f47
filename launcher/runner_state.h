// SPDX-License-Identifier: MIT
/* The state of one runner_run, shared by the runner's modules: runner.c
 * (the loop and the glue), workers.c (starting an attempt's workers and
 * reading their output) and attempt.c (ending an attempt, starting the
 * next).  Nothing outside the runner includes it. */
#ifndef SLOTRUN_RUNNER_STATE_H
#define SLOTRUN_RUNNER_STATE_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "console.h"
#include "oom.h"
#include "output.h"
#include "plane.h"
#include "rank_report.h"
#include "runner.h"
#include "summary.h"
#include "supervisor.h"

/* The signals slotrun handles on its loop: blocked while workers are
 * forked, set back to their defaults in the workers. */
#define RUNNER_NSIGNALS 8
extern const int runner_signals[RUNNER_NSIGNALS];

struct runner;
struct live;

/* What a start writes first and the big buffers after it: a worker's start
 * then touches two fresh pages of the array (the fields up to out's buffers,
 * and err's own fields), not six. */
struct worker {
	pid_t pid;
	struct runner *runner;
	struct event *ev_out, *ev_err;
	struct timespec when;        /* when it exited, on the wall clock */
	double after;                /* ... seconds after its attempt's start */
	bool oom;                    /* the note says the OOM killer's part in its death */
	bool cmd_open;               /* wrapped: cmd_r is open */
	int cmd_r;                   /* ... the pipe its wrap_rank writes its command's pid to */
	pid_t cmd;                   /* ... the pid it wrote, 0: not yet read */
	char *diag;                  /* what it was doing when it had to be killed, or NULL */
	bool diag_hung;              /* ... taken when it was found hung (--hang-timeout) */
	unsigned long long rchar;    /* --hang-timeout: what its wrap_rank had read at the last look */
	bool rchar_known;            /* ... since its last output reached slotrun */
	char note[256];
	struct out_stream out, err;
	struct out_tail tail;
};

struct runner {
	const struct runner_cfg *cfg;
	struct event_base *base;
	struct event *sigev[RUNNER_NSIGNALS];
	struct event *timer;
	struct sup sup;
	enum sup_worker_fate *fate;
	int *code;
	struct worker *w;
	double *active;              /* per worker: when it last wrote (or started), seconds since t0 */
	int n;
	pid_t self;
	double t0;                   /* clock_mono() when the attempt started */
	struct console cons;         /* slotrun's stdout and stderr */
	bool paused;                 /* the workers are stopped: a terminal stop, here or on another node */
	double paused_at;            /* ... since this clock_mono() */
	sigset_t orig_mask;          /* the signal mask slotrun was started with */
	struct plane *plane;         /* several nodes, else NULL */
	bool started;                /* the workers were started */
	bool ended;                  /* the plane said the job is over */
	int job_code;                /* ... with this status */
	struct plane_cause job_cause;
	bool finished;               /* the loop is to end */
	bool ever_started;           /* some attempt started its workers */
	int attempt;                 /* 0 for the first, k for restart k */
	struct plane_cause *history; /* the root cause of every attempt before this one */
	bool fresh;                  /* the workers' state was reset for the next start */
	int round;                   /* the job plane's round running or run last (0: none) */
	bool chief;                  /* several nodes: this node was the chief in its last round */
	struct sum_round *rounds;    /* elastic: every round this node took part in */
	int nrounds;
	struct event *backoff;       /* one node: the wait before the next attempt */
	int stopped_between;         /* one node: the signal that stopped us between attempts */
	struct event *hang_check;    /* with --hang-timeout */
	struct event *leftovers;     /* a finished job's leftovers are said: soon after their SIGTERM */
	struct diag *diag;           /* collecting before the SIGKILL, or NULL */
	bool diag_hung;              /* ... before the hang's SIGTERM, of the hung worker */
	struct sup_actions held;     /* ... which waits with these */
	struct oom oom;              /* what the kernel says of SIGKILLs slotrun did not send */
	struct rank_reports reports; /* the workers' failure reports (rank_report.h) */
	struct session *session;     /* watching for the end of our session, or NULL */
	struct live *live;           /* status, metrics, timeline (live.h), or NULL */
};

/* slotrun's own lines go through its stderr queue like the workers': an
 * unread stderr must not block the loop. */
#define note(r, ...) console_note(&(r)->cons, __VA_ARGS__)

/* "slotrun: rank 3 (node 1): ...": how every diagnostic names a rank. */
#define say_rank(r, i, fmt, ...) \
	note(r, "slotrun: rank %d (node %d): " fmt, (r)->cfg->plan->slots[i].rank, \
	     (r)->cfg->plan->node_rank, __VA_ARGS__)

static inline int runner_attempts(const struct runner *r)
{
	return r->cfg->restart ? r->cfg->restart->max_restarts + 1 : 1;
}

static inline bool runner_elastic(const struct runner *r)
{
	return r->cfg->plane && plane_elastic(r->cfg->plane);
}

#endif
