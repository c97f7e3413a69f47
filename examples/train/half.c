// SPDX-License-Identifier: MIT
#include "half.h"

#include <stdbool.h>
#include <string.h>

/* Shifts the significand m right by `shift` bits (1..31), rounding to
 * nearest with ties to even. */
static uint32_t round_shift(uint32_t m, unsigned shift)
{
	uint32_t q = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);

	if (rest > half || (rest == half && (q & 1u)))
		q++;
	return q;
}

uint16_t half_from_float(float f)
{
	uint32_t u, sign, man;
	int exp;

	memcpy(&u, &f, sizeof(u));
	sign = (u >> 16) & 0x8000u;
	exp = (int)((u >> 23) & 0xffu);
	man = u & 0x7fffffu;
	if (exp == 0xff)  /* infinity; NaN made quiet so that it stays a NaN */
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
	if (exp == 0)     /* zero or a float subnormal: far below 2^-25 */
		return (uint16_t)sign;
	exp -= 127 - 15;  /* the half's biased exponent */
	man |= 0x800000u; /* the implicit bit: 24 significant bits */
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (exp <= 0) {
		/* A half subnormal counts units of 2^-24, and the value is
		 * man * 2^(exp - 14) of them; below half a unit it is zero. */
		unsigned shift = (unsigned)(14 - exp);

		return (uint16_t)(sign | (shift > 24 ? 0 : round_shift(man, shift)));
	}
	/* exp in the field, the 10 fraction bits added on: a carry out of the
	 * fraction steps the exponent up, to infinity at the top. */
	return (uint16_t)(sign | (((uint32_t)exp << 10) + round_shift(man, 13) - 0x400u));
}

float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
	float f;

	if (exp == 0) {  /* zero or subnormal: man * 2^-24, exact */
		f = (float)man * 0x1p-24f;
		return sign ? -f : f;
	}
	if (exp == 31)  /* infinity; NaN made quiet, as F16C does */
		u = sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0);
	else
		u = sign | ((exp + 127 - 15) << 23) | (man << 13);
	memcpy(&f, &u, sizeof(f));
	return f;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The F16C instructions convert 8 at a time with the same rounding (the
 * immediate picks round to nearest even whatever MXCSR says; DAZ is off,
 * so float subnormals are not zeroed first): some 20 times the scalar
 * code's speed.  Each returns how many it converted, a multiple of 8. */
__attribute__((target("avx,f16c"))) static size_t pack_f16c(uint16_t *dst, const float *src,
							     size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(void *)(dst + i),
				 _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
	return i;
}

__attribute__((target("avx,f16c"))) static size_t unpack_f16c(float *dst, const uint16_t *src,
							       size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i,
				 _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i))));
	return i;
}

static bool have_f16c(void)
{
	static int have = -1;

	if (have < 0)
		have = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
	return have;
}
#else
static size_t pack_f16c(uint16_t *dst, const float *src, size_t n) { return 0; }
static size_t unpack_f16c(float *dst, const uint16_t *src, size_t n) { return 0; }
static bool have_f16c(void) { return false; }
#endif

void half_pack(uint16_t *dst, const float *src, size_t n)
{
	for (size_t i = have_f16c() ? pack_f16c(dst, src, n) : 0; i < n; i++)
		dst[i] = half_from_float(src[i]);
}

void half_unpack(float *dst, const uint16_t *src, size_t n)
{
	for (size_t i = have_f16c() ? unpack_f16c(dst, src, n) : 0; i < n; i++)
		dst[i] = half_to_float(src[i]);
}
