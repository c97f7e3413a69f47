// SPDX-License-Identifier: MIT
/* Small fd and file helpers shared by the three programs.  All but
 * io_read_file return 0 or a negative errno; none logs. */
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

/* Reads the whole regular file at path, at most max bytes, into a malloc'd
 * NUL-terminated buffer.  Opened with O_NONBLOCK so that a FIFO put where a
 * file belongs cannot hang the caller; it is then refused.  Returns the
 * buffer, or NULL with errno set: ENOENT the file is absent, EFBIG it is
 * larger than max (checked again while reading: it may grow), EINVAL it is
 * not a regular file, anything else the open or read error (ENOMEM
 * included). */
char *io_read_file(const char *path, size_t max);

/* Parses a whole decimal string into [min, max].  -EINVAL when it is not a
 * number (empty, sign where none allowed, trailing text), -ERANGE outside. */
int io_parse_long(const char *s, long min, long max, long *out);

#endif
