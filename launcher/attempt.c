// SPDX-License-Identifier: MIT
#include "attempt.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "diag.h"
#include "live.h"
#include "report.h"
#include "restart.h"

/* The newest lines of a tail that fit in buf, each ending in '\n'. */
static void tail_text(const struct out_tail *t, char *buf, size_t size)
{
	char **lines = NULL;
	size_t len = 0;
	int n, from;

	n = out_tail_lines(t, OUT_TAIL_LINES, &lines);
	for (from = n; from > 0 && len + strlen(lines[from - 1]) + 1 < size; from--)
		len += strlen(lines[from - 1]) + 1;
	len = 0;
	for (int k = 0; k < n; k++) {
		if (k >= from) {
			size_t l = strlen(lines[k]);

			memcpy(buf + len, lines[k], l);
			buf[len + l] = '\n';
			len += l + 1;
		}
		free(lines[k]);
	}
	free(lines);
	buf[len] = '\0';
}

void attempt_cause(struct runner *r, struct plane_cause *f)
{
	const struct runner_cfg *c = r->cfg;
	int i = r->sup.root_cause;
	struct worker *w = &r->w[i];

	*f = (struct plane_cause){ .kind = PLANE_CAUSE_RANK, .node = c->plan->node_rank,
				   .rank = c->plan->slots[i].rank, .code = r->code[i],
				   .when_ms = (int64_t)w->when.tv_sec * 1000 + w->when.tv_nsec / 1000000,
				   .after_ms = (int64_t)(w->after * 1000) };
	/* the worker is reaped, so its last lines are in the pipe: take them
	 * into the tail first */
	while (w->err.fd >= 0 && out_stream_pump(&w->err) == OUT_PUMP_MORE)
		;
	snprintf(f->host, sizeof(f->host), "%s", c->host ? c->host : "");
	snprintf(f->text, sizeof(f->text), "%s", w->note);
	tail_text(&w->tail, f->tail, sizeof(f->tail));
	report_fill_cause(r, i, f);
}

/* Everything in our tree is dead, so every pipe ends in EOF after its
 * last bytes; OUT_PUMP_AGAIN only when a process outside our tree holds a
 * write end, and then we stop there. */
static void drain(struct runner *r)
{
	for (int i = 0; i < r->n; i++) {
		struct out_stream *ss[2] = { &r->w[i].out, &r->w[i].err };
		for (int k = 0; k < 2; k++) {
			while (ss[k]->fd >= 0 && out_stream_pump(ss[k]) == OUT_PUMP_MORE)
				;
			out_stream_close(ss[k]);
		}
	}
}

void attempt_end(struct runner *r)
{
	diag_free(r->diag);
	r->diag = NULL;
	for (int i = 0; i < r->n; i++) {
		if (r->w[i].ev_out)
			event_free(r->w[i].ev_out);
		if (r->w[i].ev_err)
			event_free(r->w[i].ev_err);
		r->w[i].ev_out = r->w[i].ev_err = NULL;
	}
	drain(r);
}

void attempt_reset(struct runner *r)
{
	attempt_end(r);
	for (int i = 0; i < r->n; i++) {
		free(r->w[i].diag);
		r->w[i] = (struct worker){ .runner = r };
		r->active[i] = 0;
		out_stream_init(&r->w[i].out, -1, NULL, -1, NULL);
		out_stream_init(&r->w[i].err, -1, NULL, -1, NULL);
	}
	sup_init(&r->sup, r->n, r->fate, r->code);
	console_reset_pauses(&r->cons);
	r->started = false;
	r->fresh = true;
}

void attempt_next(struct runner *r, int attempt, double delay, const struct plane_cause *cause)
{
	char line[PLANE_TEXT_MAX + 64];

	if (r->attempt < runner_attempts(r) - 1 && attempt > r->attempt) /* the nodes agreed on the count */
		r->history[r->attempt] = *cause;
	plane_cause_line(cause, line, sizeof(line));
	if (!runner_elastic(r))
		note(r, "slotrun: attempt %d of %d in %g s, after %s", attempt + 1, runner_attempts(r), delay,
		     line);
	live_restart(r, attempt, line);
	attempt_reset(r);
	r->attempt = attempt;
}

bool attempt_restart_alone(struct runner *r)
{
	const struct restart_policy *pol = r->cfg->restart;
	struct plane_cause cause = { .kind = PLANE_CAUSE_NONE };
	double delay;
	struct timeval tv;

	if (!pol || r->sup.root_cause < 0 || r->sup.told_stop) /* told to stop: no restart */
		return false;
	attempt_cause(r, &cause);
	if (!restart_allowed(pol, &cause, r->attempt))
		return false;
	delay = restart_delay(pol, r->attempt);
	attempt_next(r, r->attempt + 1, delay, &cause);
	tv = clock_tv(delay);
	evtimer_add(r->backoff, &tv);
	return true;
}
