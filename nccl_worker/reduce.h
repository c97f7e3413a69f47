// SPDX-License-Identifier: MIT
/* Reduction kernels: dst[i] = dst[i] OP src[i] for every type and op, one
 * tight loop per (type, op) picked once per call (no per-element switch).
 * Pure functions on memory.
 *
 * Integers wrap on overflow (two's complement, as NCCL does); floats follow
 * IEEE arithmetic; bf16 and fp16 are widened to float, combined, and
 * rounded back to nearest even.  SLOTCOMM_AVG reduces like SLOTCOMM_SUM; the owner
 * of each segment then calls reduce_avg_finish once on the full sum. */
#ifndef SLOTRUN_REDUCE_H
#define SLOTRUN_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include <slotcomm/slotcomm.h>

typedef void (*reduce_fn)(void *restrict dst, const void *restrict src, size_t n);

typedef void (*reduce2_fn)(void *restrict dst, const void *restrict a, const void *restrict b,
			   size_t n);

/* The kernel for (t, op); NULL when either is out of range. */
reduce_fn reduce_get(enum slotcomm_dtype t, enum slotcomm_op op);

/* The same arithmetic out of place, dst[i] = a[i] OP b[i] (dst, a and b
 * do not overlap): what the shared-memory transport reduces with, straight
 * from two peers' slots into a third buffer. */
reduce2_fn reduce2_get(enum slotcomm_dtype t, enum slotcomm_op op);

/* memcpy whose stores go around the caches (x86 streaming stores; memcpy
 * elsewhere): for results written to memory that is not read again soon,
 * which saves reading each destination line in before overwriting it.
 * Ordered before what the caller does next (a fence). */
void reduce_copy_stream(void *restrict dst, const void *restrict src, size_t n);

/* buf[i] /= nranks: floats divide in their type (bf16/fp16 in float),
 * integers truncate toward zero. */
void reduce_avg_finish(void *buf, size_t n, enum slotcomm_dtype t, int nranks);

/* The bf16 and fp16 conversions are public: slotcomm.h. */

#endif
