// SPDX-License-Identifier: MIT
/* fp16 packing: every half survives a round trip, known values and ties,
 * and round to nearest even checked against the neighbours over a sweep
 * of floats. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "leak_check.h"

static float from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

LEAK_TEST(half, every_half_round_trips)
{
	for (uint32_t h = 0; h <= 0xffff; h++) {
		float f = half_to_float((uint16_t)h);
		uint16_t back = half_from_float(f);

		if (isnan(f)) {
			cr_assert((back & 0x7c00) == 0x7c00 && (back & 0x3ff), "%04x -> %04x", h, back);
			cr_assert_eq(back & 0x8000, h & 0x8000);
		} else {
			cr_assert_eq(back, h, "%04x -> %g -> %04x", h, f, back);
		}
	}
}

struct known {
	float f;
	uint16_t h;
};

LEAK_TEST(half, known_values_and_ties)
{
	static const struct known cases[] = {
		{ 0.0f, 0x0000 }, { -0.0f, 0x8000 }, { 1.0f, 0x3c00 }, { -2.0f, 0xc000 },
		{ 0.1f, 0x2e66 }, { 65504.0f, 0x7bff }, { 65519.0f, 0x7bff },
		{ 65520.0f, 0x7c00 },  /* the tie above the largest half goes to "even" infinity */
		{ 1e6f, 0x7c00 }, { -1e6f, 0xfc00 }, { INFINITY, 0x7c00 }, { -INFINITY, 0xfc00 },
		{ 0x1p-14f, 0x0400 },  /* smallest normal */
		{ 0x1p-24f, 0x0001 },  /* smallest subnormal */
		{ 0x1p-25f, 0x0000 },  /* half of it: a tie, to even zero */
		{ 0x1.000002p-25f, 0x0001 },
		{ 0x3p-25f, 0x0002 },  /* 1.5 units: a tie, to even 2 */
		{ 0x5p-25f, 0x0002 },  /* 2.5 units: to even 2 */
		{ 0x1p-26f, 0x0000 }, { 1e-30f, 0x0000 }, { -1e-30f, 0x8000 },
		{ 0x1p-149f, 0x0000 },  /* a float subnormal */
		{ 1.0f + 0x1p-11f, 0x3c00 },     /* tie, to even 1.0 */
		{ 1.0f + 0x3p-11f, 0x3c02 },     /* tie, to even 1 + 2^-9 */
		{ 1.0f + 0x1p-11f + 0x1p-20f, 0x3c01 },
		{ 0x1.ffcp-15f, 0x0400 },  /* halfway above the largest subnormal: to the normals */
		{ 2047.5f, 0x6800 }, { 2046.5f, 0x67fe },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(half_from_float(cases[i].f), cases[i].h, "%a: got %04x, want %04x",
			     cases[i].f, half_from_float(cases[i].f), cases[i].h);
	cr_assert(isnan(half_to_float(half_from_float(NAN))));
	cr_assert_eq(half_to_float(0x0001), 0x1p-24f);
	cr_assert_eq(half_to_float(0x7bff), 65504.0f);
	cr_assert_eq(half_to_float(0xfc00), -INFINITY);
}

/* For floats across the whole half range (every 997th bit pattern), the
 * half chosen is at least as near as both of its neighbours, and even on a
 * tie. */
LEAK_TEST(half, rounds_to_nearest_even)
{
	long checked = 0;

	for (uint32_t u = 0; u < 0x477ff000u; u += 997) {
		float f = from_bits(u);
		uint16_t h = half_from_float(f);
		double err = fabs((double)half_to_float(h) - f);
		double below = h ? fabs((double)half_to_float((uint16_t)(h - 1)) - f) : INFINITY;
		double above = h < 0x7bff ? fabs((double)half_to_float((uint16_t)(h + 1)) - f)
					  : INFINITY;

		cr_assert(err <= below && err <= above, "%a -> %04x (err %g, neighbours %g %g)", f, h,
			  err, below, above);
		if (err == below || err == above)
			cr_assert_eq(h & 1, 0, "%a: a tie went to odd %04x", f, h);
		/* the sign is only a bit */
		cr_assert_eq(half_from_float(-f), h | 0x8000);
		checked++;
	}
	cr_assert_gt(checked, 1000000);
}

/* half_pack and half_unpack take the F16C instructions where the CPU has
 * them: the same bits as the scalar conversions (NaNs included), over a
 * sweep of every kind of float (infinities, subnormals, ties) and every
 * half. */
LEAK_TEST(half, arrays_convert_as_the_scalar_functions_do)
{
	enum { N = 1 << 20 };
	float *f = malloc(N * sizeof(float)), *back = malloc(65536 * sizeof(float));
	uint16_t *h = malloc(N * sizeof(uint16_t)), *all = malloc(65536 * sizeof(uint16_t));

	for (uint32_t i = 0; i < N; i++)
		f[i] = from_bits(i * 4099u + (i & 7u));
	f[0] = 0x1p-25f;
	f[1] = 0x3p-25f;
	f[2] = 65520.0f;
	f[3] = 1.0f + 0x1p-11f;
	half_pack(h, f, N);
	for (uint32_t i = 0; i < N; i++)
		cr_assert_eq(h[i], half_from_float(f[i]), "%a: %04x, scalar %04x", f[i], h[i],
			     half_from_float(f[i]));
	for (uint32_t i = 0; i < 65536; i++)
		all[i] = (uint16_t)i;
	half_unpack(back, all, 65536);
	for (uint32_t i = 0; i < 65536; i++) {
		float want = half_to_float((uint16_t)i);

		cr_assert(memcmp(&back[i], &want, sizeof(want)) == 0, "%04x: %a, scalar %a", i, back[i],
			  want);
	}
	free(f);
	free(back);
	free(h);
	free(all);
}

LEAK_TEST(half, pack_and_unpack)
{
	float in[5] = { 1.0f, -0.5f, 0.1f, 70000.0f, 0x1p-24f }, out[5];
	uint16_t h[5];

	half_pack(h, in, 5);
	cr_assert_eq(h[0], 0x3c00);
	cr_assert_eq(h[1], 0xb800);
	cr_assert_eq(h[3], 0x7c00);
	half_unpack(out, h, 5);
	cr_assert_eq(out[0], 1.0f);
	cr_assert_eq(out[1], -0.5f);
	cr_assert_float_eq(out[2], 0.1f, 1e-4);
	cr_assert(isinf(out[3]));
	cr_assert_eq(out[4], 0x1p-24f);
}
