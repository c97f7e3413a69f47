// SPDX-License-Identifier: MIT
/* What a folder holds, for tests that check what a write left behind. */
#ifndef SLOTRUN_TEST_FOLDER_H
#define SLOTRUN_TEST_FOLDER_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <string.h>

/* How many names path holds, . and .. aside: hidden ones count (a
 * temporary file of io_replace_file's is one). */
static inline int folder_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d, "%s", path);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

#endif
