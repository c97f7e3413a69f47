// SPDX-License-Identifier: MIT
#include "hang.h"

double hang_period(double limit)
{
	double every = limit / 10;

	return every < 0.05 ? 0.05 : every > 1 ? 1 : every;
}

int hang_find(double *active, const enum sup_worker_fate *fate, int n, bool held, double now, double limit)
{
	for (int i = 0; i < n; i++) {
		if (held)
			active[i] = now;
		if (fate[i] != SUP_W_RUNNING || now - active[i] <= limit)
			continue;
		return i;
	}
	return -1;
}
