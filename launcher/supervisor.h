// SPDX-License-Identifier: MIT
/* The supervisor's state machine: pure, no I/O.  The runner feeds it events
 * (a worker exited, a signal arrived, the grace timer fired, no stray
 * descendants are left) and carries out the actions it returns.
 *
 *   RUNNING --first failure / SIGTERM / SIGINT / session ended / job stopped elsewhere-->
 *           STOPPING (TERM to workers, grace armed)
 *   STOPPING --grace expired / second SIGINT--> KILLING (KILL to workers and strays)
 *   any --last worker reaped--> SWEEP (strays: TERM, or KILL once escalated)
 *   SWEEP --grace expired / SIGINT / SIGTERM--> KILL to strays, repeated on a
 *         short timer until none is left (a stray may fork between the walk
 *         over /proc and its kill)
 *   SWEEP --no descendant left--> DONE
 *
 * "Strays" are descendants outside the workers' process groups, e.g. a
 * grandchild that escaped with setsid; slotrun is their subreaper. */
#ifndef SLOTRUN_SUPERVISOR_H
#define SLOTRUN_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>

enum sup_state { SUP_RUNNING, SUP_STOPPING, SUP_KILLING, SUP_SWEEP, SUP_DONE };

enum sup_event_type {
	SUP_EV_EXIT,         /* worker `worker` exited with `code` (exit code, or 128+N) */
	SUP_EV_SIGNAL,       /* slotrun received `sig` */
	SUP_EV_STOP_SIGNAL,  /* told to stop with `sig`, one that alone only goes to the workers:
			      * the job plane's stop by another node, or this node's session's end
			      * (SIGHUP) */
	SUP_EV_TIMER,        /* the grace period armed by an action ran out */
	SUP_EV_STRAYS_GONE,  /* in SWEEP: slotrun has no child process left */
	SUP_EV_STOP,         /* the job plane: the job failed on another node */
	SUP_EV_HANG,         /* worker `worker` neither wrote nor exited for --hang-timeout */
};

/* The highest signal number (Linux's SIGRTMAX) that sent records. */
#define SUP_SIG_MAX 64

/* A hung worker is the root cause with this status (timeout(1)'s). */
#define SUP_HANG_CODE 124

struct sup_event {
	enum sup_event_type type;
	int worker;
	int code;
	int sig;
	double t;            /* SUP_EV_EXIT: seconds since start */
};

/* The root cause is the first failure, with one refinement: a crash takes
 * its peers down with it (they see the connection close and exit 1), and
 * which of them is reaped first is a race.  So within this many seconds of
 * the first failure, a death by a signal slotrun did not send replaces a
 * root cause that merely exited with an error. */
#define SUP_ROOT_WINDOW 0.25

/* What the runner must do, in this order. */
struct sup_actions {
	int signal_workers;  /* 0, or a signal for every live worker's process group */
	int signal_strays;   /* 0, or a signal for every other descendant */
	bool arm_timer;      /* (re)start the grace timer */
	bool arm_rescan;     /* start the short rescan timer instead: strays were
			      * killed, but one may have forked meanwhile */
	bool check_strays;   /* see whether any descendant is left (feed STRAYS_GONE if not) */
	bool done;           /* exit with sup_exit_code() */
};

enum sup_worker_fate {
	SUP_W_RUNNING,
	SUP_W_EXITED,        /* on its own, before any stop */
	SUP_W_STOPPED,       /* exited after slotrun began stopping the job */
	SUP_W_HUNG,          /* declared hung (--hang-timeout), then stopped by slotrun */
};

struct sup {
	enum sup_state state;
	int nworkers;
	int live;
	int root_cause;      /* worker index of the first failure, or -1 */
	int stop_signal;     /* TERM/INT (or HUP: the session ended) that told slotrun to stop, or 0 */
	bool told_stop;      /* a stop signal came, also after the root cause: no restart */
	int stray_signal;    /* last signal sent to strays (TERM, then KILL) */
	bool escalated;      /* KILL sent */
	int sigints;         /* SIGINTs received: the second escalates */
	double root_time;    /* when the root cause exited */
	int hung;            /* worker index declared hung (the root cause), or -1 */
	uint64_t sent;       /* bit N-1: signal N (1..SUP_SIG_MAX) was sent to the workers */
	enum sup_worker_fate *fate;
	int *code;
};

/* fate and code: caller-owned arrays of nworkers entries. */
void sup_init(struct sup *s, int nworkers, enum sup_worker_fate *fate, int *code);

/* The one transition function. */
struct sup_actions sup_step(struct sup *s, const struct sup_event *ev);

/* Whether code (128+N) is a death by SIGKILL that slotrun did not send
 * to the workers: someone else's, the kernel's OOM killer's most often. */
bool sup_unsent_kill(const struct sup *s, int code);

/* 0 when every worker exited 0; else the root cause's code; else 128+N for
 * the signal that stopped slotrun. */
int sup_exit_code(const struct sup *s);

#endif
