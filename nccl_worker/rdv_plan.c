// SPDX-License-Identifier: MIT
#include "rdv_plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum rdv_admit rdv_admit(int np, int cap, int64_t oldest_since, int64_t now, int64_t min_age,
			 int64_t *when)
{
	if (np < cap)
		return RDV_TAKE;
	if (now - oldest_since >= min_age)
		return RDV_EVICT;
	*when = oldest_since + min_age;
	return RDV_WAIT;
}

long rdv_fds_needed(int rank, int size, int local_size, bool may_shm, int pending_max)
{
	long n = 1 + 2 + 2;  /* control connection, two listeners, two ring connections */

	if (rank == 0)
		n += (long)size - 1 + pending_max;
	if (may_shm)
		n += (long)local_size + 1;
	return n;
}

int rdv_nofile_plan(uint64_t need, uint64_t soft, uint64_t hard, uint64_t *set)
{
	if (soft >= need)
		return 0;
	if (hard < need)
		return -EMFILE;
	*set = hard;
	return 1;
}

static int by_string(const void *a, const void *b, void *arg)
{
	const char *const *s = arg;

	return strcmp(s[*(const int *)a], s[*(const int *)b]);
}

int rdv_count_distinct(const char *const *s, int n, int *scratch)
{
	int distinct = n > 0;

	for (int i = 0; i < n; i++)
		scratch[i] = i;
	qsort_r(scratch, (size_t)n, sizeof(*scratch), by_string, (void *)s);
	for (int i = 1; i < n; i++)
		distinct += by_string(&scratch[i - 1], &scratch[i], (void *)s) != 0;
	return distinct;
}
