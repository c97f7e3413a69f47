// SPDX-License-Identifier: MIT
/* Where a worker's lines go: the console (unless filtered out), its log
 * file (with --log-dir), and for stderr a tail kept for the failure
 * summary.  Input comes from the worker's pipe through a line splitter
 * with an empty prefix (wrap_rank already prefixed the lines), so every
 * console write is whole lines of at most PIPE_BUF bytes: ranks sharing
 * slotrun's stdout never interleave inside a line. */
#ifndef SLOTRUN_OUTPUT_H
#define SLOTRUN_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "line_splitter.h"

#define OUT_TAIL_BYTES 16384
#define OUT_TAIL_LINES 20

struct out_tail {
	size_t len;            /* bytes ever appended */
	char buf[OUT_TAIL_BYTES];
};

/* slotrun's stdout or stderr.  Lines are queued and written only when the
 * fd has room, so a slow or stalled reader never blocks the event loop
 * (teardown and signals go on); each write is whole lines of at most
 * PIPE_BUF bytes.  Past OUT_CONSOLE_HIGH queued bytes the runner stops
 * reading the workers' pipes until the queue is below OUT_CONSOLE_LOW.
 *
 * A write that fails for want of room (ENOSPC, EDQUOT: stdout is a file on
 * a full disk, or over its quota) is not the end: room can come back.  The
 * console then waits (wait.waiting): writes are retried no sooner than
 * wait.retry_at, with a delay that doubles from OUT_RETRY_MIN to OUT_RETRY_MAX
 * seconds, and the workers are not held back (a full disk may last hours:
 * the job must not stall on its output).  Past OUT_CONSOLE_HIGH queued
 * bytes new lines are dropped whole and counted; the head of the queue,
 * perhaps a line cut by a short write, is kept, so the file goes on where
 * it stopped.  The first write that succeeds ends the wait (wait.resumed).
 * Any other error (EPIPE, EBADF, EIO, EFBIG...) is final: the console is
 * broken and all later output is dropped and counted. */
#define OUT_CONSOLE_HIGH (1 << 20)
#define OUT_CONSOLE_LOW (1 << 18)
#define OUT_RETRY_MIN 0.05
#define OUT_RETRY_MAX 1.0

/* A wait for room (ENOSPC, EDQUOT) on a console or a log file. */
struct out_wait {
	bool waiting;          /* retried no sooner than retry_at */
	bool resumed;          /* a wait ended: for the caller to say, then clear */
	double since;          /* clock_mono() when the (last) wait began */
	double waited;         /* seconds the last ended wait lasted */
	double retry_at, delay;
	size_t lines, bytes;   /* dropped since the (last) wait began */
};

/* How an ended wait (err: ENOSPC or EDQUOT) is said, after a name: "resumed
 * after 3.2 s on a full disk (No space left on device); 12 lines (3456
 * bytes) were lost".  Returns text. */
const char *out_wait_text(const struct out_wait *w, int err, char *text, size_t size);

struct out_console {
	int fd;
	bool broken;           /* a write failed for good (EPIPE, EIO, ...): drop output */
	int err;               /* the errno of the last failed write (broken or waiting) */
	size_t dropped;        /* bytes never written: after a failure, past the bound
				* while waiting, for want of memory, shed, or given up
				* at exit (out_console_drop) */
	bool shed;             /* the job is stopping: past OUT_CONSOLE_HIGH pending
				* bytes new lines are dropped, not queued, so the
				* workers' pipes never fill and they can exit */
	struct out_wait wait;
	char *buf;
	size_t off, len, cap;  /* pending bytes are buf[off..len) */
};

void out_console_init(struct out_console *c, int fd);
void out_console_free(struct out_console *c);
size_t out_console_pending(const struct out_console *c);

/* Writes what the fd takes without blocking; while waiting for room, only
 * once wait.retry_at has passed (a write that fails again doubles the delay).
 * Returns the bytes still pending. */
size_t out_console_flush(struct out_console *c);

/* Queues text of whole lines (slotrun's own messages) after what is
 * pending; out_console_flush writes it. */
void out_console_put(struct out_console *c, const char *buf, size_t len);

/* Gives up what is pending (counted in dropped): at exit, when the reader
 * did not take it in time. */
void out_console_drop(struct out_console *c);

/* What a worker wrote, for `slotrun status` and the metrics: counted as
 * its whole lines pass (both streams into one count), over every attempt.
 * last holds the start of its newest line (without the '\n'), at most
 * OUT_LAST_MAX - 1 bytes. */
#define OUT_LAST_MAX 256

struct out_count {
	unsigned long long bytes, lines;
	double last_at;        /* clock_mono() when its newest line came, 0: none yet */
	char last[OUT_LAST_MAX];
	size_t last_len;
};

/* Counts buf[0..len) (whole lines) at now into c.  Pure. */
void out_count_lines(struct out_count *c, const char *buf, size_t len, double now);

/* A log file has no queue: a write failure that waits for room (as the
 * console's, above) drops and counts the lines that come meanwhile, and
 * the first write past wait.retry_at tries again.  A line a short write
 * cut is kept and finished first, so the file never holds a torn line.
 * Any other error closes the file: the rest is counted. */
struct out_stream {
	int fd;                /* read end of the worker's pipe, -1 when closed */
	struct out_console *console; /* NULL: not shown (filtered out) */
	int file_fd;           /* -1: no log file */
	int file_err;          /* a write to the log file failed with this errno: it
				* waits (file_wait), or it is closed for good */
	size_t file_lost;      /* bytes never written to the log file */
	bool file_err_said;    /* for the caller: it said so (cleared on a resume) */
	struct out_wait file_wait;
	size_t file_cut_len;
	struct out_tail *tail; /* NULL: not kept */
	struct out_count *count; /* NULL: not counted (out_stream_count) */
	/* The buffers last: starting a stream touches only the fields above
	 * and the splitter's own, one page rather than three. */
	struct line_splitter ls;
	char file_cut[LS_WRITE_MAX]; /* the rest of a line a short write cut */
};

/* fd -1 makes a closed stream (a worker that never started). */
void out_stream_init(struct out_stream *s, int fd, struct out_console *console, int file_fd,
		     struct out_tail *tail);

/* The stream's lines are counted into c from now on (NULL: not). */
void out_stream_count(struct out_stream *s, struct out_count *c);

enum { OUT_PUMP_CLOSED = 0, OUT_PUMP_EMPTY = 1, OUT_PUMP_MORE = 2 };

/* Reads what the pipe has (non-blocking fd) and passes whole lines on.
 * Returns OUT_PUMP_EMPTY when the pipe is drained for now, OUT_PUMP_MORE
 * when it stopped early to let other streams have a turn, OUT_PUMP_CLOSED
 * at EOF or on a read error (the stream is then flushed and closed). */
int out_stream_pump(struct out_stream *s);

/* Flushes a held unfinished line and closes the pipe and log file. */
void out_stream_close(struct out_stream *s);

void out_tail_append(struct out_tail *t, const char *buf, size_t len);

/* A worker's bytes as text that is valid UTF-8 and stays on one line, and
 * from which every byte can be recovered: a byte that is not part of a
 * well-formed UTF-8 sequence, a NUL and every other control character but
 * tab is written as \xNN, a backslash as \\.  len bytes of s are read
 * (NULs included).  Returns a malloc'd string, or NULL out of memory. */
char *out_tail_escape(const char *s, size_t len);

/* The last max_lines complete lines of the tail, oldest first, each
 * without its '\n' and escaped by out_tail_escape, as malloc'd strings in
 * *lines (free each and the array).  Returns the count; out of memory, 0
 * with *lines NULL. */
int out_tail_lines(const struct out_tail *t, int max_lines, char ***lines);

/* Parses a rank filter like "0,2-3" against world_size into a malloc'd
 * array of world_size flags.  Returns 0 or -EINVAL with a reason. */
int out_parse_ranks(const char *spec, int world_size, bool **shown, char *err, size_t errlen);

#endif
