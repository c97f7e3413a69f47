// SPDX-License-Identifier: MIT
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int io_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pfd = { .fd = fd, .events = POLLOUT };
				if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
					return -errno;
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
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
