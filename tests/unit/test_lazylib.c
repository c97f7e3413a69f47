// SPDX-License-Identifier: MIT
/* A library loaded on first use (lazylib.h): its functions once loaded,
 * and a one-line reason naming the library and its package otherwise.
 * zlib stands in for libdw and libevent_extra: every Debian has it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "lazylib.h"
#include "leak_check.h"

struct z_fns {
	const char *(*version)(void);
};

LEAK_TEST(lazylib, loads_once_and_fills_in_every_function)
{
	static struct z_fns z;
	static const struct lazylib_sym syms[] = { { "zlibVersion", offsetof(struct z_fns, version) }, { NULL, 0 } };
	static struct lazylib lib = LAZYLIB_INIT("libz.so.1", "zlib1g", syms, &z);

	cr_assert_null(z.version, "nothing before the first use");
	cr_assert_eq(lazylib_load(&lib), 0, "%s", lib.err);
	cr_assert_not_null(z.version);
	cr_assert_eq(strncmp(z.version(), "1.", 2), 0, "zlib says %s", z.version());
	cr_assert_eq(lazylib_load(&lib), 0, "the second use finds it loaded");
	cr_assert_eq(lib.state, 1);
}

LEAK_TEST(lazylib, a_missing_library_is_named_with_its_package)
{
	static struct z_fns z;
	static const struct lazylib_sym syms[] = { { "zlibVersion", offsetof(struct z_fns, version) }, { NULL, 0 } };
	static struct lazylib lib = LAZYLIB_INIT("libslotrun-none.so.9", "slotrun-none9", syms, &z);

	cr_assert_eq(lazylib_load(&lib), -ELIBACC);
	cr_assert(strstr(lib.err, "cannot load libslotrun-none.so.9 (Debian: slotrun-none9): "), "%s", lib.err);
	cr_assert_null(strchr(lib.err, '\n'), "one line: %s", lib.err);
	cr_assert_null(z.version);
	cr_assert_eq(lazylib_load(&lib), -ELIBACC, "the first answer stands");
}

LEAK_TEST(lazylib, a_missing_function_fails_the_whole_library)
{
	static struct z_fns z[2];
	static const struct lazylib_sym syms[] = {
		{ "zlibVersion", offsetof(struct z_fns, version) },
		{ "slotrun_no_such_function", sizeof(struct z_fns) + offsetof(struct z_fns, version) },
		{ NULL, 0 },
	};
	static struct lazylib lib = LAZYLIB_INIT("libz.so.1", "zlib1g", syms, z);

	cr_assert_eq(lazylib_load(&lib), -ELIBACC);
	cr_assert_str_eq(lib.err, "libz.so.1 has no slotrun_no_such_function (Debian: zlib1g, a newer version)");
}
