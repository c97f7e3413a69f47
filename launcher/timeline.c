// SPDX-License-Identifier: MIT
#include "timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io.h"

static struct {
	char *path;
	struct tl_event *ev;
	int n, cap;
	long dropped;
	char **hosts;
	int nhosts;
} tl;

int timeline_open(const char *path)
{
	timeline_close();
	if (!(tl.path = strdup(path)))
		return -ENOMEM;
	return 0;
}

bool timeline_on(void)
{
	return tl.path != NULL;
}

int64_t timeline_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void timeline_add(const struct tl_event *e)
{
	if (!tl.path)
		return;
	if (tl.n == tl.cap) {
		int cap = tl.cap ? tl.cap * 2 : 256;
		struct tl_event *m;

		if (cap > TL_MAX_EVENTS)
			cap = TL_MAX_EVENTS;
		if (tl.n >= cap || !(m = realloc(tl.ev, (size_t)cap * sizeof(*m)))) {
			tl.dropped++;
			return;
		}
		tl.ev = m;
		tl.cap = cap;
	}
	tl.ev[tl.n++] = *e;
}

static void (*forward)(void *arg, const struct tl_event *e);
static void *forward_arg;

void timeline_forward(void (*fn)(void *arg, const struct tl_event *e), void *arg)
{
	forward = fn;
	forward_arg = arg;
}

void timeline_event(enum tl_kind kind, int node, int rank, int64_t wall_us, const struct tl_args *args)
{
	struct tl_event e = { .kind = kind, .node = node, .rank = rank, .wall_us = wall_us,
			      .a = { .code = -1 } };

	if (!timeline_on())
		return;
	if (args)
		e.a = *args;
	timeline_add(&e);
	if (forward)
		forward(forward_arg, &e);
}

int timeline_events(const struct tl_event **ev)
{
	*ev = tl.ev;
	return tl.n;
}

void timeline_host(int node, const char *host)
{
	char **m;

	if (!tl.path || node < 0 || node > 1 << 20)
		return;
	if (node >= tl.nhosts) {
		if (!(m = realloc(tl.hosts, ((size_t)node + 1) * sizeof(*m))))
			return;
		memset(m + tl.nhosts, 0, ((size_t)node + 1 - (size_t)tl.nhosts) * sizeof(*m));
		tl.hosts = m;
		tl.nhosts = node + 1;
	}
	free(tl.hosts[node]);
	tl.hosts[node] = host ? strdup(host) : NULL;
}

int timeline_write(void)
{
	char *text;
	int e;

	if (!tl.path)
		return 0;
	if (!(text = tl_encode(tl.ev, tl.n, tl.hosts, tl.nhosts)))
		return -ENOMEM;
	e = io_replace_file(tl.path, text, strlen(text), 0644);
	free(text);
	return e;
}

void timeline_close(void)
{
	for (int i = 0; i < tl.nhosts; i++)
		free(tl.hosts[i]);
	free(tl.hosts);
	free(tl.ev);
	free(tl.path);
	memset(&tl, 0, sizeof(tl));
	forward = NULL;
	forward_arg = NULL;
}
