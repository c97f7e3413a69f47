// SPDX-License-Identifier: MIT
#include "hang.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int hang_parse_rchar(const char *text, unsigned long long *rchar)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		char *end;

		if (strncmp(p, "rchar:", 6) != 0)
			continue;
		errno = 0;
		*rchar = strtoull(p + 6, &end, 10);
		if (errno || end == p + 6 || (*end && *end != '\n'))
			return -EINVAL;
		return 0;
	}
	return -EINVAL;
}

bool hang_progress(unsigned long long *seen, bool *known, int e, unsigned long long rchar)
{
	bool moved;

	if (e < 0) {
		*known = false;
		return false;
	}
	moved = *known && rchar != *seen;
	*seen = rchar;
	*known = true;
	return moved;
}
