// SPDX-License-Identifier: MIT
#include "runner.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "diag.h"
#include "output.h"
#include "procs.h"
#include "spawn.h"
#include "io.h"
#include "status.h"
#include "summary.h"
#include "supervisor.h"

static const int handled[] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
#define NHANDLED ((int)(sizeof(handled) / sizeof(handled[0])))

struct runner;

struct worker {
	pid_t pid;
	struct runner *runner;
	struct out_stream out, err;
	struct event *ev_out, *ev_err;
	struct out_tail tail;
	struct timespec when;
	double after;
	double active;               /* when it last wrote (or started), seconds since start */
	char note[256];
	char *diag;                  /* what it was doing when it had to be killed, or NULL */
};

struct runner {
	const struct runner_cfg *cfg;
	struct event_base *base;
	struct event *sigev[NHANDLED];
	struct event *timer;
	struct sup sup;
	enum sup_worker_fate *fate;
	int *code;
	struct worker *w;
	int n;
	pid_t self;
	struct timespec t0;
	struct out_console con[2];   /* slotrun's stdout and stderr */
	struct event *ev_con[2];
	bool paused[2];              /* workers' stdout (stderr) pipes not read: that console is full */
	sigset_t orig_mask;          /* the signal mask slotrun was started with */
	struct plane *plane;         /* several nodes, else NULL */
	bool started;                /* the workers were started */
	bool ended;                  /* the plane said the job is over */
	int job_code;                /* ... with this status */
	struct plane_cause job_cause;
	bool finished;               /* the loop is to end */
	bool ever_started;           /* some attempt started its workers */
	int attempt;                 /* 0 for the first, k for restart k */
	struct plane_cause *history; /* the root cause of every attempt before this one */
	struct event *backoff;       /* one node: the wait before the next attempt */
	int stopped_between;         /* one node: the signal that stopped us between attempts */
	bool flushing;               /* at exit: writing what the consoles hold */
	bool give_up;                /* ... until told to stop, or the deadline */
	bool stdout_said;            /* its write failure was said */
	struct event *flush_deadline;
	struct event *hang_check;    /* with --hang-timeout */
	struct diag *diag;           /* collecting before the SIGKILL, or NULL */
	struct sup_actions held;     /* ... which waits with these */
};

/* slotrun's own lines go through its stderr queue like the workers': an
 * unread stderr must not block the loop. */
static void note(struct runner *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct runner *r, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	out_console_put(&r->con[1], line, (size_t)n);
	if (r->ev_con[1] && out_console_flush(&r->con[1]) > 0)
		event_add(r->ev_con[1], NULL);
}

/* "slotrun: rank 3 (node 1): ...": how every diagnostic names a rank. */
#define say_rank(r, i, fmt, ...) \
	note(r, "slotrun: rank %d (node %d): " fmt, (r)->cfg->plan->slots[i].rank, \
	     (r)->cfg->plan->node_rank, __VA_ARGS__)

static double since(const struct timespec *t0, const struct timespec *t)
{
	return (double)(t->tv_sec - t0->tv_sec) + (double)(t->tv_nsec - t0->tv_nsec) / 1e9;
}

static double now_since(const struct runner *r)
{
	struct timespec mono;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	return since(&r->t0, &mono);
}

/* ECHILD from waitpid(-1) is exact: any live descendant would have a
 * surviving ancestor that is our child (we are its subreaper). */
static bool have_children(void)
{
	siginfo_t si = { 0 };
	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

static void apply(struct runner *r, struct sup_actions a);
static void tell_plane_root(struct runner *r);
static bool restart_alone(struct runner *r);
static void flush_consoles(struct runner *r);
static void arm_hang_check(struct runner *r);

static void finish(struct runner *r)
{
	r->finished = true;
	event_base_loopbreak(r->base);
}

static void feed(struct runner *r, struct sup_event ev)
{
	int root = r->sup.root_cause;
	struct sup_actions a = sup_step(&r->sup, &ev);

	/* the other nodes hear of our root cause before we act on it */
	if (r->plane && r->sup.root_cause >= 0 && r->sup.root_cause != root)
		tell_plane_root(r);
	apply(r, a);
}

#define RESCAN_MS 50

static void carry_out(struct runner *r, struct sup_actions a);
static void stop_collecting(struct runner *r);

/* The collection is over: the SIGKILL it held back goes out now. */
static void on_diag_done(void *arg)
{
	struct runner *r = arg;

	for (int i = 0; i < r->n; i++)
		if (!r->w[i].diag)
			r->w[i].diag = diag_take(r->diag, i);
	stop_collecting(r);
}

static void stop_collecting(struct runner *r)
{
	diag_free(r->diag);
	r->diag = NULL;
	carry_out(r, r->held);
}

/* Before the SIGKILL: what the workers still running are doing, collected
 * beside the loop (heartbeats and the other workers go on meanwhile); a
 * holds until then.  False when there is nothing to collect or it cannot
 * start: then the SIGKILL goes out at once, without. */
static bool collect_first(struct runner *r, struct sup_actions a)
{
	pid_t *roots;
	bool any = false;
	int e;

	if (r->diag || !(roots = calloc((size_t)r->n, sizeof(*roots))))
		return false;
	for (int i = 0; i < r->n; i++)
		if (r->fate[i] == SUP_W_RUNNING && r->w[i].pid > 0 && !r->w[i].diag) {
			roots[i] = r->w[i].pid;
			any = true;
		}
	e = any ? diag_start(&r->diag, r->base, roots, r->n, DIAG_DEADLINE, on_diag_done, r) : -ENOENT;
	free(roots);
	if (e < 0)
		return false;
	r->held = a;
	return true;
}

static void apply(struct runner *r, struct sup_actions a)
{
	if (a.signal_workers && r->sup.state != SUP_RUNNING)
		flush_consoles(r); /* the stop begins: read on, shed */
	if (a.signal_workers == SIGKILL && r->sup.sigints < 2 && collect_first(r, a))
		return;
	carry_out(r, a);
}

static void carry_out(struct runner *r, struct sup_actions a)
{
	/* A stopped process would sit out the whole grace: SIGCONT first lets
	 * it act on the SIGTERM.  First, not after: a SIGCONT that lands while
	 * something is being stopped on purpose (a tracer's SIGSTOP, e.g.
	 * LeakSanitizer at a worker's exit) cancels that stop and hangs it. */
	if (a.signal_workers)
		for (int i = 0; i < r->n; i++)
			if (r->fate[i] == SUP_W_RUNNING && r->w[i].pid > 0) {
				if (a.signal_workers == SIGTERM)
					(void)kill(-r->w[i].pid, SIGCONT);
				(void)kill(-r->w[i].pid, a.signal_workers);
			}
	/* Without a child there is no descendant: skip the /proc walk (the
	 * common clean finish). */
	if (a.signal_strays && have_children()) {
		if (a.signal_strays == SIGTERM)
			(void)procs_signal_descendants(r->self, SIGCONT);
		(void)procs_signal_descendants(r->self, a.signal_strays);
	}
	if (a.arm_timer) {
		struct timeval tv = clock_tv(r->cfg->grace);
		evtimer_add(r->timer, &tv);
	} else if (a.arm_rescan) {
		struct timeval tv = { 0, RESCAN_MS * 1000 };
		evtimer_add(r->timer, &tv);
	}
	if (a.done) {
		/* With a job plane the job's end is the chief's to say. */
		if (r->plane && !r->ended)
			plane_local_done(r->plane, sup_exit_code(&r->sup));
		else if (r->plane || !restart_alone(r))
			finish(r);
		return;
	}
	if (a.check_strays && !have_children())
		feed(r, (struct sup_event){ .type = SUP_EV_STRAYS_GONE });
}

static void reap(struct runner *r)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED)) > 0) {
		if ((WIFEXITED(status) || WIFSIGNALED(status)) && diag_reaped(r->diag, pid))
			continue;
		for (int i = 0; i < r->n; i++) {
			struct worker *w = &r->w[i];
			struct timespec mono;

			if (w->pid != pid)
				continue;
			if (WIFSTOPPED(status)) { /* slotrun never stops a worker */
				say_rank(r, i, "stopped by SIG%s (not by slotrun): the job waits for it until it "
					 "is continued (SIGCONT)%s", sigabbrev_np(WSTOPSIG(status)) ?
					 sigabbrev_np(WSTOPSIG(status)) : "?", r->cfg->hang_timeout > 0 ?
					 " or --hang-timeout runs out" : "");
				break;
			}
			if (WIFCONTINUED(status))
				break;
			clock_gettime(CLOCK_REALTIME, &w->when);
			clock_gettime(CLOCK_MONOTONIC, &mono);
			w->after = since(&r->t0, &mono);
			feed(r, (struct sup_event){ .type = SUP_EV_EXIT, .worker = i, .code = status_exit_code(status),
						    .t = w->after });
			break;
		}
		/* not a worker: an adopted stray, now reaped (or stopped) */
	}
	if (r->sup.state == SUP_SWEEP && !have_children())
		feed(r, (struct sup_event){ .type = SUP_EV_STRAYS_GONE });
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct runner *r = arg;

	if (sig == SIGCHLD) {
		reap(r);
		return;
	}
	if (r->flushing) { /* at exit: told to stop, stop writing */
		if (sig == SIGTERM || sig == SIGINT)
			r->give_up = true;
		return;
	}
	if (r->started)
		feed(r, (struct sup_event){ .type = SUP_EV_SIGNAL, .sig = (int)sig });
	if (r->diag && r->sup.sigints >= 2) /* a second SIGINT: kill now */
		stop_collecting(r);
	if (r->plane) {
		plane_local_signal(r->plane, (int)sig, sig == SIGTERM || sig == SIGINT);
	} else if (!r->started && (sig == SIGTERM || sig == SIGINT)) {
		/* waiting to restart: nothing runs, so stop at once */
		evtimer_del(r->backoff);
		r->stopped_between = (int)sig;
		finish(r);
	}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	feed(arg, (struct sup_event){ .type = SUP_EV_TIMER });
}

/* Reading the workers' stdout (stderr) pipes stops while slotrun's stdout
 * (stderr) holds more than OUT_CONSOLE_HIGH bytes: the workers block on
 * their full pipes, slotrun does not, so teardown and signals go on
 * whatever the reader does; and a stdout nobody reads does not hold back
 * what goes to stderr (a failure's last words). */
static void set_paused(struct runner *r, int k, bool paused)
{
	if (r->paused[k] == paused)
		return;
	r->paused[k] = paused;
	for (int i = 0; i < r->n; i++) {
		struct worker *w = &r->w[i];
		struct event *ev = k == 0 ? w->ev_out : w->ev_err;
		int fd = k == 0 ? w->out.fd : w->err.fd;

		if (ev && fd >= 0)
			paused ? event_del(ev) : event_add(ev, NULL);
	}
}

static void flush_consoles(struct runner *r)
{
	for (int k = 0; k < 2; k++) {
		size_t left = out_console_flush(&r->con[k]);

		if (left > 0)
			event_add(r->ev_con[k], NULL);
		else
			event_del(r->ev_con[k]);
		/* While the job runs a slow reader slows the workers; once it
		 * stops, their output is read on and shed, so they can exit. */
		if (r->sup.state != SUP_RUNNING) {
			r->con[k].shed = true;
			set_paused(r, k, false);
		} else if (left > OUT_CONSOLE_HIGH) {
			set_paused(r, k, true);
		} else if (left < OUT_CONSOLE_LOW) {
			set_paused(r, k, false);
		}
	}
	if (r->con[0].broken && !r->stdout_said) {
		r->stdout_said = true;
		note(r, "slotrun: stdout: %s: the workers' output to it is dropped from now on",
		     strerror(r->con[0].err));
	}
}

static void on_console(evutil_socket_t fd, short what, void *arg)
{
	flush_consoles(arg);
}

/* A log file that stopped taking lines (a full disk, an I/O error) is said
 * when it happens, once. */
static void say_file_error(struct runner *r, struct worker *w, struct out_stream *s)
{
	if (!s->file_err || s->file_err_said)
		return;
	s->file_err_said = true;
	say_rank(r, (int)(w - r->w), "log file %s/rank-%d.%s: %s: the rest of its %s is not in it",
		 r->cfg->log_dir, r->cfg->plan->slots[w - r->w].rank, s == &w->out ? "stdout" : "stderr",
		 strerror(s->file_err), s == &w->out ? "stdout" : "stderr");
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
	w->active = now_since(r);
	say_file_error(r, w, s);
	flush_consoles(r);
}

static int attempts_total(const struct runner *r)
{
	return r->cfg->restart ? r->cfg->restart->max_restarts + 1 : 1;
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
			     attempts_total(r));
		(void)io_write_all(fd, mark, (size_t)n);
	}
	return fd;
}

static char **worker_argv(const struct runner_cfg *c, const struct plan_slot *s, char *rankbuf)
{
	int n = 0, k = 0;
	char **argv;

	while (c->cmd[n])
		n++;
	argv = calloc((size_t)n + 5, sizeof(char *));
	if (!argv)
		return NULL;
	if (c->wrapped) {
		sprintf(rankbuf, "%d", s->rank);
		argv[k++] = (char *)c->exec_path;
		argv[k++] = "--no-redirect-stdio";
		argv[k++] = rankbuf;
		argv[k++] = "--";
	}
	for (int i = 0; i < n; i++)
		argv[k++] = c->cmd[i];
	return argv;
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

/* Forks every worker first and collects their exec reports afterwards, so
 * the children exec in parallel.  A start failure is said once, however
 * many ranks hit the same one. */
static int spawn_all(struct runner *r, const sigset_t *orig_mask)
{
	const struct runner_cfg *c = r->cfg;
	int *report = calloc((size_t)r->n, sizeof(int));
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	char err[512], vars[4][PLAN_SECRET_MAX + 64], *attempt_env[5] = { vars[0], vars[1], vars[2], NULL, NULL };
	int said_stage = -1, said_errno = 0, same = 0, rc = 0;

	/* torchrun's names beside ours; each restart a rendezvous secret of
	 * its own, so nothing of an earlier attempt can join a later one */
	snprintf(vars[0], sizeof(vars[0]), "SLOTRUN_RESTART_COUNT=%d", r->attempt);
	snprintf(vars[1], sizeof(vars[1]), "TORCHELASTIC_RESTART_COUNT=%d", r->attempt);
	snprintf(vars[2], sizeof(vars[2]), "TORCHELASTIC_MAX_RESTARTS=%d", attempts_total(r) - 1);
	if (r->attempt && c->secret) {
		snprintf(vars[3], sizeof(vars[3]), "%s=%s.attempt-%d", PLAN_SECRET_VAR, c->secret, r->attempt);
		attempt_env[3] = vars[3];
	}
	if (!report || devnull < 0) {
		note(r, "slotrun: cannot start the workers: %s", devnull < 0 ? strerror(errno) : "out of memory");
		free(report);
		if (devnull >= 0)
			close(devnull);
		return -ENOMEM;
	}
	for (int i = 0; i < r->n; i++) {
		const struct plan_slot *s = &c->plan->slots[i];
		struct worker *w = &r->w[i];
		int po[2], pe[2], lo = -1, le = -1, e;
		char rankbuf[16], **argv, **envp;
		struct spawn_req req;

		if (c->log_dir && ((lo = open_log(r, s->rank, "stdout", err, sizeof(err))) < 0 ||
				   (le = open_log(r, s->rank, "stderr", err, sizeof(err))) < 0)) {
			note(r, "slotrun: %s", err);
			snprintf(w->note, sizeof(w->note), "%s", err);
			if (lo >= 0)
				close(lo);
			rc = -EINVAL;
			break;
		}
		po[0] = po[1] = pe[0] = pe[1] = -1;
		if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
			snprintf(w->note, sizeof(w->note), "cannot create pipes: %s", strerror(errno));
			for (int k = 0; k < 2; k++) {
				if (po[k] >= 0)
					close(po[k]);
				if (pe[k] >= 0)
					close(pe[k]);
			}
			say_rank(r, i, "%s", w->note);
			if (lo >= 0)
				close(lo);
			if (le >= 0)
				close(le);
			rc = -EMFILE;
			break;
		}
		fcntl(po[0], F_SETFL, O_NONBLOCK);
		fcntl(pe[0], F_SETFL, O_NONBLOCK);
		out_stream_init(&w->out, po[0], s->shown ? &r->con[0] : NULL, lo, NULL);
		out_stream_init(&w->err, pe[0], s->shown ? &r->con[1] : NULL, le, &w->tail);
		argv = worker_argv(c, s, rankbuf);
		envp = plan_envp(s, c->base_env, attempt_env);
		req = (struct spawn_req){
			.path = c->exec_path, .argv = argv, .envp = envp,
			.stdin_fd = devnull, .stdout_fd = po[1], .stderr_fd = pe[1],
			.topo = s->place.cpuset ? c->topo : NULL,
			.slot = &s->place,
			.child_mask = orig_mask, .reset_signals = handled, .nreset = NHANDLED,
			.nofile = c->nofile,
		};
		e = (argv && envp) ? spawn_start(&req, &w->pid, &report[i]) : -ENOMEM;
		free(argv);
		free(envp);
		close(po[1]);
		close(pe[1]);
		if (e < 0) {
			snprintf(w->note, sizeof(w->note), "cannot start the worker: %s", strerror(-e));
			say_rank(r, i, "%s", w->note);
			w->pid = 0;
			report[i] = -1;
			rc = e;
			break;
		}
	}
	for (int i = 0; i < r->n; i++) {
		int e = 0;
		enum spawn_stage st;

		if (r->w[i].pid <= 0 || report[i] < 0)
			continue;
		st = spawn_read_report(report[i], &e);
		if (st == SPAWN_OK)
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
	close(devnull);
	free(report);
	return rc;
}

/* Our root cause as the job plane and the restart history carry it. */
static void local_cause(struct runner *r, struct plane_cause *f)
{
	const struct runner_cfg *c = r->cfg;
	int i = r->sup.root_cause;
	struct worker *w = &r->w[i];
	char **lines = NULL;
	size_t len = 0;
	int n, from;

	*f = (struct plane_cause){ .kind = PLANE_CAUSE_RANK, .node = c->plan->node_rank,
				   .rank = c->plan->slots[i].rank, .code = r->code[i],
				   .when_ms = (int64_t)w->when.tv_sec * 1000 + w->when.tv_nsec / 1000000,
				   .after_ms = (int64_t)(w->after * 1000) };
	/* the worker is reaped, so its last lines are in the pipe: take them
	 * into the tail first */
	while (w->err.fd >= 0 && out_stream_pump(&w->err) == OUT_PUMP_MORE)
		;
	snprintf(f->host, sizeof(f->host), "%s", c->host ? c->host : "");
	snprintf(f->text, sizeof(f->text), "%s", w->note);
	n = out_tail_lines(&w->tail, OUT_TAIL_LINES, &lines);
	/* the newest lines that fit */
	for (from = n; from > 0 && len + strlen(lines[from - 1]) + 1 < sizeof(f->tail); from--)
		len += strlen(lines[from - 1]) + 1;
	len = 0;
	for (int k = 0; k < n; k++) {
		if (k >= from) {
			size_t l = strlen(lines[k]);

			memcpy(f->tail + len, lines[k], l);
			f->tail[len + l] = '\n';
			len += l + 1;
		}
		free(lines[k]);
	}
	free(lines);
	f->tail[len] = '\0';
}

static void tell_plane_root(struct runner *r)
{
	struct plane_cause f;

	local_cause(r, &f);
	plane_local_fail(r->plane, &f);
}

/* Everything in our tree is dead, so every pipe ends in EOF after its
 * last bytes; OUT_PUMP_AGAIN only when a process outside our tree holds a
 * write end, and then we stop there. */
static void drain(struct runner *r)
{
	for (int i = 0; i < r->n; i++) {
		struct out_stream *ss[2] = { &r->w[i].out, &r->w[i].err };
		for (int k = 0; k < 2; k++) {
			while (ss[k]->fd >= 0 && out_stream_pump(ss[k]) == OUT_PUMP_MORE)
				;
			out_stream_close(ss[k]);
		}
	}
}

/* The attempt is over: its pipes are read to the end and closed. */
static void end_attempt(struct runner *r)
{
	diag_free(r->diag);
	r->diag = NULL;
	for (int i = 0; i < r->n; i++) {
		if (r->w[i].ev_out)
			event_free(r->w[i].ev_out);
		if (r->w[i].ev_err)
			event_free(r->w[i].ev_err);
		r->w[i].ev_out = r->w[i].ev_err = NULL;
	}
	drain(r);
}

/* The next attempt starts from nothing but the history. */
static void begin_restart(struct runner *r, int attempt, double delay, const struct plane_cause *cause)
{
	char line[PLANE_TEXT_MAX + 64];

	if (r->attempt < attempts_total(r) - 1) /* the nodes agreed on the count: always */
		r->history[r->attempt] = *cause;
	plane_cause_line(cause, line, sizeof(line));
	note(r, "slotrun: attempt %d of %d in %g s, after %s", attempt + 1, attempts_total(r), delay, line);
	end_attempt(r);
	for (int i = 0; i < r->n; i++) {
		free(r->w[i].diag);
		r->w[i] = (struct worker){ .runner = r };
		out_stream_init(&r->w[i].out, -1, NULL, -1, NULL);
		out_stream_init(&r->w[i].err, -1, NULL, -1, NULL);
	}
	sup_init(&r->sup, r->n, r->fate, r->code);
	r->paused[0] = r->paused[1] = false;
	r->started = false;
	r->attempt = attempt;
}

/* One node: whether the attempt that just ended restarts; if so the
 * backoff timer is armed. */
static bool restart_alone(struct runner *r)
{
	const struct restart_policy *pol = r->cfg->restart;
	struct plane_cause cause = { .kind = PLANE_CAUSE_NONE };
	double delay;
	struct timeval tv;

	if (!pol || r->sup.root_cause < 0)
		return false;
	local_cause(r, &cause);
	if (!restart_allowed(pol, &cause, r->attempt))
		return false;
	delay = restart_delay(pol, r->attempt);
	begin_restart(r, r->attempt + 1, delay, &cause);
	tv = clock_tv(delay);
	evtimer_add(r->backoff, &tv);
	return true;
}

static void start_workers(struct runner *r);

static void on_backoff(evutil_socket_t fd, short what, void *arg)
{
	start_workers(arg);
}

/* --hang-timeout: a worker that neither wrote nor exited for that long
 * fails the job.  While the consoles hold its output back (a slow reader),
 * silence is no sign of a hang. */
static void on_hang_check(evutil_socket_t fd, short what, void *arg)
{
	struct runner *r = arg;
	double now = now_since(r), limit = r->cfg->hang_timeout;

	if (!r->started || r->sup.state != SUP_RUNNING)
		return;
	for (int i = 0; i < r->n; i++) {
		struct worker *w = &r->w[i];

		if (r->paused[0] || r->paused[1])
			w->active = now;
		if (r->fate[i] != SUP_W_RUNNING || now - w->active <= limit)
			continue;
		snprintf(w->note, sizeof(w->note), "no output and no exit for %g s (--hang-timeout)", limit);
		say_rank(r, i, "%s: stopping the job", w->note);
		feed(r, (struct sup_event){ .type = SUP_EV_HANG, .worker = i, .t = now });
		return;
	}
}

static void arm_hang_check(struct runner *r)
{
	double every = r->cfg->hang_timeout / 10;
	struct timeval tv;

	if (r->cfg->hang_timeout <= 0)
		return;
	every = every < 0.05 ? 0.05 : every > 1 ? 1 : every;
	tv = clock_tv(every);
	event_add(r->hang_check, &tv);
}

static void on_flush_deadline(evutil_socket_t fd, short what, void *arg)
{
	((struct runner *)arg)->give_up = true;
}

/* At exit: writes what the consoles hold on the loop, so that signals
 * still act; gives up (counting what is dropped) when told to stop, or
 * after `limit` seconds (< 0: no limit; a reader slow but alive is waited
 * for). */
static void flush_out(struct runner *r, double limit)
{
	struct timeval tv = clock_tv(limit);

	r->flushing = true;
	r->give_up = false;
	if (limit >= 0)
		evtimer_add(r->flush_deadline, &tv);
	flush_consoles(r);
	while (!r->give_up && out_console_pending(&r->con[0]) + out_console_pending(&r->con[1]) > 0)
		if (event_base_loop(r->base, EVLOOP_ONCE) < 0)
			break;
	evtimer_del(r->flush_deadline);
	if (r->give_up)
		for (int k = 0; k < 2; k++)
			out_console_drop(&r->con[k]);
	r->flushing = false;
}

/* What was lost on the way, one line each: a log file that failed, a
 * console that failed or could not be written in time. */
static void print_losses(FILE *f, const struct runner *r)
{
	static const char *const names[] = { "stdout", "stderr" };

	for (int i = 0; i < r->n; i++) {
		const struct out_stream *ss[2] = { &r->w[i].out, &r->w[i].err };

		for (int k = 0; k < 2; k++)
			if (ss[k]->file_err)
				fprintf(f, "slotrun: output lost: rank %d's %s log (%s): %zu bytes not written\n",
					r->cfg->plan->slots[i].rank, names[k], strerror(ss[k]->file_err),
					ss[k]->file_lost);
	}
	for (int k = 0; k < 2; k++)
		if (r->con[k].dropped)
			fprintf(f, "slotrun: output lost: %zu bytes for slotrun's %s were dropped (%s)\n",
				r->con[k].dropped, names[k],
				r->con[k].err ? strerror(r->con[k].err) : "its reader did not take them in time");
}

static bool lost_any(const struct runner *r)
{
	for (int i = 0; i < r->n; i++)
		if (r->w[i].out.file_err || r->w[i].err.file_err)
			return true;
	return r->con[0].dropped || r->con[1].dropped;
}

/* The summary goes through the stderr queue too, into memory first. */
static void report(struct runner *r, int code)
{
	const struct runner_cfg *c = r->cfg;
	const struct plane_cause *cause = c->plane ? &r->job_cause : NULL;
	int n = r->started ? r->n : 0; /* stopped between attempts: none ran */
	struct sum_worker *sw;
	struct sum_job job;
	char *text = NULL;
	size_t len = 0;
	FILE *mem;

	if (code == 0 && !r->attempt && !lost_any(r) &&
	    (cause ? cause->kind == PLANE_CAUSE_NONE : r->sup.root_cause < 0 && !r->sup.stop_signal))
		return;
	sw = calloc((size_t)r->n, sizeof(*sw));
	mem = open_memstream(&text, &len);
	if (!sw || !mem) {
		note(r, "slotrun: cannot write the summary: out of memory (exit status %d)", code);
		free(sw);
		if (mem)
			fclose(mem);
		free(text);
		return;
	}
	for (int i = 0; i < n; i++)
		sw[i] = (struct sum_worker){
			.rank = c->plan->slots[i].rank, .local_rank = i, .pid = r->w[i].pid,
			.code = r->code[i], .fate = r->fate[i], .when = r->w[i].when,
			.after_start = r->w[i].after, .tail = &r->w[i].tail,
			.note = r->w[i].note[0] ? r->w[i].note : NULL, .diag = r->w[i].diag,
		};
	job = (struct sum_job){ .node_rank = c->plan->node_rank, .nworkers = n, .w = sw,
				.root = n ? r->sup.root_cause : -1,
				.stop_signal = n ? r->sup.stop_signal : r->stopped_between,
				.exit_code = code, .job = cause, .history = r->history, .attempt = r->attempt,
				.attempts = attempts_total(r) };
	if (code != 0 || r->attempt || (cause ? cause->kind != PLANE_CAUSE_NONE :
					r->sup.root_cause >= 0 || r->sup.stop_signal))
		summary_print(mem, &job);
	print_losses(mem, r);
	if (c->error_file && summary_write_json(c->error_file, &job) < 0)
		fprintf(mem, "slotrun: cannot write --error-file %s: %s\n", c->error_file, strerror(errno));
	if (fclose(mem) == 0 && len)
		out_console_put(&r->con[1], text, len);
	free(text);
	free(sw);
}

/* An event reading a worker's pipe.  Without one (out of memory) the pipe
 * is closed rather than left to fill and block the worker: its writes fail
 * from then on, which the worker sees. */
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

/* Spawns every worker and starts reading their output; signals we handle
 * are held back meanwhile (a child between fork and exec must not run
 * libevent's handler). */
static void start_workers(struct runner *r)
{
	sigset_t block, was, worker_mask;

	sigemptyset(&block);
	for (int i = 0; i < NHANDLED; i++)
		sigaddset(&block, handled[i]);
	sigprocmask(SIG_BLOCK, &block, &was);
	r->started = r->ever_started = true;
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	/* Workers start with the signals we handle unblocked, whatever mask
	 * slotrun inherited: a blocked SIGTERM would defeat the grace. */
	worker_mask = r->orig_mask;
	for (int i = 0; i < NHANDLED; i++)
		sigdelset(&worker_mask, handled[i]);

	/* A worker that could not be started counts as failed: the first is
	 * the root cause and stops the others through the normal path. */
	if (spawn_all(r, &worker_mask) < 0)
		for (int i = 0; i < r->n; i++)
			if (r->w[i].pid <= 0)
				feed(r, (struct sup_event){ .type = SUP_EV_EXIT, .worker = i, .code = 1 });
	for (int i = 0; i < r->n; i++) {
		struct worker *w = &r->w[i];

		w->ev_out = watch(r, &w->out, w);
		w->ev_err = watch(r, &w->err, w);
	}
	arm_hang_check(r);
	sigprocmask(SIG_SETMASK, &was, NULL);
}

/* ---- What the job plane asks of us ---- */

static void plane_start(void *arg)
{
	start_workers(arg);
}

static void plane_stop(void *arg, int sig)
{
	struct runner *r = arg;

	if (!r->started)
		return;
	feed(r, sig ? (struct sup_event){ .type = SUP_EV_SIGNAL, .sig = sig }
		    : (struct sup_event){ .type = SUP_EV_STOP });
}

static void plane_signal(void *arg, int sig)
{
	struct runner *r = arg;

	if (r->started)
		feed(r, (struct sup_event){ .type = SUP_EV_SIGNAL, .sig = sig });
}

static void plane_end(void *arg, int code, const struct plane_cause *cause)
{
	struct runner *r = arg;

	r->ended = true;
	r->job_code = code;
	r->job_cause = *cause;
	if (!r->started || r->sup.state == SUP_DONE)
		finish(r);
	else /* not expected: the chief ends a job once every node is done */
		feed(r, (struct sup_event){ .type = SUP_EV_STOP });
}

static void plane_restart(void *arg, int attempt, double delay, const struct plane_cause *cause)
{
	begin_restart(arg, attempt, delay, cause);
}

static const struct plane_hooks plane_hooks = {
	.start = plane_start, .stop = plane_stop, .signal = plane_signal, .restart = plane_restart,
	.end = plane_end,
};

int runner_run(const struct runner_cfg *c)
{
	struct runner r = { .cfg = c, .n = c->plan->nslots, .self = getpid() };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigset_t block, orig;
	int code = 1;

	clock_gettime(CLOCK_MONOTONIC, &r.t0);
	/* a file left by an earlier run must not pass for this run's */
	if (c->error_file && unlink(c->error_file) < 0 && errno != ENOENT)
		fprintf(stderr, "slotrun: --error-file %s: cannot remove the old one: %s\n", c->error_file,
			strerror(errno));
	sigemptyset(&block);
	for (int i = 0; i < NHANDLED; i++)
		sigaddset(&block, handled[i]);
	sigprocmask(SIG_BLOCK, &block, &orig);
	sigaction(SIGPIPE, &ign, NULL);
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);

	r.w = calloc((size_t)r.n, sizeof(*r.w));
	r.fate = calloc((size_t)r.n, sizeof(*r.fate));
	r.code = calloc((size_t)r.n, sizeof(*r.code));
	r.history = calloc((size_t)attempts_total(&r), sizeof(*r.history));
	r.base = event_base_new();
	if (!r.w || !r.fate || !r.code || !r.history || !r.base) {
		fprintf(stderr, "slotrun: out of memory\n");
		goto out;
	}
	sup_init(&r.sup, r.n, r.fate, r.code);
	for (int k = 0; k < 2; k++) {
		out_console_init(&r.con[k], k == 0 ? STDOUT_FILENO : STDERR_FILENO);
		r.ev_con[k] = event_new(r.base, r.con[k].fd, EV_WRITE | EV_PERSIST, on_console, &r);
	}
	r.timer = evtimer_new(r.base, on_timer, &r);
	r.backoff = evtimer_new(r.base, on_backoff, &r);
	r.flush_deadline = evtimer_new(r.base, on_flush_deadline, &r);
	r.hang_check = event_new(r.base, -1, EV_PERSIST, on_hang_check, &r);
	bool all = r.timer && r.backoff && r.flush_deadline && r.hang_check && r.ev_con[0] && r.ev_con[1];
	for (int i = 0; i < NHANDLED; i++) {
		r.sigev[i] = evsignal_new(r.base, handled[i], on_signal, &r);
		all = all && r.sigev[i] && event_add(r.sigev[i], NULL) == 0;
	}
	if (!all) { /* nothing has started yet */
		fprintf(stderr, "slotrun: cannot set up the event loop: out of memory\n");
		goto out;
	}
	/* Every stream starts closed, so a worker that never starts has
	 * nothing to read. */
	for (int i = 0; i < r.n; i++) {
		r.w[i].runner = &r;
		out_stream_init(&r.w[i].out, -1, NULL, -1, NULL);
		out_stream_init(&r.w[i].err, -1, NULL, -1, NULL);
	}
	r.orig_mask = orig;
	if (c->plane) {
		char err[512];

		if (plane_open(&r.plane, r.base, c->plane, &plane_hooks, &r, err, sizeof(err)) < 0) {
			fprintf(stderr, "slotrun: %s\n", err);
			code = 2;
			goto out;
		}
	} else {
		start_workers(&r);
	}
	sigprocmask(SIG_SETMASK, &orig, NULL);
	/* Unblock everything we handle even if our parent blocked it. */
	sigprocmask(SIG_UNBLOCK, &block, NULL);

	/* (every worker may have failed to start already: the loop would
	 * miss a break that came before it) */
	if (!r.finished)
		event_base_dispatch(r.base);
	code = r.plane ? r.job_code : r.stopped_between ? 128 + r.stopped_between : sup_exit_code(&r.sup);
	/* the last words to the other nodes before anything of ours */
	plane_close(r.plane);
	r.plane = NULL;
	end_attempt(&r);
	/* A stopping job's output has the grace to get out; a clean one's
	 * waits for its reader (a stop signal ends that wait too). */
	flush_out(&r, code == 0 ? -1 : c->grace > 1 ? c->grace : 1);
	if (r.ever_started)
		report(&r, code);
	flush_out(&r, 1);
out:
	plane_close(r.plane);
	diag_free(r.diag);
	for (int i = 0; i < NHANDLED; i++)
		if (r.sigev[i])
			event_free(r.sigev[i]);
	if (r.timer)
		event_free(r.timer);
	if (r.backoff)
		event_free(r.backoff);
	if (r.flush_deadline)
		event_free(r.flush_deadline);
	if (r.hang_check)
		event_free(r.hang_check);
	for (int i = 0; r.w && i < r.n; i++)
		free(r.w[i].diag);
	for (int k = 0; k < 2; k++) {
		if (r.ev_con[k])
			event_free(r.ev_con[k]);
		out_console_free(&r.con[k]);
	}
	if (r.base)
		event_base_free(r.base);
	free(r.w);
	free(r.fate);
	free(r.code);
	free(r.history);
	return code;
}
