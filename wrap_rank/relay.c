// SPDX-License-Identifier: MIT
#include "relay.h"

#include <errno.h>
#include <unistd.h>

#include "io.h"

static int write_sink(void *ctx, const char *buf, size_t len)
{
	return io_write_all(*(int *)ctx, buf, len);
}

int relay_init(struct relay_stream *s, int fd, int sink, const char *prefix)
{
	int r;

	s->fd = -1;
	s->sink = sink;
	/* ls keeps the context: the stream's own sink, which lives as long */
	r = ls_init(&s->ls, prefix, write_sink, &s->sink);
	if (r == 0)
		s->fd = fd;
	return r;
}

void relay_close(struct relay_stream *s, bool flush)
{
	if (s->fd < 0)
		return;
	if (flush)
		(void)ls_finish(&s->ls);
	close(s->fd);
	s->fd = -1;
}

bool relay_pump(struct relay_stream *s, char *buf, size_t cap)
{
	ssize_t n;

	if (s->fd < 0)
		return false;
	n = io_read(s->fd, buf, cap);
	if (n <= 0)
		relay_close(s, true);
	else if (ls_feed(&s->ls, buf, (size_t)n) < 0)
		relay_close(s, false);
	return s->fd >= 0;
}
