// SPDX-License-Identifier: MIT
/* Starting one worker: clone, set the child up, exec (common/child.h: a
 * vfork-style clone, so nothing of slotrun's memory is copied).
 *
 * The caller blocks the signals it handles before calling (so none runs a
 * libevent handler in the child before its exec) and passes the mask to
 * restore.  The child: default dispositions for those signals, its own
 * process group, parent-death signal SIGKILL (and the race with the
 * parent's death checked), binding, stdio, mask restored, exec.  Whether
 * that worked comes back over a CLOEXEC pipe: EOF means exec succeeded. */
#ifndef SLOTRUN_SPAWN_H
#define SLOTRUN_SPAWN_H

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "topology.h"

enum spawn_stage { SPAWN_OK, SPAWN_SETUP, SPAWN_BIND, SPAWN_EXEC };

struct spawn_req {
	const char *path;           /* what to execve */
	char *const *argv;
	char *const *envp;
	int stdin_fd, stdout_fd, stderr_fd;
	struct topo *topo;          /* with slot: bind the child; NULL: no binding */
	const struct topo_slot *slot;
	const sigset_t *child_mask; /* signal mask for the worker */
	const int *reset_signals;   /* set back to SIG_DFL in the child */
	int nreset;
	const struct rlimit *nofile; /* RLIMIT_NOFILE for the worker, or NULL */
	int pass_fd;                /* an fd above 2 the worker inherits (its CLOEXEC
				     * cleared in the child only); 0 or -1: none */
};

/* Starts the worker; returns once it has exec'd or failed.  On success *pid
 * is the child and *report_fd the read end of its report pipe (for
 * spawn_read_report).  Returns 0 or -errno. */
int spawn_start(const struct spawn_req *r, pid_t *pid, int *report_fd);

/* Blocks until the child has exec'd (returns SPAWN_OK) or failed: returns
 * the stage and sets *err to its errno.  Closes report_fd. */
enum spawn_stage spawn_read_report(int report_fd, int *err);

/* Looks name up like execvp would, with the PATH given (NULL: the default
 * path).  Returns 0 with the path in buf, -ENOENT when not found, -EACCES
 * when found but not executable, -ENAMETOOLONG. */
int spawn_resolve(const char *name, const char *path_env, char *buf, size_t len);

/* Whether the script at path can start, as child_check_script (its #!
 * interpreter is there) and, for "#!/usr/bin/env NAME", whether env will
 * find NAME on path_env (NULL: the default path), which it would report
 * in every rank.  Returns 0 when path is no script, or it can start as
 * far as can be told; else, with why in buf ("its #! line runs
 * '/usr/bin/env typo', and 'typo' is not on PATH"), -ENOENT (exit
 * status 127) or -EACCES (126). */
int spawn_check_script(const char *path, const char *path_env, char *buf, size_t len);

#endif
