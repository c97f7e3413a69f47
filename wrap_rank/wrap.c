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
#include <unistd.h>

#include "child.h"
#include "clock.h"
#include "guard.h"
#include "io.h"
#include "relay.h"
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

/* One wrap_run: what its steps share. */
struct run {
	const struct wrap_opts *o;
	struct relay_stream streams[2];
	sigset_t orig_mask;            /* as wrap_rank was started */
	struct sigaction orig_pipe;
	int pout[2], perr[2];          /* the command's stdout and stderr pipes */
	int sfd, msg_r;                /* our signals; the guard's messages */
	pid_t guard, cmd;
	bool done;                     /* the guard reported the command's end */
	bool guard_reaped, alone;
	double linger_end;             /* clock_mono(): stop reading then */
	int status;                    /* the command's wait status */
};

/* Blocks what we forward or handle (read through a signalfd) and ignores
 * SIGPIPE (a reader that went away is an EPIPE to handle); *handled gets
 * the signalfd's set. */
static void block_signals(struct run *r, sigset_t *handled)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };

	sigemptyset(handled);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(handled, forwarded[i]);
	sigaddset(handled, SIGCHLD);
	sigaddset(handled, SIGTTOU);
	sigprocmask(SIG_BLOCK, handled, &r->orig_mask);
	sigdelset(handled, SIGTTOU);
	sigaction(SIGPIPE, &ign, &r->orig_pipe);
}

/* The signalfd and, unless the command writes to our fds itself, its two
 * output pipes.  Returns 0 or -errno. */
static int open_channels(struct run *r, const sigset_t *handled)
{
	const struct wrap_opts *o = r->o;

	r->sfd = signalfd(-1, handled, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r->sfd < 0)
		return -errno;
	if (!o->no_prefix && (pipe2(r->pout, O_CLOEXEC) < 0 || pipe2(r->perr, O_CLOEXEC) < 0))
		return -errno;
	/* Deeper pipes mean fewer wake-ups per megabyte, on the command's
	 * side and on our reader's when our output is a pipe; best effort
	 * (fails harmlessly on a non-pipe or over the user's pipe quota). */
	if (!o->no_prefix) {
		(void)fcntl(r->pout[0], F_SETPIPE_SZ, 1 << 20);
		(void)fcntl(o->out_fd, F_SETPIPE_SZ, 1 << 20);
	}
	return 0;
}

/* --pid-fd: the command's pid, in one write of a few bytes (atomic on a
 * pipe), then the fd closed: the reader sees the whole pid or nothing. */
static void tell_pid(int fd, pid_t pid)
{
	char text[24];
	int n;

	if (fd <= STDERR_FILENO)
		return;
	n = snprintf(text, sizeof(text), "%d\n", (int)pid);
	(void)io_write_all(fd, text, (size_t)n);
	close(fd);
}

/* Starts the guard and so the command.  Returns -1 when the command runs,
 * else wrap_rank's exit status, the reason said on stderr. */
static int launch(struct run *r)
{
	const struct wrap_opts *o = r->o;
	int close_fds[10], nclose = 0, e;
	sigset_t cmd_mask;
	struct guard_msg m;

	/* The command leads its own process group so that a forwarded signal
	 * reaches it (and what it started) exactly once, even when the sender
	 * signalled wrap_rank's whole group.  It must see the signals we
	 * forward even if wrap_rank was started with them blocked. */
	cmd_mask = r->orig_mask;
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigdelset(&cmd_mask, forwarded[i]);
	close_fds[nclose++] = r->sfd;
	if (o->pid_fd > STDERR_FILENO)
		close_fds[nclose++] = o->pid_fd;
	if (!o->no_prefix) {
		close_fds[nclose++] = r->pout[0];
		close_fds[nclose++] = r->perr[0];
		if (o->out_fd > 2)
			close_fds[nclose++] = o->out_fd;
		if (o->err_fd > 2 && o->err_fd != o->out_fd)
			close_fds[nclose++] = o->err_fd;
	}
	close_fds[nclose] = -1;
	e = start_guard(o, &cmd_mask, &r->orig_pipe, !o->no_prefix ? r->pout[1] : o->out_fd,
			!o->no_prefix ? r->perr[1] : o->err_fd, close_fds, &r->guard, &r->msg_r, &m);
	if (!o->no_prefix) {
		close(r->pout[1]);
		close(r->perr[1]);
	}
	if (e == -ECHILD) {
		(void)guard_result(r->msg_r, r->guard, &r->guard_reaped, &r->alone);
		fprintf(stderr, "wrap_rank: rank %ld: cannot start '%s': the guard process died\n",
			o->rank, o->argv[0]);
		return 1;
	}
	if (e < 0) {
		fprintf(stderr, "wrap_rank: cannot fork: %s\n", strerror(-e));
		return 1;
	}
	if (m.stage != CHILD_OK) {
		char why[512];

		/* ENOENT for a file that is there: its #! interpreter is not. */
		if (m.err != ENOENT || !strchr(o->argv[0], '/') ||
		    child_check_script(o->argv[0], why, sizeof(why)) >= 0)
			snprintf(why, sizeof(why), "%s", strerror(m.err));
		fprintf(stderr, "wrap_rank: rank %ld: cannot execute '%s': %s\n", o->rank,
			o->argv[0], why);
		if (!o->no_prefix) {
			close(r->pout[0]);
			close(r->perr[0]);
		}
		(void)guard_result(r->msg_r, r->guard, &r->guard_reaped, &r->alone);
		while (!r->guard_reaped && waitpid(r->guard, NULL, 0) < 0 && errno == EINTR)
			;
		return m.err == ENOENT ? 127 : 126;
	}
	r->cmd = m.pid;
	tell_pid(o->pid_fd, r->cmd);
	return -1;
}

/* SIGCHLD reaps the guard when it exits; the rest go to the command's
 * group (or the command alone, should the group be gone) until it ends. */
static void on_signals(struct run *r)
{
	struct signalfd_siginfo si;

	while (io_read(r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig == SIGCHLD) {
			if (!r->guard_reaped && waitpid(r->guard, NULL, WNOHANG) == r->guard)
				r->guard_reaped = true;
		} else if (!r->done && kill(-r->cmd, sig) < 0) {
			(void)kill(r->cmd, sig);
		}
	}
}

/* Relays the command's output and forwards signals until the command has
 * ended and its pipes closed, or WRAP_LINGER_MS after its end. */
static void relay_loop(struct run *r)
{
	static char buf[1 << 18];
	struct relay_stream *st = r->streams;

	while (!r->done || st[0].fd >= 0 || st[1].fd >= 0) {
		struct pollfd pfd[4] = {
			{ .fd = r->sfd, .events = POLLIN },
			{ .fd = st[0].fd, .events = POLLIN },
			{ .fd = st[1].fd, .events = POLLIN },
			{ .fd = r->done ? -1 : r->msg_r, .events = POLLIN },
		};
		int timeout = -1, n;

		/* An absolute deadline: a background process that keeps
		 * printing must not keep wrap_rank (and the rank) alive. */
		if (r->done) {
			double left = r->linger_end - clock_mono();

			timeout = left > 0 ? (int)(left * 1000) : 0;
		}
		n = poll(pfd, 4, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "wrap_rank: poll: %s\n", strerror(errno));
			return;
		}
		if (n == 0) { /* command gone, pipes still held open after the linger */
			relay_close(&st[0], true);
			relay_close(&st[1], true);
			return;
		}
		for (int i = 0; i < 2; i++)
			if (pfd[1 + i].revents)
				(void)relay_pump(&st[i], buf, sizeof(buf));
		if (pfd[3].revents) {
			r->status = guard_result(r->msg_r, r->guard, &r->guard_reaped, &r->alone);
			r->done = true;
			r->linger_end = clock_mono() + WRAP_LINGER_MS / 1000.0;
		}
		if (pfd[0].revents & POLLIN)
			on_signals(r);
	}
}

int wrap_run(const struct wrap_opts *o)
{
	struct run r = { .o = o, .streams = { { .fd = -1 }, { .fd = -1 } }, .pout = { -1, -1 },
			 .perr = { -1, -1 }, .sfd = -1, .msg_r = -1, .guard = -1, .alone = true };
	char prefix[LS_PREFIX_MAX];
	sigset_t handled;
	int code;

	block_signals(&r, &handled);
	if (open_channels(&r, &handled) < 0) {
		fprintf(stderr, "wrap_rank: cannot set up pipes: %s\n", strerror(errno));
		return 1;
	}
	code = launch(&r);
	if (code >= 0)
		return code;
	snprintf(prefix, sizeof(prefix), "[rank=%ld] ", o->rank);
	if (!o->no_prefix) {
		(void)relay_init(&r.streams[0], r.pout[0], o->out_fd, prefix);
		(void)relay_init(&r.streams[1], r.perr[0], o->err_fd, prefix);
	}
	relay_loop(&r);
	/* A guard with nothing left to watch is exiting: reap it here rather
	 * than leave it to whoever adopts it. */
	while (r.alone && !r.guard_reaped && waitpid(r.guard, NULL, 0) < 0 && errno == EINTR)
		;
	close(r.msg_r);
	close(r.sfd);
	return status_exit_code(r.status);
}
