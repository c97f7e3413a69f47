// SPDX-License-Identifier: MIT
/* Descendants of a process, found by walking /proc.  Used to stop strays:
 * processes that left the workers' process groups (setsid, daemonized):
 * slotrun's, and those of wrap_rank's guard when slotrun dies. */
#ifndef SLOTRUN_PROCS_H
#define SLOTRUN_PROCS_H

#include <sys/types.h>

/* Sends sig to every live descendant of root.  Returns how many were
 * signalled, or a negative errno when /proc cannot be read or belongs to
 * another PID namespace (-ENOTSUP).  Racy by
 * nature (a process may fork meanwhile); callers repeat on later events. */
int procs_signal_descendants(pid_t root, int sig);

/* root and then up to max-1 of its live descendants, lowest pid first
 * (most often the oldest: wrap_rank, its command, what that started).
 * Returns how many, or a negative errno. */
int procs_tree(pid_t root, pid_t *pids, int max);

/* SIGKILLs every descendant of the calling process and reaps its children
 * until none is left.  The caller must be a child subreaper: then every
 * live descendant has an ancestor that is our child, orphans come back to
 * us, and "no child left" (ECHILD) means nothing is left below us, however
 * a process forked meanwhile.  Returns 0, or the negative errno of
 * procs_signal_descendants (then nothing was done). */
int procs_kill_subtree(void);

#endif
