// SPDX-License-Identifier: MIT
/* slotrun's command line, with a SLOTRUN_* variable behind each option
 * (the flag wins).  ClusterInfo flags are kept raw for ci_load, which reads
 * their variables itself at their place in the precedence. */
#ifndef SLOTRUN_OPTIONS_H
#define SLOTRUN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "cluster_info.h"
#include "plane_proto.h"
#include "restart.h"
#include "session.h"
#include "topology.h"

#define OPT_DEFAULT_GRACE 30.0
#define OPT_DEFAULT_JOIN_TIMEOUT 300.0
#define OPT_DEFAULT_HB_TIMEOUT 5.0
#define OPT_DEFAULT_SETTLE 10.0
/* --fanout's largest: a relay holds a connection per node of its group. */
#define OPT_MAX_FANOUT 4096
/* What runs a COMMAND ending in .py (found on PATH), unless --no-python. */
#define OPT_PYTHON "python3"

struct options {
	struct ci_flags ci;
	double grace;              /* seconds from SIGTERM to SIGKILL */
	double hang_timeout;       /* seconds without output or exit that fail the job; 0: off */
	bool no_wrap;
	bool no_python;
	bool dry_run;
	bool report_bindings;
	enum topo_bind bind;
	const char *log_dir;
	const char *ranks_filter;
	const char *error_file;
	char *metrics_addr;        /* --metrics-port's address (malloc'd), NULL: every one */
	int metrics_port;          /* 0: off */
	const char *metrics_file;  /* or NULL */
	const char *timeline;      /* or NULL */
	int control_port;          /* 0: the master port + 1 */
	double join_timeout;       /* seconds for every node to join the chief */
	double hb_timeout;         /* seconds of silence before a node is lost */
	double settle;             /* elastic: seconds without a new node before a first round below MAX */
	enum plane_admit admit;    /* elastic: a node that arrives mid-round re-forms the job now, or not */
	int fanout;                /* the relay tree's fan-out asked for (plane_tree.h), 0: a star */
	const char *secret_file;   /* or NULL */
	enum session_mode on_hangup;  /* whether the end of the session that started us stops the job */
	struct restart_policy restart;
	char **argv;               /* the command */
	const char *interpreter;   /* OPT_PYTHON for a .py command, else NULL:
	                            * the workers run `interpreter argv...` */
};

enum { OPT_RUN = 0, OPT_EXIT_OK = 1 };

/* Returns OPT_RUN, OPT_EXIT_OK after printing --help or --version to
 * stdout, or -EINVAL with a one-line reason in err.  opt_free releases
 * what it allocated. */
int opt_parse(int argc, char **argv, const struct ci_env *env, struct options *o,
	      char *err, size_t errlen);

void opt_free(struct options *o);

extern const char opt_usage[];

#endif
