// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "clock.h"
#include "quote.h"

Test(clock, tv_splits_whole_and_fraction)
{
	struct timeval tv = clock_tv(2.25);

	cr_expect_eq(tv.tv_sec, 2);
	cr_expect_eq(tv.tv_usec, 250000);
}

Test(clock, tv_never_negative_nor_a_whole_second_of_usec)
{
	struct timeval tv;

	tv = clock_tv(-1.0);
	cr_expect(tv.tv_sec == 0 && tv.tv_usec == 0);
	tv = clock_tv(NAN);
	cr_expect(tv.tv_sec == 0 && tv.tv_usec == 0);
	tv = clock_tv(0.9999999999);
	cr_expect_lt(tv.tv_usec, 1000000);
	tv = clock_tv(1e300);
	cr_expect_gt(tv.tv_sec, (time_t)1e18);
}

Test(clock, ts_in_nanoseconds)
{
	struct timespec ts = clock_ts(0.5);

	cr_expect(ts.tv_sec == 0 && ts.tv_nsec == 500000000);
}

Test(clock, mono_moves_forward)
{
	double a = clock_mono(), b = clock_mono();

	cr_expect_geq(b, a);
	cr_expect_gt(a, 0);
}

Test(quote, plain_text_is_kept)
{
	char b[QUOTE_SIZE(16)];

	cr_expect_str_eq(quote_ctl(b, sizeof(b), "gpu[01-04]", 16), "gpu[01-04]");
}

Test(quote, control_bytes_become_hex)
{
	char b[QUOTE_SIZE(16)];

	cr_expect_str_eq(quote_ctl(b, sizeof(b), "a\nb\x7f", 16), "a\\x0ab\\x7f");
}

Test(quote, cut_at_max_input_bytes)
{
	char b[QUOTE_SIZE(4)];

	cr_expect_str_eq(quote_ctl(b, sizeof(b), "abcdef", 4), "abcd...");
	cr_expect_str_eq(quote_ctl(b, sizeof(b), "abcd", 4), "abcd");
}

Test(quote, cut_where_the_buffer_ends)
{
	char b[8];

	/* 4 bytes of room for the text, 4 for "..." and the NUL */
	cr_expect_str_eq(quote_ctl(b, sizeof(b), "\x01\x02", 100), "\\x01...");
	cr_expect_str_eq(quote_ctl(b, sizeof(b), "abcdefgh", 100), "abcd...");
	cr_expect_lt(strlen(quote_ctl(b, 3, "abcdefgh", 100)), 3);
}
