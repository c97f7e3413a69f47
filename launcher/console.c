// SPDX-License-Identifier: MIT
#include "console.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"

/* What wakes con[k] with `left` bytes pending: the fd's room, or while
 * waiting for room a timer (a file on a full disk is always "writable",
 * and epoll refuses regular files). */
static void arm(struct console *c, int k, size_t left)
{
	if (left > 0 && c->con[k].wait.waiting) {
		struct timeval tv = clock_tv(c->con[k].wait.retry_at - clock_mono());

		event_del(c->ev[k]);
		evtimer_add(c->retry[k], &tv);
		return;
	}
	evtimer_del(c->retry[k]);
	if (left > 0)
		event_add(c->ev[k], NULL);
	else
		event_del(c->ev[k]);
}

void console_note(struct console *c, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	out_console_put(&c->con[1], line, (size_t)n);
	if (c->ev[1] && c->retry[1])
		arm(c, 1, out_console_flush(&c->con[1]));
}

static void set_paused(struct console *c, int k, bool paused)
{
	if (c->paused[k] == paused)
		return;
	c->paused[k] = paused;
	c->hooks->pause(c->arg, k, paused);
}

void console_reset_pauses(struct console *c)
{
	c->paused[0] = c->paused[1] = false;
}

static const char *const names[2] = { "stdout", "stderr" };

/* The lines that say a wait for room began and ended, once each. */
static void say_waits(struct console *c)
{
	for (int k = 0; k < 2; k++) {
		struct out_console *o = &c->con[k];

		if (o->wait.waiting && !c->wait_said[k]) {
			c->wait_said[k] = true;
			console_note(c, "slotrun: %s: %s: retrying until there is room; meanwhile what exceeds "
				     "%d KiB is dropped and counted", names[k], strerror(o->err),
				     OUT_CONSOLE_HIGH >> 10);
		}
		if (o->wait.resumed) {
			char text[256];

			o->wait.resumed = false;
			c->wait_said[k] = false;
			console_note(c, "slotrun: %s %s", names[k], out_wait_text(&o->wait, o->err, text, sizeof(text)));
		}
	}
}

void console_flush(struct console *c)
{
	for (int k = 0; k < 2; k++) {
		size_t left = out_console_flush(&c->con[k]);

		arm(c, k, left);
		/* While the job runs a slow reader slows the workers; once it
		 * stops, their output is read on and shed, so they can exit.  A
		 * full disk holds nobody back: its queue is bounded instead. */
		if (c->hooks->stopping(c->arg)) {
			c->con[k].shed = true;
			set_paused(c, k, false);
		} else if (c->con[k].wait.waiting) {
			set_paused(c, k, false);
		} else if (left > OUT_CONSOLE_HIGH) {
			set_paused(c, k, true);
		} else if (left < OUT_CONSOLE_LOW) {
			set_paused(c, k, false);
		}
	}
	if (c->con[0].broken && !c->stdout_said) {
		c->stdout_said = true;
		console_note(c, "slotrun: stdout: %s: the workers' output to it is dropped from now on",
			     strerror(c->con[0].err));
	}
	say_waits(c);
}

static void on_writable(evutil_socket_t fd, short what, void *arg)
{
	console_flush(arg);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	console_flush(arg);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	((struct console *)arg)->give_up = true;
}

int console_init(struct console *c, struct event_base *base, int out_fd, int err_fd,
		 const struct console_hooks *hooks, void *arg)
{
	*c = (struct console){ .hooks = hooks, .arg = arg };
	for (int k = 0; k < 2; k++) {
		out_console_init(&c->con[k], k == 0 ? out_fd : err_fd);
		c->ev[k] = event_new(base, c->con[k].fd, EV_WRITE | EV_PERSIST, on_writable, c);
		c->retry[k] = evtimer_new(base, on_retry, c);
	}
	c->deadline = evtimer_new(base, on_deadline, c);
	return c->ev[0] && c->ev[1] && c->retry[0] && c->retry[1] && c->deadline ? 0 : -ENOMEM;
}

void console_free(struct console *c)
{
	for (int k = 0; k < 2; k++) {
		if (c->ev[k])
			event_free(c->ev[k]);
		c->ev[k] = NULL;
		if (c->retry[k])
			event_free(c->retry[k]);
		c->retry[k] = NULL;
		out_console_free(&c->con[k]);
	}
	if (c->deadline)
		event_free(c->deadline);
	c->deadline = NULL;
}

void console_drain(struct console *c, struct event_base *base, double limit)
{
	struct timeval tv = clock_tv(limit);

	c->flushing = true;
	c->give_up = false;
	if (limit >= 0)
		evtimer_add(c->deadline, &tv);
	console_flush(c);
	while (!c->give_up && out_console_pending(&c->con[0]) + out_console_pending(&c->con[1]) > 0) {
		if (limit < 0 && (c->con[0].wait.waiting || c->con[1].wait.waiting) &&
		    !evtimer_pending(c->deadline, NULL)) {
			tv = clock_tv(CONSOLE_ROOM_WAIT);
			evtimer_add(c->deadline, &tv);
		}
		if (event_base_loop(base, EVLOOP_ONCE) < 0)
			break;
	}
	evtimer_del(c->deadline);
	if (c->give_up)
		for (int k = 0; k < 2; k++)
			out_console_drop(&c->con[k]);
	c->flushing = false;
}

bool console_signal(struct console *c, int sig)
{
	if (!c->flushing)
		return false;
	if (sig == SIGTERM || sig == SIGINT)
		c->give_up = true;
	return true;
}
