// SPDX-License-Identifier: MIT
#include "diag.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>

#include "clock.h"
#include "stacks.h"

/* The collection's own deadline comes this much before the loop's, so
 * that it has ended, with all it took, when the loop looks. */
#define DIAG_MARGIN 0.25

struct diag {
	struct event *ev_end, *deadline;
	struct stacks_job *job;    /* NULL once ended */
	int n;
	char **text;               /* per worker, once it has ended */
	void (*done)(void *arg);
	void *arg;
};

/* The collection is over: what it took, as each worker's text when
 * keep. */
static void end(struct diag *d, bool keep)
{
	struct stacks *s;

	if (d->ev_end)
		event_del(d->ev_end);
	if (d->deadline)
		evtimer_del(d->deadline);
	if (!d->job)
		return;
	s = stacks_end(d->job);
	d->job = NULL;
	for (int i = 0; keep && s && i < d->n; i++) {
		struct stacks_text_opts o = { .root = i, .max_threads = DIAG_THREADS, .max_frames = DIAG_FRAMES };

		d->text[i] = stacks_text(s, &o);
		if (d->text[i] && !d->text[i][0]) { /* nothing of it */
			free(d->text[i]);
			d->text[i] = NULL;
		}
	}
	stacks_free(s);
}

static void finish(struct diag *d)
{
	end(d, true);
	d->done(d->arg); /* last: it may free d */
}

static void on_end(evutil_socket_t fd, short what, void *arg)
{
	finish(arg);
}

int diag_start(struct diag **dp, struct event_base *base, const pid_t *roots, int n, double deadline,
	       void (*done)(void *arg), void *arg)
{
	struct diag *d = calloc(1, sizeof(*d));
	struct timeval tv = clock_tv(deadline);
	struct stacks_opts o = {
		.deadline = clock_mono() + (deadline > DIAG_MARGIN ? deadline - DIAG_MARGIN : deadline),
		.proc_time = DIAG_STACK_TIME,
		.thread_wait = DIAG_THREAD_WAIT,
		.descendants = true,
		.max_procs = DIAG_PROCS,
		.max_threads = DIAG_THREADS,
		.max_frames = DIAG_FRAMES,
	};
	int e;

	*dp = NULL;
	if (!d)
		return -ENOMEM;
	*d = (struct diag){ .n = n, .done = done, .arg = arg };
	d->text = calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
	d->deadline = evtimer_new(base, on_end, d);
	if (!d->text || !d->deadline) {
		diag_free(d);
		return -ENOMEM;
	}
	if ((e = stacks_start(&d->job, roots, n, &o)) < 0) {
		diag_free(d);
		return e;
	}
	if (!(d->ev_end = event_new(base, stacks_fd(d->job), EV_READ, on_end, d)) ||
	    event_add(d->ev_end, NULL) < 0 || evtimer_add(d->deadline, &tv) < 0) {
		diag_free(d);
		return -ENOMEM;
	}
	*dp = d;
	return 0;
}

char *diag_take(struct diag *d, int i)
{
	char *t;

	if (!d || i < 0 || i >= d->n)
		return NULL;
	t = d->text[i];
	d->text[i] = NULL;
	return t;
}

void diag_free(struct diag *d)
{
	if (!d)
		return;
	end(d, false);
	if (d->ev_end)
		event_free(d->ev_end);
	if (d->deadline)
		event_free(d->deadline);
	for (int i = 0; d->text && i < d->n; i++)
		free(d->text[i]);
	free(d->text);
	free(d);
}
