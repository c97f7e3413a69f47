// SPDX-License-Identifier: MIT
#include "line_splitter.h"

#include <errno.h>
#include <string.h>

int ls_init(struct line_splitter *ls, const char *prefix, ls_write_fn write, void *ctx)
{
	size_t n = strlen(prefix);

	if (n >= LS_PREFIX_MAX)
		return -EINVAL;
	memset(ls, 0, offsetof(struct line_splitter, part));
	memcpy(ls->prefix, prefix, n);
	ls->prefix_len = n;
	ls->piece_max = LS_WRITE_MAX - n - 1;
	ls->write = write;
	ls->ctx = ctx;
	return 0;
}

static int flush(struct line_splitter *ls)
{
	int r = 0;

	if (ls->out_len > 0)
		r = ls->write(ls->ctx, ls->out, ls->out_len);
	ls->out_len = 0;
	return r;
}

/* Appends one output line: prefix, a, b, '\n'.  alen + blen <= piece_max. */
static int put_piece(struct line_splitter *ls, const char *a, size_t alen,
		     const char *b, size_t blen)
{
	size_t need = ls->prefix_len + alen + blen + 1;
	char *o;

	if (ls->out_len + need > LS_WRITE_MAX) {
		int r = flush(ls);
		if (r < 0)
			return r;
	}
	o = ls->out + ls->out_len;
	memcpy(o, ls->prefix, ls->prefix_len);
	o += ls->prefix_len;
	if (alen > 0)
		memcpy(o, a, alen);
	if (blen > 0)
		memcpy(o + alen, b, blen);
	o[alen + blen] = '\n';
	ls->out_len += need;
	return 0;
}

/* A finished line: the held part followed by seg[0..n).  Cut into pieces
 * when longer than one write allows; never ends in an empty piece. */
static int put_line(struct line_splitter *ls, const char *seg, size_t n)
{
	const char *a = ls->part;
	size_t alen = ls->part_len;
	int r;

	ls->part_len = 0;
	while (alen + n > ls->piece_max) {
		size_t take_a = alen < ls->piece_max ? alen : ls->piece_max;
		size_t take_b = ls->piece_max - take_a;

		r = put_piece(ls, a, take_a, seg, take_b);
		if (r < 0)
			return r;
		a += take_a;
		alen -= take_a;
		seg += take_b;
		n -= take_b;
	}
	return put_piece(ls, a, alen, seg, n);
}

/* Holds an unfinished line.  A full part is written as a piece only when
 * more bytes arrive, so a line of exactly piece_max bytes stays one line. */
static int hold(struct line_splitter *ls, const char *p, size_t n)
{
	while (n > 0) {
		size_t room, take;

		if (ls->part_len == ls->piece_max) {
			int r = put_piece(ls, ls->part, ls->part_len, NULL, 0);
			if (r < 0)
				return r;
			ls->part_len = 0;
		}
		room = ls->piece_max - ls->part_len;
		take = n < room ? n : room;
		memcpy(ls->part + ls->part_len, p, take);
		ls->part_len += take;
		p += take;
		n -= take;
	}
	return 0;
}

int ls_feed(struct line_splitter *ls, const char *data, size_t len)
{
	const char *p = data, *end = data + len;
	const char *nl, *cr;
	int r;

	if (len == 0)
		return 0;
	if (ls->after_cr) {
		ls->after_cr = false;
		if (*p == '\n')
			p++;
	}
	/* Both searches are cached and only redone once passed, so the scan
	 * stays linear however the two endings mix. */
	nl = memchr(p, '\n', (size_t)(end - p));
	cr = memchr(p, '\r', (size_t)(end - p));
	while (p < end) {
		const char *t;

		if (nl && nl < p)
			nl = memchr(p, '\n', (size_t)(end - p));
		if (cr && cr < p)
			cr = memchr(p, '\r', (size_t)(end - p));
		t = !cr ? nl : !nl ? cr : (cr < nl ? cr : nl);
		if (!t) {
			r = hold(ls, p, (size_t)(end - p));
			if (r < 0)
				return r;
			break;
		}
		r = put_line(ls, p, (size_t)(t - p));
		if (r < 0)
			return r;
		p = t + 1;
		if (*t == '\r') {
			if (p == end)
				ls->after_cr = true;
			else if (*p == '\n')
				p++;
		}
	}
	return flush(ls);
}

int ls_finish(struct line_splitter *ls)
{
	int r = 0;

	if (ls->part_len > 0)
		r = put_line(ls, NULL, 0);
	if (r == 0)
		r = flush(ls);
	ls->after_cr = false;
	return r;
}
