// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "line_splitter.h"
#include "leak_check.h"

/* Collects every write so tests can check both the bytes and how they were
 * cut into writes. */
struct sink {
	char *buf;
	size_t len, cap;
	size_t writes;
	int fail_with;
};

static int sink_write(void *ctx, const char *b, size_t n)
{
	struct sink *s = ctx;

	cr_assert(n > 0 && n <= PIPE_BUF, "write of %zu bytes", n);
	cr_assert(b[n - 1] == '\n', "a write must end on a line boundary");
	if (s->fail_with)
		return -s->fail_with;
	if (s->len + n > s->cap) {
		s->cap = (s->len + n) * 2;
		s->buf = realloc(s->buf, s->cap);
	}
	memcpy(s->buf + s->len, b, n);
	s->len += n;
	s->writes++;
	return 0;
}

/* The contract, written the slow obvious way: every line of the input,
 * prefixed, ended with '\n', long ones cut into pieces of at most max. */
static size_t reference(const char *in, size_t n, const char *prefix, size_t max, char *out)
{
	size_t o = 0, i = 0, pl = strlen(prefix);

	while (i < n) {
		size_t start = i, len;
		while (i < n && in[i] != '\n' && in[i] != '\r')
			i++;
		len = i - start;
		if (i < n) {
			if (in[i] == '\r' && i + 1 < n && in[i + 1] == '\n')
				i++;
			i++;
		}
		do {
			size_t take = len > max ? max : len;
			memcpy(out + o, prefix, pl);
			o += pl;
			memcpy(out + o, in + start, take);
			o += take;
			out[o++] = '\n';
			start += take;
			len -= take;
		} while (len > 0);
	}
	return o;
}

static void run_split(const char *in, size_t n, const size_t *cuts, size_t ncuts, struct sink *s)
{
	struct line_splitter *ls = malloc(sizeof(*ls));
	size_t at = 0;

	cr_assert_eq(ls_init(ls, "[rank=7] ", sink_write, s), 0);
	for (size_t c = 0; c <= ncuts; c++) {
		size_t end = c < ncuts ? cuts[c] : n;
		cr_assert_eq(ls_feed(ls, in + at, end - at), 0);
		at = end;
	}
	cr_assert_eq(ls_finish(ls), 0);
	free(ls);
}

static void check_against_reference(const char *in, size_t n, const size_t *cuts, size_t ncuts)
{
	struct sink s = { 0 };
	char *want = malloc(n * 4 + 64 * (n + 1));
	size_t wlen = reference(in, n, "[rank=7] ", PIPE_BUF - 10, want);

	run_split(in, n, cuts, ncuts, &s);
	cr_assert_eq(s.len, wlen, "length %zu, expected %zu", s.len, wlen);
	cr_assert(memcmp(s.buf, want, wlen) == 0, "output differs from the reference");
	free(want);
	free(s.buf);
}

static const char endings[] = "a\nbb\r\ncc\rdd\n\n\r\r\n\r\rx\r\n\ny";

LEAK_TEST(line_splitter, every_ending_split_at_every_offset)
{
	size_t n = sizeof(endings) - 1;

	for (size_t cut = 0; cut <= n; cut++)
		check_against_reference(endings, n, &cut, 1);
}

LEAK_TEST(line_splitter, every_pair_of_cuts)
{
	size_t n = sizeof(endings) - 1;

	for (size_t a = 0; a <= n; a++)
		for (size_t b = a; b <= n; b++) {
			size_t cuts[2] = { a, b };
			check_against_reference(endings, n, cuts, 2);
		}
}

LEAK_TEST(line_splitter, byte_by_byte)
{
	size_t n = sizeof(endings) - 1, cuts[sizeof(endings)];

	for (size_t i = 0; i < n; i++)
		cuts[i] = i;
	check_against_reference(endings, n, cuts, n);
}

LEAK_TEST(line_splitter, exact_output_for_each_ending)
{
	static const char in[] = "one\ntwo\r\nthree\rfour";
	static const char want[] = "[rank=7] one\n[rank=7] two\n[rank=7] three\n[rank=7] four\n";
	struct sink s = { 0 };

	run_split(in, sizeof(in) - 1, NULL, 0, &s);
	cr_assert_eq(s.len, sizeof(want) - 1);
	cr_assert(memcmp(s.buf, want, s.len) == 0);
	free(s.buf);
}

LEAK_TEST(line_splitter, empty_lines_are_lines)
{
	static const char in[] = "\n\n\r\n\r";
	static const char want[] = "[rank=7] \n[rank=7] \n[rank=7] \n[rank=7] \n";
	struct sink s = { 0 };

	run_split(in, sizeof(in) - 1, NULL, 0, &s);
	cr_assert_eq(s.len, sizeof(want) - 1);
	cr_assert(memcmp(s.buf, want, s.len) == 0);
	free(s.buf);
}

LEAK_TEST(line_splitter, nul_and_invalid_utf8_pass_through)
{
	static const char in[] = "a\0b\xff\xfe\xc3(\n\0\n";
	static const char want[] = "[rank=7] a\0b\xff\xfe\xc3(\n[rank=7] \0\n";
	struct sink s = { 0 };

	run_split(in, sizeof(in) - 1, NULL, 0, &s);
	cr_assert_eq(s.len, sizeof(want) - 1);
	cr_assert(memcmp(s.buf, want, s.len) == 0);
	free(s.buf);
}

LEAK_TEST(line_splitter, last_line_without_newline_written_at_finish)
{
	struct line_splitter ls;
	struct sink s = { 0 };

	ls_init(&ls, "[rank=0] ", sink_write, &s);
	cr_assert_eq(ls_feed(&ls, "done", 4), 0);
	cr_assert_eq(s.len, 0, "an unfinished line must be held back");
	cr_assert_eq(ls_finish(&ls), 0);
	cr_assert_eq(s.len, 14);
	cr_assert(memcmp(s.buf, "[rank=0] done\n", 14) == 0);
	free(s.buf);
}

LEAK_TEST(line_splitter, complete_line_goes_out_at_once)
{
	struct line_splitter ls;
	struct sink s = { 0 };

	ls_init(&ls, "[rank=0] ", sink_write, &s);
	cr_assert_eq(ls_feed(&ls, "x\ry", 3), 0);
	cr_assert_eq(s.len, 11, "a line ended by \\r is complete when the \\r arrives");
	cr_assert_eq(ls_feed(&ls, "\n", 1), 0);
	cr_assert_eq(s.len, 22, "y\\n is the next line");
	cr_assert_eq(ls_finish(&ls), 0);
	cr_assert_eq(s.len, 22);
	free(s.buf);
}

LEAK_TEST(line_splitter, cr_then_lf_across_feeds_is_one_ending)
{
	struct line_splitter ls;
	struct sink s = { 0 };

	ls_init(&ls, "", sink_write, &s);
	ls_feed(&ls, "a\r", 2);
	ls_feed(&ls, "\nb\n", 3);
	ls_finish(&ls);
	cr_assert_eq(s.len, 4);
	cr_assert(memcmp(s.buf, "a\nb\n", 4) == 0);
	free(s.buf);
}

/* Long lines: around the piece size, and far beyond it, fed whole and in
 * odd-sized reads. */
ParameterizedTestParameters(line_splitter, long_lines)
{
	static size_t lens[] = { PIPE_BUF - 11, PIPE_BUF - 10, PIPE_BUF - 9, PIPE_BUF,
				 2 * (PIPE_BUF - 10), 2 * (PIPE_BUF - 10) + 1, 100000 };
	return cr_make_param_array(size_t, lens, sizeof(lens) / sizeof(lens[0]));
}

ParameterizedTest(size_t *len, line_splitter, long_lines)
{
	size_t n = *len + 1, cuts[64], ncuts = 0;
	char *in = malloc(n);

	for (size_t i = 0; i < *len; i++)
		in[i] = (char)('a' + i % 26);
	in[*len] = '\n';
	check_against_reference(in, n, NULL, 0);
	for (size_t at = 1; at < n && ncuts < 64; at += 997)
		cuts[ncuts++] = at;
	check_against_reference(in, n, cuts, ncuts);
	/* also without the final newline */
	check_against_reference(in, n - 1, NULL, 0);
	free(in);
}

LEAK_TEST(line_splitter, random_streams_match_reference)
{
	static const char alphabet[] = "ab\n\r\0\xff";
	size_t n = 200000;
	char *in = malloc(n);
	size_t cuts[300];

	srand(12345);
	for (int round = 0; round < 20; round++) {
		size_t ncuts = 0, at = 0;
		for (size_t i = 0; i < n; i++) {
			/* long runs of letters now and then, to cross the piece size */
			int c = rand() % 1000 < 997 ? rand() % 2 : rand() % 6;
			in[i] = alphabet[round % 2 ? c : rand() % 6];
		}
		while (ncuts < 300) {
			at += (size_t)(rand() % 2000);
			if (at > n)
				break;
			cuts[ncuts++] = at;
		}
		check_against_reference(in, n, cuts, ncuts);
	}
	free(in);
}

LEAK_TEST(line_splitter, batches_many_lines_per_write)
{
	struct line_splitter ls;
	struct sink s = { 0 };
	char in[100 * 100];

	for (int i = 0; i < 100; i++) {
		memset(in + i * 100, 'z', 99);
		in[i * 100 + 99] = '\n';
	}
	ls_init(&ls, "[rank=1] ", sink_write, &s);
	cr_assert_eq(ls_feed(&ls, in, sizeof(in)), 0);
	cr_assert_eq(s.len, 100 * 109);
	cr_assert_leq(s.writes, 3, "100 short lines took %zu writes", s.writes);
	free(s.buf);
}

LEAK_TEST(line_splitter, prefix_too_long_rejected)
{
	struct line_splitter ls;
	char prefix[LS_PREFIX_MAX + 1];

	memset(prefix, 'p', LS_PREFIX_MAX);
	prefix[LS_PREFIX_MAX] = 0;
	cr_assert_eq(ls_init(&ls, prefix, sink_write, NULL), -EINVAL);
}

LEAK_TEST(line_splitter, write_error_is_returned)
{
	struct line_splitter ls;
	struct sink s = { .fail_with = EPIPE };

	ls_init(&ls, "", sink_write, &s);
	cr_assert_eq(ls_feed(&ls, "x\n", 2), -EPIPE);
	cr_assert_eq(ls_feed(&ls, "partial", 7), 0);
	cr_assert_eq(ls_finish(&ls), -EPIPE);
}
