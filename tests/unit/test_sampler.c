// SPDX-License-Identifier: MIT
/* The sampler on a real loop over a real child: what it reads of the
 * child's processes, and that it samples only while someone wants it. */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "leak_check.h"
#include "sampler.h"

static pid_t child;
static int samples;

static void root(void *arg, int i, struct sampler_root *out)
{
	out->worker = child;
}

static void sampled(void *arg)
{
	samples++;
}

static const struct sampler_hooks hooks = { .root = root, .sampled = sampled };

/* A child that spins (busy) or sleeps. */
static pid_t spawn(bool busy)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (busy)
			for (volatile unsigned long k = 0;; k++)
				;
		pause();
		_exit(0);
	}
	return pid;
}

static void reap(void)
{
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

LEAK_TEST_OPTS(sampler, a_busy_child_runs_and_uses_a_cpu, .timeout = 20)
{
	struct event_base *base = event_base_new();
	struct sampler s;
	double t;

	child = spawn(true);
	samples = 0;
	cr_assert_eq(sampler_open(&s, base, 1, 1.0, &hooks, NULL), 0);
	cr_assert(!sampler_fresh(&s, 10), "nothing sampled yet");
	sampler_hold(&s);
	cr_assert_eq(samples, 1, "a first holder's first sample is taken at once");
	/* until it has had a CPU for a tick or more (a loaded machine may
	 * give it little) */
	for (t = clock_mono(); clock_mono() - t < 10 && !(s.ranks[0].cpu_pct > 0);) {
		usleep(50000);
		sampler_take(&s);
	}
	cr_assert(sampler_fresh(&s, 10));
	cr_assert_eq(s.ranks[0].now.pid, child);
	cr_assert_eq(s.ranks[0].now.procs, 1);
	cr_assert_gt(s.ranks[0].now.rss_bytes, 0);
	cr_assert_eq(s.ranks[0].now.threads, 1);
	cr_assert_gt(s.ranks[0].cpu_pct, 0, "it spins");
	cr_assert_gt(s.ranks[0].state_since, 0);
	reap();
	sampler_take(&s);
	cr_assert_eq(s.ranks[0].now.procs, 0, "gone");
	cr_assert_eq(s.ranks[0].now.state, SAMPLE_GONE);
	t = s.ranks[0].cpu_s;
	cr_assert_gt(t, 0, "its CPU time is kept after it is gone");
	sampler_next_attempt(&s);
	child = spawn(false);
	sampler_take(&s);
	cr_assert_geq(s.ranks[0].cpu_s, t, "a new attempt starts from the last one's total");
	/* the child runs from its fork to its pause(): sleeping once there */
	for (t = clock_mono(); clock_mono() - t < 10 && s.ranks[0].now.state != SAMPLE_SLEEPING;) {
		usleep(10000);
		sampler_take(&s);
	}
	cr_assert_eq(s.ranks[0].now.state, SAMPLE_SLEEPING);
	reap();
	sampler_close(&s);
	event_base_free(base);
}

LEAK_TEST_OPTS(sampler, nothing_runs_unless_wanted, .timeout = 20)
{
	struct event_base *base = event_base_new();
	struct sampler s;
	struct timeval tv = { 1, 0 };
	int before;

	child = spawn(false);
	samples = 0;
	cr_assert_eq(sampler_open(&s, base, 1, 0.1, &hooks, NULL), 0);
	cr_assert(!event_pending(s.tick, EV_TIMEOUT, NULL), "no timer until a consumer comes");
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
	cr_assert_eq(samples, 0, "nothing read in a second of nobody asking");

	sampler_want(&s, 0.35);
	cr_assert(event_pending(s.tick, EV_TIMEOUT, NULL));
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
	cr_assert(samples >= 1 && samples <= 6, "every 0.1 s while wanted (0.35 s): %d", samples);
	cr_assert(!event_pending(s.tick, EV_TIMEOUT, NULL), "the timer goes once nobody wants it");

	before = samples;
	sampler_hold(&s);
	cr_assert_eq(samples, before, "sampled before: nothing at once");
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
	cr_assert_geq(samples, before + 2, "a holder keeps it going past the want: %d", samples - before);
	cr_assert(event_pending(s.tick, EV_TIMEOUT, NULL));
	reap();
	sampler_close(&s);
	event_base_free(base);
}
