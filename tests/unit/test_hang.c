// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>

#include "hang.h"
#include "leak_check.h"

LEAK_TEST(hang, the_period_is_a_tenth_within_bounds)
{
	cr_assert_float_eq(hang_period(5), 0.5, 1e-9);
	cr_assert_float_eq(hang_period(0.1), 0.05, 1e-9, "not below 0.05");
	cr_assert_float_eq(hang_period(600), 1, 1e-9, "not above 1");
}

LEAK_TEST(hang, the_first_silent_running_worker_is_hung)
{
	double active[4] = { 9.0, 1.0, 2.0, 9.5 };
	enum sup_worker_fate fate[4] = { SUP_W_RUNNING, SUP_W_EXITED, SUP_W_RUNNING, SUP_W_RUNNING };

	cr_assert_eq(hang_find(active, fate, 4, false, 10.0, 5.0), 2, "1 is silent but has exited");
	cr_assert_eq(hang_find(active, fate, 4, false, 7.0, 5.0), -1, "exactly the limit is not past it");
	cr_assert_eq(hang_find(active, fate, 0, false, 10.0, 5.0), -1);
}

LEAK_TEST(hang, silence_while_the_output_is_held_back_is_no_hang)
{
	double active[2] = { 0.0, 0.0 };
	enum sup_worker_fate fate[2] = { SUP_W_RUNNING, SUP_W_RUNNING };

	cr_assert_eq(hang_find(active, fate, 2, true, 100.0, 5.0), -1);
	cr_assert_float_eq(active[0], 100.0, 1e-9, "counts as active now");
	cr_assert_float_eq(active[1], 100.0, 1e-9);
	cr_assert_eq(hang_find(active, fate, 2, false, 106.0, 5.0), 0, "silent again, from then on");
}

LEAK_TEST(hang, rchar_is_read_from_proc_pid_io)
{
	unsigned long long v = 0;

	cr_assert_eq(hang_parse_rchar("rchar: 1234\nwchar: 5\n", &v), 0);
	cr_assert_eq(v, 1234);
	cr_assert_eq(hang_parse_rchar("wchar: 5\nrchar: 77", &v), 0, "anywhere, even unterminated");
	cr_assert_eq(v, 77);
	cr_assert_eq(hang_parse_rchar("wchar: 5\n", &v), -EINVAL);
	cr_assert_eq(hang_parse_rchar("rchar: x\n", &v), -EINVAL);
	cr_assert_eq(hang_parse_rchar("rchar: 12x\n", &v), -EINVAL);
	cr_assert_eq(hang_parse_rchar("", &v), -EINVAL);
}

LEAK_TEST(hang, progress_is_a_change_since_the_last_look)
{
	unsigned long long seen = 0;
	bool known = false;

	cr_assert_not(hang_progress(&seen, &known, 0, 100), "the first look only takes the value");
	cr_assert_not(hang_progress(&seen, &known, 0, 100), "unchanged: no progress");
	cr_assert(hang_progress(&seen, &known, 0, 101), "one byte more is progress");
	cr_assert_not(hang_progress(&seen, &known, -EINVAL, 0), "unreadable: no progress");
	cr_assert_not(hang_progress(&seen, &known, 0, 500), "and the next look starts afresh");
	cr_assert(hang_progress(&seen, &known, 0, 501));
}
