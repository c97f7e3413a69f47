// SPDX-License-Identifier: MIT
/* A small trainer-like program for the end-to-end tests of the comm
 * library's Core API primitives: run one per rank with the worker
 * environment; exits 0 and prints "comm_check: rank R: ok" when allgather,
 * gather, broadcast, barrier, should_preempt and a small all-reduce all
 * gave the right answers, 1 with one line otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slotcomm/slotcomm.h>

static int rank;

#define FAIL(...)                                                                      \
	do {                                                                           \
		fprintf(stderr, "comm_check: rank %d: ", rank);                        \
		fprintf(stderr, __VA_ARGS__);                                          \
		fputc('\n', stderr);                                                   \
		return 1;                                                              \
	} while (0)

static unsigned char pattern(int r, size_t i)
{
	return (unsigned char)(r * 31 + i * 7 + (i >> 8));
}

static int check_blocks(const unsigned char *buf, size_t len, int n, const char *what)
{
	for (int r = 0; r < n; r++)
		for (size_t i = 0; i < len; i++)
			if (buf[(size_t)r * len + i] != pattern(r, i))
				FAIL("%s of %zu bytes: byte %zu of rank %d's block is wrong", what, len, i, r);
	return 0;
}

static int run(struct slotcomm *c)
{
	static const size_t lens[] = { 0, 1, 3, 4096, (1u << 20) + 3 };
	int n = slotcomm_size(c);

	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		size_t len = lens[k];
		unsigned char *mine = malloc(len + 1), *all = malloc(len * (size_t)n + 1);

		if (!mine || !all)
			FAIL("out of memory");
		for (size_t i = 0; i < len; i++)
			mine[i] = pattern(rank, i);

		memset(all, 0xee, len * (size_t)n);
		if (slotcomm_allgather(c, mine, len, all) < 0)
			FAIL("allgather: %s", slotcomm_error(c));
		if (check_blocks(all, len, n, "allgather"))
			return 1;

		memset(all, 0xee, len * (size_t)n);
		if (slotcomm_gather(c, mine, len, rank == 0 ? all : NULL) < 0)
			FAIL("gather: %s", slotcomm_error(c));
		if (rank == 0 && check_blocks(all, len, n, "gather"))
			return 1;

		for (size_t i = 0; i < len; i++)
			mine[i] = rank == 0 ? pattern(0, i) : 0;
		if (slotcomm_broadcast(c, mine, len) < 0)
			FAIL("broadcast: %s", slotcomm_error(c));
		if (check_blocks(mine, len, 1, "broadcast"))
			return 1;
		free(mine);
		free(all);
	}

	for (int i = 0; i < 3; i++)
		if (slotcomm_barrier(c) < 0)
			FAIL("barrier: %s", slotcomm_error(c));

	/* should_preempt: the same answer everywhere; true when any rank asks. */
	for (int asker = -1; asker < n; asker++) {
		bool stop = !(asker >= 0);

		if (slotcomm_should_preempt(c, rank == asker, &stop) < 0)
			FAIL("should_preempt: %s", slotcomm_error(c));
		if (stop != (asker >= 0))
			FAIL("should_preempt with rank %d asking gave %s", asker, stop ? "true" : "false");
	}
	{
		bool stop = false;

		if (slotcomm_should_preempt(c, true, &stop) < 0 || !stop)
			FAIL("should_preempt with every rank asking: %s", slotcomm_error(c));
	}

	/* A small all-reduce, count below WORLD_SIZE included. */
	for (size_t count = 0; count < 12; count++) {
		long long v[12];

		for (size_t i = 0; i < count; i++)
			v[i] = rank * 100 + (long long)i;
		if (slotcomm_allreduce(c, v, count, SLOTCOMM_INT64, SLOTCOMM_SUM) < 0)
			FAIL("all-reduce of %zu: %s", count, slotcomm_error(c));
		for (size_t i = 0; i < count; i++)
			if (v[i] != 100LL * n * (n - 1) / 2 + (long long)i * n)
				FAIL("all-reduce of %zu: element %zu is %lld", count, i, v[i]);
	}
	return 0;
}

int main(void)
{
	struct slotcomm_config cfg;
	struct slotcomm *c;
	char err[SLOTCOMM_ERR_MAX];
	int r;

	if (slotcomm_config_from_env(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "comm_check: %s\n", err);
		return 2;
	}
	rank = cfg.rank;
	if (slotcomm_init(&c, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "comm_check: rank %d: %s\n", rank, err);
		return 1;
	}
	r = run(c);
	if (r == 0)
		printf("comm_check: rank %d: ok (%d ranks on %d hosts)\n", rank, slotcomm_size(c),
		       slotcomm_nhosts(c));
	slotcomm_destroy(c);
	return r;
}
