// SPDX-License-Identifier: MIT
/* The ranks' processes sampled from /proc on the runner's loop: one walk
 * over /proc per sample (sample.h parses and folds), every interval
 * seconds, but only while something consumes the samples.  A holder
 * (--metrics-port, --metrics-file, --timeline) keeps it sampling for the
 * job's life; a passing consumer (a `slotrun status` client) for a while
 * after each request.  Unused, it has no timer and reads nothing. */
#ifndef SLOTRUN_SAMPLER_H
#define SLOTRUN_SAMPLER_H

#include <stdbool.h>
#include <sys/types.h>

#include "sample.h"

struct event_base;

/* Where rank i's processes are, asked at each sample. */
struct sampler_root {
	pid_t worker;        /* the worker's pid, <= 0: none runs */
	pid_t cmd;           /* its command's, 0: not known */
	bool wrapped;        /* the worker is wrap_rank (sample_fold) */
};

/* Rank i as last sampled. */
struct sampler_rank {
	struct sample_rank now;
	double cpu_pct;              /* between the last two samples, < 0: unknown */
	double cpu_s;                /* every attempt's, never going back */
	double state_since;          /* clock_mono() when it entered now.state */
	unsigned long long base;     /* ticks of the attempts before this one */
};

struct sampler_hooks {
	void (*root)(void *arg, int i, struct sampler_root *out);
	/* after each sample */
	void (*sampled)(void *arg);
};

struct sampler {
	struct event_base *base;
	struct event *tick;
	double interval;
	int n;
	int holds;                   /* holders */
	double wanted_until;         /* clock_mono(): passing consumers until then */
	double at, prev_at;          /* when the last two samples were taken, 0: none */
	struct sampler_rank *ranks;
	const struct sampler_hooks *hooks;
	void *arg;
	long hz, page;
	struct sample_proc *procs;   /* the walk's buffer */
	int cap;
};

/* n ranks, sampled every interval seconds while wanted.  Returns 0 or
 * -ENOMEM. */
int sampler_open(struct sampler *s, struct event_base *base, int n, double interval,
		 const struct sampler_hooks *hooks, void *arg);

/* A holder: sampling goes on until sampler_close; a first sample is
 * taken now if none was taken yet. */
void sampler_hold(struct sampler *s);

/* A passing consumer: sampling goes on for `seconds` more. */
void sampler_want(struct sampler *s, double seconds);

/* Takes a sample now (the timer keeps its beat). */
void sampler_take(struct sampler *s);

/* Whether the last sample is younger than max_age seconds and has one
 * before it (so CPU use is known). */
bool sampler_fresh(const struct sampler *s, double max_age);

/* A new attempt: each rank's CPU so far becomes the base of the next. */
void sampler_next_attempt(struct sampler *s);

void sampler_close(struct sampler *s);

#endif
