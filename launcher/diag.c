// SPDX-License-Identifier: MIT
#include "diag.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "procs.h"
#include "quote.h"
#include "spawn.h"

/* What the collector writes: for each worker with a process tree a line
 * "@<index>", then its lines (each starts with "pid " or two spaces). */
#define DIAG_OUT_MAX (1 << 20)

struct diag {
	struct event *ev_read, *deadline;
	pid_t pid;                 /* the collector; 0 once reaped */
	int fd;                    /* read end of its pipe, -1 once closed */
	int n;
	char *buf;                 /* what it wrote */
	size_t len, cap;
	char **text;               /* per worker, once it has ended */
	void (*done)(void *arg);
	void *arg;
};

/* ---- The collector, in the child ---- */

/* Reads a stack source's output until EOF or the deadline; writes the
 * frame lines ("#N ...") indented, at most DIAG_FRAMES. */
static void copy_frames(FILE *out, int fd, double deadline)
{
	char line[512];
	size_t have = 0;
	int frames = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double left = deadline - clock_mono();
		struct timespec ts = clock_ts(left);
		ssize_t got;
		char *nl;

		if (left <= 0 || ppoll(&p, 1, &ts, NULL) <= 0)
			return;
		got = read(fd, line + have, sizeof(line) - 1 - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return;
		have += (size_t)got;
		/* a line longer than the buffer is cut there */
		while ((nl = memchr(line, '\n', have)) || have == sizeof(line) - 1) {
			size_t l = nl ? (size_t)(nl - line) : have;

			if (line[0] == '#' && frames++ < DIAG_FRAMES)
				fprintf(out, "  %.*s\n", (int)l, line);
			l += nl ? 1 : 0;
			memmove(line, line + l, have - l);
			have -= l;
		}
	}
}

/* eu-stack -p PID in a child of the collector's (its process group, so
 * the runner's kill of the group reaches it), stdin and stderr on
 * /dev/null; killed at its deadline. */
static void stack(FILE *out, const char *eu_stack, pid_t pid, double deadline)
{
	char spid[16], sframes[16];
	char *argv[] = { "eu-stack", "-p", spid, "-n", sframes, NULL };
	pid_t collector_pid = getpid(), child;
	int p[2], null;

	snprintf(spid, sizeof(spid), "%d", (int)pid);
	snprintf(sframes, sizeof(sframes), "%d", DIAG_FRAMES);
	if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		return;
	if (pipe2(p, O_CLOEXEC) < 0) {
		close(null);
		return;
	}
	child = fork();
	if (child == 0) {
		/* it dies with the collector, however that dies */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != collector_pid ||
		    dup2(null, 0) < 0 || dup2(p[1], 1) < 0 || dup2(null, 2) < 0)
			_exit(126);
		execv(eu_stack, argv);
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(p[1]);
	close(null);
	if (child > 0) {
		copy_frames(out, p[0], deadline);
		(void)kill(child, SIGKILL);
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close(p[0]);
}

/* One line: pid, command name, state and, when it sleeps in the kernel,
 * where. */
static void proc_line(FILE *out, pid_t pid)
{
	char stat[512], wchan[128] = "", name[64], comm[QUOTE_SIZE(16)] = "?", state = '?';
	char *open_paren, *close_paren;

	if (procs_read(pid, "stat", stat, sizeof(stat)) < 0)
		return;
	open_paren = strchr(stat, '(');
	close_paren = strrchr(stat, ')');
	if (open_paren && close_paren && close_paren > open_paren) {
		/* a process names itself (prctl PR_SET_NAME): a newline in
		 * it must not make a line of ours, nor another worker's "@i" */
		snprintf(name, sizeof(name), "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
		quote_ctl(comm, sizeof(comm), name, 16);
		state = close_paren[1] == ' ' ? close_paren[2] : '?';
	}
	if (procs_read(pid, "wchan", wchan, sizeof(wchan)) < 0)
		wchan[0] = '\0';
	fprintf(out, "pid %d (%s) state %c%s%s\n", (int)pid, comm, state, wchan[0] && strcmp(wchan, "0") ?
		", waiting in " : "", wchan[0] && strcmp(wchan, "0") ? wchan : "");
}

static void collect(FILE *out, const pid_t *roots, int n)
{
	char eu_stack[PATH_MAX];
	bool stacks = spawn_resolve("eu-stack", getenv("PATH"), eu_stack, sizeof(eu_stack)) == 0;
	double t0 = clock_mono();

	for (int i = 0; i < n; i++) {
		pid_t pids[DIAG_PROCS];
		int k = roots[i] > 0 ? procs_tree(roots[i], pids, DIAG_PROCS) : 0;

		if (k <= 0)
			continue;
		fprintf(out, "@%d\n", i);
		for (int j = 0; j < k; j++) {
			double now = clock_mono();

			/* each line out at once: what is written is kept,
			 * should the deadline come */
			proc_line(out, pids[j]);
			fflush(out);
			if (stacks && now - t0 < DIAG_BUDGET)
				stack(out, eu_stack, pids[j], now + DIAG_STACK_TIME);
			fflush(out);
		}
	}
}

/* The collector never returns: it exits, or its parent's death kills it. */
static _Noreturn void collector(int wfd, pid_t parent, const sigset_t *mask, const pid_t *roots, int n)
{
	FILE *out;

	for (int sig = 1; sig < NSIG; sig++)
		(void)signal(sig, SIG_DFL);
	(void)sigprocmask(SIG_SETMASK, mask, NULL);
	(void)setpgid(0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
	/* none of the parent's sockets and pipes may stay open because of us */
	if (wfd > 3)
		(void)close_range(3, (unsigned)wfd - 1, 0);
	(void)close_range((unsigned)wfd + 1, ~0U, 0);
	if (!(out = fdopen(wfd, "w")))
		_exit(1);
	collect(out, roots, n);
	fclose(out);
	_exit(0);
}

/* ---- The runner's side ---- */

/* Splits what the collector wrote into the workers' texts.  A last line
 * cut by the deadline is dropped. */
static void split(struct diag *d)
{
	int cur = -1;
	size_t at = 0;
	size_t *len = calloc((size_t)d->n, sizeof(*len));

	if (!len)
		return;
	while (at < d->len) {
		char *nl = memchr(d->buf + at, '\n', d->len - at);
		size_t l;

		if (!nl)
			break;
		l = (size_t)(nl - (d->buf + at)) + 1;
		if (d->buf[at] == '@') {
			cur = atoi(d->buf + at + 1);
			if (cur < 0 || cur >= d->n || d->text[cur])
				cur = -1;
			else if ((d->text[cur] = strdup("")) == NULL)
				cur = -1;
		} else if (cur >= 0) {
			char *t = realloc(d->text[cur], len[cur] + l + 1);

			if (t) {
				memcpy(t + len[cur], d->buf + at, l);
				len[cur] += l;
				t[len[cur]] = '\0';
				d->text[cur] = t;
			}
		}
		at += l;
	}
	free(len);
}

/* The collection is over: nothing more is read, nothing of the collector
 * runs on. */
static void end(struct diag *d)
{
	if (d->ev_read)
		event_del(d->ev_read);
	if (d->deadline)
		evtimer_del(d->deadline);
	if (d->fd >= 0) {
		close(d->fd);
		d->fd = -1;
	}
	if (d->pid > 0) {
		(void)kill(-d->pid, SIGKILL);
		if (waitpid(d->pid, NULL, WNOHANG) == d->pid)
			d->pid = 0;
	}
}

static void finish(struct diag *d)
{
	end(d);
	split(d);
	d->done(d->arg); /* last: it may free d */
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct diag *d = arg;

	for (;;) {
		char chunk[4096];
		ssize_t got = read(d->fd, chunk, sizeof(chunk));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EAGAIN)
			return;
		if (got <= 0)
			break;
		if (d->len + (size_t)got > DIAG_OUT_MAX)
			continue; /* past the cap: read on, keep nothing */
		if (d->len + (size_t)got > d->cap) {
			size_t cap = d->cap ? d->cap * 2 : 8192;
			char *b;

			while (cap < d->len + (size_t)got)
				cap *= 2;
			if (!(b = realloc(d->buf, cap)))
				continue;
			d->buf = b;
			d->cap = cap;
		}
		memcpy(d->buf + d->len, chunk, (size_t)got);
		d->len += (size_t)got;
	}
	finish(d);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	finish(arg);
}

int diag_start(struct diag **dp, struct event_base *base, const pid_t *roots, int n, double deadline,
	       void (*done)(void *arg), void *arg)
{
	struct diag *d = calloc(1, sizeof(*d));
	struct timeval tv = clock_tv(deadline);
	pid_t parent = getpid();
	sigset_t all, was;
	int p[2], e;

	*dp = NULL;
	if (!d)
		return -ENOMEM;
	*d = (struct diag){ .fd = -1, .n = n, .done = done, .arg = arg };
	d->text = calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
	d->deadline = evtimer_new(base, on_deadline, d);
	if (!d->text || !d->deadline) {
		diag_free(d);
		return -ENOMEM;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		e = -errno;
		diag_free(d);
		return e;
	}
	d->fd = p[0];
	/* only the loop's end is non-blocking: the collector has nothing else
	 * to do than write */
	if (fcntl(d->fd, F_SETFL, O_NONBLOCK) < 0 ||
	    !(d->ev_read = event_new(base, d->fd, EV_READ | EV_PERSIST, on_read, d))) {
		e = d->ev_read ? -errno : -ENOMEM;
		close(p[1]);
		diag_free(d);
		return e;
	}
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &was);
	d->pid = fork();
	if (d->pid == 0)
		collector(p[1], parent, &was, roots, n);
	e = d->pid < 0 ? -errno : 0;
	if (d->pid > 0)
		(void)setpgid(d->pid, d->pid); /* so a kill right away reaches its group */
	sigprocmask(SIG_SETMASK, &was, NULL);
	close(p[1]);
	if (e == 0 && (event_add(d->ev_read, NULL) < 0 || evtimer_add(d->deadline, &tv) < 0))
		e = -ENOMEM;
	if (e < 0) {
		if (d->pid < 0)
			d->pid = 0;
		diag_free(d);
		return e;
	}
	*dp = d;
	return 0;
}

char *diag_take(struct diag *d, int i)
{
	char *t;

	if (!d || i < 0 || i >= d->n)
		return NULL;
	t = d->text[i];
	d->text[i] = NULL;
	return t;
}

bool diag_reaped(struct diag *d, pid_t pid)
{
	if (!d || pid <= 0 || pid != d->pid)
		return false;
	d->pid = 0;
	return true;
}

void diag_free(struct diag *d)
{
	if (!d)
		return;
	end(d);
	/* it was sent SIGKILL: the wait is short */
	while (d->pid > 0 && waitpid(d->pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (d->ev_read)
		event_free(d->ev_read);
	if (d->deadline)
		event_free(d->deadline);
	for (int i = 0; d->text && i < d->n; i++)
		free(d->text[i]);
	free(d->text);
	free(d->buf);
	free(d);
}
