// SPDX-License-Identifier: MIT
/* The benchmark's expected values against a direct simulation of the
 * all-reduce with the real kernels, for every type, op and n up to 9, and
 * the wrong-element count. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "reduce.h"
#include "verify.h"
#include "leak_check.h"

#define COUNT 517

LEAK_TEST(verify, expected_values_match_a_sequential_reduction)
{
	static uint8_t acc[COUNT * 8], in[COUNT * 8];

	for (int n = 1; n <= 9; n++) {
		for (int t = 0; t < SLOTCOMM_DTYPE_COUNT; t++) {
			for (int op = 0; op < SLOTCOMM_OP_COUNT; op++) {
				struct verify_table exp;
				uint64_t first;
				double got, want, wrong;

				verify_fill(acc, COUNT, (enum slotcomm_dtype)t, (enum slotcomm_op)op, 0);
				for (int r = 1; r < n; r++) {
					verify_fill(in, COUNT, (enum slotcomm_dtype)t, (enum slotcomm_op)op, r);
					reduce_get((enum slotcomm_dtype)t, (enum slotcomm_op)op)(acc, in, COUNT);
				}
				if (op == SLOTCOMM_AVG)
					reduce_avg_finish(acc, COUNT, (enum slotcomm_dtype)t, n);
				verify_expect(&exp, (enum slotcomm_dtype)t, (enum slotcomm_op)op, n);
				wrong = (double)verify_check(acc, COUNT, &exp, &first, &got, &want);
				cr_assert_eq(wrong, 0, "n=%d %s %s: first wrong at %lu: got %g want %g", n,
					     slotcomm_dtype_name((enum slotcomm_dtype)t),
					     slotcomm_op_name((enum slotcomm_op)op), (unsigned long)first, got, want);
			}
		}
	}
}

LEAK_TEST(verify, wrong_elements_are_counted_and_located)
{
	float buf[100];
	struct verify_table exp;
	uint64_t first = 0;
	double got, want;

	verify_fill(buf, 100, SLOTCOMM_FLOAT32, SLOTCOMM_SUM, 0);
	verify_expect(&exp, SLOTCOMM_FLOAT32, SLOTCOMM_SUM, 1);
	cr_assert_eq(verify_check(buf, 100, &exp, &first, &got, &want), 0);
	buf[17] += 1.0f;
	buf[50] = 0.0f / 0.0f;
	cr_assert_eq(verify_check(buf, 100, &exp, &first, &got, &want), 2);
	cr_assert_eq(first, 17);
	cr_assert_eq(got, want + 1.0);
	/* within tolerance is right */
	verify_fill(buf, 100, SLOTCOMM_FLOAT32, SLOTCOMM_SUM, 0);
	buf[3] *= 1.0f + 1e-7f;
	cr_assert_eq(verify_check(buf, 100, &exp, &first, &got, &want), 0);
}

LEAK_TEST(verify, inputs_differ_between_ranks_and_elements)
{
	int differ = 0;

	for (unsigned h = 0; h < 16; h++) {
		cr_assert(verify_input(SLOTCOMM_SUM, 0, h) >= -4 && verify_input(SLOTCOMM_SUM, 0, h) <= 4);
		differ += verify_input(SLOTCOMM_SUM, 0, h) != verify_input(SLOTCOMM_SUM, 1, h);
	}
	cr_assert_gt(differ, 8);
	differ = 0;
	for (uint64_t i = 1; i < 64; i++)
		differ += verify_class(i) != verify_class(i - 1);
	cr_assert_gt(differ, 48);
}

/* An out-of-place all-reduce that leaves its receive buffer alone leaves
 * the poison there: every element of it must count as wrong, for every
 * type, op and size, including the wrapped integer products of many ranks. */
LEAK_TEST(verify, poison_is_wrong_everywhere)
{
	static uint8_t buf[COUNT * 8];
	static const int sizes[] = { 1, 2, 3, 9, 64, 130, 1000, 4096 };

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (int t = 0; t < SLOTCOMM_DTYPE_COUNT; t++) {
			for (int op = 0; op < SLOTCOMM_OP_COUNT; op++) {
				struct verify_table exp;
				uint64_t first = 99;
				double got, want;

				verify_expect(&exp, (enum slotcomm_dtype)t, (enum slotcomm_op)op, sizes[s]);
				memset(buf, 0, sizeof(buf));
				verify_poison(buf, COUNT, &exp);
				cr_assert_eq(verify_check(buf, COUNT, &exp, &first, &got, &want), COUNT,
					     "n=%d %s %s", sizes[s],
					     slotcomm_dtype_name((enum slotcomm_dtype)t),
					     slotcomm_op_name((enum slotcomm_op)op));
				cr_assert_eq(first, 0);
			}
		}
	}
}

/* The send buffer's check: a rank's own inputs pass against its input
 * table, another rank's (or a result's) do not. */
LEAK_TEST(verify, input_table_matches_the_rank_inputs_only)
{
	static uint8_t buf[COUNT * 8];

	for (int t = 0; t < SLOTCOMM_DTYPE_COUNT; t++) {
		for (int op = 0; op < SLOTCOMM_OP_COUNT; op++) {
			for (int rank = 0; rank < 5; rank++) {
				struct verify_table in;
				uint64_t first;
				double got, want;

				verify_expect_input(&in, (enum slotcomm_dtype)t, (enum slotcomm_op)op, rank);
				verify_fill(buf, COUNT, (enum slotcomm_dtype)t, (enum slotcomm_op)op, rank);
				cr_assert_eq(verify_check(buf, COUNT, &in, &first, &got, &want), 0,
					     "%s %s rank %d: first at %lu: %g, want %g",
					     slotcomm_dtype_name((enum slotcomm_dtype)t),
					     slotcomm_op_name((enum slotcomm_op)op), rank,
					     (unsigned long)first, got, want);
				verify_fill(buf, COUNT, (enum slotcomm_dtype)t, (enum slotcomm_op)op,
					    rank + 1);
				cr_assert_gt(verify_check(buf, COUNT, &in, &first, &got, &want), COUNT / 4,
					     "%s %s rank %d against rank %d's inputs",
					     slotcomm_dtype_name((enum slotcomm_dtype)t),
					     slotcomm_op_name((enum slotcomm_op)op), rank, rank + 1);
			}
		}
	}
}

LEAK_TEST(bench, sizes_parse_with_suffixes)
{
	uint64_t v;

	cr_assert_eq(bench_parse_size("4096", &v), 0);
	cr_assert_eq(v, 4096);
	cr_assert_eq(bench_parse_size("4K", &v), 0);
	cr_assert_eq(v, 4096);
	cr_assert_eq(bench_parse_size("64m", &v), 0);
	cr_assert_eq(v, 64u << 20);
	cr_assert_eq(bench_parse_size("1G", &v), 0);
	cr_assert_eq(v, 1u << 30);
	cr_assert_eq(bench_parse_size("0", &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(bench_parse_size("", &v), -EINVAL);
	cr_assert_eq(bench_parse_size("-1", &v), -EINVAL);
	cr_assert_eq(bench_parse_size("4KB", &v), -EINVAL);
	cr_assert_eq(bench_parse_size("4T", &v), -EINVAL);
	cr_assert_eq(bench_parse_size("2000G", &v), -ERANGE);
	cr_assert_eq(bench_parse_size("99999999999999999999999", &v), -ERANGE);
}

LEAK_TEST(bench, size_sequence)
{
	struct bench_opts o = { .minbytes = 4, .maxbytes = 100, .factor = 4 };
	uint64_t s = o.minbytes, seen[10];
	int n = 0;

	do
		seen[n++] = s;
	while (n < 10 && bench_next_size(&o, s, &s));
	cr_assert_eq(n, 3);
	cr_assert(seen[0] == 4 && seen[1] == 16 && seen[2] == 64);

	o.stepbytes = 30;
	s = 4;
	n = 0;
	do
		seen[n++] = s;
	while (n < 10 && bench_next_size(&o, s, &s));
	cr_assert_eq(n, 4);
	cr_assert_eq(seen[3], 94);

	o = (struct bench_opts){ .minbytes = 0, .maxbytes = 2, .factor = 2 };
	cr_assert(bench_next_size(&o, 0, &s) && s == 1);
	cr_assert(bench_next_size(&o, 1, &s) && s == 2);
	cr_assert(!bench_next_size(&o, 2, &s));
	o.maxbytes = BENCH_MAX_BYTES;
	cr_assert(!bench_next_size(&o, BENCH_MAX_BYTES, &s));
}
