// SPDX-License-Identifier: MIT
#include "sample.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {
	[SAMPLE_GONE] = "gone", [SAMPLE_ZOMBIE] = "zombie", [SAMPLE_SLEEPING] = "sleeping",
	[SAMPLE_STOPPED] = "stopped", [SAMPLE_DISK] = "uninterruptible", [SAMPLE_RUNNING] = "running",
};

const char *sample_state_name(enum sample_state s)
{
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "gone";
}

int sample_state_parse(const char *name, enum sample_state *s)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0) {
			*s = (enum sample_state)i;
			return 0;
		}
	return -EINVAL;
}

enum sample_state sample_state_of(char letter)
{
	switch (letter) {
	case 'R': case 'W': return SAMPLE_RUNNING;
	case 'D': return SAMPLE_DISK;
	case 'T': case 't': return SAMPLE_STOPPED;
	case 'Z': case 'X': return SAMPLE_ZOMBIE;
	default: return SAMPLE_SLEEPING;
	}
}

/* The next space-separated decimal field after *p: 0 with *v set and *p
 * past it, or -EINVAL. */
static int field(const char **p, long long *v)
{
	char *end;

	if (**p != ' ')
		return -EINVAL;
	(*p)++;
	errno = 0;
	*v = strtoll(*p, &end, 10);
	if (end == *p || errno || (*end != ' ' && *end != '\n' && *end != '\0'))
		return -EINVAL;
	*p = end;
	return 0;
}

int sample_parse_stat(const char *text, struct sample_proc *p)
{
	/* fields 4..24 of proc(5), after the state (3) */
	long long f[25];
	const char *close = strrchr(text, ')'), *q;
	char *end;
	long pid;

	errno = 0;
	pid = strtol(text, &end, 10);
	if (!close || end == text || errno || pid <= 0 || *end != ' ' || end[1] != '(' || close[1] != ' ' ||
	    !close[2] || close[2] == ' ')
		return -EINVAL;
	q = close + 3;
	for (int k = 4; k <= 24; k++)
		if (field(&q, &f[k]) < 0)
			return -EINVAL;
	if (f[14] < 0 || f[15] < 0 || f[16] < 0 || f[17] < 0)
		return -EINVAL;
	*p = (struct sample_proc){
		.pid = (pid_t)pid, .ppid = (pid_t)f[4], .state = close[2],
		.cpu_ticks = (unsigned long long)(f[14] + f[15] + f[16] + f[17]),
		.threads = (long)f[20], .rss_pages = f[24],
	};
	return 0;
}

static int by_parent(const void *a, const void *b)
{
	pid_t x = ((const struct sample_proc *)a)->ppid, y = ((const struct sample_proc *)b)->ppid;

	return (x > y) - (x < y);
}

void sample_sort(struct sample_proc *procs, int n)
{
	if (n > 1)
		qsort(procs, (size_t)n, sizeof(*procs), by_parent);
}

/* The first of procs (sorted by parent) whose parent is ppid. */
static int first_child(const struct sample_proc *procs, int n, pid_t ppid)
{
	int lo = 0, hi = n;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (procs[mid].ppid < ppid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void add(struct sample_rank *out, const struct sample_proc *p, long page_size)
{
	enum sample_state s = sample_state_of(p->state);

	out->procs++;
	out->cpu_ticks += p->cpu_ticks;
	if (p->rss_pages > 0)
		out->rss_bytes += (unsigned long long)p->rss_pages * (unsigned long long)page_size;
	if (p->threads > 0 && s != SAMPLE_ZOMBIE)
		out->threads += p->threads;
	if (s > out->state)
		out->state = s;
}

/* Marks in skip[] the command's ancestors among the found processes (the
 * guard, between the worker and the command): found[k]'s parent is
 * parents[k]. */
static void mark_chain(const pid_t *pids, const pid_t *parents, int count, pid_t cmd, bool *skip)
{
	pid_t at = cmd;

	for (int steps = 0; steps < count; steps++) {
		int k;

		for (k = 0; k < count && pids[k] != at; k++)
			;
		if (k == count)
			return;
		if (at != cmd)
			skip[k] = true;
		at = parents[k];
	}
}

void sample_fold(const struct sample_proc *procs, int n, pid_t worker, pid_t cmd, bool wrapped, long page_size,
		 struct sample_rank *out)
{
	/* the worker's descendants, parents before children (a recycled pid
	 * that makes a loop of parents is never reached from the worker) */
	size_t cap = (size_t)n + 1;
	const struct sample_proc **found = malloc(cap * sizeof(*found));
	pid_t *pids = malloc(cap * sizeof(*pids)), *parents = malloc(cap * sizeof(*parents));
	bool *skip = calloc(cap, sizeof(*skip)), cmd_found = false;
	int count = 0;

	*out = (struct sample_rank){ .pid = cmd > 0 ? cmd : worker, .state = SAMPLE_GONE };
	if (!found || !pids || !parents || !skip || worker <= 0)
		goto out;
	for (int i = -1; i < count; i++) {
		pid_t parent = i < 0 ? worker : found[i]->pid;

		for (int k = first_child(procs, n, parent); k < n && procs[k].ppid == parent && count < n; k++)
			if (procs[k].pid != worker) {
				found[count] = &procs[k];
				pids[count] = procs[k].pid;
				parents[count++] = parent;
				cmd_found = cmd_found || procs[k].pid == cmd;
			}
	}
	if (!wrapped) {
		for (int k = 0; k < n; k++)
			if (procs[k].pid == worker) {
				add(out, &procs[k], page_size);
				break;
			}
	} else if (cmd_found) {
		mark_chain(pids, parents, count, cmd, skip);
	} else {
		for (int k = 0; k < count; k++) /* the guard, the command unknown or gone */
			skip[k] = parents[k] == worker;
	}
	for (int k = 0; k < count; k++)
		if (!skip[k])
			add(out, found[k], page_size);
out:
	free(found);
	free(pids);
	free(parents);
	free(skip);
}

double sample_cpu_pct(unsigned long long prev, unsigned long long cur, double dt, long hz)
{
	if (dt <= 0 || hz <= 0)
		return -1;
	if (cur <= prev)
		return 0;
	return (double)(cur - prev) / (double)hz / dt * 100.0;
}
