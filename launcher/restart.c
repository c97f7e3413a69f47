// SPDX-License-Identifier: MIT
#include "restart.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "status.h"

void restart_init(struct restart_policy *p)
{
	*p = (struct restart_policy){ .delay = RESTART_DEFAULT_DELAY, .any = true };
}

static void set_code(struct restart_policy *p, long code)
{
	p->codes[code / 8] |= (unsigned char)(1u << (code % 8));
}

static bool has_code(const struct restart_policy *p, int code)
{
	return code >= 0 && code <= 255 && (p->codes[code / 8] & (1u << (code % 8)));
}

int restart_parse_on(struct restart_policy *p, const char *what, const char *spec, char *err,
		     size_t errlen)
{
	char *copy = strdup(spec), *save = NULL, *tok;
	int r = 0;

	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->any = p->signals = false;
	memset(p->codes, 0, sizeof(p->codes));
	if (!strcmp(spec, "any")) {
		p->any = true;
		goto out;
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		long lo, hi;

		if (!strcmp(tok, "signal")) {
			p->signals = true;
			continue;
		}
		if (dash)
			*dash = '\0';
		if (io_parse_long(tok, 1, 255, &lo) < 0 || (dash && io_parse_long(dash + 1, 1, 255, &hi) < 0) ||
		    (dash && hi < lo)) {
			r = -EINVAL;
			break;
		}
		for (long c = lo; c <= (dash ? hi : lo); c++)
			set_code(p, c);
	}
	if (r == 0 && !p->signals) {
		bool any_code = false;

		for (size_t i = 0; i < sizeof(p->codes); i++)
			any_code |= p->codes[i] != 0;
		if (!any_code)
			r = -EINVAL;
	}
	if (r < 0)
		snprintf(err, errlen, "%s '%s': expected any, or a comma list of signal and exit codes "
			 "or ranges from 1 to 255 (e.g. signal,1,3-5)", what, spec);
out:
	free(copy);
	return r;
}

bool restart_allowed(const struct restart_policy *p, const struct plane_cause *cause, int done)
{
	int code = cause->code;

	if (done >= p->max_restarts || cause->kind != PLANE_CAUSE_RANK)
		return false;
	/* never started, or cannot be: trying again fails again */
	if (cause->when_ms == 0 || code == 126 || code == 127 || code == 0)
		return false;
	if (p->any)
		return true;
	return (p->signals && status_code_signal(code)) || has_code(p, code);
}

double restart_delay(const struct restart_policy *p, int done)
{
	double cap = p->delay > RESTART_DELAY_CAP ? p->delay : RESTART_DELAY_CAP, d = p->delay;

	for (int i = 0; i < done && d < cap; i++)
		d *= 2;
	return d < cap ? d : cap;
}
