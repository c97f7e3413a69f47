// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output.h"
#include "leak_check.h"

static int tail_of(struct out_tail *t, char ***lines)
{
	return out_tail_lines(t, OUT_TAIL_LINES, lines);
}

static void free_lines(char **lines, int n)
{
	for (int i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
}

LEAK_TEST(output, tail_keeps_the_last_twenty_lines)
{
	struct out_tail *t = calloc(1, sizeof(*t));
	char line[64], **lines;
	int n;

	for (int i = 0; i < 100; i++) {
		int l = snprintf(line, sizeof(line), "line %d\n", i);
		out_tail_append(t, line, (size_t)l);
	}
	n = tail_of(t, &lines);
	cr_assert_eq(n, 20);
	cr_assert_str_eq(lines[0], "line 80");
	cr_assert_str_eq(lines[19], "line 99");
	free_lines(lines, n);
	free(t);
}

LEAK_TEST(output, tail_drops_an_unfinished_last_line_and_a_cut_first_line)
{
	struct out_tail *t = calloc(1, sizeof(*t));
	char *big = malloc(OUT_TAIL_BYTES), **lines;
	int n;

	memset(big, 'x', OUT_TAIL_BYTES);
	out_tail_append(t, big, OUT_TAIL_BYTES); /* the ring wraps below: this line is cut */
	out_tail_append(t, "\nab\ncd\nef", 9);
	n = tail_of(t, &lines);
	cr_assert_eq(n, 2, "the x-run was cut by the ring and 'ef' is unfinished: got %d", n);
	cr_assert_str_eq(lines[0], "ab");
	cr_assert_str_eq(lines[1], "cd");
	free_lines(lines, n);
	free(big);
	free(t);
}

LEAK_TEST(output, tail_of_nothing_is_empty)
{
	struct out_tail t = { 0 };
	char **lines;

	cr_assert_eq(tail_of(&t, &lines), 0);
	free(lines);
}

LEAK_TEST(output, ranks_filter_parses_lists_and_ranges)
{
	bool *shown;
	char err[256];

	cr_assert_eq(out_parse_ranks("0,2-3,5", 6, &shown, err, sizeof(err)), 0);
	bool want[6] = { 1, 0, 1, 1, 0, 1 };
	for (int i = 0; i < 6; i++)
		cr_assert_eq(shown[i], want[i], "rank %d", i);
	free(shown);
}

LEAK_TEST(output, ranks_filter_rejects_bad_specs)
{
	const char *bad[] = { "", ",", "1,", "a", "1-", "-1", "3-1", "6", "0-9", "1 2", "1,,2" };
	bool *shown;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(out_parse_ranks(bad[i], 6, &shown, err, sizeof(err)), -EINVAL, "'%s'", bad[i]);
		cr_assert_null(shown);
		cr_assert(strstr(err, "--ranks-filter"), "%s", err);
	}
}

LEAK_TEST(output, stream_passes_whole_lines_to_console_file_and_tail)
{
	int in[2], con[2];
	char path[] = "/tmp/slotrun-test-out-XXXXXX", buf[256], **lines;
	int file = mkstemp(path), n;
	struct out_stream *s = calloc(1, sizeof(*s));
	struct out_tail *t = calloc(1, sizeof(*t));
	struct out_console console;
	ssize_t got;

	cr_assert(pipe2(in, O_NONBLOCK) == 0 && pipe(con) == 0 && file >= 0);
	out_console_init(&console, con[1]);
	out_stream_init(s, in[0], &console, file, t);
	cr_assert_eq(write(in[1], "a\nb", 3), 3);
	cr_assert_eq(out_stream_pump(s), OUT_PUMP_EMPTY);
	cr_assert_eq(out_console_flush(&console), 0);
	got = read(con[0], buf, sizeof(buf));
	cr_assert_eq(got, 2, "only the finished line goes out");
	close(in[1]);
	cr_assert_eq(out_stream_pump(s), OUT_PUMP_CLOSED);
	cr_assert_eq(out_console_flush(&console), 0);
	got = read(con[0], buf, sizeof(buf));
	cr_assert_eq(got, 2);
	cr_assert(memcmp(buf, "b\n", 2) == 0, "the unfinished line is ended at EOF");
	file = open(path, O_RDONLY | O_CLOEXEC); /* the stream closed its own at EOF */
	cr_assert_eq(read(file, buf, sizeof(buf)), 4);
	close(file);
	n = tail_of(t, &lines);
	cr_assert_eq(n, 2);
	free_lines(lines, n);
	unlink(path);
	close(con[0]);
	close(con[1]);
	out_console_free(&console);
	free(s);
	free(t);
}

LEAK_TEST(output, console_never_blocks_and_writes_whole_lines)
{
	int p[2];
	struct out_console c;
	char line[1000], buf[8192];
	size_t queued = 0, pending;
	struct out_stream s;

	signal(SIGPIPE, SIG_IGN); /* as slotrun does */
	cr_assert_eq(pipe(p), 0);
	fcntl(p[1], F_SETPIPE_SZ, 4096);
	out_console_init(&c, p[1]);
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	/* 100 KB into a 4 KB pipe nobody reads: flush must return, not block */
	for (int i = 0; i < 100; i++) {
		out_stream_init(&s, -1, &c, -1, NULL);
		ls_feed(&s.ls, line, sizeof(line));
		queued += sizeof(line);
	}
	cr_assert_gt(out_console_flush(&c), 90000, "most of it waits in the queue");
	/* every write was whole lines: what reached the pipe ends in '\n' */
	ssize_t n = read(p[0], buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(buf[n - 1], '\n');
	cr_assert_eq(n % 1000, 0, "only whole lines are written");
	pending = out_console_pending(&c);
	close(p[0]);
	cr_assert_eq(out_console_flush(&c), 0);
	cr_assert(c.broken, "the reader went away: EPIPE drops the rest");
	cr_assert_eq(c.err, EPIPE);
	cr_assert_eq(c.dropped, pending, "what was dropped is counted");
	out_stream_init(&s, -1, &c, -1, NULL);
	ls_feed(&s.ls, line, sizeof(line));
	cr_assert_eq(c.dropped, pending + sizeof(line), "and what comes later");
	close(p[1]);
	out_console_free(&c);
}

LEAK_TEST(output, a_log_file_that_fails_is_closed_and_the_rest_counted)
{
	struct out_stream s;
	int bad = open("/dev/null", O_RDONLY | O_CLOEXEC); /* write: EBADF */

	cr_assert_geq(bad, 0);
	out_stream_init(&s, -1, NULL, bad, NULL);
	ls_feed(&s.ls, "one\ntwo\n", 8);
	cr_assert_eq(s.file_err, EBADF);
	cr_assert_eq(s.file_fd, -1, "closed");
	cr_assert_not(s.file_wait.waiting);
	cr_assert_eq(s.file_lost, 8);
	ls_feed(&s.ls, "three\n", 6);
	cr_assert_eq(s.file_lost, 14);
}

/* A log file on a full disk stays open; what comes while it waits is
 * dropped and counted, and the first line past retry_at tries again. */
LEAK_TEST(output, a_log_file_on_a_full_disk_waits_and_resumes)
{
	struct out_stream s;
	char path[] = "/tmp/slotrun-test-nospc-XXXXXX", buf[64] = "", text[256];
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC), file = mkstemp(path);

	cr_assert(fd >= 0 && file >= 0);
	out_stream_init(&s, -1, NULL, fd, NULL);
	ls_feed(&s.ls, "one\ntwo\n", 8);
	cr_assert_eq(s.file_err, ENOSPC);
	cr_assert_eq(s.file_fd, fd, "kept open");
	cr_assert(s.file_wait.waiting);
	ls_feed(&s.ls, "three\n", 6);
	cr_assert_eq(s.file_lost, 14);
	cr_assert_eq(s.file_wait.lines, 3);
	cr_assert_eq(s.file_wait.bytes, 14);
	cr_assert_eq(dup3(file, fd, O_CLOEXEC), fd); /* room again */
	s.file_wait.retry_at = 0;
	ls_feed(&s.ls, "four\n", 5);
	cr_assert_not(s.file_wait.waiting);
	cr_assert(s.file_wait.resumed);
	cr_assert_eq(pread(file, buf, sizeof(buf) - 1, 0), 5);
	cr_assert_str_eq(buf, "four\n");
	cr_assert(strstr(out_wait_text(&s.file_wait, s.file_err, text, sizeof(text)),
			 "on a full disk (No space left on device); 3 lines (14 bytes) were lost"), "%s", text);
	out_stream_close(&s);
	cr_assert_eq(s.file_lost, 14);
	unlink(path);
	close(file);
}

/* A file on a full disk: /dev/full, then a file with room dup'd over the
 * same fd number. */
LEAK_TEST(output, a_full_disk_waits_bounded_counts_what_it_drops_and_resumes)
{
	struct out_console c;
	char line[1000], path[] = "/tmp/slotrun-test-nospc-XXXXXX", *got;
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC), file = mkstemp(path);
	size_t queued = 0;
	double delay;
	struct stat st;

	cr_assert(fd >= 0 && file >= 0);
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	out_console_init(&c, fd);
	out_console_put(&c, "first\n", 6);
	cr_assert_eq(out_console_flush(&c), 6);
	cr_assert(c.wait.waiting, "ENOSPC waits for room");
	cr_assert_not(c.broken);
	cr_assert_eq(c.err, ENOSPC);
	cr_assert_eq(c.dropped, 0, "nothing is lost yet");
	/* the queue is bounded: past OUT_CONSOLE_HIGH whole lines are dropped */
	for (queued = 6; queued <= OUT_CONSOLE_HIGH; queued += sizeof(line))
		out_console_put(&c, line, sizeof(line));
	cr_assert_eq(out_console_pending(&c), queued);
	out_console_put(&c, "two\nlines\n", 10);
	out_console_put(&c, line, sizeof(line));
	cr_assert_eq(out_console_pending(&c), queued, "the queue holds what it held");
	cr_assert_eq(c.wait.lines, 3);
	cr_assert_eq(c.wait.bytes, 10 + sizeof(line));
	cr_assert_eq(c.dropped, c.wait.bytes);
	/* each failed retry doubles the delay, up to OUT_RETRY_MAX */
	for (delay = c.wait.delay; delay < OUT_RETRY_MAX;) {
		c.wait.retry_at = 0; /* due now */
		cr_assert_eq(out_console_flush(&c), queued);
		cr_assert(c.wait.waiting);
		cr_assert_eq(c.wait.delay, delay * 2 < OUT_RETRY_MAX ? delay * 2 : OUT_RETRY_MAX);
		delay = c.wait.delay;
	}
	/* room again: the queue goes out whole, head first, and the wait ends */
	cr_assert_eq(dup3(file, fd, O_CLOEXEC), fd);
	c.wait.retry_at = 0;
	cr_assert_eq(out_console_flush(&c), 0);
	cr_assert_not(c.wait.waiting);
	cr_assert(c.wait.resumed, "for the caller to say");
	cr_assert_geq(c.wait.waited, 0);
	cr_assert_eq(fstat(file, &st), 0);
	cr_assert_eq((size_t)st.st_size, queued);
	got = malloc(queued);
	cr_assert_eq(pread(file, got, queued, 0), (ssize_t)queued);
	cr_assert(memcmp(got, "first\nxxx", 9) == 0);
	cr_assert_eq(got[queued - 1], '\n');
	free(got);
	/* a later line is written at once */
	out_console_put(&c, "later\n", 6);
	cr_assert_eq(out_console_flush(&c), 0);
	cr_assert_eq(c.dropped, 10 + sizeof(line), "only what was dropped while waiting is lost");
	unlink(path);
	close(file);
	close(fd);
	out_console_free(&c);
}

/* Any error but a full disk is final. */
LEAK_TEST(output, an_io_error_is_final)
{
	struct out_console c;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* write: EBADF */

	cr_assert_geq(fd, 0);
	out_console_init(&c, fd);
	out_console_put(&c, "a\n", 2);
	cr_assert_eq(out_console_flush(&c), 0);
	cr_assert(c.broken);
	cr_assert_not(c.wait.waiting);
	cr_assert_eq(c.err, EBADF);
	cr_assert_eq(c.dropped, 2);
	close(fd);
	out_console_free(&c);
}

LEAK_TEST(output, dropping_at_exit_is_counted)
{
	struct out_console c;
	struct out_stream s;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	out_console_init(&c, p[1]);
	out_stream_init(&s, -1, &c, -1, NULL);
	ls_feed(&s.ls, "unread\n", 7);
	out_console_drop(&c);
	cr_assert_eq(c.dropped, 7);
	cr_assert_eq(out_console_pending(&c), 0);
	close(p[0]);
	close(p[1]);
	out_console_free(&c);
}

/* A worker's stderr is bytes: a NUL does not end the line and nothing is
 * lost, every byte that is not text comes back as \xNN. */
LEAK_TEST(output, tail_lines_keep_every_byte_past_a_nul_escaped)
{
	static const char text[] = "a\0b \xff \x1b[31m \\ \xc3\xa9\tz\n\xe2\x82\n";
	struct out_tail *t = calloc(1, sizeof(*t));
	char **lines;
	int n;

	out_tail_append(t, text, sizeof(text) - 1);
	n = tail_of(t, &lines);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(lines[0], "a\\x00b \\xff \\x1b[31m \\\\ \xc3\xa9\tz");
	cr_assert_str_eq(lines[1], "\\xe2\\x82", "a cut UTF-8 sequence is bytes");
	free_lines(lines, n);
	free(t);
}

Test(output, escape_keeps_well_formed_utf8_only)
{
	static const struct { const char *in; size_t len; const char *out; } t[] = {
		{ "\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80" },
		{ "\xc0\xaf", 2, "\\xc0\\xaf" },              /* overlong '/' */
		{ "\xed\xa0\x80", 3, "\\xed\\xa0\\x80" },      /* a surrogate */
		{ "\xf4\x90\x80\x80", 4, "\\xf4\\x90\\x80\\x80" }, /* past U+10FFFF */
		{ "\x7f\r", 2, "\\x7f\\x0d" },
		{ "", 0, "" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		char *s = out_tail_escape(t[i].in, t[i].len);

		cr_assert_str_eq(s, t[i].out, "case %zu", i);
		free(s);
	}
}

LEAK_TEST(output, a_count_takes_bytes_lines_and_the_newest_line)
{
	struct out_count c = { 0 };
	char big[OUT_LAST_MAX + 50];

	out_count_lines(&c, "[rank=0] a\n[rank=0] bc\n", 23, 5.0);
	cr_assert_eq(c.bytes, 23);
	cr_assert_eq(c.lines, 2);
	cr_assert_float_eq(c.last_at, 5.0, 1e-9);
	cr_assert_str_eq(c.last, "[rank=0] bc");
	out_count_lines(&c, "x\n\n", 3, 6.0);
	cr_assert_eq(c.lines, 4);
	cr_assert_str_eq(c.last, "x", "empty lines at the end do not hide the last words");
	out_count_lines(&c, "", 0, 7.0);
	cr_assert_float_eq(c.last_at, 6.0, 1e-9, "no line: no time");
	memset(big, 'y', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	out_count_lines(&c, big, sizeof(big), 8.0);
	cr_assert_eq(c.last_len, OUT_LAST_MAX - 1, "the start of a long line");
	cr_assert_eq(strlen(c.last), OUT_LAST_MAX - 1);
}

LEAK_TEST(output, a_counted_stream_counts_both_what_it_passes_on)
{
	int in[2];
	struct out_stream *s = calloc(1, sizeof(*s));
	struct out_count c = { 0 };

	cr_assert_eq(pipe2(in, O_NONBLOCK | O_CLOEXEC), 0);
	out_stream_init(s, in[0], NULL, -1, NULL);
	out_stream_count(s, &c);
	cr_assert_eq(write(in[1], "one\ntwo\nthr", 11), 11);
	cr_assert_eq(out_stream_pump(s), OUT_PUMP_EMPTY);
	cr_assert_eq(c.lines, 2);
	cr_assert_eq(c.bytes, 8, "the unfinished line is not counted yet");
	cr_assert_str_eq(c.last, "two");
	close(in[1]);
	cr_assert_eq(out_stream_pump(s), OUT_PUMP_CLOSED);
	cr_assert_eq(c.lines, 3);
	cr_assert_str_eq(c.last, "thr");
	free(s);
}
