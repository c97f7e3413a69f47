// SPDX-License-Identifier: MIT
/* An environment given as a value: fake_env points at "NAME=VALUE"
 * strings (NULL-terminated); FAKE_ENV reads it through struct ci_env. */
#ifndef SLOTRUN_FAKE_ENV_H
#define SLOTRUN_FAKE_ENV_H

#include <string.h>

#include "cluster_info.h"

static const char *const *fake_env;

static inline const char *fake_getenv(void *ctx, const char *name)
{
	size_t n = strlen(name);

	for (const char *const *e = fake_env; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static const struct ci_env FAKE_ENV = { .getenv = fake_getenv };

#endif
