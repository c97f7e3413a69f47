// SPDX-License-Identifier: MIT
/* LEAK_TEST: a Criterion Test that ends by asking LeakSanitizer for leaks.
 *
 * LSan reports at the exit of Criterion's worker process, after the test's
 * result is recorded, so a leak would never fail a test (an assertion or
 * abort() in .fini does not either).  Under ASan each test body therefore
 * ends with a recoverable leak check of its own; elsewhere it is a no-op.
 * Whatever a fixture keeps in globals is reachable, not a leak. */
#ifndef SLOTRUN_LEAK_CHECK_H
#define SLOTRUN_LEAK_CHECK_H

#include <criterion/criterion.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
static inline void leak_check(void)
{
	cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "memory leaked: see the report above");
}
#else
static inline void leak_check(void)
{
}
#endif

/* LEAK_TEST_OPTS takes Criterion's test options (.timeout = 10, ...);
 * LEAK_TEST none, since Criterion's Test cannot be given an empty list. */
#define LEAK_TEST_OPTS(suite, name, ...)                 \
	static void suite##_##name##_body(void);         \
	Test(suite, name, __VA_ARGS__)                   \
	{                                                \
		suite##_##name##_body();                 \
		leak_check();                            \
	}                                                \
	static void suite##_##name##_body(void)

#define LEAK_TEST(suite, name)                           \
	static void suite##_##name##_body(void);         \
	Test(suite, name)                                \
	{                                                \
		suite##_##name##_body();                 \
		leak_check();                            \
	}                                                \
	static void suite##_##name##_body(void)

#endif
