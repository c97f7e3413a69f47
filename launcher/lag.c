// SPDX-License-Identifier: MIT
#include "lag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool idle(const struct status_row *r)
{
	return r->silent_s >= LAG_SILENT && r->cpu_pct >= 0 && r->cpu_pct < LAG_CPU;
}

static bool progresses(const struct status_row *r)
{
	return r->silent_s < LAG_SILENT || r->cpu_pct >= LAG_CPU;
}

static bool held(const struct status_row *r)
{
	return (r->state == SAMPLE_DISK || r->state == SAMPLE_STOPPED) && r->state_s >= LAG_STATE;
}

static int by_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

const char *lag_ranks_text(const int *ranks, int n, char *buf, size_t size)
{
	int *s = malloc((n > 0 ? (size_t)n : 1) * sizeof(*s));
	size_t len = 0;

	buf[0] = '\0';
	if (!s)
		return buf;
	memcpy(s, ranks, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), by_int);
	for (int i = 0; i < n && len < size;) {
		int j = i;

		while (j + 1 < n && s[j + 1] <= s[j] + 1)
			j++;
		len += (size_t)snprintf(buf + len, size - len, s[j] == s[i] ? "%s%d" : "%s%d-%d", len ? "," : "",
					s[i], s[j]);
		i = j + 1;
	}
	free(s);
	return buf;
}

/* "42 s", "3 min 5 s": how long a rank was silent or held. */
static const char *span(double s, char *buf, size_t size)
{
	long t = (long)s;

	if (t < 120)
		snprintf(buf, size, "%ld s", t);
	else if (t < 7200)
		snprintf(buf, size, "%ld min %ld s", t / 60, t % 60);
	else
		snprintf(buf, size, "%ld h %ld min", t / 3600, t / 60 % 60);
	return buf;
}

int lag_mark(struct status_row *rows, int n, bool running)
{
	int *busy = calloc(n > 0 ? (size_t)n : 1, sizeof(*busy)), nbusy = 0, nidle = 0, count = 0;
	char list[160], t[32];

	for (int i = 0; i < n; i++) {
		rows[i].lag = false;
		rows[i].why[0] = '\0';
	}
	if (!busy || !running) {
		free(busy);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (!rows[i].up)
			continue;
		if (idle(&rows[i]))
			nidle++;
		else if (progresses(&rows[i]))
			busy[nbusy++] = rows[i].rank;
	}
	lag_ranks_text(busy, nbusy, list, sizeof(list));
	for (int i = 0; i < n; i++) {
		struct status_row *r = &rows[i];

		if (!r->up)
			continue;
		if (held(r)) {
			snprintf(r->why, sizeof(r->why), "%s (%c) for %s", sample_state_name(r->state),
				 r->state == SAMPLE_DISK ? 'D' : 'T', span(r->state_s, t, sizeof(t)));
		} else if (idle(r) && nbusy > 0 && nidle <= nbusy) {
			snprintf(r->why, sizeof(r->why), "no output for %s and %.0f%% CPU while rank%s %s progress%s",
				 span(r->silent_s, t, sizeof(t)), r->cpu_pct, nbusy == 1 ? "" : "s", list,
				 nbusy == 1 ? "es" : "");
		} else {
			continue;
		}
		r->lag = true;
		count++;
	}
	free(busy);
	return count;
}
