// SPDX-License-Identifier: MIT
#include "output.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "io.h"

void out_tail_append(struct out_tail *t, const char *buf, size_t len)
{
	if (len >= OUT_TAIL_BYTES) {
		buf += len - OUT_TAIL_BYTES;
		t->len += len - OUT_TAIL_BYTES;
		len = OUT_TAIL_BYTES;
	}
	while (len > 0) {
		size_t at = t->len % OUT_TAIL_BYTES;
		size_t n = OUT_TAIL_BYTES - at < len ? OUT_TAIL_BYTES - at : len;

		memcpy(t->buf + at, buf, n);
		t->len += n;
		buf += n;
		len -= n;
	}
}

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

char *out_tail_escape(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	char *out = malloc(len * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_len(u + i, len - i);

		if (u[i] == '\\') {
			*o++ = '\\';
			*o++ = '\\';
			i++;
		} else if (n == 0 || (n == 1 && u[i] != '\t' && (u[i] < 0x20 || u[i] == 0x7f))) {
			o += sprintf(o, "\\x%02x", u[i]);
			i++;
		} else {
			memcpy(o, u + i, n);
			o += n;
			i += n;
		}
	}
	*o = '\0';
	return out;
}

int out_tail_lines(const struct out_tail *t, int max_lines, char ***lines)
{
	size_t have = t->len < OUT_TAIL_BYTES ? t->len : OUT_TAIL_BYTES;
	size_t start = t->len - have;
	char *lin = malloc(have + 1);
	int count = 0, n = 0;
	size_t end;

	*lines = NULL;
	if (!lin)
		return 0;
	for (size_t i = 0; i < have; i++)
		lin[i] = t->buf[(start + i) % OUT_TAIL_BYTES];
	/* Walk back from the end over at most max_lines complete lines; a
	 * first line cut by the ring's wrap is dropped. */
	end = have;
	while (end > 0 && lin[end - 1] != '\n')
		end--;
	size_t pos = end;
	while (pos > 0 && count < max_lines) {
		size_t b = pos - 1;
		while (b > 0 && lin[b - 1] != '\n')
			b--;
		if (b == 0 && start > 0)
			break; /* no newline before it in the ring: maybe cut */
		count++;
		pos = b;
	}
	*lines = calloc((size_t)count + 1, sizeof(char *));
	if (!*lines) {
		free(lin);
		return 0;
	}
	for (size_t p = pos; n < count;) {
		char *nl = memchr(lin + p, '\n', end - p);
		size_t l = (size_t)(nl - (lin + p));

		if (!((*lines)[n] = out_tail_escape(lin + p, l))) { /* out of memory: no lines */
			while (n > 0)
				free((*lines)[--n]);
			free(*lines);
			*lines = NULL;
			count = 0;
			break;
		}
		n++;
		p += l + 1;
	}
	free(lin);
	return count;
}

void out_console_init(struct out_console *c, int fd)
{
	*c = (struct out_console){ .fd = fd };
}

void out_console_free(struct out_console *c)
{
	free(c->buf);
	c->buf = NULL;
	c->off = c->len = c->cap = 0;
}

size_t out_console_pending(const struct out_console *c)
{
	return c->len - c->off;
}

static size_t count_lines(const char *buf, size_t len)
{
	size_t n = 0;

	for (const char *p = buf, *end = buf + len; (p = memchr(p, '\n', (size_t)(end - p))); p++)
		n++;
	return n;
}

/* Counts what a wait drops, for the line that says it ended. */
static void wait_lose(struct out_wait *w, const char *buf, size_t len)
{
	if (w->waiting && len > 0) {
		w->bytes += len;
		w->lines += count_lines(buf, len);
	}
}

static void console_lose(struct out_console *c, const char *buf, size_t len)
{
	c->dropped += len;
	wait_lose(&c->wait, buf, len);
}

static void console_put(struct out_console *c, const char *buf, size_t len)
{
	if (c->broken || ((c->shed || c->wait.waiting) && c->len - c->off > OUT_CONSOLE_HIGH)) {
		console_lose(c, buf, len);
		return;
	}
	if (c->off > 0 && c->off == c->len)
		c->off = c->len = 0;
	if (c->len + len > c->cap) {
		size_t pending = c->len - c->off, cap = c->cap ? c->cap : 65536;
		char *n;

		while (cap < pending + len)
			cap *= 2;
		n = malloc(cap);
		if (!n) { /* out of memory: this console loses the lines */
			console_lose(c, buf, len);
			return;
		}
		if (pending > 0)
			memcpy(n, c->buf + c->off, pending);
		free(c->buf);
		c->buf = n;
		c->cap = cap;
		c->off = 0;
		c->len = pending;
	}
	memcpy(c->buf + c->len, buf, len);
	c->len += len;
}

void out_console_put(struct out_console *c, const char *buf, size_t len)
{
	console_put(c, buf, len);
}

/* The next write: whole lines, at most PIPE_BUF bytes (every queued line
 * is at most that long, so a newline is always within reach). */
static size_t next_chunk(const struct out_console *c)
{
	size_t n = c->len - c->off;
	const char *p = c->buf + c->off;

	if (n <= LS_WRITE_MAX)
		return n;
	n = LS_WRITE_MAX;
	while (n > 0 && p[n - 1] != '\n')
		n--;
	return n > 0 ? n : LS_WRITE_MAX;
}

/* Room may come back on its own (files deleted, quota raised); every
 * other error means the output cannot go there any more. */
static bool waits_for_room(int err)
{
	return err == ENOSPC || err == EDQUOT;
}

/* A write failed for want of room at `now`: the wait begins, or the next
 * retry is put off twice as long, up to OUT_RETRY_MAX. */
static void wait_begin(struct out_wait *w, double now)
{
	if (!w->waiting) {
		w->waiting = true;
		w->since = now;
		w->delay = OUT_RETRY_MIN;
		w->lines = w->bytes = 0;
	} else if ((w->delay *= 2) > OUT_RETRY_MAX) {
		w->delay = OUT_RETRY_MAX;
	}
	w->retry_at = now + w->delay;
}

/* A write succeeded: a wait, if any, ends. */
static void wait_end(struct out_wait *w)
{
	if (!w->waiting)
		return;
	w->waiting = false;
	w->resumed = true;
	w->waited = clock_mono() - w->since;
}

static bool wait_due(const struct out_wait *w)
{
	return !w->waiting || clock_mono() >= w->retry_at;
}

const char *out_wait_text(const struct out_wait *w, int err, char *text, size_t size)
{
	int n = snprintf(text, size, "resumed after %.1f s %s (%s); ", w->waited,
			 err == EDQUOT ? "over its disk quota" : "on a full disk", strerror(err));

	if (n < 0 || (size_t)n >= size)
		return text;
	if (w->bytes)
		snprintf(text + n, size - (size_t)n, "%zu line%s (%zu bytes) %s lost", w->lines,
			 w->lines == 1 ? "" : "s", w->bytes, w->lines == 1 ? "was" : "were");
	else
		snprintf(text + n, size - (size_t)n, "nothing was lost");
	return text;
}

size_t out_console_flush(struct out_console *c)
{
	if (c->off < c->len && !wait_due(&c->wait))
		return c->len - c->off;
	while (!c->broken && c->off < c->len) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };
		ssize_t n;

		if (poll(&pfd, 1, 0) <= 0)
			break;
		n = write(c->fd, c->buf + c->off, next_chunk(c));
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			c->err = errno;
			if (waits_for_room(errno)) {
				wait_begin(&c->wait, clock_mono());
				break;
			}
			/* EPIPE and the like: nobody reads any more */
			c->broken = true;
			c->wait.waiting = false;
			out_console_drop(c);
			break;
		}
		wait_end(&c->wait);
		c->off += (size_t)n;
	}
	return c->len - c->off;
}

void out_console_drop(struct out_console *c)
{
	console_lose(c, c->buf + c->off, c->len - c->off);
	c->off = c->len = 0;
}

/* Writes all of buf; returns 0, or -errno with *done the bytes written. */
static int write_file(int fd, const char *buf, size_t len, size_t *done)
{
	*done = 0;
	while (*done < len) {
		ssize_t n = write(fd, buf + *done, len - *done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) /* 0: the file takes nothing and says nothing */
			return n < 0 ? -errno : -EIO;
		*done += (size_t)n;
	}
	return 0;
}

static void file_lose(struct out_stream *s, const char *buf, size_t len)
{
	s->file_lost += len;
	wait_lose(&s->file_wait, buf, len);
}

/* Whole lines to the log file (see struct out_stream). */
static void file_put(struct out_stream *s, const char *buf, size_t len)
{
	size_t done = 0;
	int r = 0;

	if (s->file_fd < 0 || !wait_due(&s->file_wait)) {
		if (s->file_err)
			file_lose(s, buf, len);
		return;
	}
	if (s->file_cut_len > 0) {
		r = write_file(s->file_fd, s->file_cut, s->file_cut_len, &done);
		s->file_cut_len -= done;
		memmove(s->file_cut, s->file_cut + done, s->file_cut_len);
		done = 0;
	}
	if (r == 0)
		r = write_file(s->file_fd, buf, len, &done);
	if (r == 0) {
		wait_end(&s->file_wait);
		return;
	}
	s->file_err = -r;
	if (!waits_for_room(-r)) { /* an I/O error: the rest is lost */
		close(s->file_fd);
		s->file_fd = -1;
		s->file_wait.waiting = false;
		s->file_lost += s->file_cut_len;
		s->file_cut_len = 0;
		file_lose(s, buf + done, len - done);
		return;
	}
	wait_begin(&s->file_wait, clock_mono());
	if (done > 0 && buf[done - 1] != '\n') { /* keep the rest of the cut line */
		const char *nl = memchr(buf + done, '\n', len - done);
		size_t rest = nl ? (size_t)(nl - (buf + done)) + 1 : len - done;

		memcpy(s->file_cut, buf + done, rest);
		s->file_cut_len = rest;
		done += rest;
	}
	file_lose(s, buf + done, len - done);
}

void out_count_lines(struct out_count *c, const char *buf, size_t len, double now)
{
	size_t n = count_lines(buf, len), end = len, start;

	if (n == 0)
		return;
	c->bytes += len;
	c->lines += n;
	c->last_at = now;
	while (end > 0 && buf[end - 1] == '\n')
		end--;
	for (start = end; start > 0 && buf[start - 1] != '\n'; start--)
		;
	c->last_len = end - start < OUT_LAST_MAX ? end - start : OUT_LAST_MAX - 1;
	memcpy(c->last, buf + start, c->last_len);
	c->last[c->last_len] = '\0';
}

static int sink(void *ctx, const char *buf, size_t len)
{
	struct out_stream *s = ctx;

	if (s->count)
		out_count_lines(s->count, buf, len, clock_mono());
	if (s->console)
		console_put(s->console, buf, len);
	if (s->file_fd >= 0 || s->file_err)
		file_put(s, buf, len);
	if (s->tail)
		out_tail_append(s->tail, buf, len);
	return 0;
}

void out_stream_init(struct out_stream *s, int fd, struct out_console *console, int file_fd,
		     struct out_tail *tail)
{
	s->fd = fd;
	s->console = console;
	s->file_fd = file_fd;
	s->file_err = 0;
	s->file_lost = 0;
	s->file_err_said = false;
	s->file_wait = (struct out_wait){ 0 };
	s->file_cut_len = 0;
	s->tail = tail;
	s->count = NULL;
	ls_init(&s->ls, "", sink, s);
}

void out_stream_count(struct out_stream *s, struct out_count *c)
{
	s->count = c;
}

void out_stream_close(struct out_stream *s)
{
	if (s->fd >= 0) {
		(void)ls_finish(&s->ls);
		close(s->fd);
		s->fd = -1;
	}
	if (s->file_fd >= 0) {
		close(s->file_fd);
		s->file_fd = -1;
	}
	s->file_lost += s->file_cut_len; /* the disk stayed full to the end */
	s->file_cut_len = 0;
}

int out_stream_pump(struct out_stream *s)
{
	char buf[65536];

	for (int rounds = 0; rounds < 16; rounds++) {
		ssize_t n = io_read(s->fd, buf, sizeof(buf));

		if (n == -EAGAIN)
			return OUT_PUMP_EMPTY;
		if (n <= 0) {
			out_stream_close(s);
			return OUT_PUMP_CLOSED;
		}
		ls_feed(&s->ls, buf, (size_t)n);
	}
	return OUT_PUMP_MORE;
}

int out_parse_ranks(const char *spec, int world_size, bool **shown, char *err, size_t errlen)
{
	const char *p = spec;

	*shown = calloc((size_t)world_size, sizeof(bool));
	if (!*shown)
		return -ENOMEM;
	if (!*spec)
		goto bad;
	while (*p) {
		char *end;
		long a, b;

		if (*p < '0' || *p > '9')
			goto bad;
		a = strtol(p, &end, 10);
		b = a;
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				goto bad;
			b = strtol(end + 1, &end, 10);
		}
		if (*end != ',' && *end != '\0')
			goto bad;
		if (b < a) {
			snprintf(err, errlen, "--ranks-filter '%s': range %ld-%ld is reversed", spec, a, b);
			goto fail;
		}
		if (b >= world_size) {
			snprintf(err, errlen, "--ranks-filter '%s': rank %ld is out of range (world size %d: ranks 0..%d)",
				 spec, b, world_size, world_size - 1);
			goto fail;
		}
		for (long r = a; r <= b; r++)
			(*shown)[r] = true;
		p = *end ? end + 1 : end;
		if (*end == ',' && !*p)
			goto bad;
	}
	return 0;
bad:
	snprintf(err, errlen, "--ranks-filter '%s': expected ranks like 0,2-3", spec);
fail:
	free(*shown);
	*shown = NULL;
	return -EINVAL;
}
