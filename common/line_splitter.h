// SPDX-License-Identifier: MIT
/* Line splitter: turns a byte stream into prefixed lines, written in whole
 * lines of at most PIPE_BUF bytes per write so that many writers sharing one
 * pipe or terminal never interleave inside a line.
 *
 * "\n", "\r\n" and "\r" each end exactly one line; every output line ends in
 * "\n".  Bytes pass through untouched (NUL, invalid UTF-8).  A line longer
 * than fits in one write is cut into pieces, each prefixed and ended with
 * "\n"; stripping the prefixes and added newlines gives the line back.
 *
 * No I/O of its own: output goes through the write callback, so the logic is
 * tested without pipes. */
#ifndef SLOTRUN_LINE_SPLITTER_H
#define SLOTRUN_LINE_SPLITTER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define LS_WRITE_MAX PIPE_BUF
#define LS_PREFIX_MAX 64

/* Writes buf[0..len) as one write; len <= LS_WRITE_MAX and buf holds whole
 * lines.  Returns 0 or a negative errno, which ls_feed/ls_finish pass up. */
typedef int (*ls_write_fn)(void *ctx, const char *buf, size_t len);

struct line_splitter {
	ls_write_fn write;
	void *ctx;
	size_t prefix_len;
	size_t piece_max;   /* payload bytes per output line */
	size_t part_len;    /* bytes of an unfinished line held in part */
	size_t out_len;     /* bytes of the batch being built in out */
	bool after_cr;      /* last line ended in '\r': a leading '\n' belongs to it */
	char prefix[LS_PREFIX_MAX];
	char part[LS_WRITE_MAX];
	char out[LS_WRITE_MAX];
};

/* prefix: e.g. "[rank=3] ".  Returns -EINVAL when it is too long to leave
 * room for a line. */
int ls_init(struct line_splitter *ls, const char *prefix, ls_write_fn write, void *ctx);

/* Consumes data; every line completed by it is written before this returns
 * (nothing waits for more input).  An unfinished line is held back. */
int ls_feed(struct line_splitter *ls, const char *data, size_t len);

/* End of stream: writes a held unfinished line, ended with '\n'. */
int ls_finish(struct line_splitter *ls);

#endif
