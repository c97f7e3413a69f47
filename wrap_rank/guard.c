// SPDX-License-Identifier: MIT
#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "io.h"
#include "procs.h"

static void tell(int fd, const struct guard_msg *m)
{
	if (fd >= 0)
		(void)io_write_all(fd, m, sizeof(*m));
}

/* Whether the watched process has ended (a zombie has).  The pidfd, taken
 * while it lived, cannot name another process; /proc is the fallback on
 * kernels without pidfd_open. */
static bool ended(pid_t pid, int pidfd)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (pidfd >= 0) {
		struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
		return poll(&pfd, 1, 0) > 0;
	}
	if (pid <= 1)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = io_read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

static noreturn void contain(pid_t cmd)
{
	/* Without a /proc of our own the tree cannot be walked: the
	 * command's group at least (the command dies with us anyway). */
	if (procs_kill_subtree() < 0 && cmd > 0)
		(void)kill(-cmd, SIGKILL);
	_exit(0);
}

static int keep_foreground(void *ctx)
{
	pid_t pgrp = *(pid_t *)ctx;

	if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == pgrp)
		(void)tcsetpgrp(STDIN_FILENO, getpid());
	return 0;
}

/* Starts the command and tells wrap_rank whether it did.  Returns its pid,
 * or 0 when it did not start. */
static pid_t start_command(const struct guard_cfg *c, pid_t *pgrp)
{
	struct guard_msg m = { .kind = GUARD_STARTED, .stage = CHILD_OK };
	struct child_spec spec = {
		.argv = c->argv, .mask = c->mask, .sigpipe = c->sigpipe, .death_signal = SIGKILL,
		.stdio = { -1, c->out_fd, c->err_fd }, .prepare = keep_foreground, .ctx = pgrp,
	};
	pid_t cmd = 0;
	int report, e;

	e = child_start(&spec, &cmd, &report);
	if (e < 0) {
		m.stage = CHILD_SETUP;
		m.err = -e;
		cmd = 0;
	} else {
		m.pid = cmd;
		m.stage = child_read_report(report, &m.err);
	}
	tell(c->msg_fd, &m);
	return cmd;
}

/* Our stdio is wrap_rank's, and someone may wait for its EOF (slotrun
 * reads it): we may outlive wrap_rank.  So /dev/null instead, and the
 * command's output fds closed. */
static void let_go_of_output(const struct guard_cfg *c)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	for (int fd = 0; fd < 3 && devnull >= 0; fd++)
		dup2(devnull, fd);
	if (devnull > 2)
		close(devnull);
	if (c->out_fd > 2)
		close(c->out_fd);
	if (c->err_fd > 2 && c->err_fd != c->out_fd)
		close(c->err_fd);
}

/* SIGCHLD: reaps; the command's end is told to wrap_rank once (*msg_fd
 * then -1).  Exits once no child is left after the command's end. */
static void on_sigchld(pid_t cmd, bool *done, int *msg_fd)
{
	struct guard_msg m = { 0 };
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		if (pid != cmd)
			continue; /* an adopted orphan */
		*done = true;
		m = (struct guard_msg){ .kind = GUARD_EXITED, .pid = cmd, .status = st };
	}
	if (*done && *msg_fd >= 0) {
		m.alone = !procs_have_children();
		tell(*msg_fd, &m);
		close(*msg_fd);
		*msg_fd = -1;
	}
	if (*done && !procs_have_children())
		_exit(0);
}

noreturn void guard_run(const struct guard_cfg *c)
{
	pid_t parent = c->wrap, pgrp = getpgrp(), cmd;
	int msg_fd = c->msg_fd, sfd, pidfd;
	bool done = false;
	sigset_t blocked;

	for (const int *fd = c->close_fds; *fd >= 0; fd++)
		close(*fd);
	/* Everything wrap_rank handles is blocked already: read it all, and
	 * SIGCONT, the parent-death signal (guard.h says why). */
	sigprocmask(SIG_BLOCK, NULL, &blocked);
	sigaddset(&blocked, SIGCONT);
	sigprocmask(SIG_BLOCK, &blocked, NULL);
	sfd = signalfd(-1, &blocked, SFD_CLOEXEC);
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* close-on-exec: the kernel sets it on every pidfd */
	pidfd = c->watched > 1 ? (int)syscall(SYS_pidfd_open, c->watched, 0) : -1;
	/* wrap_rank may have died before prctl took effect. */
	if (prctl(PR_SET_PDEATHSIG, GUARD_DEATH_SIGNAL) < 0 || getppid() != parent || sfd < 0)
		_exit(1);

	cmd = start_command(c, &pgrp);
	let_go_of_output(c);
	if (!cmd) {
		struct guard_msg m = { .kind = GUARD_EXITED, .status = 1 << 8, .alone = true };

		tell(msg_fd, &m);
		_exit(0);
	}
	for (;;) {
		struct signalfd_siginfo si;

		if (io_read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			contain(cmd);
		if (si.ssi_signo == SIGCHLD)
			on_sigchld(cmd, &done, &msg_fd);
		/* Every wake-up looks at the parent; SIGTERM may be slotrun's
		 * stop as well as our parent's death. */
		if (getppid() == parent)
			continue;
		if (!done || ended(c->watched, pidfd))
			contain(cmd);
		if (getppid() != c->watched)
			_exit(0); /* not adopted: its death would go unseen */
		parent = c->watched;
	}
}
