// SPDX-License-Identifier: MIT
/* A program outside the tree on the installed slotcomm: built by
 * test_slotcomm_install.py with `cc allreduce.c $(pkg-config --cflags
 * --libs slotcomm)` against a `meson install --destdir` copy, and run under
 * slotrun.  Every rank all-reduces values it can recompute and counts the
 * elements that differ from the expected ones; rank 0 prints the total.
 * Exit status: 0 all right, 1 wrong elements or a failure, 2 bad
 * environment. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slotcomm/slotcomm.h>

#define COUNT 100003  /* not a multiple of any world size */

/* Rank r's value at element i: small integers, exact in float. */
static int value(int r, size_t i)
{
	return (int)((i * 7 + (size_t)r * 3) % 11) - 5;
}

static uint64_t check(struct slotcomm *c, float *f, int64_t *l)
{
	int n = slotcomm_size(c);
	uint64_t wrong = 0;

	for (size_t i = 0; i < COUNT; i++) {
		int64_t sum = 0, max = INT64_MIN;

		for (int r = 0; r < n; r++) {
			sum += value(r, i);
			max = value(r, i) > max ? value(r, i) : max;
		}
		wrong += f[i] != (float)sum;
		wrong += l[i] != max;
	}
	return wrong;
}

int main(void)
{
	struct slotcomm_config cfg;
	struct slotcomm *c;
	char err[SLOTCOMM_ERR_MAX];
	float *f = malloc(COUNT * sizeof(*f));
	int64_t *l = malloc(COUNT * sizeof(*l));
	uint64_t wrong, *all = NULL;
	int rank, n, status = 1;

	if (!f || !l) {
		fprintf(stderr, "allreduce: out of memory\n");
		return 1;
	}
	if (strcmp(slotcomm_version(), SLOTCOMM_VERSION_STRING) != 0) {
		fprintf(stderr, "allreduce: headers %s, library %s\n", SLOTCOMM_VERSION_STRING,
			slotcomm_version());
		return 1;
	}
	if (slotcomm_config_from_env(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "allreduce: %s\n", err);
		return 2;
	}
	if (slotcomm_init(&c, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "allreduce: rank %d: %s\n", cfg.rank, err);
		return 1;
	}
	rank = slotcomm_rank(c);
	n = slotcomm_size(c);
	for (size_t i = 0; i < COUNT; i++)
		f[i] = (float)value(rank, i), l[i] = value(rank, i);
	if (slotcomm_allreduce(c, f, COUNT, SLOTCOMM_FLOAT32, SLOTCOMM_SUM) < 0 ||
	    slotcomm_allreduce(c, l, COUNT, SLOTCOMM_INT64, SLOTCOMM_MAX) < 0)
		goto fail;
	wrong = check(c, f, l);
	if (rank == 0 && !(all = calloc((size_t)n, sizeof(*all))))
		goto fail;
	if (slotcomm_gather(c, &wrong, sizeof(wrong), all) < 0)
		goto fail;
	if (rank == 0) {
		uint64_t total = 0;

		for (int r = 0; r < n; r++)
			total += all[r];
		printf("slotcomm %s: %d ranks over %s, %llu wrong\n", slotcomm_version(), n,
		       slotcomm_transport_name(c), (unsigned long long)total);
		status = total != 0;
	} else {
		status = 0;
	}
	if (slotcomm_barrier(c) < 0)
		goto fail;
	slotcomm_destroy(c);
	free(all);
	free(f);
	free(l);
	return status;
fail:
	fprintf(stderr, "allreduce: rank %d: %s\n", rank, slotcomm_error(c));
	slotcomm_destroy(c);
	free(all);
	free(f);
	free(l);
	return 1;
}
