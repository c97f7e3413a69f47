// SPDX-License-Identifier: MIT
/* The simulated model of slotcomm_train: the batch split, and the
 * gradient checked against its own loss (it is that loss's derivative),
 * its independence from how the parameters are blocked, and determinism. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "leak_check.h"

struct split_case {
	uint64_t global, world;
	int ret;
	uint64_t per_slot, dropped;
};

ParameterizedTestParameters(model, split)
{
	static struct split_case cases[] = {
		{ 100, 3, 0, 33, 1 },
		{ 99, 3, 0, 33, 0 },
		{ 32, 1, 0, 32, 0 },
		{ 128, 4, 0, 32, 0 },
		{ 7, 7, 0, 1, 0 },
		{ 13, 7, 0, 1, 6 },
		{ 1, 1, 0, 1, 0 },
		{ 2, 3, -EINVAL, 0, 0 },
		{ 0, 1, -EINVAL, 0, 0 },
		{ 5, 0, -EINVAL, 0, 0 },
		{ MODEL_MAX_BATCH, MODEL_MAX_WORLD, 0, MODEL_MAX_BATCH / MODEL_MAX_WORLD,
		  MODEL_MAX_BATCH % MODEL_MAX_WORLD },
		{ MODEL_MAX_BATCH + 1ull, 1, -ERANGE, 0, 0 },
		{ 100, MODEL_MAX_WORLD + 1ull, -ERANGE, 0, 0 },
	};
	return cr_make_param_array(struct split_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct split_case *c, model, split)
{
	struct model_split s = { 99, 99 };
	int r = model_split(c->global, c->world, &s);

	cr_assert_eq(r, c->ret, "%llu over %llu: %d", (unsigned long long)c->global,
		     (unsigned long long)c->world, r);
	if (r == 0) {
		cr_assert_eq(s.per_slot, c->per_slot);
		cr_assert_eq(s.dropped, c->dropped);
	}
}

LEAK_TEST(model, init_is_a_function_of_the_seed)
{
	float p1[300], t1[300], p2[300], t2[300];

	model_init(p1, t1, 300, 7);
	model_init(p2, t2, 300, 7);
	cr_assert_eq(memcmp(p1, p2, sizeof(p1)), 0);
	cr_assert_eq(memcmp(t1, t2, sizeof(t1)), 0);
	for (int i = 0; i < 300; i++) {
		cr_assert(p1[i] >= -1.0f && p1[i] < 1.0f, "%g", p1[i]);
		cr_assert(t1[i] >= -1.0f && t1[i] < 1.0f, "%g", t1[i]);
	}
	cr_assert_neq(memcmp(p1, t1, sizeof(p1)), 0, "parameters and target are other draws");
	model_init(p2, t2, 300, 8);
	cr_assert_neq(memcmp(p1, p2, sizeof(p1)), 0);
	/* a prefix: draws do not depend on n */
	model_init(p2, t2, 100, 7);
	cr_assert_eq(memcmp(p1, p2, 100 * sizeof(float)), 0);
}

/* The gradient is the derivative of n * loss: the loss is quadratic in each
 * parameter, so a central difference gives it up to rounding. */
LEAK_TEST(model, gradient_is_the_derivative_of_the_loss)
{
	enum { N = 40, B = 5 };
	float w[N], t[N], g[N] = { 0 }, unused[N];

	model_init(w, t, N, 3);
	model_grad(w, t, N, 3, 1, 9, B, g);
	for (int k = 0; k < N; k += 7) {
		float keep = w[k];
		double lp, lm, h;

		w[k] = keep + 0.01f;
		h = (double)w[k] - keep;
		memset(unused, 0, sizeof(unused));
		lp = model_grad(w, t, N, 3, 1, 9, B, unused);
		w[k] = keep - (float)h;
		memset(unused, 0, sizeof(unused));
		lm = model_grad(w, t, N, 3, 1, 9, B, unused);
		w[k] = keep;
		cr_assert_float_eq((lp - lm) / (2 * h) * N, g[k], 1e-4, "parameter %d: %g vs %g", k,
				   (lp - lm) / (2 * h) * N, g[k]);
	}
}

/* Parameter i's draws depend on i alone, so the first 600 of a run over
 * 1100 (three blocks of 512 inside) equal a run over 600. */
LEAK_TEST(model, gradient_does_not_depend_on_blocking_or_n)
{
	enum { N = 1100 };
	float *w = malloc(N * sizeof(float)), *t = malloc(N * sizeof(float));
	float *a = calloc(N, sizeof(float)), *b = calloc(N, sizeof(float));

	model_init(w, t, N, 11);
	model_grad(w, t, N, 11, 2, 5, 3, a);
	model_grad(w, t, 600, 11, 2, 5, 3, b);
	cr_assert_eq(memcmp(a, b, 600 * sizeof(float)), 0);
	free(w);
	free(t);
	free(a);
	free(b);
}

LEAK_TEST(model, gradient_is_deterministic_and_keyed_by_rank_step_and_batch)
{
	enum { N = 64 };
	float w[N], t[N], g0[N] = { 0 }, g1[N] = { 0 }, other[N];

	model_init(w, t, N, 1);
	double l0 = model_grad(w, t, N, 1, 0, 4, 8, g0);
	double l1 = model_grad(w, t, N, 1, 0, 4, 8, g1);

	cr_assert_eq(l0, l1);
	cr_assert_eq(memcmp(g0, g1, sizeof(g0)), 0);
	/* one of (seed, rank, step, batch) changed at a time */
	static const struct {
		uint64_t seed;
		uint32_t rank;
		uint64_t step, batch;
	} others[] = { { 2, 0, 4, 8 }, { 1, 1, 4, 8 }, { 1, 0, 5, 8 }, { 1, 0, 4, 9 } };
	for (size_t k = 0; k < sizeof(others) / sizeof(others[0]); k++) {
		memset(other, 0, sizeof(other));
		model_grad(w, t, N, others[k].seed, others[k].rank, others[k].step, others[k].batch,
			   other);
		cr_assert_neq(memcmp(g0, other, sizeof(g0)), 0, "variant %zu", k);
	}
	/* it adds to the accumulator */
	model_grad(w, t, N, 1, 0, 4, 8, g1);
	for (int i = 0; i < N; i++)
		cr_assert_eq(g1[i], 2 * g0[i]);
}

LEAK_TEST(model, loss_falls_to_the_noise_floor_under_descent)
{
	enum { N = 256 };
	float w[N], t[N], g[N], first = 0, last = 0;
	double floor = 0.5 * MODEL_NOISE * MODEL_NOISE / 3;

	model_init(w, t, N, 5);
	for (int s = 1; s <= 40; s++) {
		double l;

		memset(g, 0, sizeof(g));
		l = model_grad(w, t, N, 5, 0, (uint64_t)s, 16, g);
		model_mean(g, g, N, 1);
		model_apply(w, g, N);
		if (s == 1)
			first = (float)l;
		last = (float)l;
	}
	cr_assert_gt(first, 0.2);
	cr_assert(fabs(last - floor) < 0.2 * floor, "loss %g, floor %g", last, floor);
}

LEAK_TEST(model, mean_and_apply)
{
	float acc[3] = { 3, -6, 1.5f }, g[3], w[3] = { 1, 1, 1 };

	model_mean(g, acc, 3, 3);
	cr_assert_eq(g[0], 1.0f);
	cr_assert_eq(g[1], -2.0f);
	cr_assert_eq(g[2], 0.5f);
	model_apply(w, g, 3);
	cr_assert_eq(w[0], 1.0f - MODEL_LR * 1.0f);
	cr_assert_eq(w[1], 1.0f + MODEL_LR * 2.0f);
}

LEAK_TEST(model, checksum_is_fnv1a_of_the_little_endian_bytes)
{
	float p[2] = { 1.0f, -2.5f };
	uint64_t h = model_checksum(p, 2);

	/* bytes 00 00 80 3f 00 00 20 c0 */
	cr_assert_eq(h, 0x09e629ee2dfdb3f8ull, "%016llx", (unsigned long long)h);
	cr_assert_eq(model_checksum(NULL, 0), 0xcbf29ce484222325ull);
	p[1] = nextafterf(p[1], 0);
	cr_assert_neq(model_checksum(p, 2), h);
}
