// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>

#include "supervisor.h"
#include "leak_check.h"

#define N 4
static struct sup s;
static enum sup_worker_fate fate[N];
static int code[N];

static void setup(void)
{
	sup_init(&s, N, fate, code);
}

/* Exits one second apart unless a test says when: outside the root-cause
 * window, so only the first failure counts. */
static double clock_s;

static struct sup_actions ev_exit(int w, int c)
{
	struct sup_event e = { .type = SUP_EV_EXIT, .worker = w, .code = c, .t = clock_s += 1.0 };
	return sup_step(&s, &e);
}

static struct sup_actions ev_exit_at(int w, int c, double t)
{
	struct sup_event e = { .type = SUP_EV_EXIT, .worker = w, .code = c, .t = t };
	return sup_step(&s, &e);
}

static struct sup_actions ev_sig(int sig)
{
	struct sup_event e = { .type = SUP_EV_SIGNAL, .sig = sig };
	return sup_step(&s, &e);
}

static struct sup_actions ev(enum sup_event_type t)
{
	struct sup_event e = { .type = t };
	return sup_step(&s, &e);
}

TestSuite(supervisor, .init = setup);

LEAK_TEST(supervisor, all_succeed_then_sweep_then_done)
{
	struct sup_actions a;

	for (int i = 0; i < N - 1; i++) {
		a = ev_exit(i, 0);
		cr_assert_eq(a.signal_workers, 0);
		cr_assert_eq(s.state, SUP_RUNNING);
	}
	a = ev_exit(N - 1, 0);
	cr_assert_eq(s.state, SUP_SWEEP);
	cr_assert(a.check_strays);
	cr_assert_eq(a.signal_strays, SIGTERM);
	cr_assert(a.arm_timer, "leftover strays get the grace period");
	a = ev(SUP_EV_STRAYS_GONE);
	cr_assert(a.done);
	cr_assert_eq(sup_exit_code(&s), 0);
}

LEAK_TEST(supervisor, first_failure_stops_the_rest_with_its_code)
{
	struct sup_actions a;

	ev_exit(0, 0);
	a = ev_exit(2, 3);
	cr_assert_eq(s.state, SUP_STOPPING);
	cr_assert_eq(a.signal_workers, SIGTERM);
	cr_assert(a.arm_timer);
	cr_assert_eq(s.root_cause, 2);
	/* later failures are consequences, not causes */
	a = ev_exit(1, 143);
	cr_assert_eq(a.signal_workers, 0);
	cr_assert_eq(fate[1], SUP_W_STOPPED);
	cr_assert_eq(fate[0], SUP_W_EXITED);
	a = ev_exit(3, 137);
	cr_assert_eq(s.state, SUP_SWEEP);
	cr_assert(!a.arm_timer, "the stop's grace keeps running");
	ev(SUP_EV_STRAYS_GONE);
	cr_assert_eq(sup_exit_code(&s), 3);
}

LEAK_TEST(supervisor, grace_expiry_escalates_to_kill)
{
	struct sup_actions a;

	ev_exit(1, 1);
	a = ev(SUP_EV_TIMER);
	cr_assert_eq(s.state, SUP_KILLING);
	cr_assert_eq(a.signal_workers, SIGKILL);
	cr_assert_eq(a.signal_strays, SIGKILL);
	ev_exit(0, 137);
	ev_exit(2, 137);
	a = ev_exit(3, 137);
	cr_assert_eq(s.state, SUP_SWEEP);
	cr_assert_eq(a.signal_strays, SIGKILL);
	cr_assert(ev(SUP_EV_STRAYS_GONE).done);
	cr_assert_eq(sup_exit_code(&s), 1);
}

LEAK_TEST(supervisor, sigterm_forwards_and_exits_143)
{
	struct sup_actions a = ev_sig(SIGTERM);

	cr_assert_eq(a.signal_workers, SIGTERM);
	cr_assert(a.arm_timer);
	cr_assert_eq(s.state, SUP_STOPPING);
	for (int i = 0; i < N; i++)
		ev_exit(i, 0);
	cr_assert(ev(SUP_EV_STRAYS_GONE).done);
	cr_assert_eq(sup_exit_code(&s), 143, "told to stop: 128+SIGTERM even if workers exit 0");
}

LEAK_TEST(supervisor, second_sigint_escalates_at_once)
{
	struct sup_actions a = ev_sig(SIGINT);

	cr_assert_eq(a.signal_workers, SIGINT);
	a = ev_sig(SIGINT);
	cr_assert_eq(a.signal_workers, SIGKILL);
	cr_assert_eq(s.state, SUP_KILLING);
	for (int i = 0; i < N; i++)
		ev_exit(i, 130);
	ev(SUP_EV_STRAYS_GONE);
	cr_assert_eq(sup_exit_code(&s), 130);
}

LEAK_TEST(supervisor, preemption_signals_only_forwarded)
{
	int sigs[] = { SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sup_actions a = ev_sig(sigs[i]);
		cr_assert_eq(a.signal_workers, sigs[i]);
		cr_assert(!a.arm_timer);
		cr_assert_eq(s.state, SUP_RUNNING);
	}
	for (int i = 0; i < N; i++)
		ev_exit(i, 0);
	ev(SUP_EV_STRAYS_GONE);
	cr_assert_eq(sup_exit_code(&s), 0);
}

/* A session's end: SIGHUP, which alone is only forwarded, stops the job. */
LEAK_TEST(supervisor, stop_signal_stops_with_a_forwarded_signal)
{
	struct sup_event e = { .type = SUP_EV_STOP_SIGNAL, .sig = SIGHUP };
	struct sup_actions a = sup_step(&s, &e);

	cr_assert_eq(a.signal_workers, SIGHUP);
	cr_assert(a.arm_timer);
	cr_assert_eq(s.state, SUP_STOPPING);
	a = ev(SUP_EV_TIMER);
	cr_assert_eq(a.signal_workers, SIGKILL);
	for (int i = 0; i < N; i++)
		ev_exit(i, 129);
	ev(SUP_EV_STRAYS_GONE);
	cr_assert_eq(sup_exit_code(&s), 129);
}

LEAK_TEST(supervisor, failure_before_sigterm_keeps_root_cause)
{
	ev_exit(3, 2);
	ev_sig(SIGTERM);
	for (int i = 0; i < 3; i++)
		ev_exit(i, 143);
	ev(SUP_EV_STRAYS_GONE);
	cr_assert_eq(sup_exit_code(&s), 2);
}

LEAK_TEST(supervisor, strays_escalate_after_grace_then_rescan_until_gone)
{
	struct sup_actions a;

	for (int i = 0; i < N; i++)
		ev_exit(i, 0);
	a = ev(SUP_EV_TIMER);
	cr_assert_eq(a.signal_strays, SIGKILL);
	cr_assert(a.check_strays);
	cr_assert(a.arm_rescan, "a stray may fork between the walk and its kill");
	a = ev(SUP_EV_TIMER);
	cr_assert_eq(a.signal_strays, SIGKILL, "the rescan kills what appeared since");
	cr_assert(a.arm_rescan);
	cr_assert(ev(SUP_EV_STRAYS_GONE).done);
	cr_assert_eq(sup_exit_code(&s), 0);
}

LEAK_TEST(supervisor, first_sigint_during_a_failure_stop_is_forwarded)
{
	struct sup_actions a;

	ev_exit(0, 1);
	a = ev_sig(SIGINT);
	cr_assert_eq(a.signal_workers, SIGINT, "only the second SIGINT escalates");
	cr_assert_eq(s.state, SUP_STOPPING);
	a = ev_sig(SIGINT);
	cr_assert_eq(a.signal_workers, SIGKILL);
	for (int i = 1; i < N; i++)
		ev_exit(i, 137);
	ev(SUP_EV_STRAYS_GONE);
	cr_assert_eq(sup_exit_code(&s), 1, "the failure stays the root cause");
}

LEAK_TEST(supervisor, sigterm_while_sweeping_strays_stops_them)
{
	struct sup_actions a;

	for (int i = 0; i < N; i++)
		ev_exit(i, 0);
	a = ev_sig(SIGTERM);
	cr_assert_eq(a.signal_strays, SIGKILL);
	cr_assert(a.arm_rescan);
	cr_assert(ev(SUP_EV_STRAYS_GONE).done);
	cr_assert_eq(sup_exit_code(&s), 143);
}

LEAK_TEST(supervisor, duplicate_and_unknown_exits_ignored)
{
	ev_exit(0, 0);
	ev_exit(0, 1);
	ev_exit(-1, 1);
	ev_exit(N, 1);
	cr_assert_eq(s.live, N - 1);
	cr_assert_eq(s.state, SUP_RUNNING);
	cr_assert_eq(code[0], 0);
}

LEAK_TEST(supervisor, strays_gone_outside_sweep_is_ignored)
{
	cr_assert(!ev(SUP_EV_STRAYS_GONE).done);
	cr_assert_eq(s.state, SUP_RUNNING);
}

LEAK_TEST(supervisor, signal_death_code_is_root_cause)
{
	ev_exit(1, 128 + SIGSEGV);
	for (int i = 0; i < N; i++)
		ev_exit(i, 143);
	ev(SUP_EV_STRAYS_GONE);
	cr_assert_eq(sup_exit_code(&s), 139);
}

LEAK_TEST(supervisor, a_crash_beats_its_peers_errors_reaped_just_before_it)
{
	ev_exit_at(0, 1, 1.00);            /* peer: "connection closed", reaped first */
	ev_exit_at(2, 128 + SIGKILL, 1.01); /* the rank that was killed */
	cr_assert_eq(s.root_cause, 2);
	ev_exit_at(1, 143, 1.02);           /* our SIGTERM: never a root cause */
	ev_exit_at(3, 128 + SIGSEGV, 1.03); /* a later crash does not displace the first */
	ev(SUP_EV_STRAYS_GONE);
	cr_assert_eq(sup_exit_code(&s), 137);
	cr_assert_eq(fate[2], SUP_W_EXITED);
}

LEAK_TEST(supervisor, a_late_crash_or_our_own_signal_does_not_replace_the_root)
{
	ev_exit_at(0, 1, 1.00);
	ev_exit_at(1, 128 + SIGTERM, 1.01); /* we sent SIGTERM */
	ev_exit_at(2, 128 + SIGSEGV, 1.00 + SUP_ROOT_WINDOW + 0.1); /* too late */
	cr_assert_eq(s.root_cause, 0);
	ev_exit_at(3, 0, 1.5);
	ev(SUP_EV_STRAYS_GONE);
	cr_assert_eq(sup_exit_code(&s), 1);
}

LEAK_TEST(supervisor, a_stop_from_the_job_plane_stops_without_a_local_root_cause)
{
	struct sup_actions a = ev(SUP_EV_STOP);

	cr_assert_eq(s.state, SUP_STOPPING);
	cr_assert_eq(a.signal_workers, SIGTERM);
	cr_assert(a.arm_timer);
	cr_assert_eq(s.root_cause, -1);
	/* the workers' deaths by our TERM are consequences, not causes */
	ev_exit(0, 143);
	cr_assert_eq(s.root_cause, -1);
	cr_assert_eq(fate[0], SUP_W_STOPPED);
	a = ev(SUP_EV_STOP);
	cr_assert_eq(a.signal_workers, 0, "a second stop changes nothing");
	cr_assert(!a.arm_timer);
	cr_assert(ev(SUP_EV_TIMER).signal_workers == SIGKILL, "the grace still escalates");
}

LEAK_TEST(supervisor, a_stop_from_the_job_plane_after_our_failure_keeps_our_root_cause)
{
	struct sup_actions a;

	ev_exit(1, 4);
	a = ev(SUP_EV_STOP);
	cr_assert_eq(a.signal_workers, 0);
	cr_assert_eq(s.root_cause, 1);
}

LEAK_TEST(supervisor, a_hung_worker_is_the_root_cause_with_124)
{
	struct sup_actions a;
	struct sup_event hang = { .type = SUP_EV_HANG, .worker = 2, .t = 5.0 };

	a = sup_step(&s, &hang);
	cr_assert_eq(s.state, SUP_STOPPING);
	cr_assert_eq(a.signal_workers, SIGTERM);
	cr_assert(a.arm_timer);
	cr_assert_eq(s.root_cause, 2);
	ev_exit(2, 143);
	cr_assert_eq(code[2], SUP_HANG_CODE, "our TERM does not replace the hang");
	cr_assert_eq(fate[2], SUP_W_HUNG, "killed by slotrun for the hang, not on its own");
	ev_exit(0, 143);
	ev_exit(1, 143);
	a = ev_exit(3, 143);
	cr_assert_eq(s.state, SUP_SWEEP);
	ev(SUP_EV_STRAYS_GONE);
	cr_assert_eq(sup_exit_code(&s), SUP_HANG_CODE);
	a = sup_step(&s, &hang);
	cr_assert_eq(a.signal_workers, 0, "too late for another");
}

LEAK_TEST(supervisor, a_hang_after_a_failure_changes_nothing)
{
	struct sup_event hang = { .type = SUP_EV_HANG, .worker = 2, .t = 5.0 };

	ev_exit(1, 3);
	cr_assert_eq(sup_step(&s, &hang).signal_workers, 0);
	cr_assert_eq(s.root_cause, 1);
}

/* A crash by a signal slotrun forwarded is not a root cause of its own,
 * whichever signal it was. */
LEAK_TEST(supervisor, a_death_by_any_signal_we_forwarded_does_not_replace_the_root)
{
	for (int sig = 1; sig <= SUP_SIG_MAX; sig++) {
		sup_init(&s, N, fate, code);
		ev_exit_at(0, 1, 1.00);
		ev_sig(sig);
		ev_exit_at(1, 128 + sig, 1.01);
		cr_assert_eq(s.root_cause, 0, "signal %d", sig);
	}
}

/* Numbers no signal has (another node may name any) are forwarded as they
 * are and recorded nowhere. */
LEAK_TEST(supervisor, signal_numbers_out_of_range_leave_no_trace)
{
	static const int bad[] = { INT_MIN, -1, 0, SUP_SIG_MAX + 1, 100, 1000, INT_MAX };

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		uint64_t before;

		sup_init(&s, N, fate, code);
		ev_exit_at(0, 1, 1.00);
		before = s.sent;
		ev_sig(bad[k]);
		cr_assert_eq(s.sent, before, "signal %d", bad[k]);
		ev_exit_at(1, 128 + SIGSEGV, 1.01);
		cr_assert_eq(s.root_cause, 1, "a crash we did not cause still counts (after %d)", bad[k]);
	}
}
