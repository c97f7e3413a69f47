// SPDX-License-Identifier: MIT
/* Benchmark data and its check (the idea of nccl-tests' verifiable/): every
 * rank fills its buffer with values it can recompute, and after the
 * all-reduce every rank compares each element with the precomputed
 * expected value and counts the wrong ones.  Pure functions.
 *
 * Rank r's value at element i is a small integer that every type holds
 * exactly: ((h + 5 r) mod 9) - 4 for sum, avg, min and max, and one of
 * 1, 2, 1, -1 (picked by (h + r) mod 4) for prod, where h is a 4-bit hash of i.
 * Sums and products of those stay exact in every type for up to 64 ranks
 * (bf16: sums up to 256), so the expected value depends only on (h, type,
 * op, ranks) and is computed once per row as a table of 16.
 *
 * Integers must match exactly.  Floats must be within
 * verify_tolerance(type) * max(1, |expected|): the only inexact step is
 * the avg division (and NCCL's reduction order), well within these:
 *   float32 1e-6, float64 1e-14, bf16 1.6e-2 (2 ulp), fp16 2e-3 (2 ulp). */
#ifndef SLOTRUN_VERIFY_H
#define SLOTRUN_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include <slotcomm/slotcomm.h>

struct verify_table {
	enum slotcomm_dtype dtype;
	double f[16];   /* expected, floating types (already rounded to the type) */
	int64_t i[16];  /* expected, integer types */
};

/* The hash class (0..15) of element i. */
unsigned verify_class(uint64_t i);

/* Rank `rank`'s input value at hash class h. */
int64_t verify_input(enum slotcomm_op op, int rank, unsigned h);

/* Fills buf (count elements of dtype) with rank's inputs. */
void verify_fill(void *buf, size_t count, enum slotcomm_dtype dtype, enum slotcomm_op op, int rank);

/* The expected results of the all-reduce over nranks ranks. */
void verify_expect(struct verify_table *t, enum slotcomm_dtype dtype, enum slotcomm_op op, int nranks);

/* The table of rank's own inputs: what its send buffer must still hold
 * after an out-of-place all-reduce. */
void verify_expect_input(struct verify_table *t, enum slotcomm_dtype dtype, enum slotcomm_op op,
			 int rank);

/* Fills buf with values that verify_check against t counts wrong, every one
 * of them (NaN in the floating types, the bitwise complement of the
 * expected value in the integer ones): what an out-of-place all-reduce's
 * receive buffer holds before it, so that one that leaves the buffer
 * alone is caught. */
void verify_poison(void *buf, size_t count, const struct verify_table *t);

double verify_tolerance(enum slotcomm_dtype dtype);

/* Counts the wrong elements of buf; when there are any, *first is the index
 * of the first one (and got/expected its values as doubles). */
uint64_t verify_check(const void *buf, size_t count, const struct verify_table *t,
		      uint64_t *first, double *got, double *expected);

#endif
