// SPDX-License-Identifier: MIT
#include "clock.h"

#include <math.h>
#include <stdint.h>

double clock_mono(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Whole seconds and the fraction in units of 1/scale, with the fraction
 * never rounding up to a whole unit (1e6 usec is not a valid timeval). */
static void split(double seconds, long scale, time_t *whole, long *frac)
{
	double w, f;

	if (!(seconds > 0)) {
		*whole = 0;
		*frac = 0;
		return;
	}
	/* 2^62 s is far past any deadline and still fits a 64-bit time_t */
	if (seconds >= 4611686018427387904.0) {
		*whole = (time_t)INT64_C(4611686018427387904);
		*frac = 0;
		return;
	}
	f = modf(seconds, &w);
	*whole = (time_t)w;
	*frac = (long)(f * (double)scale);
	if (*frac >= scale)
		*frac = scale - 1;
}

struct timeval clock_tv(double seconds)
{
	time_t w;
	long f;

	split(seconds, 1000000L, &w, &f);
	return (struct timeval){ .tv_sec = w, .tv_usec = (suseconds_t)f };
}

struct timespec clock_ts(double seconds)
{
	time_t w;
	long f;

	split(seconds, 1000000000L, &w, &f);
	return (struct timespec){ .tv_sec = w, .tv_nsec = f };
}
