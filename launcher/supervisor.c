// SPDX-License-Identifier: MIT
#include "supervisor.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

void sup_init(struct sup *s, int nworkers, enum sup_worker_fate *fate, int *code)
{
	*s = (struct sup){
		.state = SUP_RUNNING,
		.nworkers = nworkers,
		.live = nworkers,
		.root_cause = -1,
		.hung = -1,
		.fate = fate,
		.code = code,
	};
	for (int i = 0; i < nworkers; i++) {
		fate[i] = SUP_W_RUNNING;
		code[i] = -1;
	}
}

/* Entered when the last worker is reaped: whatever is left is a stray and
 * gets the signal the job is at (nothing yet on a clean finish: TERM). */
static struct sup_actions enter_sweep(struct sup *s, struct sup_actions a)
{
	bool was_running = s->state == SUP_RUNNING;

	s->state = SUP_SWEEP;
	s->stray_signal = s->escalated ? SIGKILL : SIGTERM;
	a.signal_strays = s->stray_signal;
	a.check_strays = true;
	if (was_running)
		a.arm_timer = true; /* a clean finish starts the strays' grace now */
	else if (s->escalated)
		a.arm_rescan = true;
	return a;
}

/* The job begins to stop: SIGTERM to every worker, the grace armed. */
static struct sup_actions begin_stop(struct sup *s, struct sup_actions a)
{
	s->state = SUP_STOPPING;
	a.signal_workers = SIGTERM;
	a.arm_timer = true;
	return a;
}

static struct sup_actions escalate(struct sup *s, struct sup_actions a)
{
	s->escalated = true;
	if (s->state == SUP_SWEEP) {
		s->stray_signal = SIGKILL;
		a.signal_strays = SIGKILL;
		a.check_strays = true;
		a.arm_rescan = true;
		return a;
	}
	s->state = SUP_KILLING;
	a.signal_workers = SIGKILL;
	a.signal_strays = SIGKILL;
	return a;
}

/* signal sig's bit in s->sent; 0 for a number outside 1..SUP_SIG_MAX (a
 * signal named by another node, a status that is no signal's). */
static uint64_t sig_bit(int sig)
{
	return sig >= 1 && sig <= SUP_SIG_MAX ? UINT64_C(1) << (sig - 1) : 0;
}

static bool crash_beats_root(const struct sup *s, int code, double t)
{
	int sig = status_code_signal(code), root_code;

	if (s->root_cause < 0 || s->state != SUP_STOPPING || !sig)
		return false;
	root_code = s->code[s->root_cause];
	return !status_code_signal(root_code) && !(s->sent & sig_bit(sig)) &&
	       t - s->root_time <= SUP_ROOT_WINDOW;
}

static struct sup_actions worker_exited(struct sup *s, int w, int code, double t)
{
	struct sup_actions a = { 0 };

	if (w < 0 || w >= s->nworkers || s->fate[w] != SUP_W_RUNNING)
		return a;
	if (w == s->hung) { /* its status is the hang's, not our TERM's */
		s->fate[w] = SUP_W_HUNG;
		if (--s->live == 0)
			a = enter_sweep(s, a);
		return a;
	}
	s->code[w] = code;
	s->fate[w] = s->state == SUP_RUNNING ? SUP_W_EXITED : SUP_W_STOPPED;
	s->live--;
	if (s->state == SUP_RUNNING && code != 0) {
		s->root_cause = w;
		s->root_time = t;
		a = begin_stop(s, a);
	} else if (crash_beats_root(s, code, t)) {
		s->fate[w] = SUP_W_EXITED;
		s->root_cause = w;
	}
	if (s->live == 0)
		a = enter_sweep(s, a);
	return a;
}

static struct sup_actions on_signal(struct sup *s, int sig, bool stops)
{
	struct sup_actions a = { 0 };

	if (sig == SIGINT)
		s->sigints++;
	s->told_stop = s->told_stop || stops;
	switch (s->state) {
	case SUP_RUNNING:
		a.signal_workers = sig;
		if (stops) {
			s->stop_signal = sig;
			s->state = SUP_STOPPING;
			a.arm_timer = true;
		}
		return a;
	case SUP_STOPPING:
		if (sig == SIGINT && s->sigints >= 2)
			return escalate(s, a);
		if (stops && !s->stop_signal && s->root_cause < 0)
			s->stop_signal = sig;
		a.signal_workers = sig;
		return a;
	case SUP_SWEEP:
		/* Only strays are left: told to stop, stop them now. */
		if (stops && !s->stop_signal && s->root_cause < 0)
			s->stop_signal = sig;
		if (stops && !s->escalated)
			return escalate(s, a);
		return a;
	default:
		return a;
	}
}

static struct sup_actions step(struct sup *s, const struct sup_event *ev)
{
	struct sup_actions none = { 0 };

	switch (ev->type) {
	case SUP_EV_EXIT:
		return worker_exited(s, ev->worker, ev->code, ev->t);
	case SUP_EV_SIGNAL:
		return on_signal(s, ev->sig, ev->sig == SIGTERM || ev->sig == SIGINT);
	case SUP_EV_STOP_SIGNAL:
		return on_signal(s, ev->sig, true);
	case SUP_EV_TIMER:
		if ((s->state == SUP_STOPPING || s->state == SUP_SWEEP) && !s->escalated)
			return escalate(s, none);
		if (s->state == SUP_SWEEP) { /* the rescan timer */
			none.signal_strays = SIGKILL;
			none.check_strays = true;
			none.arm_rescan = true;
		}
		return none;
	case SUP_EV_HANG:
		if (s->state != SUP_RUNNING || ev->worker < 0 || ev->worker >= s->nworkers ||
		    s->fate[ev->worker] != SUP_W_RUNNING)
			return none;
		s->hung = s->root_cause = ev->worker;
		s->code[ev->worker] = SUP_HANG_CODE;
		s->root_time = ev->t;
		return begin_stop(s, none);
	case SUP_EV_STOP:
		/* Like a first failure, but not ours: no root cause here. */
		return s->state == SUP_RUNNING ? begin_stop(s, none) : none;
	case SUP_EV_STRAYS_GONE:
		if (s->state != SUP_SWEEP)
			return none;
		s->state = SUP_DONE;
		none.done = true;
		return none;
	}
	return none;
}

struct sup_actions sup_step(struct sup *s, const struct sup_event *ev)
{
	struct sup_actions a = step(s, ev);

	s->sent |= sig_bit(a.signal_workers);
	if (a.signal_workers == SIGTERM)
		s->sent |= sig_bit(SIGCONT);
	return a;
}

bool sup_unsent_kill(const struct sup *s, int code)
{
	return status_code_signal(code) == SIGKILL && !(s->sent & sig_bit(SIGKILL));
}

int sup_exit_code(const struct sup *s)
{
	if (s->root_cause >= 0)
		return s->code[s->root_cause];
	if (s->stop_signal)
		return 128 + s->stop_signal;
	for (int i = 0; i < s->nworkers; i++)
		if (s->code[i] != 0)
			return s->code[i] < 0 ? 1 : s->code[i];
	return 0;
}
