// SPDX-License-Identifier: MIT
/* The monotonic clock in the forms the loop and the deadlines use. */
#ifndef SLOTRUN_CLOCK_H
#define SLOTRUN_CLOCK_H

#include <sys/time.h>
#include <time.h>

/* Seconds on CLOCK_MONOTONIC (from an unspecified origin). */
double clock_mono(void);

/* seconds as a timeval for evtimer_add(): negative or NaN gives zero, and a
 * value past what time_t holds saturates rather than wrapping. */
struct timeval clock_tv(double seconds);

/* seconds as a timespec for ppoll() and friends, by the same rules. */
struct timespec clock_ts(double seconds);

#endif
