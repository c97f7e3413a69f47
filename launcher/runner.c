// SPDX-License-Identifier: MIT
/* The runner's loop and its glue: events go to the supervisor
 * (supervisor.h), its actions are carried out here; the workers, the
 * consoles, attempts, the hang check, diagnostics and the exit report are
 * modules of their own. */
#include "runner.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attempt.h"
#include "clock.h"
#include "diag.h"
#include "hang.h"
#include "live.h"
#include "procs.h"
#include "report.h"
#include "runner_state.h"
#include "session.h"
#include "stacks.h"
#include "status.h"
#include "workers.h"

const int runner_signals[RUNNER_NSIGNALS] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
						    SIGTSTP };

static void handled_set(sigset_t *set)
{
	sigemptyset(set);
	for (int i = 0; i < RUNNER_NSIGNALS; i++)
		sigaddset(set, runner_signals[i]);
}

/* Seconds since the attempt started. */
static double now_since(const struct runner *r)
{
	return clock_mono() - r->t0;
}

static void apply(struct runner *r, struct sup_actions a);
static void stop_collecting(struct runner *r);
static void carry_out(struct runner *r, struct sup_actions a);

static void finish(struct runner *r)
{
	r->finished = true;
	event_base_loopbreak(r->base);
}

static void tell_plane_root(struct runner *r)
{
	struct plane_cause f;

	attempt_cause(r, &f);
	plane_local_fail(r->plane, &f);
}

static void feed(struct runner *r, struct sup_event ev)
{
	int root = r->sup.root_cause;
	enum sup_state was = r->sup.state;
	struct sup_actions a = sup_step(&r->sup, &ev);

	if (was == SUP_RUNNING && r->sup.state != SUP_RUNNING)
		live_stopping(r, &ev);
	/* the other nodes hear of our root cause before we act on it */
	if (r->plane && r->sup.root_cause >= 0 && r->sup.root_cause != root)
		tell_plane_root(r);
	apply(r, a);
	/* a second SIGINT means kill now, whether the user's Ctrl-C reached
	 * this slotrun or came from another node through the job plane */
	if (r->diag && r->sup.sigints >= 2)
		stop_collecting(r);
}

/* ---- Diagnostics before the SIGKILL ---- */

static void stop_collecting(struct runner *r)
{
	diag_free(r->diag);
	r->diag = NULL;
	carry_out(r, r->held);
}

/* The collection is over: the SIGKILL it held back goes out now. */
static void on_diag_done(void *arg)
{
	struct runner *r = arg;

	for (int i = 0; i < r->n; i++)
		if (!r->w[i].diag && (r->w[i].diag = diag_take(r->diag, i)))
			r->w[i].diag_hung = r->diag_hung;
	stop_collecting(r);
}

/* Before the SIGKILL, or the hang's SIGTERM: what the workers still
 * running are doing (only the hung one: only >= 0), collected beside the
 * loop (heartbeats and the other workers go on meanwhile); a holds until
 * then.  False when there is nothing to collect or it cannot start: then
 * a is carried out at once, without. */
static bool collect_first(struct runner *r, struct sup_actions a, int only)
{
	pid_t *roots;
	bool any = false;
	int e;

	if (r->diag || !(roots = calloc((size_t)r->n, sizeof(*roots))))
		return false;
	for (int i = 0; i < r->n; i++)
		if (r->fate[i] == SUP_W_RUNNING && r->w[i].pid > 0 && !r->w[i].diag && (only < 0 || i == only)) {
			roots[i] = r->w[i].pid;
			any = true;
		}
	e = any ? diag_start(&r->diag, r->base, roots, r->n, DIAG_DEADLINE, on_diag_done, r) : -ENOENT;
	free(roots);
	if (e < 0)
		return false;
	r->diag_hung = only >= 0;
	r->held = a;
	return true;
}

/* ---- Carrying out the supervisor's actions ---- */

#define RESCAN_MS 50

static int resume_workers(struct runner *r);

static void apply(struct runner *r, struct sup_actions a)
{
	/* a job that ends while paused is continued first: its stopped
	 * processes could not act on the SIGTERM (the commands below wrap_rank
	 * are outside the workers' groups) */
	if (r->paused && r->sup.state != SUP_RUNNING)
		(void)resume_workers(r);
	if (a.signal_workers && r->sup.state != SUP_RUNNING)
		console_flush(&r->cons); /* the stop begins: read on, shed */
	if (a.signal_workers == SIGKILL && r->sup.sigints < 2 && collect_first(r, a, -1))
		return;
	/* a hung worker is looked at before its SIGTERM: what it was stuck
	 * in, rather than how it unwinds (the stop's start: TERM, and the
	 * grace armed) */
	if (a.signal_workers == SIGTERM && a.arm_timer && r->sup.hung >= 0 && r->sup.root_cause == r->sup.hung &&
	    collect_first(r, a, r->sup.hung))
		return;
	carry_out(r, a);
}

static void signal_workers(struct runner *r, int sig)
{
	/* A stopped process would sit out the whole grace: SIGCONT first lets
	 * it act on the SIGTERM.  First, not after: a SIGCONT that lands while
	 * something is being stopped on purpose (a tracer's SIGSTOP, e.g.
	 * LeakSanitizer at a worker's exit) cancels that stop and hangs it. */
	for (int i = 0; i < r->n; i++)
		if (r->fate[i] == SUP_W_RUNNING && r->w[i].pid > 0) {
			if (sig == SIGTERM)
				(void)kill(-r->w[i].pid, SIGCONT);
			(void)kill(-r->w[i].pid, sig);
		}
}

static void signal_strays(struct runner *r, int sig)
{
	/* Without a child there is no descendant: skip the /proc walk (the
	 * common clean finish). */
	if (!procs_have_children())
		return;
	if (sig == SIGTERM)
		(void)procs_signal_descendants(r->self, SIGCONT);
	(void)procs_signal_descendants(r->self, sig);
}

/* The attempt is done here: with a job plane the job's end is the chief's
 * to say; alone, it ends, or restarts. */
static void attempt_done(struct runner *r)
{
	if (r->plane && !r->ended)
		plane_local_done(r->plane, sup_exit_code(&r->sup));
	else if (r->plane || !attempt_restart_alone(r))
		finish(r);
}

/* How long after a finished job's SIGTERM to its leftovers slotrun looks
 * again and says what it waits for: a leftover that exits on the signal
 * is not worth a line. */
#define LEFTOVERS_LOOK_S 0.5

static void carry_out(struct runner *r, struct sup_actions a)
{
	if (a.signal_workers)
		signal_workers(r, a.signal_workers);
	if (a.signal_strays)
		signal_strays(r, a.signal_strays);
	if (a.arm_timer) {
		struct timeval tv = clock_tv(r->cfg->grace);
		evtimer_add(r->timer, &tv);
		if (r->sup.state == SUP_SWEEP && r->cfg->grace > LEFTOVERS_LOOK_S) {
			tv = clock_tv(LEFTOVERS_LOOK_S);
			evtimer_add(r->leftovers, &tv);
		}
	} else if (a.arm_rescan) {
		struct timeval tv = { 0, RESCAN_MS * 1000 };
		evtimer_add(r->timer, &tv);
	}
	if (a.done) {
		evtimer_del(r->leftovers); /* none left to say */
		live_attempt_done(r);
		attempt_done(r);
		return;
	}
	if (a.check_strays && !procs_have_children())
		feed(r, (struct sup_event){ .type = SUP_EV_STRAYS_GONE });
}

/* ---- Events ---- */

static void reaped(struct runner *r, int i, int status)
{
	struct worker *w = &r->w[i];

	if (WIFSTOPPED(status)) { /* slotrun stops a worker only to pause the job */
		if (r->paused || stacks_trace_stop(status)) /* or to take its stack */
			return;
		say_rank(r, i, "stopped by SIG%s (not by slotrun): the job waits for it until it "
			 "is continued (SIGCONT)%s", sigabbrev_np(WSTOPSIG(status)) ?
			 sigabbrev_np(WSTOPSIG(status)) : "?", r->cfg->hang_timeout > 0 ?
			 " or --hang-timeout runs out" : "");
		return;
	}
	if (WIFCONTINUED(status))
		return;
	/* a hung worker's time is when slotrun decided it was hung */
	if (i != r->sup.hung) {
		clock_gettime(CLOCK_REALTIME, &w->when);
		w->after = now_since(r);
	}
	workers_ended(r, i, status_exit_code(status));
	live_rank_exit(r, i, status);
	feed(r, (struct sup_event){ .type = SUP_EV_EXIT, .worker = i, .code = status_exit_code(status),
				    .t = now_since(r) });
}

static void reap(struct runner *r)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED | WCONTINUED)) > 0) {
		for (int i = 0; i < r->n; i++)
			if (r->w[i].pid == pid) {
				reaped(r, i, status);
				break;
			}
		/* not a worker: an adopted stray, now reaped (or stopped), or a
		 * thread whose stack is being taken (stacks.h) */
	}
	if (r->sup.state == SUP_SWEEP && !procs_have_children())
		feed(r, (struct sup_event){ .type = SUP_EV_STRAYS_GONE });
}

/* ---- Job control: a terminal stop pauses the job ---- */

/* Walks over /proc that SIGSTOP everything below slotrun: a process that
 * forked while it was being stopped leaves a child the next walk finds;
 * they end once a walk finds no more than the one before. */
#define PAUSE_WALKS 8

static int running_ranks(const struct runner *r)
{
	int n = 0;

	for (int i = 0; i < r->n; i++)
		n += r->fate[i] == SUP_W_RUNNING && r->w[i].pid > 0;
	return n;
}

/* Stops every process of the job, as a shell stops a job: the whole tree
 * below slotrun (wrap_rank, its guard, the command and what it started,
 * setsid'ed or not), with SIGSTOP, which no program can catch or ignore.
 * Returns how many ranks run. */
static int pause_workers(struct runner *r)
{
	if (!r->paused) {
		for (int k = 0, last = -1, n; k < PAUSE_WALKS; k++, last = n) {
			n = procs_signal_descendants(r->self, SIGSTOP);
			if (n < 0) /* no /proc to walk (another PID namespace's): the
				    * workers' groups only, the commands below wrap_rank
				    * are out of reach */
				signal_workers(r, SIGSTOP);
			if (n <= last)
				break;
		}
		r->paused = true;
		r->paused_at = clock_mono();
	}
	return running_ranks(r);
}

/* Continues what pause_workers stopped; --hang-timeout does not count the
 * time the job was stopped.  Returns how many ranks run. */
static int resume_workers(struct runner *r)
{
	double stopped;

	if (!r->paused)
		return running_ranks(r);
	if (procs_signal_descendants(r->self, SIGCONT) < 0)
		signal_workers(r, SIGCONT);
	r->paused = false;
	stopped = clock_mono() - r->paused_at;
	for (int i = 0; i < r->n; i++)
		r->active[i] += stopped;
	return running_ranks(r);
}

/* Why a terminal stop is not acted on now, or NULL. */
static const char *no_pause(const struct runner *r)
{
	if (r->self == 1)
		return "slotrun is PID 1, which cannot be stopped";
	if (!r->started || r->sup.live == 0)
		return "no worker is running";
	if (r->sup.state != SUP_RUNNING)
		return "the job is ending";
	return NULL;
}

/* SIGTSTP (Ctrl-Z): the workers stop, slotrun says so and stops itself,
 * so that its shell sees it stopped.  The stop is synchronous: kill()
 * returns once slotrun is continued, and the workers are continued then,
 * before any timer of the loop (--hang-timeout, the job plane's
 * heartbeats) can count the stopped time. */
static void on_terminal_stop(struct runner *r, int sig)
{
	const char *abbrev = sigabbrev_np(sig), *why = no_pause(r);
	int n;

	if (why) {
		note(r, "slotrun: SIG%s ignored: %s", abbrev, why);
		return;
	}
	n = pause_workers(r);
	if (r->plane) {
		note(r, "slotrun: stopped (SIG%s): %d rank%s stopped here, the job's other nodes pause too; "
		     "fg or kill -CONT %d resumes the job", abbrev, n, n == 1 ? "" : "s", (int)r->self);
		plane_local_pause(r->plane, sig);
	} else {
		note(r, "slotrun: stopped (SIG%s): %d rank%s stopped; fg or kill -CONT %d resumes %s", abbrev, n,
		     n == 1 ? "" : "s", (int)r->self, n == 1 ? "it" : "them");
	}
	/* the line goes out before we stop, as far as stderr takes it now */
	console_flush(&r->cons);
	(void)kill(r->self, SIGSTOP);
	if (r->plane) {
		plane_local_resume(r->plane);
	} else {
		n = resume_workers(r);
		note(r, "slotrun: continued: %d rank%s continued", n, n == 1 ? "" : "s");
	}
}

/* A signal for the workers and the job plane; one that stops stops the
 * whole job.  why: the reason the job plane gives, when this node stops
 * the job for one of its own rather than because it got sig (or NULL). */
static void told(struct runner *r, int sig, bool stops, const char *why)
{
	if (r->started)
		feed(r, (struct sup_event){ .type = stops ? SUP_EV_STOP_SIGNAL : SUP_EV_SIGNAL, .sig = sig });
	if (r->plane) {
		plane_local_signal(r->plane, sig, stops, why);
	} else if (!r->started && stops) {
		/* waiting to restart: nothing runs, so stop at once */
		evtimer_del(r->backoff);
		r->stopped_between = sig;
		finish(r);
	}
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct runner *r = arg;

	if (sig == SIGCHLD) {
		reap(r);
		return;
	}
	if (console_signal(&r->cons, (int)sig)) /* at exit: told to stop, stop writing */
		return;
	if (sig == SIGTSTP) {
		on_terminal_stop(r, (int)sig);
		return;
	}
	told(r, (int)sig, sig == SIGTERM || sig == SIGINT, NULL);
}

/* The session that started us ended: the job stops as for a SIGHUP that
 * stops, on every node. */
static void on_session_end(void *arg, const char *why)
{
	struct runner *r = arg;

	note(r, "slotrun: %s: stopping the job (SIGHUP)", why);
	told(r, SIGHUP, true, "the session that started it ended");
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	feed(arg, (struct sup_event){ .type = SUP_EV_TIMER });
}

static void on_leftovers(evutil_socket_t fd, short what, void *arg)
{
	struct runner *r = arg;

	if (r->sup.state == SUP_SWEEP && !r->sup.escalated)
		workers_say_leftovers(r, r->cfg->grace - LEFTOVERS_LOOK_S);
}

static void on_hang_check(evutil_socket_t fd, short what, void *arg)
{
	struct runner *r = arg;
	double now = now_since(r), limit = r->cfg->hang_timeout;
	int i;

	if (!r->started || r->sup.state != SUP_RUNNING || r->paused)
		return;
	/* wrap_rank may hold output that has no '\n' yet: any byte counts */
	for (i = 0; i < r->n; i++)
		if (r->fate[i] == SUP_W_RUNNING && now - r->active[i] > limit / 2 && workers_progress(r, i))
			r->active[i] = now;
	i = hang_find(r->active, r->fate, r->n, r->cons.paused[0] || r->cons.paused[1], now, limit);
	if (i < 0)
		return;
	snprintf(r->w[i].note, sizeof(r->w[i].note), "no output and no exit for %g s (--hang-timeout)", limit);
	/* the root cause's time, told to the other nodes before it is reaped */
	clock_gettime(CLOCK_REALTIME, &r->w[i].when);
	r->w[i].after = now;
	say_rank(r, i, "%s: stopping the job", r->w[i].note);
	feed(r, (struct sup_event){ .type = SUP_EV_HANG, .worker = i, .t = now });
}

/* ---- The consoles' hooks ---- */

static bool console_stopping(void *arg)
{
	return ((struct runner *)arg)->sup.state != SUP_RUNNING;
}

/* Reading the workers' stdout (k 0) or stderr (k 1) pipes stops or resumes. */
static void console_pause(void *arg, int k, bool paused)
{
	struct runner *r = arg;

	for (int i = 0; i < r->n; i++) {
		struct worker *w = &r->w[i];
		struct event *ev = k == 0 ? w->ev_out : w->ev_err;
		int fd = k == 0 ? w->out.fd : w->err.fd;

		if (ev && fd >= 0)
			paused ? event_del(ev) : event_add(ev, NULL);
	}
}

static const struct console_hooks console_hooks = { .stopping = console_stopping, .pause = console_pause };

/* ---- Starting an attempt ---- */

/* Spawns every worker and starts reading their output; signals we handle
 * are held back meanwhile (a child before its exec must not run
 * libevent's handler). */
static void start_workers(struct runner *r)
{
	sigset_t block, was, worker_mask;

	handled_set(&block);
	sigprocmask(SIG_BLOCK, &block, &was);
	r->started = r->ever_started = true;
	r->fresh = false;
	r->t0 = clock_mono();
	/* Workers start with the signals we handle unblocked, whatever mask
	 * slotrun inherited: a blocked SIGTERM would defeat the grace. */
	worker_mask = r->orig_mask;
	for (int i = 0; i < RUNNER_NSIGNALS; i++)
		sigdelset(&worker_mask, runner_signals[i]);

	/* A worker that could not be started counts as failed: the first is
	 * the root cause and stops the others through the normal path. */
	if (workers_spawn(r, &worker_mask) < 0)
		for (int i = 0; i < r->n; i++)
			if (r->w[i].pid <= 0)
				feed(r, (struct sup_event){ .type = SUP_EV_EXIT, .worker = i, .code = 1 });
	workers_watch(r);
	live_attempt_start(r);
	if (r->cfg->hang_timeout > 0) {
		struct timeval tv = clock_tv(hang_period(r->cfg->hang_timeout));

		event_add(r->hang_check, &tv);
	}
	sigprocmask(SIG_SETMASK, &was, NULL);
}

static void on_backoff(evutil_socket_t fd, short what, void *arg)
{
	start_workers(arg);
}

/* ---- What the job plane asks of us ---- */

/* Elastic: this round joins the node's list, and ends the one before with
 * the reason the new one formed. */
static void add_round(struct runner *r, const struct plane_round_info *ri)
{
	struct sum_round *x = realloc(r->rounds, (size_t)(r->nrounds + 1) * sizeof(*x));

	if (!x)
		return; /* the summary misses it; nothing else does */
	r->rounds = x;
	if (r->nrounds)
		snprintf(x[r->nrounds - 1].end, sizeof(x[0].end), "%s", ri->why[0] ? ri->why : "?");
	x += r->nrounds++;
	*x = (struct sum_round){ .round = ri->round, .nnodes = ri->nnodes, .ranks = ri->world_size,
				 .node_rank = ri->node_rank };
	clock_gettime(CLOCK_REALTIME, &x->start);
	snprintf(x->why, sizeof(x->why), "%s", ri->why);
}

/* A round starts: its ranks, world size and chief into every worker's
 * environment, then the workers. */
static void plane_start(void *arg, const struct plane_round_info *ri)
{
	struct runner *r = arg;
	struct plan_round pr = { .node_rank = ri->node_rank, .nnodes = ri->nnodes, .rank_base = ri->rank_base,
				 .world_size = ri->world_size, .master = ri->master[0] ? ri->master : NULL };

	if (r->ever_started && !r->fresh) /* after a failover: no RESTART came */
		attempt_reset(r);
	if (plan_round(r->cfg->plan, &pr) < 0)
		note(r, "slotrun: round %d: out of memory: the workers keep the ranks of the round before",
		     ri->round);
	r->attempt = ri->restarts;
	r->round = ri->round;
	r->chief = plane_is_chief(r->plane);
	if (runner_elastic(r))
		add_round(r, ri);
	live_nodes_joined(r, ri->nnodes);
	start_workers(r);
}

static void plane_stop(void *arg, int sig)
{
	struct runner *r = arg;

	if (!r->started)
		return;
	feed(r, sig ? (struct sup_event){ .type = SUP_EV_STOP_SIGNAL, .sig = sig }
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
	attempt_next(arg, attempt, delay, cause);
}

static int plane_pause(void *arg, bool pause)
{
	struct runner *r = arg;

	if (!pause)
		return resume_workers(r);
	/* a job that is ending goes on ending */
	return r->started && r->sup.state == SUP_RUNNING ? pause_workers(r) : 0;
}

static void plane_say(void *arg, const char *line)
{
	struct runner *r = arg;

	note(r, "%s", line);
}

static void plane_ask(void *arg, uint32_t id, bool stacks)
{
	live_ask(arg, id, stacks);
}

static char *plane_merge(void *arg, char *const *docs, const size_t *lens, int n, const char *missing, size_t *len)
{
	return live_merge(arg, docs, lens, n, missing, len);
}

static void plane_event_in(void *arg, const char *json, size_t len, const char *host)
{
	live_event(arg, json, len, host);
}

static const struct plane_hooks plane_hooks = {
	.start = plane_start, .stop = plane_stop, .signal = plane_signal, .restart = plane_restart,
	.end = plane_end, .pause = plane_pause, .say = plane_say, .ask = plane_ask, .merge = plane_merge,
	.event = plane_event_in,
};

/* ---- runner_run, in steps ---- */

/* slotrun as a process: our signals blocked until
 * the loop handles them (*orig: the mask we were started with), SIGPIPE
 * and SIGXFSZ ignored (a reader gone, a file size limit on our stdout:
 * the write fails and output.c says so, instead of slotrun dying and
 * taking its workers with it), and the subreaper of everything below us. */
static void prepare_process(sigset_t *orig)
{
	sigset_t block;
	struct sigaction ign = { .sa_handler = SIG_IGN };

	handled_set(&block);
	sigprocmask(SIG_BLOCK, &block, orig);
	sigaction(SIGPIPE, &ign, NULL);
	sigaction(SIGXFSZ, &ign, NULL);
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
}

/* The arrays, the loop and its events; every stream starts closed, so a
 * worker that never starts has nothing to read.  Returns 0, or -ENOMEM
 * with the reason said (nothing has started yet). */
static int setup_loop(struct runner *r)
{
	bool all;
	int err;

	r->w = calloc((size_t)r->n, sizeof(*r->w));
	r->fate = calloc((size_t)r->n, sizeof(*r->fate));
	r->code = calloc((size_t)r->n, sizeof(*r->code));
	r->active = calloc((size_t)r->n, sizeof(*r->active));
	r->history = calloc((size_t)runner_attempts(r), sizeof(*r->history));
	r->base = event_base_new();
	if (!r->w || !r->fate || !r->code || !r->active || !r->history || !r->base) {
		fprintf(stderr, "slotrun: out of memory\n");
		return -ENOMEM;
	}
	sup_init(&r->sup, r->n, r->fate, r->code);
	(void)rank_reports_open(&r->reports); /* without, the workers get no path */
	all = console_init(&r->cons, r->base, STDOUT_FILENO, STDERR_FILENO, &console_hooks, r) == 0;
	r->timer = evtimer_new(r->base, on_timer, r);
	r->backoff = evtimer_new(r->base, on_backoff, r);
	r->hang_check = event_new(r->base, -1, EV_PERSIST, on_hang_check, r);
	r->leftovers = evtimer_new(r->base, on_leftovers, r);
	all = all && r->timer && r->backoff && r->hang_check && r->leftovers;
	/* before our SIGHUP handler: nohup's SIG_IGN tells */
	if ((err = session_open(&r->session, r->base, r->cfg->on_hangup, on_session_end, r)) < 0)
		fprintf(stderr, "slotrun: cannot watch for the end of this session, it will not stop the job: %s\n",
			strerror(-err));
	for (int i = 0; i < RUNNER_NSIGNALS; i++) {
		r->sigev[i] = evsignal_new(r->base, runner_signals[i], on_signal, r);
		all = all && r->sigev[i] && event_add(r->sigev[i], NULL) == 0;
	}
	if (!all) {
		fprintf(stderr, "slotrun: cannot set up the event loop: out of memory\n");
		return -ENOMEM;
	}
	for (int i = 0; i < r->n; i++) {
		r->w[i].runner = r;
		out_stream_init(&r->w[i].out, -1, NULL, -1, NULL);
		out_stream_init(&r->w[i].err, -1, NULL, -1, NULL);
	}
	return 0;
}

/* One node starts its workers now; several join the job plane, which
 * starts them once every node is in.  Returns 0, or 2 (the exit status)
 * with the reason said. */
static int begin(struct runner *r)
{
	char err[512];

	if (!r->cfg->plane) {
		start_workers(r);
		return 0;
	}
	if (plane_open(&r->plane, r->base, r->cfg->plane, &plane_hooks, r, err, sizeof(err)) < 0) {
		fprintf(stderr, "slotrun: %s\n", err);
		return 2;
	}
	return 0;
}

/* After the loop: the status, the last words to the other nodes, the
 * output, the report.  Returns slotrun's exit status. */
static int wind_down(struct runner *r)
{
	int code = r->plane ? r->job_code : r->stopped_between ? 128 + r->stopped_between
							     : sup_exit_code(&r->sup);

	/* the last words to the other nodes before anything of ours */
	plane_close(r->plane);
	r->plane = NULL;
	attempt_end(r);
	live_end(r, code);
	/* A stopping job's output has the grace to get out; a clean one's
	 * waits for its reader (a stop signal ends that wait too). */
	console_drain(&r->cons, r->base, code == 0 ? -1 : r->cfg->grace > 1 ? r->cfg->grace : 1);
	if (r->ever_started)
		report_print(r, code);
	console_drain(&r->cons, r->base, 1);
	return code;
}

static void teardown(struct runner *r)
{
	live_close(r);
	plane_close(r->plane);
	session_close(r->session);
	oom_close(&r->oom);
	diag_free(r->diag);
	for (int i = 0; i < RUNNER_NSIGNALS; i++)
		if (r->sigev[i])
			event_free(r->sigev[i]);
	if (r->timer)
		event_free(r->timer);
	if (r->backoff)
		event_free(r->backoff);
	if (r->hang_check)
		event_free(r->hang_check);
	if (r->leftovers)
		event_free(r->leftovers);
	for (int i = 0; r->w && i < r->n; i++)
		free(r->w[i].diag);
	console_free(&r->cons);
	rank_reports_close(&r->reports);
	if (r->base)
		event_base_free(r->base);
	free(r->w);
	free(r->fate);
	free(r->code);
	free(r->active);
	free(r->history);
	free(r->rounds);
}

int runner_run(const struct runner_cfg *c)
{
	struct runner r = { .cfg = c, .n = c->plan->nslots, .self = getpid() };
	sigset_t orig, block;
	int code = 1;

	r.t0 = clock_mono();
	prepare_process(&orig);
	r.orig_mask = orig;
	if (setup_loop(&r) < 0 || (code = live_open(&r)) != 0)
		goto out;
	if ((code = begin(&r)) != 0)
		goto out;
	sigprocmask(SIG_SETMASK, &orig, NULL);
	/* Unblock everything we handle even if our parent blocked it. */
	handled_set(&block);
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	/* (every worker may have failed to start already: the loop would
	 * miss a break that came before it) */
	if (!r.finished)
		event_base_dispatch(r.base);
	code = wind_down(&r);
out:
	teardown(&r);
	return code;
}
