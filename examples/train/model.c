// SPDX-License-Identifier: MIT
#include "model.h"

#include <errno.h>
#include <string.h>

/* Block of parameters whose per-sample sums stay on the stack while every
 * sample of the batch is drawn for them. */
#define BLOCK 512

/* Streams of draws, one per use. */
enum { TAG_INIT = 0x1217, TAG_TARGET = 0x7a49, TAG_SAMPLE = 0x5a3e };

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t stream(uint64_t seed, uint64_t tag)
{
	return mix64(mix64(seed) ^ tag);
}

/* The top 24 bits as a multiple of 2^-23 in [-1, 1): exact in float. */
static double unit(uint64_t z)
{
	return (double)((int64_t)(z >> 40) - (1 << 23)) * 0x1p-23;
}

int model_split(uint64_t global, uint64_t world, struct model_split *out)
{
	if (global > MODEL_MAX_BATCH || world > MODEL_MAX_WORLD)
		return -ERANGE;
	if (world == 0 || global < world)
		return -EINVAL;
	out->per_slot = global / world;
	out->dropped = global - out->per_slot * world;
	return 0;
}

void model_init(float *params, float *target, size_t n, uint64_t seed)
{
	uint64_t p = stream(seed, TAG_INIT), t = stream(seed, TAG_TARGET);

	for (size_t i = 0; i < n; i++) {
		params[i] = (float)unit(mix64(p + i));
		target[i] = (float)unit(mix64(t + i));
	}
}

double model_grad(const float *params, const float *target, size_t n, uint64_t seed,
		  uint32_t rank, uint64_t step, uint64_t batch, float *acc)
{
	uint64_t base = mix64(mix64(stream(seed, TAG_SAMPLE) ^ step) ^ rank);
	double loss = 0;

	for (size_t i0 = 0; i0 < n; i0 += BLOCK) {
		size_t m = n - i0 < BLOCK ? n - i0 : BLOCK;
		double d[BLOCK], s1[BLOCK];

		for (size_t k = 0; k < m; k++) {
			d[k] = (double)params[i0 + k] - (double)target[i0 + k];
			s1[k] = 0;
		}
		for (uint64_t j = 0; j < batch; j++) {
			uint64_t key = mix64(base + j);
			double l = 0;

			for (size_t k = 0; k < m; k++) {
				double u = unit(mix64(key + (uint64_t)(i0 + k) * 0xd1b54a32d192ed03ull));
				double e = d[k] - MODEL_NOISE * u;

				s1[k] += u;
				l += e * e;
			}
			loss += l;
		}
		for (size_t k = 0; k < m; k++)
			acc[i0 + k] += (float)(d[k] - MODEL_NOISE * s1[k] / (double)batch);
	}
	return n ? 0.5 * loss / ((double)n * (double)batch) : 0.0;
}

void model_mean(float *out, const float *acc, size_t n, uint32_t count)
{
	for (size_t i = 0; i < n; i++)
		out[i] = acc[i] / (float)count;
}

void model_apply(float *params, const float *grad, size_t n)
{
	for (size_t i = 0; i < n; i++)
		params[i] -= MODEL_LR * grad[i];
}

uint64_t model_checksum(const float *params, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, &params[i], sizeof(u));
		for (int b = 0; b < 4; b++) {
			h ^= (u >> (8 * b)) & 0xffu;
			h *= 0x100000001b3ull;
		}
	}
	return h;
}
