// SPDX-License-Identifier: MIT
/* The reduction kernels against a scalar reference, for every type and op,
 * with lengths that exercise the vector loops' tails; the bf16/fp16
 * conversions on their edge cases. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "reduce.h"
#include "leak_check.h"

#define LEN 1037

static uint32_t rng = 12345;

static uint32_t next_rand(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 8;
}

static double ref_op(enum slotcomm_op op, double a, double b)
{
	switch (op) {
	case SLOTCOMM_SUM:
	case SLOTCOMM_AVG:
		return a + b;
	case SLOTCOMM_PROD:
		return a * b;
	case SLOTCOMM_MIN:
		return a < b ? a : b;
	default:
		return a > b ? a : b;
	}
}

LEAK_TEST(reduce, every_type_and_op_has_a_kernel)
{
	for (int t = 0; t < SLOTCOMM_DTYPE_COUNT; t++)
		for (int op = 0; op < SLOTCOMM_OP_COUNT; op++)
			cr_assert_not_null(reduce_get((enum slotcomm_dtype)t, (enum slotcomm_op)op));
	cr_assert_null(reduce_get(SLOTCOMM_DTYPE_COUNT, SLOTCOMM_SUM));
	cr_assert_null(reduce_get(SLOTCOMM_FLOAT32, SLOTCOMM_OP_COUNT));
}

LEAK_TEST(reduce, float_types_match_the_reference)
{
	static float fa[LEN], fb[LEN];
	static double da[LEN], db[LEN];

	for (int op = 0; op < SLOTCOMM_OP_COUNT; op++) {
		for (size_t n = 0; n <= LEN; n += (n < 40 ? 1 : 333)) {
			for (size_t i = 0; i < n; i++) {
				fa[i] = (float)((int)(next_rand() % 2001) - 1000) / 8.0f;
				fb[i] = (float)((int)(next_rand() % 2001) - 1000) / 8.0f;
				da[i] = fa[i] * 1.5;
				db[i] = fb[i] * 0.75;
			}
			float fr[LEN];
			double dr[LEN];
			for (size_t i = 0; i < n; i++) {
				fr[i] = (float)ref_op((enum slotcomm_op)op, fa[i], fb[i]);
				dr[i] = ref_op((enum slotcomm_op)op, da[i], db[i]);
			}
			reduce_get(SLOTCOMM_FLOAT32, (enum slotcomm_op)op)(fa, fb, n);
			reduce_get(SLOTCOMM_FLOAT64, (enum slotcomm_op)op)(da, db, n);
			for (size_t i = 0; i < n; i++) {
				cr_assert_eq(fa[i], fr[i], "float32 op %d n %zu [%zu]", op, n, i);
				cr_assert_eq(da[i], dr[i], "float64 op %d n %zu [%zu]", op, n, i);
			}
		}
	}
}

LEAK_TEST(reduce, integers_match_and_wrap)
{
	static int32_t a[LEN], b[LEN], r[LEN];
	static int64_t la[LEN], lb[LEN], lr[LEN];

	for (int op = 0; op < SLOTCOMM_OP_COUNT; op++) {
		for (size_t i = 0; i < LEN; i++) {
			a[i] = (int32_t)next_rand() - (1 << 23);
			b[i] = (int32_t)(next_rand() % 200) - 100;
			la[i] = (int64_t)next_rand() * 1000003 - 5000000000LL;
			lb[i] = (int64_t)(next_rand() % 2000) - 1000;
		}
		a[0] = INT32_MAX, b[0] = 2;
		la[0] = INT64_MAX, lb[0] = 3;
		for (size_t i = 0; i < LEN; i++) {
			uint32_t ua = (uint32_t)a[i], ub = (uint32_t)b[i];
			uint64_t ula = (uint64_t)la[i], ulb = (uint64_t)lb[i];

			switch (op) {
			case SLOTCOMM_SUM:
			case SLOTCOMM_AVG:
				r[i] = (int32_t)(ua + ub);
				lr[i] = (int64_t)(ula + ulb);
				break;
			case SLOTCOMM_PROD:
				r[i] = (int32_t)(ua * ub);
				lr[i] = (int64_t)(ula * ulb);
				break;
			case SLOTCOMM_MIN:
				r[i] = a[i] < b[i] ? a[i] : b[i];
				lr[i] = la[i] < lb[i] ? la[i] : lb[i];
				break;
			default:
				r[i] = a[i] > b[i] ? a[i] : b[i];
				lr[i] = la[i] > lb[i] ? la[i] : lb[i];
			}
		}
		reduce_get(SLOTCOMM_INT32, (enum slotcomm_op)op)(a, b, LEN);
		reduce_get(SLOTCOMM_INT64, (enum slotcomm_op)op)(la, lb, LEN);
		cr_assert_eq(memcmp(a, r, sizeof(a)), 0, "int32 op %d", op);
		cr_assert_eq(memcmp(la, lr, sizeof(la)), 0, "int64 op %d", op);
	}
	/* The wrap itself, spelled out. */
	{
		int32_t x = INT32_MAX, y = 1;
		reduce_get(SLOTCOMM_INT32, SLOTCOMM_SUM)(&x, &y, 1);
		cr_assert_eq(x, INT32_MIN);
	}
}

static void check_half(enum slotcomm_dtype t, uint16_t (*out)(float), float (*in)(uint16_t))
{
	static uint16_t a[LEN], b[LEN], r[LEN];

	for (int op = 0; op < SLOTCOMM_OP_COUNT; op++) {
		for (size_t n = 0; n <= LEN; n += (n < 40 ? 1 : 333)) {
			for (size_t i = 0; i < n; i++) {
				/* random finite values, including subnormals */
				do
					a[i] = (uint16_t)next_rand();
				while (isnan(in(a[i])) || isinf(in(a[i])));
				do
					b[i] = (uint16_t)next_rand();
				while (isnan(in(b[i])) || isinf(in(b[i])));
				r[i] = out((float)ref_op((enum slotcomm_op)op, in(a[i]), in(b[i])));
			}
			reduce_get(t, (enum slotcomm_op)op)(a, b, n);
			for (size_t i = 0; i < n; i++)
				cr_assert_eq(a[i], r[i], "type %d op %d n %zu [%zu]: %#x != %#x", t, op, n,
					     i, a[i], r[i]);
		}
	}
}

LEAK_TEST(reduce, bf16_is_reduced_in_float_and_rounded)
{
	check_half(SLOTCOMM_BF16, slotcomm_float_to_bf16, slotcomm_bf16_to_float);
}

LEAK_TEST(reduce, fp16_is_reduced_in_float_and_rounded)
{
	check_half(SLOTCOMM_FP16, slotcomm_float_to_fp16, slotcomm_fp16_to_float);
}

LEAK_TEST(reduce, bf16_conversion_edges)
{
	cr_assert_eq(slotcomm_float_to_bf16(1.0f), 0x3f80);
	cr_assert_eq(slotcomm_float_to_bf16(-2.0f), 0xc000);
	cr_assert_eq(slotcomm_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);          /* tie to even */
	cr_assert_eq(slotcomm_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);      /* tie to even, up */
	cr_assert_eq(slotcomm_float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
	cr_assert_eq(slotcomm_float_to_bf16(INFINITY), 0x7f80);
	cr_assert_eq(slotcomm_float_to_bf16(3.4e38f), 0x7f80);                 /* rounds to infinity */
	cr_assert(isnan(slotcomm_bf16_to_float(slotcomm_float_to_bf16(NAN))));
	cr_assert_eq(slotcomm_bf16_to_float(0x3f80), 1.0f);
	for (uint32_t h = 0; h < 0x10000; h++)
		if (!isnan(slotcomm_bf16_to_float((uint16_t)h)))
			cr_assert_eq(slotcomm_float_to_bf16(slotcomm_bf16_to_float((uint16_t)h)), h,
				     "%#x", h);
}

LEAK_TEST(reduce, fp16_conversion_edges)
{
	cr_assert_eq(slotcomm_float_to_fp16(1.0f), 0x3c00);
	cr_assert_eq(slotcomm_float_to_fp16(-0.0f), 0x8000);
	cr_assert_eq(slotcomm_float_to_fp16(65504.0f), 0x7bff);
	cr_assert_eq(slotcomm_float_to_fp16(65519.0f), 0x7bff);
	cr_assert_eq(slotcomm_float_to_fp16(65520.0f), 0x7c00);  /* tie to even: infinity */
	cr_assert_eq(slotcomm_float_to_fp16(1e6f), 0x7c00);
	cr_assert_eq(slotcomm_float_to_fp16(0x1p-24f), 0x0001);   /* smallest subnormal */
	cr_assert_eq(slotcomm_float_to_fp16(0x1p-25f), 0x0000);   /* tie to even: zero */
	cr_assert_eq(slotcomm_float_to_fp16(3 * 0x1p-26f), 0x0001);
	cr_assert_eq(slotcomm_float_to_fp16(0x1p-14f), 0x0400);   /* smallest normal */
	cr_assert_eq(slotcomm_float_to_fp16(1.0f + 0x1p-11f), 0x3c00);
	cr_assert_eq(slotcomm_float_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);
	cr_assert_eq(slotcomm_float_to_fp16(INFINITY), 0x7c00);
	cr_assert_eq(slotcomm_float_to_fp16(-INFINITY), 0xfc00);
	cr_assert(isnan(slotcomm_fp16_to_float(slotcomm_float_to_fp16(NAN))));
	cr_assert_eq(slotcomm_fp16_to_float(0x0001), 0x1p-24f);
	cr_assert_eq(slotcomm_fp16_to_float(0xfbff), -65504.0f);
	for (uint32_t h = 0; h < 0x10000; h++)
		if (!isnan(slotcomm_fp16_to_float((uint16_t)h)))
			cr_assert_eq(slotcomm_float_to_fp16(slotcomm_fp16_to_float((uint16_t)h)), h,
				     "%#x", h);
}

LEAK_TEST(reduce, avg_divides_and_integers_truncate_toward_zero)
{
	int32_t i[3] = { -7, 7, 9 };
	int64_t l[2] = { -9, 10 };
	float f[2] = { 3.0f, -1.0f };
	double d[1] = { 1.0 };
	uint16_t b[1] = { slotcomm_float_to_bf16(6.0f) }, h[1] = { slotcomm_float_to_fp16(5.0f) };

	reduce_avg_finish(i, 3, SLOTCOMM_INT32, 2);
	cr_assert(i[0] == -3 && i[1] == 3 && i[2] == 4);
	reduce_avg_finish(l, 2, SLOTCOMM_INT64, 4);
	cr_assert(l[0] == -2 && l[1] == 2);
	reduce_avg_finish(f, 2, SLOTCOMM_FLOAT32, 2);
	cr_assert(f[0] == 1.5f && f[1] == -0.5f);
	reduce_avg_finish(d, 1, SLOTCOMM_FLOAT64, 3);
	cr_assert_eq(d[0], 1.0 / 3.0);
	reduce_avg_finish(b, 1, SLOTCOMM_BF16, 4);
	cr_assert_eq(slotcomm_bf16_to_float(b[0]), 1.5f);
	reduce_avg_finish(h, 1, SLOTCOMM_FP16, 2);
	cr_assert_eq(slotcomm_fp16_to_float(h[0]), 2.5f);
}

/* The out-of-place kernels compute what the in-place ones do, bit for bit,
 * for every type and op (random bits, so NaNs, infinities and subnormals
 * of the 16-bit types come up too), at lengths around the vector widths. */
LEAK_TEST(reduce, out_of_place_kernels_match_in_place_ones)
{
	static uint8_t a[LEN * 8], b[LEN * 8], in_place[LEN * 8], out[LEN * 8 + 8];

	cr_assert_null(reduce2_get(SLOTCOMM_DTYPE_COUNT, SLOTCOMM_SUM));
	cr_assert_null(reduce2_get(SLOTCOMM_FLOAT32, SLOTCOMM_OP_COUNT));
	for (int t = 0; t < SLOTCOMM_DTYPE_COUNT; t++) {
		size_t es = slotcomm_dtype_size((enum slotcomm_dtype)t);

		for (int op = 0; op < SLOTCOMM_OP_COUNT; op++) {
			reduce2_fn f2 = reduce2_get((enum slotcomm_dtype)t, (enum slotcomm_op)op);

			cr_assert_not_null(f2);
			for (size_t n = 0; n <= LEN; n += (n < 40 ? 1 : 333)) {
				for (size_t i = 0; i < n * es; i++) {
					a[i] = (uint8_t)next_rand();
					b[i] = (uint8_t)next_rand();
				}
				memcpy(in_place, a, n * es);
				reduce_get((enum slotcomm_dtype)t, (enum slotcomm_op)op)(in_place, b, n);
				memset(out, 0xa5, n * es + 8);
				f2(out, a, b, n);
				cr_assert(memcmp(out, in_place, n * es) == 0, "type %d op %d n %zu", t,
					  op, n);
				for (size_t i = n * es; i < n * es + 8; i++)
					cr_assert_eq(out[i], 0xa5, "wrote past the end: type %d n %zu", t,
						     n);
			}
		}
	}
}

/* The streaming copy copies exactly, whatever the alignment and length. */
LEAK_TEST(reduce, streaming_copy_is_a_copy)
{
	static uint8_t src[5000], dst[5100];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)next_rand();
	for (size_t doff = 0; doff < 20; doff += 3) {
		for (size_t soff = 0; soff < 20; soff += 7) {
			for (size_t n = 0; n + soff < sizeof(src); n += n < 300 ? 1 : 997) {
				memset(dst, 0x5a, sizeof(dst));
				reduce_copy_stream(dst + doff, src + soff, n);
				cr_assert(memcmp(dst + doff, src + soff, n) == 0, "d+%zu s+%zu n=%zu", doff,
					  soff, n);
				for (size_t i = 0; i < doff; i++)
					cr_assert_eq(dst[i], 0x5a);
				for (size_t i = doff + n; i < sizeof(dst); i++)
					cr_assert_eq(dst[i], 0x5a, "wrote past the end: n=%zu", n);
			}
		}
	}
}
