// SPDX-License-Identifier: MIT
/* A fresh folder for each test of code that reads real files:
 * tmp_dir_setup / tmp_dir_teardown as a suite's .init / .fini, and files
 * written into it with tmp_write. */
#ifndef SLOTRUN_TMP_DIR_H
#define SLOTRUN_TMP_DIR_H

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];

static inline void tmp_dir_setup(void)
{
	strcpy(tmpdir, "/tmp/slotrun_test.XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static inline void tmp_dir_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		cr_log_warn("could not remove %s", tmpdir);
}

/* tmpdir/name, in a buffer that lives for the next 15 calls */
static inline const char *tmp_path(const char *name)
{
	static char pool[16][128];
	static int n;
	char *b = pool[n++ % 16];

	snprintf(b, sizeof(pool[0]), "%s/%s", tmpdir, name);
	return b;
}

/* Writes len bytes of text to tmpdir/name; returns its path (tmp_path). */
static inline const char *tmp_write(const char *name, const char *text, size_t len)
{
	const char *path = tmp_path(name);
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	return path;
}

#endif
