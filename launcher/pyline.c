// SPDX-License-Identifier: MIT
#include "pyline.h"

#include <limits.h>
#include <stdbool.h>

enum {
	FORM_ONE_LINE0 = 10, /* ..12: the line moves by 0, 1 or 2 */
	FORM_NO_COLUMNS = 13,
	FORM_LONG = 14,
	FORM_NONE = 15,
};

/* An unsigned varint at *at, which moves past it; false when the table
 * ends inside it (or it does not fit an int). */
static bool varint(const uint8_t *t, size_t len, size_t *at, unsigned *v)
{
	unsigned shift = 0;

	*v = 0;
	for (;;) {
		if (*at >= len || shift > 24)
			return false;
		*v |= (unsigned)(t[*at] & 0x3f) << shift;
		shift += 6;
		if (!(t[(*at)++] & 0x40))
			return true;
	}
}

static bool signed_varint(const uint8_t *t, size_t len, size_t *at, int *delta)
{
	unsigned v;

	if (!varint(t, len, at, &v))
		return false;
	*delta = v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
	return true;
}

int pyline_find(const uint8_t *table, size_t len, int firstlineno, int unit)
{
	long long line = firstlineno;
	int start = 0;
	size_t at = 0;

	if (unit < 0)
		return firstlineno;
	while (at < len) {
		uint8_t head = table[at++];
		int form = (head >> 3) & 15, units = (head & 7) + 1, delta = 0;
		bool none = form == FORM_NONE;

		if (!(head & 0x80))
			return -1; /* not the start of an entry: the table is not one */
		if (form == FORM_LONG || form == FORM_NO_COLUMNS) {
			if (!signed_varint(table, len, &at, &delta))
				return -1;
		} else if (form >= FORM_ONE_LINE0 && form < FORM_NO_COLUMNS) {
			delta = form - FORM_ONE_LINE0;
		}
		line += delta;
		if (line < INT_MIN || line > INT_MAX)
			return -1;
		if (unit - start < units)
			return none ? -1 : (int)line;
		if (start > INT_MAX - units)
			return -1;
		start += units;
		/* the rest of the entry (end line, columns) has no top bit */
		while (at < len && !(table[at] & 0x80))
			at++;
	}
	return -1;
}
