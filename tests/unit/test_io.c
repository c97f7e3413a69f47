// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"
#include "leak_check.h"
#include "tmp_dir.h"

LEAK_TEST(io, parse_long_accepts_plain_numbers)
{
	long v;

	cr_assert_eq(io_parse_long("0", 0, 10, &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(io_parse_long("10", 0, 10, &v), 0);
	cr_assert_eq(v, 10);
	cr_assert_eq(io_parse_long("-3", -5, 10, &v), 0);
	cr_assert_eq(v, -3);
}

LEAK_TEST(io, parse_long_rejects_junk_and_range)
{
	long v;
	const char *bad[] = { "", " 1", "+1", "1 ", "1x", "x", "0x10", "-1" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(io_parse_long(bad[i], 0, 100, &v), -EINVAL, "'%s'", bad[i]);
	cr_assert_eq(io_parse_long("101", 0, 100, &v), -ERANGE);
	cr_assert_eq(io_parse_long("99999999999999999999999", 0, LONG_MAX, &v), -ERANGE);
	cr_assert_eq(io_parse_long(NULL, 0, 100, &v), -EINVAL);
}

LEAK_TEST_OPTS(io, write_all_finishes_on_nonblocking_pipe, .timeout = 10)
{
	int p[2], status;
	static char big[1 << 20];
	char rbuf[65536];
	size_t got = 0;
	pid_t pid;

	cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
	pid = fork();
	if (pid == 0) {
		/* child drains slowly; never asserts */
		close(p[1]);
		fcntl(p[0], F_SETFL, 0);
		for (;;) {
			ssize_t n = read(p[0], rbuf, sizeof(rbuf));
			if (n <= 0)
				_exit(got == sizeof(big) ? 0 : 1);
			got += (size_t)n;
		}
	}
	close(p[0]);
	cr_assert_eq(io_write_all(p[1], big, sizeof(big)), 0);
	close(p[1]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the reader got less than was written");
}

LEAK_TEST(io, read_reports_eof_and_errors)
{
	int p[2];
	char c;

	cr_assert_eq(pipe(p), 0);
	close(p[1]);
	cr_assert_eq(io_read(p[0], &c, 1), 0);
	close(p[0]);
	cr_assert_eq(io_read(p[0], &c, 1), -EBADF);
}

/* ---- io_read_file, on files in a fresh folder ---- */

#define MAX (1 << 20)    /* what ClusterInfo allows an info file */

TestSuite(read_file, .init = tmp_dir_setup, .fini = tmp_dir_teardown, .timeout = 20);

LEAK_TEST(read_file, absent_files_are_enoent)
{
	errno = 0;
	cr_assert_null(io_read_file(tmp_path("none.json"), MAX));
	cr_assert_eq(errno, ENOENT);
}

LEAK_TEST(read_file, reads_a_file_whole)
{
	static char big[200000];
	char *got;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	tmp_write("big", big, sizeof(big));
	got = io_read_file(tmp_path("big"), MAX);
	cr_assert_not_null(got);
	cr_assert_eq(strlen(got), sizeof(big));
	cr_assert(!memcmp(got, big, sizeof(big)));
	free(got);
	tmp_write("empty", "", 0);
	got = io_read_file(tmp_path("empty"), MAX);
	cr_assert_not_null(got);
	cr_assert_str_eq(got, "");
	free(got);
}

LEAK_TEST(read_file, refuses_large_files)
{
	static char big[MAX + 1];

	memset(big, ' ', sizeof(big));
	tmp_write("big", big, sizeof(big));
	errno = 0;
	cr_assert_null(io_read_file(tmp_path("big"), MAX));
	cr_assert_eq(errno, EFBIG);
	tmp_write("exact", big, MAX);
	char *got = io_read_file(tmp_path("exact"), MAX);
	cr_assert_not_null(got, "a file of exactly the limit is fine");
	free(got);
	errno = 0;
	cr_assert_null(io_read_file(tmp_write("one", "x", 1), 0));
	cr_assert_eq(errno, EFBIG, "max 0 allows only an empty file");
}

LEAK_TEST(read_file, refuses_directories_and_fifos)
{
	const char *fifo = tmp_path("fifo");

	errno = 0;
	cr_assert_null(io_read_file(tmpdir, MAX));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	errno = 0;
	cr_assert_null(io_read_file(fifo, MAX), "a FIFO must not block");
	cr_assert_eq(errno, EINVAL);
}

LEAK_TEST(read_file, other_errors_come_through)
{
	tmp_write("file", "x", 1);
	errno = 0;
	cr_assert_null(io_read_file(tmp_path("file/x"), MAX));
	cr_assert_eq(errno, ENOTDIR);
}
