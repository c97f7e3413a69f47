// SPDX-License-Identifier: MIT
#include "comm_report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"

/* Room kept for the object's end: "\", \"culprit_rank\": 2147483647}\n" */
#define TAIL_ROOM 48

size_t comm_report_format(char *buf, size_t len, const char *message, int culprit)
{
	static const char head[] = "{\"message\": \"";
	size_t n = sizeof(head) - 1;

	if (len < sizeof(head) + TAIL_ROOM)
		return 0;
	memcpy(buf, head, n);
	for (const unsigned char *p = (const unsigned char *)message; *p; p++) {
		char esc[8];
		int k;

		if (*p == '"' || *p == '\\')
			k = snprintf(esc, sizeof(esc), "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			k = snprintf(esc, sizeof(esc), "\\u%04x", *p);
		else
			k = snprintf(esc, sizeof(esc), "%c", *p >= 0x80 ? '?' : *p);
		if (n + (size_t)k + TAIL_ROOM > len)
			break; /* cut between two characters: still a valid string */
		memcpy(buf + n, esc, (size_t)k);
		n += (size_t)k;
	}
	if (culprit >= 0)
		n += (size_t)snprintf(buf + n, len - n, "\", \"culprit_rank\": %d}\n", culprit);
	else
		n += (size_t)snprintf(buf + n, len - n, "\"}\n");
	return n;
}

int comm_report_write(const char *message, int culprit)
{
	const char *path = getenv(COMM_REPORT_VAR);
	char text[4096];
	size_t n;
	int fd, r;

	if (!path || !*path)
		path = getenv(COMM_REPORT_TORCH_VAR);
	if (!path || !*path)
		return 0;
	n = comm_report_format(text, sizeof(text), message, culprit);
	/* O_NOFOLLOW: a link planted at the path is not written through */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
	if (fd < 0)
		return -errno;
	r = io_write_all(fd, text, n);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}
