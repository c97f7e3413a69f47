// SPDX-License-Identifier: MIT
/* wrap_rank's output relay: one of the command's output pipes, read as it
 * comes and written out as "[rank=N] " lines (line_splitter.h: whole lines,
 * at most PIPE_BUF bytes per write).  No loop of its own: wrap_run polls
 * the fds and calls relay_pump when one is readable, so a test drives it
 * over pipes the same way. */
#ifndef SLOTRUN_RELAY_H
#define SLOTRUN_RELAY_H

#include <stdbool.h>
#include <stddef.h>

#include "line_splitter.h"

struct relay_stream {
	int fd;             /* the read end of the command's pipe; -1 once closed */
	int sink;           /* where the prefixed lines go */
	struct line_splitter ls;
};

/* Relays fd to sink with prefix (e.g. "[rank=3] ").  Returns 0, or
 * -EINVAL when the prefix is longer than LS_PREFIX_MAX allows (then s is
 * closed: fd is -1, and fd is not closed). */
int relay_init(struct relay_stream *s, int fd, int sink, const char *prefix);

/* Reads once (up to cap bytes into buf) and writes out every line that
 * completes.  At EOF or a read error the stream is closed and a held
 * unfinished line written, ended with '\n'.  A sink that can no longer be
 * written (EPIPE: its reader went away) closes the stream without writing
 * more, so that the command gets EPIPE/SIGPIPE as it would without
 * wrap_rank.  Returns whether the stream is still open. */
bool relay_pump(struct relay_stream *s, char *buf, size_t cap);

/* Closes the stream's fd; with flush, writes a held unfinished line first.
 * A closed stream is left alone. */
void relay_close(struct relay_stream *s, bool flush);

#endif
