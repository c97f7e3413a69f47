// SPDX-License-Identifier: MIT
/* Restarts: which failures start the job again, and how long to wait
 * first.  Pure.  The runner (one node) and the chief (several nodes) both
 * ask it, so a job restarts by the same rule wherever it runs.
 *
 * Never restarted, whatever --restart-on says: a stop by signal (the user
 * or the scheduler asked), a lost node (it will not come back by itself), a
 * command that was not found (127) or is not executable (126), and a rank
 * that could not even be started (a bad binding, no fds): trying again
 * would fail again.  Usage and ClusterInfo errors end slotrun before any
 * attempt. */
#ifndef SLOTRUN_RESTART_H
#define SLOTRUN_RESTART_H

#include <stdbool.h>
#include <stddef.h>

#include "plane_cause.h"

#define RESTART_MAX 10000
#define RESTART_DEFAULT_DELAY 1.0
/* The delay doubles after each attempt up to this (or the first delay, if
 * that is longer). */
#define RESTART_DELAY_CAP 30.0

struct restart_policy {
	int max_restarts;          /* 0: none */
	double delay;              /* seconds before the first restart */
	bool any;                  /* restart on any failure (the default) */
	bool signals;              /* ... on a rank's death by a signal slotrun did not send */
	unsigned char codes[32];   /* ... on these exit codes (bit N: code N) */
};

/* The default: no restarts, 1 s delay, any failure. */
void restart_init(struct restart_policy *p);

/* --restart-on: "any", or a comma list of "signal" and exit codes or
 * ranges ("1,3,10-20").  Returns 0, or -EINVAL with a one-line reason
 * naming what (the flag or its variable). */
int restart_parse_on(struct restart_policy *p, const char *what, const char *spec, char *err,
		     size_t errlen);

/* Whether a job whose attempt ended with this root cause, after `done`
 * restarts so far, starts again. */
bool restart_allowed(const struct restart_policy *p, const struct plane_cause *cause, int done);

/* Seconds to wait before restart number done+1. */
double restart_delay(const struct restart_policy *p, int done);

#endif
