// SPDX-License-Identifier: MIT
/* Small fd and file helpers shared by the three programs.  All but
 * io_read_file return 0 or a negative errno; none logs. */
#ifndef SLOTRUN_IO_H
#define SLOTRUN_IO_H

#include <stddef.h>
#include <sys/types.h>

/* Writes all of buf, retrying EINTR, finishing partial writes, and waiting
 * for room when fd is non-blocking.  A write of at most PIPE_BUF bytes to a
 * pipe is a single write(2), so it is atomic.  Returns 0 or -errno; -EIO
 * when write(2) takes nothing without saying why (retrying would spin).
 *
 * The wait for room has no deadline, on purpose: it is what a blocking
 * write does, and the callers write to files and to the pipe or terminal
 * their user gave them, where a reader that pauses (a pager, a terminal
 * stopped with ^S) must hold the writer back, not make it drop output or
 * fail the job.  Peers that may hang use sock.h's writes, which take a
 * deadline. */
int io_write_all(int fd, const void *buf, size_t len);

/* Replaces the file at path with one holding buf (created with mode, less
 * the umask), atomically: a reader finds the old file or the whole new
 * one, never a part, also after a crash or a full disk.  The data goes to
 * a temporary file of a unique, unguessable name in path's folder, created
 * with O_EXCL|O_NOFOLLOW (so a file or link planted there is never
 * written through), is fsync'ed, renamed over path (a link at path itself
 * is replaced, not followed), and the folder fsync'ed so the rename
 * survives a crash.  Only a regular file or a link is replaced: a folder
 * at path gives -EISDIR, a device, FIFO or socket -EEXIST, and neither is
 * touched.  Every failure before the rename removes the temporary file.
 * Returns 0 or -errno; a failure of the last fsync (the folder's) leaves
 * the new file in place, not yet durable. */
int io_replace_file(const char *path, const void *buf, size_t len, mode_t mode);

/* Whether io_replace_file(path) can put its file at path destroying
 * nothing but an old regular file: path's folder exists and the caller
 * may create files in it (a read-only mount says so, also to root), and
 * at path there is nothing, a regular file, or a symbolic link to a
 * regular file or to nothing.  *found gets the S_IFMT type of what is at
 * path, through a link (0: nothing).  Returns 0, or -errno: -ENOENT,
 * -ENOTDIR, -EACCES, -EROFS, ... for the folder; -EISDIR when path is a
 * folder or a link to one; -EEXIST when it is a device, FIFO or socket or
 * a link to one (see *found).  Checking is no lock: io_replace_file
 * checks again what it replaces. */
int io_check_replace(const char *path, mode_t *found);

/* Removes path if it is a regular file (not a link, nor anything else).
 * Returns 0, -ENOENT when there is none, -EEXIST when something else is
 * there (left as it is), or the -errno of the removal. */
int io_remove_regular(const char *path);

/* Removes the temporary files that io_replace_file(path) left in path's
 * folder when its process was killed mid-write (each as large as the file
 * it was to become).  Only for a caller that is path's one writer: another
 * writer's temporary file in flight would go too.  Returns how many were
 * removed, or -errno when the folder cannot be read. */
int io_remove_stale_temps(const char *path);

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
