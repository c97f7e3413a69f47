// SPDX-License-Identifier: MIT
/* The end of the session that started slotrun: the ssh client killed, a
 * Ctrl-C on pdsh or clush, a dropped connection.  Without a terminal, sshd
 * then just closes the session's pipes and sends no signal; with one, the
 * terminal hangs up.  Either way every one of slotrun's standard streams
 * that belonged to the session hangs up: stdin's writer is gone (POLLHUP),
 * stdout's and stderr's reader is gone (POLLERR).
 *
 * The watch needs no read and no write: the streams go into an epoll set
 * of their own with no events asked for, which reports only hangups and
 * errors, so a byte on stdin is never consumed (nor a terminal read from
 * the background, which would stop slotrun with SIGTTIN).
 *
 * The session has ended when every watched stream has hung up, so that a
 * stdin at EOF from the start (ssh -n) or a stdout piped into a reader that
 * leaves (| head) is not taken for it while the rest of the session is
 * there. */
#ifndef SLOTRUN_SESSION_H
#define SLOTRUN_SESSION_H

#include <stdbool.h>

struct event_base;

enum session_mode {
	SESSION_AUTO,    /* watch in an ssh session (SSH_CONNECTION or SSH_CLIENT set), unless
			  * SIGHUP was ignored at the start (nohup) */
	SESSION_STOP,    /* watch wherever a stream can hang up */
	SESSION_IGNORE,  /* never watch */
};

/* What a standard stream is, for whether it can hang up. */
enum session_fd_kind {
	SESSION_FD_OTHER,   /* closed, a file, /dev/null: never hangs up */
	SESSION_FD_STREAM,  /* a pipe or a socket */
	SESSION_FD_TTY,     /* a terminal */
};

/* "auto", "stop" or "ignore" into *mode.  Returns 0 or -EINVAL. */
int session_parse_mode(const char *s, enum session_mode *mode);

/* Which of fds 0, 1 and 2 (bit k for fd k) to watch, given what each is:
 * those that can hang up, and none at all where no output is among them (a
 * stdin alone ends at EOF while its session is still there), where the
 * mode says not to, or in auto mode outside an ssh session or under
 * nohup.  Pure. */
unsigned session_watch_set(enum session_mode mode, bool ssh, bool sighup_ignored,
			   const enum session_fd_kind kind[3]);

/* Whether the streams in `watched` have all hung up (`hung`, same bits);
 * false when nothing is watched.  Pure. */
bool session_ended(unsigned watched, unsigned hung);

/* Called once, on the loop, when the session has ended; why is one phrase,
 * e.g. "the session that started this slotrun ended (...)". */
typedef void (*session_end_fn)(void *arg, const char *why);

struct session;

/* Starts watching slotrun's standard streams on base, as mode says (the
 * environment and SIGHUP's disposition are read here, so call it before
 * slotrun installs its own handler).  *out is NULL when nothing is to be
 * watched.  Returns 0, or -errno (no epoll set, no memory; nothing is
 * watched then). */
int session_open(struct session **out, struct event_base *base, enum session_mode mode, session_end_fn end,
		 void *arg);

/* The same for the streams fd[0..2] (stdin, stdout, stderr), watching
 * those in set (bit k for fd[k]); for tests, over pipes and sockets. */
int session_watch(struct session **out, struct event_base *base, const int fd[3], unsigned set,
		  session_end_fn end, void *arg);

/* Stops watching; NULL is fine. */
void session_close(struct session *s);

#endif
