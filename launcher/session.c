// SPDX-License-Identifier: MIT
#include "session.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUTPUTS ((1u << STDOUT_FILENO) | (1u << STDERR_FILENO))

struct session {
	int epfd;
	int fd[3];            /* the streams watched, by their bit */
	struct event *ev;
	unsigned watched, hung;
	session_end_fn end;
	void *arg;
};

int session_parse_mode(const char *s, enum session_mode *mode)
{
	static const struct { const char *name; enum session_mode mode; } names[] = {
		{ "auto", SESSION_AUTO }, { "stop", SESSION_STOP }, { "ignore", SESSION_IGNORE },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0) {
			*mode = names[i].mode;
			return 0;
		}
	return -EINVAL;
}

unsigned session_watch_set(enum session_mode mode, bool ssh, bool sighup_ignored,
			   const enum session_fd_kind kind[3])
{
	unsigned set = 0;

	if (mode == SESSION_IGNORE || (mode == SESSION_AUTO && (!ssh || sighup_ignored)))
		return 0;
	for (int fd = 0; fd < 3; fd++)
		if (kind[fd] != SESSION_FD_OTHER)
			set |= 1u << fd;
	return set & OUTPUTS ? set : 0;
}

bool session_ended(unsigned watched, unsigned hung)
{
	return watched && (hung & watched) == watched;
}

static enum session_fd_kind fd_kind(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return SESSION_FD_OTHER;
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
		return SESSION_FD_STREAM;
	return S_ISCHR(st.st_mode) && isatty(fd) ? SESSION_FD_TTY : SESSION_FD_OTHER;
}

static bool sighup_ignored(void)
{
	struct sigaction sa;

	return sigaction(SIGHUP, NULL, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN;
}

static bool in_ssh_session(void)
{
	const char *c = getenv("SSH_CONNECTION"), *d = getenv("SSH_CLIENT");

	return (c && *c) || (d && *d);
}

/* The set is level-triggered: a stream that hung up leaves it, or it
 * would wake the loop for ever. */
static void on_ready(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	struct epoll_event evs[3];
	int n = epoll_wait(s->epfd, evs, 3, 0);

	for (int i = 0; i < n; i++) {
		unsigned k = evs[i].data.u32;

		if (k >= 3 || !(evs[i].events & (EPOLLHUP | EPOLLERR)))
			continue;
		s->hung |= 1u << k;
		(void)epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->fd[k], NULL);
	}
	if (!session_ended(s->watched, s->hung))
		return;
	event_del(s->ev);
	s->end(s->arg, "the session that started this slotrun ended (its standard streams hung up)");
}

int session_open(struct session **out, struct event_base *base, enum session_mode mode, session_end_fn end,
		 void *arg)
{
	static const int std[3] = { STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO };
	enum session_fd_kind kind[3];

	*out = NULL;
	for (int k = 0; k < 3; k++)
		kind[k] = fd_kind(std[k]);
	return session_watch(out, base, std, session_watch_set(mode, in_ssh_session(), sighup_ignored(), kind),
			     end, arg);
}

int session_watch(struct session **out, struct event_base *base, const int fd[3], unsigned set,
		  session_end_fn end, void *arg)
{
	struct session *s;
	int err;

	*out = NULL;
	if (!set)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	*s = (struct session){ .epfd = epoll_create1(EPOLL_CLOEXEC), .end = end, .arg = arg };
	if (s->epfd < 0)
		goto fail;
	for (int k = 0; k < 3; k++) {
		/* no events asked for: epoll still reports EPOLLHUP and EPOLLERR */
		struct epoll_event ev = { .events = 0, .data.u32 = (uint32_t)k };

		if (set & (1u << k) && epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd[k], &ev) == 0) {
			s->watched |= 1u << k;
			s->fd[k] = fd[k];
		}
	}
	if (!(s->watched & OUTPUTS)) { /* (e.g. a stream epoll does not take) */
		session_close(s);
		return 0;
	}
	s->ev = event_new(base, s->epfd, EV_READ | EV_PERSIST, on_ready, s);
	if (!s->ev || event_add(s->ev, NULL) < 0) {
		errno = ENOMEM;
		goto fail;
	}
	*out = s;
	return 0;
fail:
	err = errno;
	session_close(s);
	return -err;
}

void session_close(struct session *s)
{
	if (!s)
		return;
	if (s->ev)
		event_free(s->ev);
	if (s->epfd >= 0)
		close(s->epfd);
	free(s);
}
