// SPDX-License-Identifier: MIT
/* The simulated model of `slotcomm_train`: pure functions of their
 * arguments, with no I/O, no clock and no global state, so that every rank
 * computes the same bits from the same inputs and a resumed run repeats an
 * uninterrupted one exactly.
 *
 * The model is n float32 parameters w fitted to a target t (both drawn from
 * the seed) by least squares on noisy samples: sample j of rank r at step s
 * is x_j = t + MODEL_NOISE * u_j with u_j uniform in [-1, 1) per parameter,
 * drawn from (seed, s, r, j).  A rank's loss on its per-slot batch of b
 * samples is 0.5 * mean over parameters and samples of (w - x_j)^2, and its
 * gradient is w - mean_j x_j.  So the work per step grows with the batch
 * (n * b draws), the all-reduced gradient with n alone, and the loss falls
 * towards the noise floor 0.5 * MODEL_NOISE^2 / 3 as w approaches t.
 *
 * Random numbers are splitmix64's output function (Steele, Lea, Flood,
 * "Fast splittable pseudorandom number generators", 2014) applied to
 * counters, so any draw can be made without the ones before it. */
#ifndef SLOTRUN_MODEL_H
#define SLOTRUN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define MODEL_NOISE 0.5
#define MODEL_LR 0.25f

/* Limits of the flags (and of a checkpoint's fields). */
#define MODEL_MAX_GRAD_BYTES (256ull << 20)
#define MODEL_MAX_BATCH 1000000u
#define MODEL_MAX_STEPS 1000000000u
#define MODEL_MAX_AGG 1000000000u
#define MODEL_MAX_WORLD 65536u

/* Determined's split: per-slot batch = global // world, the remainder is
 * dropped.  0; -EINVAL when world is 0 or global < world (a per-slot batch
 * of 0); -ERANGE when global is over MODEL_MAX_BATCH or world over
 * MODEL_MAX_WORLD. */
struct model_split {
	uint64_t per_slot;
	uint64_t dropped;
};
int model_split(uint64_t global, uint64_t world, struct model_split *out);

/* The initial parameters and the target, n each. */
void model_init(float *params, float *target, size_t n, uint64_t seed);

/* Rank `rank`'s gradient at `step` on its `batch` samples, added to acc
 * (acc[i] += g[i], in float32); returns the rank's loss.  batch >= 1. */
double model_grad(const float *params, const float *target, size_t n, uint64_t seed,
		  uint32_t rank, uint64_t step, uint64_t batch, float *acc);

/* out[i] = acc[i] / count (count >= 1; out may be acc): the mean gradient of
 * the steps in acc, or of the ranks in a sum. */
void model_mean(float *out, const float *acc, size_t n, uint32_t count);

/* params[i] -= MODEL_LR * grad[i]. */
void model_apply(float *params, const float *grad, size_t n);

/* FNV-1a (64 bit) of the parameters' little-endian bytes: equal checksums
 * mean equal parameters, bit for bit (barring a collision). */
uint64_t model_checksum(const float *params, size_t n);

#endif
