/* Small fd helpers shared by the three programs.  All return 0 or a
 * negative errno; none logs. */
#ifndef SLOTRUN_IO_H
#define SLOTRUN_IO_H

#include <stddef.h>
#include <sys/types.h>

/* Writes all of buf, retrying EINTR, finishing partial writes, and waiting
 * for room when fd is non-blocking.  A write of at most PIPE_BUF bytes to a
 * pipe is a single write(2), so it is atomic. */
int io_write_all(int fd, const void *buf, size_t len);

/* read(2) that retries EINTR.  Returns bytes read (0 at EOF) or -errno. */
ssize_t io_read(int fd, void *buf, size_t len);

/* Parses a whole decimal string into [min, max].  -EINVAL when it is not a
 * number (empty, sign where none allowed, trailing text), -ERANGE outside. */
int io_parse_long(const char *s, long min, long max, long *out);

#endif
