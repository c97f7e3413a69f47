// SPDX-License-Identifier: MIT
#include "wrap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "guard.h"
#include "io.h"
#include "line_splitter.h"
#include "status.h"

int wrap_resolve_rank(const char *spec, long *rank, char *err, size_t errlen)
{
	char names[512];
	char *save = NULL, *name;

	if (io_parse_long(spec, 0, 0x7fffffff, rank) == 0)
		return 0;
	if (!*spec || strlen(spec) >= sizeof(names)) {
		snprintf(err, errlen, "RANK '%s' is neither a rank nor a list of variable names", spec);
		return -EINVAL;
	}
	strcpy(names, spec);
	for (name = strtok_r(names, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		const char *v = getenv(name);

		if (!v || !*v)
			continue;
		if (io_parse_long(v, 0, 0x7fffffff, rank) < 0) {
			snprintf(err, errlen, "%s='%s' is not a rank (a non-negative integer)", name, v);
			return -EINVAL;
		}
		return 0;
	}
	snprintf(err, errlen, "none of %s is set: give the rank as a number or set one of them", spec);
	return -ENOENT;
}

int wrap_open_logs(const char *dir, int *out_fd, int *err_fd, char *err, size_t errlen)
{
	char path[4096];
	struct stat st;
	int e;

	snprintf(path, sizeof(path), "%s/stdout.log", dir);
	if (stat(path, &st) < 0)
		return 0;
	*out_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (*out_fd < 0)
		goto fail;
	snprintf(path, sizeof(path), "%s/stderr.log", dir);
	*err_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (*err_fd < 0) {
		e = errno;
		close(*out_fd);
		errno = e;
		goto fail;
	}
	return 1;
fail:
	e = errno;
	snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
	return -e;
}

/* One output stream: the read end of the command's pipe and its splitter. */
struct stream {
	int fd;             /* -1 once closed */
	int sink;
	struct line_splitter ls;
};

static int write_sink(void *ctx, const char *buf, size_t len)
{
	return io_write_all(*(int *)ctx, buf, len);
}

static void stream_close(struct stream *s, bool flush)
{
	if (s->fd < 0)
		return;
	if (flush)
		(void)ls_finish(&s->ls);
	close(s->fd);
	s->fd = -1;
}

/* Reads what is there and writes it out.  A sink that can no longer be
 * written (EPIPE: the reader went away) closes the stream, so the command
 * gets EPIPE/SIGPIPE as it would without wrap_rank. */
static void stream_pump(struct stream *s, char *buf, size_t cap)
{
	ssize_t n = io_read(s->fd, buf, cap);

	if (n <= 0) {
		stream_close(s, true);
		return;
	}
	if (ls_feed(&s->ls, buf, (size_t)n) < 0)
		stream_close(s, false);
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };

/* Starts the guard (guard.h), which starts the command, and returns what
 * the guard says first: whether the command started.  out_w and err_w are
 * the command's stdout and stderr (-1: ours); the guard gets every other fd
 * of ours in close_fds. */
static int start_guard(const struct wrap_opts *o, const sigset_t *cmd_mask,
		       const struct sigaction *cmd_pipe, int out_w, int err_w, int *close_fds,
		       pid_t *guard, int *msg_r, struct guard_msg *m)
{
	pid_t self = getpid(), watched = getppid();
	int msg[2], n = 0;
	ssize_t got;

	*guard = child_fork_pipe(msg);
	if (*guard < 0)
		return (int)*guard;
	if (*guard == 0) {
		while (close_fds[n] >= 0)
			n++;
		close_fds[n] = msg[0];
		close_fds[n + 1] = -1;
		guard_run(&(struct guard_cfg){
			.argv = o->argv, .mask = cmd_mask, .sigpipe = cmd_pipe,
			.out_fd = out_w, .err_fd = err_w, .wrap = self, .watched = watched,
			.msg_fd = msg[1], .close_fds = close_fds,
		});
	}
	close(msg[1]);
	*msg_r = msg[0];
	got = io_read(msg[0], m, sizeof(*m));
	if (got != (ssize_t)sizeof(*m) || m->kind != GUARD_STARTED)
		return -ECHILD;
	return 0;
}

/* The guard's last word: the command's wait status, and whether the guard
 * exits now (it had nothing left to watch).  A guard that died without a
 * word took the command with it (its parent-death signal): its own status
 * stands for the command's. */
static int guard_result(int msg_r, pid_t guard, bool *guard_reaped, bool *alone)
{
	struct guard_msg m;
	int st;

	if (io_read(msg_r, &m, sizeof(m)) == (ssize_t)sizeof(m) && m.kind == GUARD_EXITED) {
		*alone = m.alone;
		return m.status;
	}
	*alone = true;
	if (!*guard_reaped) {
		pid_t r;

		while ((r = waitpid(guard, &st, 0)) < 0 && errno == EINTR)
			;
		*guard_reaped = true;
		if (r == guard)
			return st;
	}
	return SIGKILL; /* its status is lost: as if killed, which it was */
}

int wrap_run(const struct wrap_opts *o)
{
	static char buf[1 << 18];
	struct stream streams[2] = { { .fd = -1 }, { .fd = -1 } };
	sigset_t block, orig_mask, cmd_mask;
	struct sigaction ign = { .sa_handler = SIG_IGN }, orig_pipe;
	struct guard_msg m;
	int pout[2] = { -1, -1 }, perr[2] = { -1, -1 }, close_fds[8], nclose = 0;
	int sfd, msg_r = -1, e, status = 0;
	pid_t guard = -1, cmd;
	bool done = false, guard_reaped = false, alone = true;
	long long linger_end = 0;
	char prefix[LS_PREFIX_MAX];

	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&block, forwarded[i]);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGTTOU);
	sigprocmask(SIG_BLOCK, &block, &orig_mask);
	sigdelset(&block, SIGTTOU);
	sigaction(SIGPIPE, &ign, &orig_pipe);

	sfd = signalfd(-1, &block, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || (!o->no_prefix && (pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0))) {
		fprintf(stderr, "wrap_rank: cannot set up pipes: %s\n", strerror(errno));
		return 1;
	}
	/* Deeper pipes mean fewer wake-ups per megabyte, on the command's
	 * side and on our reader's when our output is a pipe; best effort
	 * (fails harmlessly on a non-pipe or over the user's pipe quota). */
	if (!o->no_prefix) {
		(void)fcntl(pout[0], F_SETPIPE_SZ, 1 << 20);
		(void)fcntl(o->out_fd, F_SETPIPE_SZ, 1 << 20);
	}

	/* The command leads its own process group so that a forwarded signal
	 * reaches it (and what it started) exactly once, even when the sender
	 * signalled wrap_rank's whole group.  It must see the signals we
	 * forward even if wrap_rank was started with them blocked. */
	cmd_mask = orig_mask;
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigdelset(&cmd_mask, forwarded[i]);
	close_fds[nclose++] = sfd;
	if (!o->no_prefix) {
		close_fds[nclose++] = pout[0];
		close_fds[nclose++] = perr[0];
		if (o->out_fd > 2)
			close_fds[nclose++] = o->out_fd;
		if (o->err_fd > 2 && o->err_fd != o->out_fd)
			close_fds[nclose++] = o->err_fd;
	}
	close_fds[nclose] = -1;
	e = start_guard(o, &cmd_mask, &orig_pipe, !o->no_prefix ? pout[1] : o->out_fd,
			!o->no_prefix ? perr[1] : o->err_fd, close_fds, &guard, &msg_r, &m);
	if (!o->no_prefix) {
		close(pout[1]);
		close(perr[1]);
	}
	if (e == -ECHILD) {
		(void)guard_result(msg_r, guard, &guard_reaped, &alone);
		fprintf(stderr, "wrap_rank: rank %ld: cannot start '%s': the guard process died\n",
			o->rank, o->argv[0]);
		return 1;
	}
	if (e < 0) {
		fprintf(stderr, "wrap_rank: cannot fork: %s\n", strerror(-e));
		return 1;
	}
	if (m.stage != CHILD_OK) {
		fprintf(stderr, "wrap_rank: rank %ld: cannot execute '%s': %s\n", o->rank,
			o->argv[0], strerror(m.err));
		if (!o->no_prefix) {
			close(pout[0]);
			close(perr[0]);
		}
		(void)guard_result(msg_r, guard, &guard_reaped, &alone);
		while (!guard_reaped && waitpid(guard, NULL, 0) < 0 && errno == EINTR)
			;
		return m.err == ENOENT ? 127 : 126;
	}
	cmd = m.pid;

	snprintf(prefix, sizeof(prefix), "[rank=%ld] ", o->rank);
	if (!o->no_prefix) {
		streams[0] = (struct stream){ .fd = pout[0], .sink = o->out_fd };
		streams[1] = (struct stream){ .fd = perr[0], .sink = o->err_fd };
		for (int i = 0; i < 2; i++)
			ls_init(&streams[i].ls, prefix, write_sink, &streams[i].sink);
	}

	while (!done || streams[0].fd >= 0 || streams[1].fd >= 0) {
		struct pollfd pfd[4] = {
			{ .fd = sfd, .events = POLLIN },
			{ .fd = streams[0].fd, .events = POLLIN },
			{ .fd = streams[1].fd, .events = POLLIN },
			{ .fd = done ? -1 : msg_r, .events = POLLIN },
		};
		int timeout = -1, r;

		if (done) {
			/* An absolute deadline: a background process that keeps
			 * printing must not keep wrap_rank (and the rank) alive. */
			timeout = (int)(linger_end - now_ms());
			if (timeout < 0)
				timeout = 0;
		}
		r = poll(pfd, 4, timeout);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "wrap_rank: poll: %s\n", strerror(errno));
			break;
		}
		if (r == 0) { /* command gone, pipes still held open after the linger */
			stream_close(&streams[0], true);
			stream_close(&streams[1], true);
			break;
		}
		for (int i = 0; i < 2; i++)
			if (pfd[1 + i].revents)
				stream_pump(&streams[i], buf, sizeof(buf));
		if (pfd[3].revents) {
			status = guard_result(msg_r, guard, &guard_reaped, &alone);
			done = true;
			linger_end = now_ms() + WRAP_LINGER_MS;
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (io_read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				int sig = (int)si.ssi_signo;

				if (sig == SIGCHLD) {
					if (!guard_reaped && waitpid(guard, NULL, WNOHANG) == guard)
						guard_reaped = true;
				} else if (!done && kill(-cmd, sig) < 0) {
					(void)kill(cmd, sig);
				}
			}
		}
	}
	/* A guard with nothing left to watch is exiting: reap it here rather
	 * than leave it to whoever adopts it. */
	while (alone && !guard_reaped && waitpid(guard, NULL, 0) < 0 && errno == EINTR)
		;
	close(msg_r);
	close(sfd);
	return status_exit_code(status);
}
