// SPDX-License-Identifier: MIT
#include "sampler.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "procs.h"

static void on_tick(evutil_socket_t fd, short what, void *arg);

int sampler_open(struct sampler *s, struct event_base *base, int n, double interval,
		 const struct sampler_hooks *hooks, void *arg)
{
	*s = (struct sampler){ .base = base, .interval = interval, .n = n, .hooks = hooks, .arg = arg,
			       .hz = sysconf(_SC_CLK_TCK), .page = sysconf(_SC_PAGESIZE) };
	s->ranks = calloc(n > 0 ? (size_t)n : 1, sizeof(*s->ranks));
	s->tick = event_new(base, -1, EV_PERSIST, on_tick, s);
	if (!s->ranks || !s->tick) {
		sampler_close(s);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		s->ranks[i].cpu_pct = -1;
	return 0;
}

/* Every process in /proc, parsed, into s->procs.  Returns how many. */
static int walk(struct sampler *s)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	char text[1024];
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct sample_proc p;

		if (!isdigit((unsigned char)de->d_name[0]) ||
		    procs_read((pid_t)atoi(de->d_name), "stat", text, sizeof(text)) <= 0 ||
		    sample_parse_stat(text, &p) < 0)
			continue;
		if (n == s->cap) {
			int cap = s->cap ? s->cap * 2 : 512;
			struct sample_proc *m = realloc(s->procs, (size_t)cap * sizeof(*m));

			if (!m)
				break;
			s->procs = m;
			s->cap = cap;
		}
		s->procs[n++] = p;
	}
	closedir(d);
	return n;
}

static void update(struct sampler *s, int i, const struct sample_rank *now, double t, double dt)
{
	struct sampler_rank *r = &s->ranks[i];
	double total = (double)(r->base + now->cpu_ticks) / (double)(s->hz > 0 ? s->hz : 100);

	r->cpu_pct = r->now.procs && now->procs ? sample_cpu_pct(r->now.cpu_ticks, now->cpu_ticks, dt, s->hz) : -1;
	if (total > r->cpu_s)
		r->cpu_s = total;
	if (now->state != r->now.state || r->state_since == 0)
		r->state_since = t;
	r->now = *now;
}

void sampler_take(struct sampler *s)
{
	double t = clock_mono(), dt = s->at > 0 ? t - s->at : 0;
	int n = walk(s);

	sample_sort(s->procs, n);
	for (int i = 0; i < s->n; i++) {
		struct sampler_root root = { 0 };
		struct sample_rank now = { .state = SAMPLE_GONE };

		s->hooks->root(s->arg, i, &root);
		if (root.worker > 0)
			sample_fold(s->procs, n, root.worker, root.cmd, root.wrapped, s->page, &now);
		update(s, i, &now, t, dt);
	}
	s->prev_at = s->at;
	s->at = t;
	if (s->hooks->sampled)
		s->hooks->sampled(s->arg);
}

static void arm(struct sampler *s)
{
	struct timeval tv = clock_tv(s->interval);

	if (!event_pending(s->tick, EV_TIMEOUT, NULL))
		event_add(s->tick, &tv);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct sampler *s = arg;

	sampler_take(s);
	if (s->holds == 0 && clock_mono() >= s->wanted_until)
		event_del(s->tick); /* nobody looks: nothing more until asked */
}

void sampler_hold(struct sampler *s)
{
	s->holds++;
	if (s->at == 0)
		sampler_take(s);
	arm(s);
}

void sampler_want(struct sampler *s, double seconds)
{
	double until = clock_mono() + seconds;

	if (until > s->wanted_until)
		s->wanted_until = until;
	arm(s);
}

bool sampler_fresh(const struct sampler *s, double max_age)
{
	return s->at > 0 && s->prev_at > 0 && clock_mono() - s->at <= max_age;
}

void sampler_next_attempt(struct sampler *s)
{
	for (int i = 0; i < s->n; i++) {
		struct sampler_rank *r = &s->ranks[i];
		double hz = (double)(s->hz > 0 ? s->hz : 100);

		r->base = (unsigned long long)(r->cpu_s * hz + 0.5);
		r->now = (struct sample_rank){ .state = SAMPLE_GONE };
		r->cpu_pct = -1;
	}
}

void sampler_close(struct sampler *s)
{
	if (s->tick)
		event_free(s->tick);
	free(s->ranks);
	free(s->procs);
	*s = (struct sampler){ 0 };
}
