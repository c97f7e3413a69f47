/* Descendants of a process, found by walking /proc.  Used to stop strays:
 * processes that left the workers' process groups (setsid, daemonized). */
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

#endif
