// SPDX-License-Identifier: MIT
/* Descendants of a process, found by walking /proc once (each process's
 * children looked up by parent).  Used to stop strays: processes that left
 * the workers' process groups (setsid, daemonized): slotrun's, and those
 * of wrap_rank's guard when slotrun dies. */
#ifndef SLOTRUN_PROCS_H
#define SLOTRUN_PROCS_H

#include <stdbool.h>
#include <sys/types.h>

/* Sends sig to every live descendant of root.  Returns how many were
 * signalled, or a negative errno when /proc cannot be read or belongs to
 * another PID namespace (-ENOTSUP).  Racy by nature (a process may fork
 * meanwhile, or leave the tree when its parent dies); callers repeat on
 * later events.  Where the kernel has pidfds, a signal never reaches a
 * process that took the pid of one the walk found: each is held by a pidfd
 * and its parent checked again first.  Without them (or out of fds) the
 * pid as walked is signalled. */
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

/* Whether the caller has a child, live or a zombie not yet reaped (waitid
 * with WNOWAIT reaps nothing).  For a child subreaper this is exact: every
 * live descendant has an ancestor that is its child. */
bool procs_have_children(void);

/* Up to len - 1 bytes of /proc/PID/NAME ("stat", "io", "environ"...),
 * NUL-terminated (a file with NULs in it is read whole all the same).
 * Returns the length, or -errno (-ENOENT: the process is gone). */
ssize_t procs_read(pid_t pid, const char *name, char *buf, size_t len);

#endif
