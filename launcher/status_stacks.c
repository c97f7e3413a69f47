// SPDX-License-Identifier: MIT
#include "status_stacks.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>

struct status_stacks {
	struct event *ev;
	json_t *stacks;
	void (*done)(void *arg, json_t *stacks);
	void *arg;
};

static void on_ready(evutil_socket_t fd, short what, void *arg)
{
	struct status_stacks *h = arg;
	json_t *stacks = h->stacks;

	h->stacks = NULL;
	h->done(h->arg, stacks);
	status_stacks_cancel(h);
}

int status_stacks_start(struct status_stacks **hp, struct event_base *base, const struct status_row *rows, int n,
			double deadline, void (*done)(void *arg, json_t *stacks), void *arg)
{
	struct status_stacks *h = calloc(1, sizeof(*h));
	struct timeval now = { 0, 0 };

	(void)deadline;
	*hp = NULL;
	if (!h || !(h->stacks = json_array()) || !(h->ev = evtimer_new(base, on_ready, h))) {
		status_stacks_cancel(h);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		json_array_append_new(h->stacks, json_pack("{s:i, s:i, s:I, s:s}", "node", rows[i].node, "rank",
							   rows[i].rank, "pid", (json_int_t)rows[i].pid, "error",
							   "stacks: not available in this build"));
	h->done = done;
	h->arg = arg;
	evtimer_add(h->ev, &now);
	*hp = h;
	return 0;
}

void status_stacks_cancel(struct status_stacks *h)
{
	if (!h)
		return;
	if (h->ev)
		event_free(h->ev);
	json_decref(h->stacks);
	free(h);
}
