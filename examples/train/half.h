// SPDX-License-Identifier: MIT
/* IEEE 754 binary16 ("fp16", "half") conversions for gradient compression:
 * pure functions.
 *
 * To fp16 rounds to nearest, ties to even, as an FPU in its default mode
 * does: overflow (|x| >= 65520) becomes infinity, values below the
 * smallest subnormal (2^-24) round to a signed zero or to it, and NaN stays
 * NaN (quiet, sign and top payload bits kept).  To float is exact (a NaN
 * is made quiet).  Both give the bits the F16C instructions give. */
#ifndef SLOTRUN_HALF_H
#define SLOTRUN_HALF_H

#include <stddef.h>
#include <stdint.h>

uint16_t half_from_float(float f);
float half_to_float(uint16_t h);

/* dst[i] = half_from_float(src[i]) / half_to_float(src[i]), n elements;
 * with the F16C instructions where the CPU has them (the same bits). */
void half_pack(uint16_t *dst, const float *src, size_t n);
void half_unpack(float *dst, const uint16_t *src, size_t n);

#endif
