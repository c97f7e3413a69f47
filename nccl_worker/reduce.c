// SPDX-License-Identifier: MIT
/* Built with -O3 (see meson.build) so that the loops below are vectorized;
 * each one is a plain indexed loop over restrict pointers for that reason.
 * Signed integer sums and products run on the unsigned type of the same
 * width: wrapping, not undefined behaviour. */
#include "reduce.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_X86_F16C 1
#endif

/* Each kernel is built three times, for AVX-512, AVX2 and the x86-64
 * baseline (SSE2), and the loader picks the widest the CPU has (an ifunc).
 * The shared-memory transport reduces blocks that sit in L1 or L2, where
 * the width shows: d = a + b on float32 in L1 ran at 16 (SSE2), 32 (AVX2)
 * and 66 (AVX-512) GB/s on the development machine.  The arithmetic is the
 * same at every width: one IEEE operation per element, never contracted. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones) && !defined(__clang__)
#define VEC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef VEC_CLONES
#define VEC_CLONES
#endif

static inline uint32_t f2u(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float u2f(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

static inline float bf16_in(uint16_t h)
{
	return u2f((uint32_t)h << 16);
}

static inline uint16_t bf16_out(float f)
{
	uint32_t u = f2u(f);
	uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
	uint32_t quiet_nan = (u >> 16) | 0x40u;

	return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

static inline float fp16_in(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t em = h & 0x7fffu;

	if (em >= 0x7c00u)                 /* infinity, NaN */
		return u2f(sign | 0x7f800000u | ((em & 0x3ffu) << 13));
	if (em < 0x0400u) {                /* zero, subnormal: em * 2^-24 exactly */
		float v = (float)em * 0x1p-24f;
		return sign ? -v : v;
	}
	return u2f(sign | ((em << 13) + (112u << 23)));
}

static inline uint16_t fp16_out(float f)
{
	uint32_t u = f2u(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
	uint32_t o;

	if (a >= 0x47800000u) {            /* >= 2^16: infinity, or NaN stays NaN */
		o = a > 0x7f800000u ? 0x7e00u : 0x7c00u;
	} else if (a < 0x38800000u) {      /* below 2^-14: a half subnormal or zero */
		/* Adding 0.5 leaves units of 2^-24 (the half subnormal step) in the
		 * low mantissa bits, rounded to nearest even by the FPU. */
		o = f2u(u2f(a) + 0.5f) - 0x3f000000u;
	} else {
		uint32_t odd = (a >> 13) & 1u;

		a -= 112u << 23;           /* rebias the exponent from 127 to 15 */
		a += 0xfffu + odd;         /* round to nearest even; may carry into infinity */
		o = a >> 13;
	}
	return (uint16_t)(o | sign);
}

float slotcomm_bf16_to_float(uint16_t h) { return bf16_in(h); }
uint16_t slotcomm_float_to_bf16(float f) { return bf16_out(f); }
float slotcomm_fp16_to_float(uint16_t h) { return fp16_in(h); }
uint16_t slotcomm_float_to_fp16(float f) { return fp16_out(f); }

#define OP_SUM(a, b) ((a) + (b))
#define OP_PROD(a, b) ((a) * (b))
#define OP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define OP_MAX(a, b) ((a) > (b) ? (a) : (b))

#define KERNEL(name, T, OP)                                                             \
	VEC_CLONES static void name(void *restrict dv, const void *restrict sv, size_t n)          \
	{                                                                               \
		T *restrict d = dv;                                                     \
		const T *restrict s = sv;                                               \
		for (size_t i = 0; i < n; i++)                                          \
			d[i] = OP(d[i], s[i]);                                          \
	}

#define KERNEL16(name, IN, OUT, OP)                                                     \
	VEC_CLONES static void name(void *restrict dv, const void *restrict sv, size_t n)          \
	{                                                                               \
		uint16_t *restrict d = dv;                                              \
		const uint16_t *restrict s = sv;                                        \
		for (size_t i = 0; i < n; i++) {                                        \
			float a = IN(d[i]), b = IN(s[i]);                               \
			d[i] = OUT(OP(a, b));                                           \
		}                                                                       \
	}

/* Out of place: d = a OP b, the same arithmetic. */
#define KERNEL2(name, T, OP)                                                            \
	VEC_CLONES static void name(void *restrict dv, const void *restrict av,                    \
			 const void *restrict bv, size_t n)                             \
	{                                                                               \
		T *restrict d = dv;                                                     \
		const T *restrict a = av, *restrict b = bv;                             \
		for (size_t i = 0; i < n; i++)                                          \
			d[i] = OP(a[i], b[i]);                                          \
	}

#define KERNEL2_16(name, IN, OUT, OP)                                                   \
	VEC_CLONES static void name(void *restrict dv, const void *restrict av,                    \
			 const void *restrict bv, size_t n)                             \
	{                                                                               \
		uint16_t *restrict d = dv;                                              \
		const uint16_t *restrict a = av, *restrict b = bv;                      \
		for (size_t i = 0; i < n; i++)                                          \
			d[i] = OUT(OP(IN(a[i]), IN(b[i])));                             \
	}

/* Every (type, op) in both forms: NAME (in place) and NAME##2.
 *
 * What GCC 12's vectorization report says of them (gcc -O3 -fopt-info-vec
 * nccl_worker/reduce.c; vector widths in bytes for the AVX-512, AVX2 and
 * baseline clones, 8 being the epilogue of a 16-byte loop):
 *
 *   f32, i32, bf16   sum prod min max   64 32 16 (8)
 *   f64, i64         sum min max        64 32 16
 *   i64              prod               64 32    (SSE2 has no 64-bit multiply)
 *   fp16 (software)  all                not vectorized (branches on the
 *                                       exponent): the F16C kernels below
 *                                       are used wherever the CPU has F16C */
#define KERNELS(name, T, OP) KERNEL(name, T, OP) KERNEL2(name##2, T, OP)
#define KERNELS16(name, IN, OUT, OP) KERNEL16(name, IN, OUT, OP) KERNEL2_16(name##2, IN, OUT, OP)

KERNELS(f32_sum, float, OP_SUM)
KERNELS(f32_prod, float, OP_PROD)
KERNELS(f32_min, float, OP_MIN)
KERNELS(f32_max, float, OP_MAX)
KERNELS(f64_sum, double, OP_SUM)
KERNELS(f64_prod, double, OP_PROD)
KERNELS(f64_min, double, OP_MIN)
KERNELS(f64_max, double, OP_MAX)
KERNELS(i32_sum, uint32_t, OP_SUM)
KERNELS(i32_prod, uint32_t, OP_PROD)
KERNELS(i32_min, int32_t, OP_MIN)
KERNELS(i32_max, int32_t, OP_MAX)
KERNELS(i64_sum, uint64_t, OP_SUM)
KERNELS(i64_prod, uint64_t, OP_PROD)
KERNELS(i64_min, int64_t, OP_MIN)
KERNELS(i64_max, int64_t, OP_MAX)
KERNELS16(bf16_sum, bf16_in, bf16_out, OP_SUM)
KERNELS16(bf16_prod, bf16_in, bf16_out, OP_PROD)
KERNELS16(bf16_min, bf16_in, bf16_out, OP_MIN)
KERNELS16(bf16_max, bf16_in, bf16_out, OP_MAX)
KERNELS16(fp16_sum, fp16_in, fp16_out, OP_SUM)
KERNELS16(fp16_prod, fp16_in, fp16_out, OP_PROD)
KERNELS16(fp16_min, fp16_in, fp16_out, OP_MIN)
KERNELS16(fp16_max, fp16_in, fp16_out, OP_MAX)

#ifdef HAVE_X86_F16C
/* fp16 with the F16C conversion instructions, 8 lanes at a time; the tail
 * goes through the software conversion, which rounds the same way.  Out
 * of place; d may be a (not b), since each group of 8 is loaded before it
 * is stored, so the in-place form is the same function with a = d. */
#define KERNEL_F16C(name, VOP, OP)                                                      \
	__attribute__((target("avx2,f16c"))) static void name##2(                       \
		void *dv, const void *av, const void *restrict bv, size_t n)            \
	{                                                                               \
		uint16_t *d = dv;                                                       \
		const uint16_t *a = av, *restrict b = bv;                               \
		size_t i = 0;                                                           \
		for (; i + 8 <= n; i += 8) {                                            \
			__m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + i))); \
			__m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + i))); \
			_mm_storeu_si128((__m128i *)(d + i),                            \
					 _mm256_cvtps_ph(VOP(x, y), _MM_FROUND_TO_NEAREST_INT)); \
		}                                                                       \
		for (; i < n; i++)                                                      \
			d[i] = fp16_out(OP(fp16_in(a[i]), fp16_in(b[i])));              \
	}                                                                               \
	static void name(void *restrict dv, const void *restrict sv, size_t n)          \
	{                                                                               \
		name##2(dv, dv, sv, n);                                                 \
	}

KERNEL_F16C(fp16_sum_f16c, _mm256_add_ps, OP_SUM)
KERNEL_F16C(fp16_prod_f16c, _mm256_mul_ps, OP_PROD)
KERNEL_F16C(fp16_min_f16c, _mm256_min_ps, OP_MIN)
KERNEL_F16C(fp16_max_f16c, _mm256_max_ps, OP_MAX)

static const reduce_fn fp16_f16c[4] = { fp16_sum_f16c, fp16_prod_f16c, fp16_min_f16c,
					fp16_max_f16c };
static const reduce2_fn fp16_f16c2[4] = { fp16_sum_f16c2, fp16_prod_f16c2, fp16_min_f16c2,
					  fp16_max_f16c2 };
#endif

/* Indexed by [type][op], op in SUM PROD MIN MAX; AVG uses SUM. */
static const reduce_fn kernels[SLOTCOMM_DTYPE_COUNT][4] = {
	[SLOTCOMM_FLOAT32] = { f32_sum, f32_prod, f32_min, f32_max },
	[SLOTCOMM_FLOAT64] = { f64_sum, f64_prod, f64_min, f64_max },
	[SLOTCOMM_INT32] = { i32_sum, i32_prod, i32_min, i32_max },
	[SLOTCOMM_INT64] = { i64_sum, i64_prod, i64_min, i64_max },
	[SLOTCOMM_BF16] = { bf16_sum, bf16_prod, bf16_min, bf16_max },
	[SLOTCOMM_FP16] = { fp16_sum, fp16_prod, fp16_min, fp16_max },
};

static const reduce2_fn kernels2[SLOTCOMM_DTYPE_COUNT][4] = {
	[SLOTCOMM_FLOAT32] = { f32_sum2, f32_prod2, f32_min2, f32_max2 },
	[SLOTCOMM_FLOAT64] = { f64_sum2, f64_prod2, f64_min2, f64_max2 },
	[SLOTCOMM_INT32] = { i32_sum2, i32_prod2, i32_min2, i32_max2 },
	[SLOTCOMM_INT64] = { i64_sum2, i64_prod2, i64_min2, i64_max2 },
	[SLOTCOMM_BF16] = { bf16_sum2, bf16_prod2, bf16_min2, bf16_max2 },
	[SLOTCOMM_FP16] = { fp16_sum2, fp16_prod2, fp16_min2, fp16_max2 },
};

#ifdef HAVE_X86_F16C
/* AVX2 (which also says the OS saves the YMM registers) and F16C (CPUID
 * leaf 1, ECX bit 29, asked directly: clang's __builtin_cpu_supports does
 * not know "f16c"). */
static int have_f16c(void)
{
	unsigned a, b, c, d;

	return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) &&
	       (c & (1u << 29));
}
#endif

/* The tables' column for op (AVG reduces as SUM), or -1; *f16c when the
 * F16C kernels serve type t here. */
static int kernel_of(enum slotcomm_dtype t, enum slotcomm_op op, int *f16c)
{
	*f16c = 0;
	if ((unsigned)t >= SLOTCOMM_DTYPE_COUNT || (unsigned)op >= SLOTCOMM_OP_COUNT)
		return -1;
#ifdef HAVE_X86_F16C
	*f16c = t == SLOTCOMM_FP16 && have_f16c();
#endif
	return op == SLOTCOMM_AVG ? SLOTCOMM_SUM : (int)op;
}

reduce2_fn reduce2_get(enum slotcomm_dtype t, enum slotcomm_op op)
{
	int f16c, k = kernel_of(t, op, &f16c);

#ifdef HAVE_X86_F16C
	if (f16c)
		return fp16_f16c2[k];
#endif
	return k < 0 ? NULL : kernels2[t][k];
}

reduce_fn reduce_get(enum slotcomm_dtype t, enum slotcomm_op op)
{
	int f16c, k = kernel_of(t, op, &f16c);

#ifdef HAVE_X86_F16C
	if (f16c)
		return fp16_f16c[k];
#endif
	return k < 0 ? NULL : kernels[t][k];
}

void reduce_copy_stream(void *restrict dst, const void *restrict src, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
	uint8_t *d = dst;
	const uint8_t *s = src;
	size_t head = (size_t)(-(uintptr_t)d & 15);

	if (n < 256) {
		memcpy(d, s, n);
		return;
	}
	memcpy(d, s, head);
	d += head;
	s += head;
	n -= head;
	for (; n >= 64; n -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(s + 48));

		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	memcpy(d, s, n);
	_mm_sfence();  /* streaming stores are weakly ordered: fence them */
#else
	memcpy(dst, src, n);
#endif
}

void reduce_avg_finish(void *buf, size_t n, enum slotcomm_dtype t, int nranks)
{
	switch (t) {
	case SLOTCOMM_FLOAT32: {
		float *d = buf, div = (float)nranks;
		for (size_t i = 0; i < n; i++)
			d[i] /= div;
		break;
	}
	case SLOTCOMM_FLOAT64: {
		double *d = buf, div = (double)nranks;
		for (size_t i = 0; i < n; i++)
			d[i] /= div;
		break;
	}
	case SLOTCOMM_INT32: {
		int32_t *d = buf;
		for (size_t i = 0; i < n; i++)
			d[i] /= nranks;
		break;
	}
	case SLOTCOMM_INT64: {
		int64_t *d = buf;
		for (size_t i = 0; i < n; i++)
			d[i] /= nranks;
		break;
	}
	case SLOTCOMM_BF16: {
		uint16_t *d = buf;
		float div = (float)nranks;
		for (size_t i = 0; i < n; i++)
			d[i] = bf16_out(bf16_in(d[i]) / div);
		break;
	}
	case SLOTCOMM_FP16: {
		uint16_t *d = buf;
		float div = (float)nranks;
		for (size_t i = 0; i < n; i++)
			d[i] = fp16_out(fp16_in(d[i]) / div);
		break;
	}
	default:
		break;
	}
}
