// SPDX-License-Identifier: MIT
/* Showing a value from outside (an environment variable, a flag, a peer's
 * message) inside a one-line diagnostic. */
#ifndef SLOTRUN_QUOTE_H
#define SLOTRUN_QUOTE_H

#include <stddef.h>

/* The size of a buffer that shows max input bytes uncut: every byte may
 * become \xNN, then "..." and the NUL. */
#define QUOTE_SIZE(max) ((max) * 4 + sizeof("..."))

/* Copies s into buf (size bytes), control characters (below 0x20, and
 * 0x7f) written as \xNN so that the line stays one line on a terminal.  At
 * most max bytes of s are shown; a longer s, or one that does not fit in
 * size, ends with "...".  Returns buf, always NUL-terminated (size > 0). */
const char *quote_ctl(char *buf, size_t size, const char *s, size_t max);

#endif
