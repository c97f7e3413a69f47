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

struct out_stream {
	int fd;                /* read end of the worker's pipe, -1 when closed */
	int console_fd;        /* -1: not shown (filtered, or the reader went away) */
	int file_fd;           /* -1: no log file */
	struct out_tail *tail; /* NULL: not kept */
	struct line_splitter ls;
};

void out_stream_init(struct out_stream *s, int fd, int console_fd, int file_fd,
		     struct out_tail *tail);

enum { OUT_PUMP_CLOSED = 0, OUT_PUMP_EMPTY = 1, OUT_PUMP_MORE = 2 };

/* Reads what the pipe has (non-blocking fd) and passes whole lines on.
 * Returns OUT_PUMP_EMPTY when the pipe is drained for now, OUT_PUMP_MORE
 * when it stopped early to let other streams have a turn, OUT_PUMP_CLOSED
 * at EOF or on a read error (the stream is then flushed and closed). */
int out_stream_pump(struct out_stream *s);

/* Flushes a held unfinished line and closes the pipe and log file. */
void out_stream_close(struct out_stream *s);

void out_tail_append(struct out_tail *t, const char *buf, size_t len);

/* The last max_lines complete lines of the tail, oldest first, each
 * without its '\n', as malloc'd strings in *lines (free each and the
 * array).  Returns the count. */
int out_tail_lines(const struct out_tail *t, int max_lines, char ***lines);

/* Parses a rank filter like "0,2-3" against world_size into a malloc'd
 * array of world_size flags.  Returns 0 or -EINVAL with a reason. */
int out_parse_ranks(const char *spec, int world_size, bool **shown, char *err, size_t errlen);

#endif
