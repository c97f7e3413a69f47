#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"
#include "leak_check.h"

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
