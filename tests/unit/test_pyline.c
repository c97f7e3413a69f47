// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leak_check.h"
#include "pyline.h"

/* tests/data/pyline/cases.txt: the location tables of real code objects
 * (CPython 3.11.2 compiling sample.py, by gen.py), each with the line
 * CPython itself gives every code unit. */
struct pycase {
	char name[128];
	int firstlineno;
	uint8_t table[4096];
	size_t len;
	int lines[4096];
	int units;
};

static int load_cases(struct pycase **out)
{
	const char *dir = getenv("SLOTRUN_TEST_DATA");
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	struct pycase *c = calloc(64, sizeof(*c));
	int n = -1;
	FILE *f;

	cr_assert(dir, "SLOTRUN_TEST_DATA is not set (meson sets it)");
	snprintf(path, sizeof(path), "%s/pyline/cases.txt", dir);
	cr_assert_not_null(f = fopen(path, "r"), "cannot read %s", path);
	cr_assert_not_null(c);
	while (getline(&line, &cap, f) > 0) {
		char hex[8192];

		if (!strncmp(line, "code ", 5)) {
			cr_assert_lt(++n, 64);
			cr_assert_eq(sscanf(line, "code %127s %d %8191s", c[n].name, &c[n].firstlineno, hex), 3, "%s", line);
			for (size_t i = 0; hex[2 * i] && hex[2 * i + 1]; i++) {
				unsigned b;

				cr_assert_eq(sscanf(hex + 2 * i, "%2x", &b), 1);
				c[n].table[c[n].len++] = (uint8_t)b;
			}
		} else if (!strncmp(line, "lines", 5)) {
			char *p = line + 5, *end;

			cr_assert_geq(n, 0);
			for (long v = strtol(p, &end, 10); end != p; v = strtol(p = end, &end, 10))
				c[n].lines[c[n].units++] = (int)v;
		}
	}
	free(line);
	fclose(f);
	*out = c;
	return n + 1;
}

LEAK_TEST(pyline, every_unit_of_real_code_objects_is_on_cpython_s_line)
{
	struct pycase *c;
	int n = load_cases(&c), checked = 0;

	cr_assert_geq(n, 10, "the fixture has its code objects");
	for (int i = 0; i < n; i++)
		for (int u = 0; u < c[i].units; u++, checked++)
			cr_assert_eq(pyline_find(c[i].table, c[i].len, c[i].firstlineno, u), c[i].lines[u],
				     "%s, unit %d", c[i].name, u);
	cr_assert_gt(checked, 200);
	free(c);
}

LEAK_TEST(pyline, a_frame_that_has_not_started_is_on_its_first_line)
{
	const uint8_t t[] = { 0x80, 0x00 };

	cr_assert_eq(pyline_find(t, sizeof(t), 42, -1), 42);
	cr_assert_eq(pyline_find(NULL, 0, 7, -1), 7);
}

LEAK_TEST(pyline, each_form_moves_the_line_as_it_should)
{
	/* short (same line), one-line +1 and +2, no columns -3 (svarint 7),
	 * long +70 (svarint 140: two groups), none (no line, no move) */
	const uint8_t t[] = {
		0x80 | 0 << 3 | 1, 0x05,             /* units 0-1: line 10 */
		0x80 | 11 << 3 | 0, 1, 2,            /* unit 2: 11 */
		0x80 | 12 << 3 | 0, 1, 2,            /* unit 3: 13 */
		0x80 | 13 << 3 | 0, 7,               /* unit 4: 10 */
		0x80 | 14 << 3 | 2, 0x40 | 12, 2, 0, 1, 1, /* units 5-7: 80 */
		0x80 | 15 << 3 | 0,                  /* unit 8: none */
		0x80 | 10 << 3 | 0, 3, 4,            /* unit 9: 80 */
	};
	const int want[] = { 10, 10, 11, 13, 10, 80, 80, 80, -1, 80, -1 };

	for (int u = 0; u < (int)(sizeof(want) / sizeof(want[0])); u++)
		cr_assert_eq(pyline_find(t, sizeof(t), 10, u), want[u], "unit %d", u);
}

LEAK_TEST(pyline, a_table_cut_short_or_not_a_table_has_no_line)
{
	const uint8_t cut[] = { 0x80 | 14 << 3, 0x40 | 1 }; /* the varint goes on past the end */
	const uint8_t junk[] = { 0x05, 0x80 };              /* no entry starts at 0 */
	const uint8_t huge[] = { 0x80 | 13 << 3, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f }; /* past an int */
	const uint8_t up[] = { 0x80 | 13 << 3 | 0, 0x7e, 0x7f, 0x7f, 0x7f, 0x1f,      /* + 2^28 - 1 */
			       0x80 | 13 << 3 | 0, 0x7e, 0x7f, 0x7f, 0x7f, 0x1f,
			       0x80 | 13 << 3 | 0, 0x7e, 0x7f, 0x7f, 0x7f, 0x1f,
			       0x80 | 13 << 3 | 0, 0x7e, 0x7f, 0x7f, 0x7f, 0x1f,
			       0x80 | 13 << 3 | 0, 0x7e, 0x7f, 0x7f, 0x7f, 0x1f };

	cr_assert_eq(pyline_find(cut, sizeof(cut), 1, 0), -1);
	cr_assert_eq(pyline_find(junk, sizeof(junk), 1, 0), -1);
	cr_assert_eq(pyline_find(huge, sizeof(huge), 1, 0), -1);
	cr_assert_eq(pyline_find(up, sizeof(up), INT_MAX - 10, 4), -1, "the line would pass INT_MAX");
	cr_assert_eq(pyline_find(up, sizeof(up), 1, 9), -1, "past the table");
}
