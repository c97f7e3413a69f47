// SPDX-License-Identifier: MIT
/* See ci_util.h. */
#include "ci_util.h"

#include <stdlib.h>

const char *ci_quote(struct ci_quoted *q, const char *s)
{
	return quote_ctl(q->s, sizeof(q->s), s, CI_QUOTE_MAX);
}

void ci_strv_free(char **v, int n)
{
	if (!v)
		return;
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
