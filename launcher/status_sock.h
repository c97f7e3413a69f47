// SPDX-License-Identifier: MIT
/* Where `slotrun status` finds a job: a Unix socket per running slotrun,
 * PID.sock, in an owner-only runtime folder, the first usable of
 *   $XDG_RUNTIME_DIR/slotrun   (XDG_RUNTIME_DIR set, absolute and ours)
 *   /run/user/UID/slotrun      (/run/user/UID there and ours)
 *   /tmp/slotrun-UID
 * each created 0700 and then checked with lstat: a folder, not a link,
 * ours, and closed to everyone else (a /tmp/slotrun-UID planted by another
 * user is refused, never used).  Nobody else can so much as list the
 * sockets, and the server checks each caller's uid besides
 * (status_server.h).
 *
 * A slotrun removes its socket on every way out it lives through; one
 * killed by SIGKILL leaves a stale one, which the next slotrun or `slotrun
 * status` of the same user removes: nothing listens on it. */
#ifndef SLOTRUN_STATUS_SOCK_H
#define SLOTRUN_STATUS_SOCK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define STATUS_DIR_CANDIDATES 3

/* Whether a folder with this lstat() may hold a user's sockets: a folder
 * (not a link), owned by uid, with no permission for group or others.
 * Returns 0, -ENOTDIR (not a folder, or a link), -EPERM (someone else's)
 * or -EACCES (open to others). */
int status_dir_check(const struct stat *st, uid_t uid);

/* The candidate folders in order, for uid with the environment's
 * XDG_RUNTIME_DIR (xdg, NULL or "" if unset): dirs[k] is "" where a
 * candidate does not apply (XDG_RUNTIME_DIR unset or relative).  Pure. */
void status_dir_candidates(const char *xdg, uid_t uid, char dirs[STATUS_DIR_CANDIDATES][PATH_MAX]);

/* The server's folder: the first candidate whose parent is ours (or
 * /tmp), created 0700 if missing and checked; a bad one there is an error,
 * not a reason to go on to the next (a client in the same environment
 * looks there).  Returns 0 with dir set, or
 * -errno with a one-line reason in err (naming the folder and the fix). */
int status_dir_make(char *dir, size_t size, char *err, size_t errlen);

/* The folder a client looks in: the one a slotrun started in the same
 * environment would choose (status_dir_make's rule, creating nothing), if
 * it exists and is ours and closed: 1 with dir set, else 0.  A candidate
 * met on the way that exists but belongs to someone else (or is open to
 * others, or cannot even be looked at) is named in foreign (else ""), for
 * the client's refusal. */
int status_dir_find(char *dir, size_t size, char *foreign, size_t flen);

/* dir/PID.sock, or -ENAMETOOLONG when it does not fit a Unix socket's
 * address. */
int status_sock_path(const char *dir, pid_t pid, char *buf, size_t size);

/* The pid in a socket's file name "PID.sock", or 0 when it is not one. */
pid_t status_sock_pid(const char *name);

/* A listening socket at path (a socket left there is replaced; anything
 * else is not touched: -EEXIST): CLOEXEC, non-blocking.  Returns the fd
 * or -errno. */
int status_sock_listen(const char *path);

/* A connection to the socket at path, CLOEXEC and non-blocking: the fd,
 * or -errno (-ECONNREFUSED: nothing listens, the socket is stale). */
int status_sock_connect(const char *path);

/* Removes the stale sockets in dir (nothing listens on them), except
 * self's.  A socket is stale when a connection to it is refused; with
 * pid_first, a socket whose PID names a process of this PID namespace is
 * kept without that connection (each connection wakes the slotrun it
 * reaches: a slotrun starting beside N others, as N simulated nodes do,
 * would wake every one, N^2/2 in all).  Its slotrun may have died and its
 * PID been reused: `slotrun status` sweeps without pid_first.  Returns how
 * many were removed, or -errno when dir cannot be read. */
int status_sock_sweep(const char *dir, pid_t self, bool pid_first);

#endif
