// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "leak_check.h"
#include "session.h"

#define IN (1u << 0)
#define OUT (1u << 1)
#define ERR (1u << 2)

static const enum session_fd_kind all_pipes[3] = { SESSION_FD_STREAM, SESSION_FD_STREAM, SESSION_FD_STREAM };

LEAK_TEST(session, modes)
{
	enum session_mode m;

	cr_assert_eq(session_parse_mode("auto", &m), 0);
	cr_assert_eq(m, SESSION_AUTO);
	cr_assert_eq(session_parse_mode("stop", &m), 0);
	cr_assert_eq(m, SESSION_STOP);
	cr_assert_eq(session_parse_mode("ignore", &m), 0);
	cr_assert_eq(m, SESSION_IGNORE);
	cr_assert_eq(session_parse_mode("", &m), -EINVAL);
	cr_assert_eq(session_parse_mode("Stop", &m), -EINVAL);
	cr_assert_eq(session_parse_mode("yes", &m), -EINVAL);
}

LEAK_TEST(session, auto_watches_an_ssh_session_unless_nohup)
{
	cr_assert_eq(session_watch_set(SESSION_AUTO, true, false, all_pipes), IN | OUT | ERR);
	cr_assert_eq(session_watch_set(SESSION_AUTO, false, false, all_pipes), 0, "not in an ssh session");
	cr_assert_eq(session_watch_set(SESSION_AUTO, true, true, all_pipes), 0, "under nohup");
	cr_assert_eq(session_watch_set(SESSION_STOP, false, true, all_pipes), IN | OUT | ERR, "told to");
	cr_assert_eq(session_watch_set(SESSION_IGNORE, true, false, all_pipes), 0);
}

LEAK_TEST(session, only_streams_that_can_hang_up)
{
	enum session_fd_kind k[3] = { SESSION_FD_OTHER, SESSION_FD_STREAM, SESSION_FD_TTY };

	cr_assert_eq(session_watch_set(SESSION_STOP, true, false, k), OUT | ERR);
	k[1] = SESSION_FD_OTHER; /* stdout to a file */
	cr_assert_eq(session_watch_set(SESSION_STOP, true, false, k), ERR);
	k[0] = SESSION_FD_STREAM;
	k[2] = SESSION_FD_OTHER; /* stdin alone: it ends at EOF with the session still there */
	cr_assert_eq(session_watch_set(SESSION_STOP, true, false, k), 0);
}

LEAK_TEST(session, ended_only_when_every_watched_stream_hung_up)
{
	cr_assert(!session_ended(0, 0));
	cr_assert(!session_ended(0, IN | OUT | ERR));
	cr_assert(!session_ended(IN | OUT | ERR, IN), "stdin at EOF (ssh -n)");
	cr_assert(!session_ended(IN | OUT | ERR, OUT), "stdout's reader left (| head)");
	cr_assert(!session_ended(IN | OUT | ERR, IN | OUT));
	cr_assert(session_ended(IN | OUT | ERR, IN | OUT | ERR));
	cr_assert(session_ended(OUT | ERR, OUT | ERR | IN));
}

/* ---- the watch, over pipes and a socket standing in for sshd's ---- */

static struct event_base *base;
static int ends;
static int in[2], out[2], err[2];  /* [0] read end, [1] write end */

static void on_end(void *arg, const char *why)
{
	(void)arg;
	cr_assert(why && *why);
	ends++;
}

static void setup(void)
{
	cr_assert_not_null(base = event_base_new());
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, err), 0);
	ends = 0;
}

static void teardown(void)
{
	int *fds[] = { in, out, err };

	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 2; k++)
			if (fds[i][k] >= 0)
				close(fds[i][k]);
	event_base_free(base);
}

static void drop(int *fd)
{
	close(*fd);
	*fd = -1;
}

/* Runs the loop until nothing is ready (a hangup is ready at once). */
static void spin(void)
{
	for (int i = 0; i < 10; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
}

/* Ours are the session's ends: stdin's read end, stdout's write end, one
 * end of the socket as stderr. */
static struct session *watch(unsigned set)
{
	const int fd[3] = { in[0], out[1], err[0] };
	struct session *s;

	cr_assert_eq(session_watch(&s, base, fd, set, on_end, NULL), 0);
	return s;
}

LEAK_TEST_OPTS(session, every_stream_gone_ends_it_once, .init = setup, .fini = teardown, .timeout = 10)
{
	struct session *s = watch(IN | OUT | ERR);

	cr_assert_not_null(s);
	cr_assert_eq(write(in[1], "x", 1), 1); /* input is not a hangup, and is never read */
	spin();
	cr_assert_eq(ends, 0);
	drop(&in[1]); /* EOF on stdin: not yet */
	spin();
	cr_assert_eq(ends, 0);
	drop(&out[0]); /* stdout's reader gone: not yet */
	spin();
	cr_assert_eq(ends, 0);
	drop(&err[1]); /* the socket's peer gone: every stream hung up */
	spin();
	cr_assert_eq(ends, 1);
	spin();
	cr_assert_eq(ends, 1, "said once");
	char c;
	cr_assert_eq(read(in[0], &c, 1), 1, "stdin's byte was left unread");
	session_close(s);
}

LEAK_TEST_OPTS(session, a_stream_never_watched_does_not_hold_it, .init = setup, .fini = teardown, .timeout = 10)
{
	struct session *s = watch(OUT | ERR);

	drop(&out[0]);
	drop(&err[1]);
	spin();
	cr_assert_eq(ends, 1, "stdin, not watched, was still open");
	session_close(s);
}

LEAK_TEST_OPTS(session, nothing_to_watch_is_no_session, .init = setup, .fini = teardown, .timeout = 10)
{
	struct session *s = watch(IN);

	cr_assert_null(s, "stdin alone is not watched");
	cr_assert_null(watch(0));
	session_close(NULL);
}
