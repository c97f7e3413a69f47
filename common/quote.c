// SPDX-License-Identifier: MIT
#include "quote.h"

#include <stdio.h>
#include <string.h>

const char *quote_ctl(char *buf, size_t size, const char *s, size_t max)
{
	const size_t room = sizeof("...") - 1 + 1;    /* the cut mark and the NUL */
	size_t o = 0, i;

	if (size == 0)
		return buf;
	for (i = 0; s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];
		size_t need = (ch < 0x20 || ch == 0x7f) ? 4 : 1;

		if (i >= max || o + need + room > size)
			break;
		if (need == 4)
			snprintf(buf + o, size - o, "\\x%02x", ch);
		else
			buf[o] = (char)ch;
		o += need;
	}
	if (s[i] && o + room <= size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o < size ? o : size - 1] = '\0';
	return buf;
}
