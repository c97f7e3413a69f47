// SPDX-License-Identifier: MIT
/* wrap_rank's relay (relay.h) driven over pipes, and wrap_run as a whole
 * in a child process with pipes for its stdout and stderr. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "leak_check.h"
#include "procs.h"
#include "relay.h"
#include "wrap.h"

static char buf[1 << 16];

/* What is in fd now, up to cap-1 bytes, NUL-terminated (fd is
 * non-blocking). */
static size_t drain(int fd, char *out, size_t cap)
{
	size_t got = 0;
	ssize_t n;

	while (got + 1 < cap && (n = read(fd, out + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	return got;
}

/* A relay from a fresh pipe (the command's side in *cmd) to another (our
 * reading side in *out, non-blocking). */
static void relay_pipes(struct relay_stream *s, const char *prefix, int *cmd, int *out)
{
	int in[2], sink[2];

	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(sink, O_CLOEXEC), 0);
	cr_assert_eq(fcntl(sink[0], F_SETFL, O_NONBLOCK), 0);
	cr_assert_eq(relay_init(s, in[0], sink[1], prefix), 0);
	*cmd = in[1];
	*out = sink[0];
}

static void put(int fd, const char *text)
{
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
}

LEAK_TEST(relay, whole_lines_go_out_at_once_and_a_partial_one_waits)
{
	struct relay_stream s;
	char got[256];
	int cmd, out;

	relay_pipes(&s, "[rank=3] ", &cmd, &out);
	put(cmd, "one\ntw");
	cr_assert(relay_pump(&s, buf, sizeof(buf)));
	drain(out, got, sizeof(got));
	cr_assert_str_eq(got, "[rank=3] one\n");
	put(cmd, "o\r\nthree\rfour");
	cr_assert(relay_pump(&s, buf, sizeof(buf)));
	drain(out, got, sizeof(got));
	cr_assert_str_eq(got, "[rank=3] two\n[rank=3] three\n");
	/* EOF: the held line goes out, ended */
	close(cmd);
	cr_assert_not(relay_pump(&s, buf, sizeof(buf)));
	cr_assert_eq(s.fd, -1);
	drain(out, got, sizeof(got));
	cr_assert_str_eq(got, "[rank=3] four\n");
	cr_assert_not(relay_pump(&s, buf, sizeof(buf)), "a closed stream stays closed");
	close(s.sink);
	close(out);
}

LEAK_TEST(relay, small_reads_make_the_same_lines)
{
	const char *text = "alpha\nbeta\r\ngamma\n";
	struct relay_stream s;
	char got[256];
	int cmd, out;

	relay_pipes(&s, "> ", &cmd, &out);
	for (const char *p = text; *p; p++) {
		cr_assert_eq(write(cmd, p, 1), 1);
		cr_assert(relay_pump(&s, buf, 1));
	}
	close(cmd);
	cr_assert_not(relay_pump(&s, buf, sizeof(buf)));
	drain(out, got, sizeof(got));
	cr_assert_str_eq(got, "> alpha\n> beta\n> gamma\n");
	close(s.sink);
	close(out);
}

LEAK_TEST(relay, a_long_line_comes_out_in_prefixed_pieces_of_at_most_pipe_buf)
{
	static char line[3 * PIPE_BUF], got[4 * PIPE_BUF + 1024];
	struct relay_stream s;
	size_t n, payload = 0;
	int cmd, out;

	relay_pipes(&s, "[rank=1] ", &cmd, &out);
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	cr_assert_eq(write(cmd, line, sizeof(line)), (ssize_t)sizeof(line));
	close(cmd);
	while (relay_pump(&s, buf, sizeof(buf)))
		;
	n = drain(out, got, sizeof(got));
	for (char *p = got, *nl; p < got + n; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(got + n - p));
		cr_assert_not_null(nl, "every piece ends in a newline");
		cr_assert_leq((size_t)(nl + 1 - p), PIPE_BUF);
		cr_assert_eq(strncmp(p, "[rank=1] ", 9), 0);
		payload += (size_t)(nl - p) - 9;
	}
	cr_assert_eq(payload, sizeof(line) - 1, "the pieces give the line back");
	close(s.sink);
	close(out);
}

/* The reader of our output went away: the stream closes without writing
 * more, so the command's next write fails as it would without us. */
LEAK_TEST(relay, a_gone_reader_closes_the_stream)
{
	struct relay_stream s;
	int cmd, out;

	signal(SIGPIPE, SIG_IGN);
	relay_pipes(&s, "p ", &cmd, &out);
	close(out);
	put(cmd, "line\n");
	cr_assert_not(relay_pump(&s, buf, sizeof(buf)));
	cr_assert_eq(s.fd, -1);
	errno = 0;
	cr_assert_eq(write(cmd, "x", 1), -1);
	cr_assert_eq(errno, EPIPE);
	close(cmd);
	close(s.sink);
}

LEAK_TEST(relay, a_prefix_too_long_is_refused)
{
	char prefix[LS_PREFIX_MAX + 8];
	struct relay_stream s;

	memset(prefix, 'p', sizeof(prefix) - 1);
	prefix[sizeof(prefix) - 1] = '\0';
	cr_assert_eq(relay_init(&s, 0, 1, prefix), -EINVAL);
	cr_assert_eq(s.fd, -1);
	relay_close(&s, true); /* closes nothing */
}

/* ---- wrap_run, in a child: it blocks signals and reads a signalfd ---- */

struct ran {
	int code;
	char out[4096], err[4096];
};

/* Reads both pipes to EOF, within the test's timeout. */
static void read_both(int out, int err, struct ran *r)
{
	size_t got[2] = { 0, 0 };
	int fds[2] = { out, err };
	char *dst[2] = { r->out, r->err };

	while (fds[0] >= 0 || fds[1] >= 0) {
		struct pollfd pfd[2] = { { .fd = fds[0], .events = POLLIN }, { .fd = fds[1], .events = POLLIN } };

		cr_assert_geq(poll(pfd, 2, -1), 0);
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (!pfd[i].revents)
				continue;
			n = read(fds[i], dst[i] + got[i], sizeof(r->out) - 1 - got[i]);
			if (n <= 0) {
				close(fds[i]);
				fds[i] = -1;
			} else {
				got[i] += (size_t)n;
			}
		}
	}
	r->out[got[0]] = '\0';
	r->err[got[1]] = '\0';
}

static struct ran run_wrap(long rank, char *const *argv)
{
	struct ran r = { 0 };
	int out[2], err[2], status;
	pid_t pid;

	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct wrap_opts o = { .rank = rank, .argv = argv, .out_fd = out[1], .err_fd = err[1] };

		close(out[0]);
		close(err[0]);
		_exit(wrap_run(&o));
	}
	close(out[1]);
	close(err[1]);
	read_both(out[0], err[0], &r);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "wrap_run's process died: %#x", status);
	r.code = WEXITSTATUS(status);
	return r;
}

LEAK_TEST_OPTS(wrap_run, prefixes_both_streams_and_returns_the_code, .timeout = 30)
{
	char *argv[] = { "sh", "-c", "printf 'a\\nb'; printf 'e\\r\\n' >&2; exit 3", NULL };
	struct ran r = run_wrap(5, argv);

	cr_assert_eq(r.code, 3);
	cr_assert_str_eq(r.out, "[rank=5] a\n[rank=5] b\n", "the unfinished last line is kept");
	cr_assert_str_eq(r.err, "[rank=5] e\n");
}

LEAK_TEST_OPTS(wrap_run, death_by_signal_is_128_plus_n, .timeout = 30)
{
	char *argv[] = { "sh", "-c", "echo bye; kill -TERM $$", NULL };
	struct ran r = run_wrap(0, argv);

	cr_assert_eq(r.code, 128 + SIGTERM);
	cr_assert_str_eq(r.out, "[rank=0] bye\n");
}

LEAK_TEST_OPTS(wrap_run, a_missing_command_is_127, .timeout = 30)
{
	char *argv[] = { "no-such-command-for-wrap-run", NULL };
	struct ran r = run_wrap(1, argv);

	cr_assert_eq(r.code, 127);
	cr_assert_str_eq(r.out, "");
}

/* Something the command left running holds its pipes: wrap_run stops
 * reading after the linger and returns, with the lines it had.  The test
 * is a subreaper, as slotrun is, so the guard and what it watches come
 * back to it and are killed at the end. */
LEAK_TEST_OPTS(wrap_run, a_background_holder_does_not_keep_it, .timeout = 30)
{
	char *argv[] = { "sh", "-c", "sleep 60 & echo started", NULL };
	struct ran r;

	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	r = run_wrap(2, argv);
	cr_assert_eq(procs_kill_subtree(), 0);
	cr_assert_eq(r.code, 0);
	cr_assert_str_eq(r.out, "[rank=2] started\n");
}

/* ---- wrap_resolve_rank ---- */

LEAK_TEST(wrap, rank_as_a_number_or_from_variables)
{
	char err[256];
	long rank;

	cr_assert_eq(wrap_resolve_rank("7", &rank, err, sizeof(err)), 0);
	cr_assert_eq(rank, 7);
	setenv("WRAP_TEST_B", "4", 1);
	unsetenv("WRAP_TEST_A");
	cr_assert_eq(wrap_resolve_rank("WRAP_TEST_A,WRAP_TEST_B", &rank, err, sizeof(err)), 0);
	cr_assert_eq(rank, 4, "the first one set");
	setenv("WRAP_TEST_A", "x", 1);
	cr_assert_eq(wrap_resolve_rank("WRAP_TEST_A,WRAP_TEST_B", &rank, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "WRAP_TEST_A='x'"), "%s", err);
	cr_assert_eq(wrap_resolve_rank("WRAP_TEST_C", &rank, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "none of WRAP_TEST_C is set"), "%s", err);
	cr_assert_eq(wrap_resolve_rank("", &rank, err, sizeof(err)), -EINVAL);
}
