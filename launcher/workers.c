// SPDX-License-Identifier: MIT
#include "workers.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "hang.h"
#include "io.h"
#include "live.h"
#include "oom.h"
#include "procs.h"
#include "quote.h"
#include "spawn.h"

/* What every worker of an attempt gets besides the plan's variables:
 * torchrun's names beside ours; an elastic job's round; each restart (each
 * round) a rendezvous secret of its own, so nothing of an earlier attempt
 * can join a later one. */
struct attempt_env {
	char vars[5][PLAN_SECRET_MAX + 64];
	char *env[6];
};

static void attempt_env(const struct runner *r, struct attempt_env *a)
{
	const struct runner_cfg *c = r->cfg;
	int n = 3;

	*a = (struct attempt_env){ .env = { a->vars[0], a->vars[1], a->vars[2], NULL, NULL, NULL } };
	snprintf(a->vars[0], sizeof(a->vars[0]), "SLOTRUN_RESTART_COUNT=%d", r->attempt);
	snprintf(a->vars[1], sizeof(a->vars[1]), "TORCHELASTIC_RESTART_COUNT=%d", r->attempt);
	snprintf(a->vars[2], sizeof(a->vars[2]), "TORCHELASTIC_MAX_RESTARTS=%d", runner_attempts(r) - 1);
	if (runner_elastic(r)) {
		snprintf(a->vars[n], sizeof(a->vars[n]), "SLOTRUN_ROUND=%d", r->round);
		a->env[n] = a->vars[n];
		n++;
		if (r->round > 1 && c->secret) {
			snprintf(a->vars[n], sizeof(a->vars[n]), "%s=%s.round-%d", PLAN_SECRET_VAR, c->secret, r->round);
			a->env[n] = a->vars[n];
		}
	} else if (r->attempt && c->secret) {
		snprintf(a->vars[n], sizeof(a->vars[n]), "%s=%s.attempt-%d", PLAN_SECRET_VAR, c->secret, r->attempt);
		a->env[n] = a->vars[n];
	}
}

/* The first attempt starts the file afresh; a restart appends to it after
 * a marker line. */
static int open_log(const struct runner *r, int rank, const char *stream, char *err, size_t errlen)
{
	char path[4096], mark[96];
	int fd, n;

	snprintf(path, sizeof(path), "%s/rank-%d.%s", r->cfg->log_dir, rank, stream);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (r->attempt ? O_APPEND : O_TRUNC), 0644);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open log file %s: %s", path, strerror(errno));
		return fd;
	}
	if (r->attempt) {
		n = snprintf(mark, sizeof(mark), "==== slotrun: attempt %d of %d ====\n", r->attempt + 1,
			     runner_attempts(r));
		(void)io_write_all(fd, mark, (size_t)n);
	}
	return fd;
}

/* With --log-dir: worker i's two log files in *lo and *le (else -1).
 * Returns 0, or -EINVAL with the failure said and noted. */
static int open_logs(struct runner *r, int i, int *lo, int *le)
{
	const struct runner_cfg *c = r->cfg;
	int rank = c->plan->slots[i].rank;
	char err[512];

	*lo = *le = -1;
	if (!c->log_dir)
		return 0;
	if ((*lo = open_log(r, rank, "stdout", err, sizeof(err))) >= 0 &&
	    (*le = open_log(r, rank, "stderr", err, sizeof(err))) >= 0)
		return 0;
	note(r, "slotrun: %s", err);
	snprintf(r->w[i].note, sizeof(r->w[i].note), "%s", err);
	if (*lo >= 0)
		close(*lo);
	*lo = -1;
	return -EINVAL;
}

static void close_pair(int p[2])
{
	for (int k = 0; k < 2; k++)
		if (p[k] >= 0)
			close(p[k]);
}

/* Worker i's stdout and stderr pipes, the read ends non-blocking (the loop
 * reads them).  Returns 0, or -EMFILE with the failure said and noted and
 * nothing open. */
static int open_pipes(struct runner *r, int i, int po[2], int pe[2])
{
	struct worker *w = &r->w[i];
	const char *what = "cannot create pipes";

	po[0] = po[1] = pe[0] = pe[1] = -1;
	if (pipe2(po, O_CLOEXEC) == 0 && pipe2(pe, O_CLOEXEC) == 0) {
		what = "cannot make its pipes non-blocking";
		if (fcntl(po[0], F_SETFL, O_NONBLOCK) == 0 && fcntl(pe[0], F_SETFL, O_NONBLOCK) == 0)
			return 0;
	}
	snprintf(w->note, sizeof(w->note), "%s: %s", what, strerror(errno));
	close_pair(po);
	close_pair(pe);
	say_rank(r, i, "%s", w->note);
	return -EMFILE;
}

/* The worker's arguments; cmd_w is the write end of the pipe its wrap_rank
 * tells its command's pid on (-1: none). */
static char **worker_argv(const struct runner_cfg *c, const struct plan_slot *s, char *rankbuf,
			  int cmd_w, char *fdbuf)
{
	int n = 0, k = 0;
	char **argv;

	while (c->cmd[n])
		n++;
	argv = calloc((size_t)n + 7, sizeof(char *));
	if (!argv)
		return NULL;
	if (c->wrapped) {
		sprintf(rankbuf, "%d", s->rank);
		argv[k++] = (char *)c->exec_path;
		argv[k++] = "--no-redirect-stdio";
		if (cmd_w >= 0) {
			sprintf(fdbuf, "%d", cmd_w);
			argv[k++] = "--pid-fd";
			argv[k++] = fdbuf;
		}
		argv[k++] = rankbuf;
		argv[k++] = "--";
	}
	for (int i = 0; i < n; i++) {
		argv[k++] = c->cmd[i];
		if (i == 0 && c->guarded && cmd_w >= 0) { /* cmd[0] is the guard's wrap_rank */
			sprintf(fdbuf, "%d", cmd_w);
			argv[k++] = "--pid-fd";
			argv[k++] = fdbuf;
		}
	}
	return argv;
}

/* Wrapped: the pipe wrap_rank writes its command's pid to, so that a kill
 * the kernel log names can be tied to the rank (oom.h).  Best effort: none
 * (-1) when it cannot be had, or would land on a stdio number. */
static int open_cmd_pipe(struct worker *w, bool wrapped)
{
	int p[2];

	w->cmd_open = false;
	if (!wrapped || pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	if (p[1] <= STDERR_FILENO) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	w->cmd_r = p[0];
	w->cmd_open = true;
	return p[1];
}

static void close_cmd_pipe(struct worker *w)
{
	if (w->cmd_open)
		close(w->cmd_r);
	w->cmd_open = false;
}

/* extra (an attempt_env's, at most 5) plus worker i's failure report path
 * (rank_report.h) under both names, in out (room for 8); the previous
 * attempt's report is removed first. */
static char **report_env(const struct runner *r, int i, char *const *extra, char **out,
			 char vars[2][4200])
{
	int n = 0, rank = r->cfg->plan->slots[i].rank;
	char path[4096];

	while (extra && extra[n]) {
		out[n] = extra[n];
		n++;
	}
	rank_reports_clear(&r->reports, rank);
	rank_reports_path(&r->reports, rank, path, sizeof(path));
	if (path[0]) {
		snprintf(vars[0], sizeof(vars[0]), "%s=%s", RANK_REPORT_VAR, path);
		snprintf(vars[1], sizeof(vars[1]), "%s=%s", RANK_REPORT_TORCH_VAR, path);
		out[n++] = vars[0];
		out[n++] = vars[1];
	}
	out[n] = NULL;
	return out;
}

/* Starts worker i: *stage says whether its exec worked (with *err its errno
 * when not).  Returns 0, or a negative errno, said and noted, with w->pid 0
 * (nothing started). */
static int start_one(struct runner *r, int i, int devnull, char **extra_env, const sigset_t *mask,
		     enum spawn_stage *stage, int *err)
{
	const struct runner_cfg *c = r->cfg;
	const struct plan_slot *s = &c->plan->slots[i];
	struct worker *w = &r->w[i];
	int po[2], pe[2], lo, le, e, cmd_w, report = -1;
	char rankbuf[16], fdbuf[16], **argv, **envp, *env[16], vars[2][4200];
	struct spawn_req req;

	if ((e = open_logs(r, i, &lo, &le)) < 0)
		return e;
	if ((e = open_pipes(r, i, po, pe)) < 0) {
		if (lo >= 0)
			close(lo);
		if (le >= 0)
			close(le);
		return e;
	}
	out_stream_init(&w->out, po[0], s->shown ? &r->cons.con[0] : NULL, lo, NULL);
	out_stream_init(&w->err, pe[0], s->shown ? &r->cons.con[1] : NULL, le, &w->tail);
	out_stream_count(&w->out, live_count(r, i));
	out_stream_count(&w->err, live_count(r, i));
	cmd_w = open_cmd_pipe(w, c->wrapped || c->guarded);
	argv = worker_argv(c, s, rankbuf, cmd_w, fdbuf);
	envp = plan_envp(s, c->base_env, report_env(r, i, extra_env, env, vars));
	req = (struct spawn_req){
		.path = c->exec_path, .argv = argv, .envp = envp,
		.stdin_fd = devnull, .stdout_fd = po[1], .stderr_fd = pe[1],
		.topo = s->place.cpuset ? c->topo : NULL,
		.slot = &s->place,
		.child_mask = mask, .reset_signals = runner_signals, .nreset = RUNNER_NSIGNALS,
		.nofile = c->nofile, .pass_fd = cmd_w,
	};
	e = (argv && envp) ? spawn_start(&req, &w->pid, &report) : -ENOMEM;
	free(argv);
	free(envp);
	close(po[1]);
	close(pe[1]);
	if (cmd_w >= 0)
		close(cmd_w);
	if (e < 0) {
		close_cmd_pipe(w);
		snprintf(w->note, sizeof(w->note), "cannot start the worker: %s", strerror(-e));
		say_rank(r, i, "%s", w->note);
		w->pid = 0;
		return e;
	}
	/* Known by now: spawn_start returns once the child has exec'd or
	 * failed (the read waits at most for the exec to close the pipe).  So
	 * no report pipe stays open: 512 slots hold 512 fewer fds while they
	 * start. */
	*stage = spawn_read_report(report, err);
	return 0;
}

static void stage_text(const struct runner *r, int i, enum spawn_stage st, int e, char *buf, size_t len)
{
	const struct runner_cfg *c = r->cfg;

	if (st == SPAWN_BIND)
		snprintf(buf, len, "cannot bind to cpus %s (NUMA node %s): %s",
			 c->plan->slots[i].place.cpus, c->plan->slots[i].place.numa, strerror(e));
	else if (st == SPAWN_EXEC)
		snprintf(buf, len, "cannot execute '%s': %s", c->exec_path, strerror(e));
	else
		snprintf(buf, len, "cannot set up the worker process: %s", strerror(e));
}

/* The workers whose exec failed (stage[i] not SPAWN_OK, errno err[i]) are
 * noted; said once per kind. */
static void say_start_failures(struct runner *r, const enum spawn_stage *stage, const int *err)
{
	int said_stage = -1, said_errno = 0, same = 0;

	for (int i = 0; i < r->n; i++) {
		enum spawn_stage st = stage[i];
		int e = err[i];

		if (r->w[i].pid <= 0 || st == SPAWN_OK)
			continue;
		stage_text(r, i, st, e, r->w[i].note, sizeof(r->w[i].note));
		if (said_stage < 0) {
			say_rank(r, i, "%s", r->w[i].note);
			said_stage = st;
			said_errno = e;
		} else if ((int)st == said_stage && e == said_errno) {
			same++;
		} else {
			say_rank(r, i, "%s", r->w[i].note);
		}
	}
	if (same)
		note(r, "slotrun: (the same on %d other rank%s)", same, same == 1 ? "" : "s");
}

int workers_spawn(struct runner *r, const sigset_t *mask)
{
	enum spawn_stage *stage = calloc((size_t)r->n, sizeof(*stage));
	int *err = calloc((size_t)r->n, sizeof(*err));
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct attempt_env env;
	int rc = 0;

	if (!stage || !err || devnull < 0) {
		note(r, "slotrun: cannot start the workers: %s", devnull < 0 ? strerror(errno) : "out of memory");
		free(stage);
		free(err);
		if (devnull >= 0)
			close(devnull);
		return -ENOMEM;
	}
	attempt_env(r, &env);
	oom_start(&r->oom);
	for (int i = 0; i < r->n && rc == 0; i++)
		rc = start_one(r, i, devnull, env.env, mask, &stage[i], &err[i]);
	say_start_failures(r, stage, err);
	close(devnull);
	free(stage);
	free(err);
	return rc;
}

pid_t workers_cmd_pid(struct runner *r, int i)
{
	struct worker *w = &r->w[i];
	char text[24];
	ssize_t n;
	long pid;

	if (w->cmd > 0 || !w->cmd_open)
		return w->cmd;
	n = io_read(w->cmd_r, text, sizeof(text) - 1);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	text[strcspn(text, "\n")] = '\0';
	if (io_parse_long(text, 1, 0x7fffffff, &pid) == 0)
		w->cmd = (pid_t)pid;
	return w->cmd;
}

void workers_ended(struct runner *r, int i, int code)
{
	struct worker *w = &r->w[i];
	pid_t pids[2] = { w->pid, workers_cmd_pid(r, i) };

	close_cmd_pipe(w);
	if (w->pid > 0 && !w->note[0] && sup_unsent_kill(&r->sup, code))
		w->oom = oom_explain(&r->oom, pids, pids[1] ? 2 : 1, w->note, sizeof(w->note));
}

/* A log file that stopped taking lines (a full disk, an I/O error) is said
 * when it happens, once; one on a full disk again when it takes lines
 * again, with what was lost meanwhile. */
static void say_file_error(struct runner *r, struct worker *w, struct out_stream *s)
{
	int i = (int)(w - r->w), rank = r->cfg->plan->slots[i].rank;
	const char *name = s == &w->out ? "stdout" : "stderr";
	char text[256];

	if (s->file_wait.resumed) {
		s->file_wait.resumed = false;
		s->file_err_said = false;
		say_rank(r, i, "log file %s/rank-%d.%s %s", r->cfg->log_dir, rank, name,
			 out_wait_text(&s->file_wait, s->file_err, text, sizeof(text)));
	}
	if (!s->file_err || s->file_err_said || (s->file_fd >= 0 && !s->file_wait.waiting))
		return;
	s->file_err_said = true;
	if (s->file_wait.waiting)
		say_rank(r, i, "log file %s/rank-%d.%s: %s: retrying until there is room; its lines meanwhile "
			 "are dropped and counted", r->cfg->log_dir, rank, name, strerror(s->file_err));
	else
		say_rank(r, i, "log file %s/rank-%d.%s: %s: the rest of its %s is not in it", r->cfg->log_dir,
			 rank, name, strerror(s->file_err), name);
}

static void on_stream(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct runner *r = w->runner;
	bool is_out = fd == w->out.fd;
	struct out_stream *s = is_out ? &w->out : &w->err;

	/* At EOF the stream closes its fd: drop the event before anything can
	 * reuse the number. */
	if (out_stream_pump(s) == OUT_PUMP_CLOSED)
		event_del(is_out ? w->ev_out : w->ev_err);
	r->active[w - r->w] = clock_mono() - r->t0;
	w->rchar_known = false; /* the next look at /proc starts afresh */
	say_file_error(r, w, s);
	console_flush(&r->cons);
}

static struct event *watch(struct runner *r, struct out_stream *s, struct worker *w)
{
	struct event *ev;

	if (s->fd < 0)
		return NULL;
	ev = event_new(r->base, s->fd, EV_READ | EV_PERSIST, on_stream, w);
	if (!ev || event_add(ev, NULL) < 0) {
		if (ev)
			event_free(ev);
		say_rank(r, (int)(w - r->w), "%s", "cannot read its output: out of memory");
		out_stream_close(s);
		return NULL;
	}
	return ev;
}

void workers_watch(struct runner *r)
{
	for (int i = 0; i < r->n; i++) {
		struct worker *w = &r->w[i];

		w->ev_out = watch(r, &w->out, w);
		w->ev_err = watch(r, &w->err, w);
	}
}

bool workers_progress(struct runner *r, int i)
{
	struct worker *w = &r->w[i];
	char text[1024];
	unsigned long long rchar = 0;
	int e = -ENOENT;

	if (!r->cfg->wrapped || w->pid <= 0)
		return false;
	if (procs_read(w->pid, "io", text, sizeof(text)) > 0)
		e = hang_parse_rchar(text, &rchar);
	return hang_progress(&w->rchar, &w->rchar_known, e, rchar);
}

/* The rank a process was started for (the RANK its environment began
 * with: a leftover left its worker's tree, not the variable), or -1. */
static int proc_rank(pid_t pid)
{
	static char env[1 << 16];
	ssize_t n = procs_read(pid, "environ", env, sizeof(env));

	for (ssize_t k = 0; k < n; k += (ssize_t)strlen(env + k) + 1)
		if (strncmp(env + k, "RANK=", 5) == 0)
			return atoi(env + k + 5);
	return -1;
}

#define LEFTOVERS_SHOWN 8

void workers_say_leftovers(struct runner *r, double left)
{
	pid_t pids[LEFTOVERS_SHOWN + 2];
	char line[900], comm[64], shown[QUOTE_SIZE(16)];
	size_t len = 0;
	int n = procs_tree(r->self, pids, LEFTOVERS_SHOWN + 2), named = 0;

	/* pids[0] is slotrun itself */
	for (int k = 1; k < n && named < LEFTOVERS_SHOWN; k++) {
		int rank = proc_rank(pids[k]);

		if (procs_read(pids[k], "comm", comm, sizeof(comm)) < 0)
			continue; /* gone meanwhile */
		comm[strcspn(comm, "\n")] = '\0';
		quote_ctl(shown, sizeof(shown), comm, 16);
		if (rank >= 0)
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%spid %d (%s) of rank %d",
						named ? ", " : "", (int)pids[k], shown, rank);
		else
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%spid %d (%s)",
						named ? ", " : "", (int)pids[k], shown);
		named++;
		if (len >= sizeof(line))
			break;
	}
	if (!named)
		return;
	note(r, "slotrun: the ranks are done; waiting for their leftover process%s to exit on SIGTERM: %s%s; "
	     "%s get SIGKILL in %.1f s (--grace)", named == 1 ? "" : "es", line,
	     n > LEFTOVERS_SHOWN + 1 ? " and more" : "", named == 1 ? "it will" : "they", left);
}
