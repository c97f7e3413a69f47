// SPDX-License-Identifier: MIT
/* slotrun's own stdout and stderr on the event loop: the workers' lines
 * and slotrun's go through queues (output.h) written only when the fd has
 * room, so a slow or stalled reader never blocks the loop.
 *
 * Flow control: reading the workers' stdout (stderr) pipes stops while
 * slotrun's stdout (stderr) holds more than OUT_CONSOLE_HIGH bytes, and
 * resumes below OUT_CONSOLE_LOW.  The workers block on their full pipes,
 * slotrun does not, so teardown and signals go on whatever the reader
 * does; and a stdout nobody reads does not hold back what goes to stderr
 * (a failure's last words).  Once the job is stopping the queues shed
 * instead (output.h), so the workers' pipes never fill and they can exit.
 * The owner says through hooks whether the job is stopping and what
 * pausing means (which reads to stop).
 *
 * A console waiting for room (output.h: a file on a full disk) pauses
 * nothing: its queue is bounded instead, and a timer retries the write.
 * The wait is said on stderr when it begins and when it ends, with what
 * was lost meanwhile; when stderr is the full one, both lines wait in its
 * queue and come out once it has room again. */
#ifndef SLOTRUN_CONSOLE_H
#define SLOTRUN_CONSOLE_H

#include <stdbool.h>

#include "output.h"

struct event_base;

struct console_hooks {
	bool (*stopping)(void *arg);                 /* the job is stopping */
	void (*pause)(void *arg, int k, bool paused); /* stop (resume) reading into con[k] */
};

struct console {
	struct out_console con[2];   /* slotrun's stdout and stderr */
	struct event *ev[2];         /* writable */
	struct event *retry[2];      /* waiting for room: the next try */
	bool wait_said[2];           /* the wait that began was said */
	bool paused[2];              /* reading into con[k] is paused: it is full */
	bool stdout_said;            /* its write failure was said */
	bool flushing;               /* at exit: writing what the queues hold */
	bool give_up;                /* ... until told to stop, or the deadline */
	struct event *deadline;      /* ... that deadline */
	const struct console_hooks *hooks;
	void *arg;
};

/* On out_fd and err_fd (slotrun's 1 and 2).  Returns 0, or -ENOMEM (console_free then frees what
 * was made). */
int console_init(struct console *c, struct event_base *base, int out_fd, int err_fd,
		 const struct console_hooks *hooks, void *arg);
void console_free(struct console *c);

/* One line of slotrun's own (no '\n' in fmt) on stderr, behind what is
 * queued there; cut at about 1 KiB. */
void console_note(struct console *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes what the fds take and decides the pauses (above). */
void console_flush(struct console *c);

/* Resumes reading and forgets the pauses: a new attempt starts unpaused. */
void console_reset_pauses(struct console *c);

/* At exit a console waiting for room is waited for at most this long. */
#define CONSOLE_ROOM_WAIT 10.0

/* At exit: writes what the queues hold, on the loop, so that signals
 * still act; gives up (counting what is dropped) when told to stop
 * (console_stop), or after `limit` seconds (< 0: no limit; a reader slow
 * but alive is waited for, a full disk only CONSOLE_ROOM_WAIT seconds
 * from when the drain finds it full). */
void console_drain(struct console *c, struct event_base *base, double limit);

/* While console_drain runs: a stop signal ends the wait.  Returns whether
 * the console took sig (it is draining); else the caller acts on it. */
bool console_signal(struct console *c, int sig);

#endif
