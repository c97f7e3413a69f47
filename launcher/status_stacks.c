// SPDX-License-Identifier: MIT
#include "status_stacks.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>

#include "clock.h"
#include "stacks.h"

/* Each process is given this long, so that one stuck rank leaves time for
 * the others. */
#define PROC_TIME 2.0

struct status_stacks {
	struct event *ev;
	struct stacks_job *job;
	int n;
	int *node, *rank;
	pid_t *pid;
	void (*done)(void *arg, json_t *stacks);
	void *arg;
};

/* What the collection found, one entry per rank. */
static json_t *entries(const struct status_stacks *h, const struct stacks *s)
{
	json_t *a = json_array();

	for (int i = 0; a && i < h->n; i++) {
		char *text = s ? stacks_text(s, &(struct stacks_text_opts){ .root = i }) : NULL;
		const char *error = !s ? "stacks: out of memory" : h->pid[i] <= 0 ? "not running" :
				    !text ? "stacks: out of memory" : !text[0] ? "stacks: nothing taken in time" : NULL;

		json_array_append_new(a, json_pack("{s:i, s:i, s:I, s:s}", "node", h->node[i], "rank", h->rank[i],
						   "pid", (json_int_t)h->pid[i], error ? "error" : "text",
						   error ? error : text));
		free(text);
	}
	return a;
}

static void on_ready(evutil_socket_t fd, short what, void *arg)
{
	struct status_stacks *h = arg;
	struct stacks *s = stacks_end(h->job);

	(void)fd;
	(void)what;
	h->job = NULL;
	h->done(h->arg, entries(h, s));
	stacks_free(s);
	status_stacks_cancel(h);
}

int status_stacks_start(struct status_stacks **hp, struct event_base *base, const struct status_row *rows, int n,
			double deadline, void (*done)(void *arg, json_t *stacks), void *arg)
{
	struct status_stacks *h = calloc(1, sizeof(*h));
	struct stacks_opts o = { .deadline = clock_mono() + deadline, .proc_time = PROC_TIME, .descendants = true };
	int e = -ENOMEM;

	*hp = NULL;
	if (!h || !(h->node = calloc((size_t)n + 1, sizeof(int))) || !(h->rank = calloc((size_t)n + 1, sizeof(int))) ||
	    !(h->pid = calloc((size_t)n + 1, sizeof(pid_t))))
		goto fail;
	h->n = n;
	for (int i = 0; i < n; i++) {
		h->node[i] = rows[i].node;
		h->rank[i] = rows[i].rank;
		h->pid[i] = rows[i].up ? rows[i].pid : 0;
	}
	if ((e = stacks_start(&h->job, h->pid, n, &o)) < 0)
		goto fail;
	if (!(h->ev = event_new(base, stacks_fd(h->job), EV_READ, on_ready, h))) {
		e = -ENOMEM;
		goto fail;
	}
	h->done = done;
	h->arg = arg;
	event_add(h->ev, NULL);
	*hp = h;
	return 0;
fail:
	status_stacks_cancel(h);
	return e;
}

void status_stacks_cancel(struct status_stacks *h)
{
	if (!h)
		return;
	if (h->ev)
		event_free(h->ev);
	if (h->job)
		stacks_free(stacks_end(h->job));
	free(h->node);
	free(h->rank);
	free(h->pid);
	free(h);
}
