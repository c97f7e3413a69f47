// SPDX-License-Identifier: MIT
/* The lowest layer of ClusterInfo's parsing, below the hostlist parser and
 * ci_parse.h: the limits on a value and how one is shown in a message. */
#ifndef SLOTRUN_CI_UTIL_H
#define SLOTRUN_CI_UTIL_H

#include "quote.h"

#define CI_HOST_MAX 253     /* longest DNS name; also our cap for any address */
#define CI_QUOTE_MAX 64     /* bytes of a value shown in a message */

/* A value as it may appear in a one-line message: control bytes escaped (an
 * environment variable can hold a newline), long values cut. */
struct ci_quoted {
	char s[QUOTE_SIZE(CI_QUOTE_MAX)];
};
const char *ci_quote(struct ci_quoted *q, const char *s);

/* Frees n strings and the array; NULL is fine. */
void ci_strv_free(char **v, int n);

#endif
