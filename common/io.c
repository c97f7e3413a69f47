// SPDX-License-Identifier: MIT
#include "io.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"

int io_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			/* no deadline: see io.h.  POLLERR or POLLHUP wakes us
			 * too, and the next write says what it is. */
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		/* write(2) of a nonzero length returns 0 only where a file
		 * system or device takes nothing and gives no errno: trying
		 * again would spin. */
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

#define TEMP_HEX 12    /* hex digits of a temporary name's random part */

/* A name no other process can guess: O_EXCL makes a clash harmless, the
 * randomness makes it unlikely that someone plants one to make us fail. */
static void temp_name(char *buf, size_t size, const char *base, unsigned attempt)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint64_t)(clock_mono() * 1e9) ^ ((uint64_t)getpid() << 40) ^ attempt;
	snprintf(buf, size, ".%s.%0*llx.tmp", base, TEMP_HEX, (unsigned long long)(r & 0xffffffffffffull));
}

static int open_temp(int dfd, const char *base, mode_t mode, char *tmp, size_t size)
{
	for (unsigned attempt = 0; attempt < 100; attempt++) {
		int fd;

		temp_name(tmp, size, base, attempt);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, mode);
		if (fd >= 0 || errno != EEXIST)
			return fd < 0 ? -errno : fd;
	}
	return -EEXIST;
}

/* Whether the entry base in dfd may be renamed over: nothing, a regular
 * file or a link (the link is replaced, what it names is untouched).
 * Checked just before the rename, so a device or FIFO put there since a
 * caller's io_check_replace is not destroyed either; what appears in the
 * instant between this check and the rename is not seen. */
static int replaceable_at(int dfd, const char *base)
{
	struct stat st;

	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	return S_ISREG(st.st_mode) || S_ISLNK(st.st_mode) ? 0 : -EEXIST;
}

/* Writes buf to a new temporary file in dfd and renames it to base; the
 * temporary file is gone on any failure. */
static int replace_at(int dfd, const char *base, const void *buf, size_t len, mode_t mode)
{
	char tmp[NAME_MAX + 1];
	int fd, r;

	if (strlen(base) + sizeof(".") + TEMP_HEX + 1 + sizeof(".tmp") > sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open_temp(dfd, base, mode, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	r = io_write_all(fd, buf, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0)
		r = replaceable_at(dfd, base);
	if (r == 0 && renameat(dfd, tmp, dfd, base) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(dfd, tmp, 0);
		return r;
	}
	return 0;
}

/* The folder of path, opened, and the name in it; or -errno. */
static int open_folder(const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	int dfd;

	*base = slash ? slash + 1 : path;
	if (!**base)
		return -EISDIR;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return dfd < 0 ? -errno : dfd;
}

/* Whether name is one temp_name() makes for base. */
static bool is_temp_of(const char *name, const char *base)
{
	size_t bl = strlen(base);

	if (name[0] != '.' || strncmp(name + 1, base, bl) != 0 || name[1 + bl] != '.')
		return false;
	name += 2 + bl;
	for (int i = 0; i < TEMP_HEX; i++)
		if (!isxdigit((unsigned char)name[i]))
			return false;
	return strcmp(name + TEMP_HEX, ".tmp") == 0;
}

int io_remove_stale_temps(const char *path)
{
	const char *base;
	struct dirent *e;
	int dfd = open_folder(path, &base), removed = 0;
	DIR *dir;

	if (dfd < 0)
		return dfd;
	if (!(dir = fdopendir(dfd))) {
		int r = -errno;

		close(dfd);
		return r;
	}
	while ((e = readdir(dir)))
		if (is_temp_of(e->d_name, base) && unlinkat(dfd, e->d_name, 0) == 0)
			removed++;
	closedir(dir);
	return removed;
}

int io_check_replace(const char *path, mode_t *found)
{
	const char *base;
	struct stat st;
	int dfd = open_folder(path, &base), r = 0;

	*found = 0;
	if (dfd < 0)
		return dfd;
	/* what the folder's permissions and mount allow this process, as
	 * the temporary file's creation will find them */
	if (faccessat(dfd, ".", W_OK | X_OK, AT_EACCESS) < 0) {
		r = -errno;
	} else if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = errno == ENOENT ? 0 : -errno;
	} else {
		/* a link is replaced, not followed, but one to a device or
		 * a folder says the path was meant for something else */
		if (S_ISLNK(st.st_mode) && fstatat(dfd, base, &st, 0) < 0)
			st.st_mode = 0; /* a link to nothing: replacing it harms nothing */
		*found = st.st_mode & S_IFMT;
		if (S_ISDIR(st.st_mode))
			r = -EISDIR;
		else if (*found && !S_ISREG(st.st_mode))
			r = -EEXIST;
	}
	close(dfd);
	return r;
}

int io_remove_regular(const char *path)
{
	const char *base;
	struct stat st;
	int dfd = open_folder(path, &base), r = 0;

	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EEXIST;
	else if (unlinkat(dfd, base, 0) < 0)
		r = -errno;
	close(dfd);
	return r;
}

int io_replace_file(const char *path, const void *buf, size_t len, mode_t mode)
{
	const char *base;
	int dfd = open_folder(path, &base), r;

	if (dfd < 0)
		return dfd;
	r = replace_at(dfd, base, buf, len, mode);
	/* The rename itself is durable only once the folder is synced.  Some
	 * file systems (FUSE, some network ones) refuse fsync on a folder:
	 * there the rename is as durable as they make it, and the file is in
	 * place, so that is no failure to report. */
	if (r == 0 && fsync(dfd) < 0 && errno != EINVAL && errno != ENOTSUP && errno != EROFS)
		r = -errno;
	close(dfd);
	return r;
}

ssize_t io_read(int fd, void *buf, size_t len)
{
	for (;;) {
		ssize_t n = read(fd, buf, len);
		if (n >= 0)
			return n;
		if (errno != EINTR)
			return -errno;
	}
}

char *io_read_file(const char *path, size_t max)
{
	size_t len = 0, cap = 4096;
	struct stat st;
	char *buf = NULL, *nb;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0)
		goto failed;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto failed;
	}
	if ((unsigned long long)st.st_size > max) {
		errno = EFBIG;
		goto failed;
	}
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap || !buf) {
			if (buf)
				cap *= 2;
			nb = realloc(buf, cap);
			if (!nb)
				goto failed;
			buf = nb;
		}
		n = io_read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			errno = (int)-n;
			goto failed;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			errno = EFBIG;
			goto failed;
		}
	}
	close(fd);
	buf[len] = '\0';
	return buf;
failed:
	e = errno;
	free(buf);
	close(fd);
	errno = e;
	return NULL;
}

int io_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s || *s == ' ' || *s == '+' || (*s == '-' && min >= 0))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}
