// SPDX-License-Identifier: MIT
#include "verify.h"

#include <math.h>

#include <slotcomm/slotcomm.h>

unsigned verify_class(uint64_t i)
{
	return ((uint32_t)i * 2654435761u) >> 28;
}

int64_t verify_input(enum slotcomm_op op, int rank, unsigned h)
{
	static const int prod_vals[4] = { 1, 2, 1, -1 };

	if (op == SLOTCOMM_PROD)
		return prod_vals[(h + (unsigned)rank) % 4];
	return (int64_t)((h + 5u * (unsigned)rank) % 9) - 4;
}

void verify_fill(void *buf, size_t count, enum slotcomm_dtype dtype, enum slotcomm_op op, int rank)
{
	int64_t v[16];

	for (unsigned h = 0; h < 16; h++)
		v[h] = verify_input(op, rank, h);
	switch (dtype) {
	case SLOTCOMM_FLOAT32:
		for (size_t i = 0; i < count; i++)
			((float *)buf)[i] = (float)v[verify_class(i)];
		break;
	case SLOTCOMM_FLOAT64:
		for (size_t i = 0; i < count; i++)
			((double *)buf)[i] = (double)v[verify_class(i)];
		break;
	case SLOTCOMM_INT32:
		for (size_t i = 0; i < count; i++)
			((int32_t *)buf)[i] = (int32_t)v[verify_class(i)];
		break;
	case SLOTCOMM_INT64:
		for (size_t i = 0; i < count; i++)
			((int64_t *)buf)[i] = v[verify_class(i)];
		break;
	case SLOTCOMM_BF16:
		for (size_t i = 0; i < count; i++)
			((uint16_t *)buf)[i] = slotcomm_float_to_bf16((float)v[verify_class(i)]);
		break;
	case SLOTCOMM_FP16:
		for (size_t i = 0; i < count; i++)
			((uint16_t *)buf)[i] = slotcomm_float_to_fp16((float)v[verify_class(i)]);
		break;
	default:
		break;
	}
}

static double round_to(enum slotcomm_dtype dtype, double d)
{
	switch (dtype) {
	case SLOTCOMM_FLOAT32:
		return (float)d;
	case SLOTCOMM_BF16:
		return slotcomm_bf16_to_float(slotcomm_float_to_bf16((float)d));
	case SLOTCOMM_FP16:
		return slotcomm_fp16_to_float(slotcomm_float_to_fp16((float)d));
	default:
		return d;
	}
}

void verify_expect(struct verify_table *t, enum slotcomm_dtype dtype, enum slotcomm_op op, int nranks)
{
	int is_int = dtype == SLOTCOMM_INT32 || dtype == SLOTCOMM_INT64;

	t->dtype = dtype;
	for (unsigned h = 0; h < 16; h++) {
		int64_t first = verify_input(op, 0, h);
		uint64_t acc = (uint64_t)first;  /* wrapping, like the integer kernels */
		int64_t mn = first, mx = first;
		double d = (double)first;

		for (int r = 1; r < nranks; r++) {
			int64_t v = verify_input(op, r, h);

			if (op == SLOTCOMM_PROD) {
				acc *= (uint64_t)v;
				d *= (double)v;
			} else {
				acc += (uint64_t)v;
				d += (double)v;
			}
			mn = v < mn ? v : mn;
			mx = v > mx ? v : mx;
		}
		if (is_int) {
			int64_t e = (int64_t)acc;

			if (dtype == SLOTCOMM_INT32)
				e = (int32_t)(uint32_t)acc;
			if (op == SLOTCOMM_MIN)
				e = mn;
			else if (op == SLOTCOMM_MAX)
				e = mx;
			else if (op == SLOTCOMM_AVG)
				e /= nranks;
			t->i[h] = e;
			t->f[h] = (double)e;
		} else {
			if (op == SLOTCOMM_MIN)
				d = (double)mn;
			else if (op == SLOTCOMM_MAX)
				d = (double)mx;
			else if (op == SLOTCOMM_AVG)
				d = round_to(dtype, d) / nranks;
			t->f[h] = round_to(dtype, d);
			t->i[h] = 0;
		}
	}
}

void verify_expect_input(struct verify_table *t, enum slotcomm_dtype dtype, enum slotcomm_op op,
			 int rank)
{
	int is_int = dtype == SLOTCOMM_INT32 || dtype == SLOTCOMM_INT64;

	t->dtype = dtype;
	for (unsigned h = 0; h < 16; h++) {
		int64_t v = verify_input(op, rank, h);

		t->i[h] = is_int ? v : 0;
		t->f[h] = (double)v;  /* a small integer: exact in every type */
	}
}

void verify_poison(void *buf, size_t count, const struct verify_table *t)
{
	switch (t->dtype) {
	case SLOTCOMM_FLOAT32:
		for (size_t i = 0; i < count; i++)
			((float *)buf)[i] = NAN;
		break;
	case SLOTCOMM_FLOAT64:
		for (size_t i = 0; i < count; i++)
			((double *)buf)[i] = NAN;
		break;
	case SLOTCOMM_INT32:
		for (size_t i = 0; i < count; i++)
			((int32_t *)buf)[i] = ~(int32_t)t->i[verify_class(i)];
		break;
	case SLOTCOMM_INT64:
		for (size_t i = 0; i < count; i++)
			((int64_t *)buf)[i] = ~t->i[verify_class(i)];
		break;
	case SLOTCOMM_BF16:
		for (size_t i = 0; i < count; i++)
			((uint16_t *)buf)[i] = slotcomm_float_to_bf16(NAN);
		break;
	case SLOTCOMM_FP16:
		for (size_t i = 0; i < count; i++)
			((uint16_t *)buf)[i] = slotcomm_float_to_fp16(NAN);
		break;
	default:
		break;
	}
}

double verify_tolerance(enum slotcomm_dtype dtype)
{
	switch (dtype) {
	case SLOTCOMM_FLOAT32:
		return 1e-6;
	case SLOTCOMM_FLOAT64:
		return 1e-14;
	case SLOTCOMM_BF16:
		return 1.6e-2;
	case SLOTCOMM_FP16:
		return 2e-3;
	default:
		return 0;
	}
}

static int close_enough(double got, double exp, double tol)
{
	if (got == exp)
		return 1;  /* also equal infinities */
	return fabs(got - exp) <= tol * fmax(1.0, fabs(exp));
}

#define CHECK_LOOP(T, VALUE, OK)                                                        \
	do {                                                                            \
		const T *b = buf;                                                       \
		for (size_t i = 0; i < count; i++) {                                    \
			double g = (VALUE);                                             \
			unsigned h = verify_class(i);                                   \
			if (OK)                                                         \
				continue;                                               \
			if (wrong++ == 0) {                                             \
				*first = i;                                             \
				*got = g;                                               \
				*expected = t->f[h];                                    \
			}                                                               \
		}                                                                       \
	} while (0)

uint64_t verify_check(const void *buf, size_t count, const struct verify_table *t,
		      uint64_t *first, double *got, double *expected)
{
	double tol = verify_tolerance(t->dtype);
	uint64_t wrong = 0;

	switch (t->dtype) {
	case SLOTCOMM_FLOAT32:
		CHECK_LOOP(float, b[i], close_enough(g, t->f[h], tol));
		break;
	case SLOTCOMM_FLOAT64:
		CHECK_LOOP(double, b[i], close_enough(g, t->f[h], tol));
		break;
	case SLOTCOMM_INT32:
		CHECK_LOOP(int32_t, (double)b[i], b[i] == t->i[h]);
		break;
	case SLOTCOMM_INT64:
		CHECK_LOOP(int64_t, (double)b[i], b[i] == t->i[h]);
		break;
	case SLOTCOMM_BF16:
		CHECK_LOOP(uint16_t, slotcomm_bf16_to_float(b[i]), close_enough(g, t->f[h], tol));
		break;
	case SLOTCOMM_FP16:
		CHECK_LOOP(uint16_t, slotcomm_fp16_to_float(b[i]), close_enough(g, t->f[h], tol));
		break;
	default:
		break;
	}
	return wrong;
}
