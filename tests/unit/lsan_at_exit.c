// SPDX-License-Identifier: MIT
/* Linked into every unit test: LeakSanitizer's check at a process's exit
 * is turned off, its check inside each test (leak_check.h) is not.
 *
 * Criterion's runner leaks 48 bytes of its own at exit when tests run in
 * parallel jobs (an allocation in libcriterion.so.3, seen on Debian 12),
 * which fails the whole test binary.  A suppression cannot name only that
 * allocation: LSan matches a pattern against every frame of a leak's
 * stack, and every allocation of a test runs below Criterion's frames, so
 * `leak:libcriterion.so` hid every leak of every unit test.  The check at
 * exit never failed a test anyway (Criterion has recorded the result by
 * then); each LEAK_TEST ends with a check of its own, while this flag is
 * still clear. */
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
static int exiting;

/* LeakSanitizer asks this before every check. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return exiting;
}

static void now_exiting(void)
{
	exiting = 1;
}

/* Registered after the sanitizer's own exit check (set up before any
 * constructor runs), so it runs before it. */
__attribute__((constructor)) static void lsan_at_exit_init(void)
{
	atexit(now_exiting);
}
#endif
