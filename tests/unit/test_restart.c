// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "leak_check.h"
#include "restart.h"

static struct plane_cause rank_cause(int code)
{
	return (struct plane_cause){ .kind = PLANE_CAUSE_RANK, .rank = 3, .code = code, .when_ms = 1000 };
}

LEAK_TEST(restart, none_by_default)
{
	struct restart_policy p;
	struct plane_cause c = rank_cause(1);

	restart_init(&p);
	cr_assert(!restart_allowed(&p, &c, 0));
	cr_assert_float_eq(p.delay, 1.0, 1e-9);
}

LEAK_TEST(restart, any_failure_up_to_the_limit)
{
	struct restart_policy p;
	struct plane_cause c = rank_cause(1);

	restart_init(&p);
	p.max_restarts = 2;
	cr_assert(restart_allowed(&p, &c, 0));
	cr_assert(restart_allowed(&p, &c, 1));
	cr_assert(!restart_allowed(&p, &c, 2), "the limit");
	c.code = 137;
	cr_assert(restart_allowed(&p, &c, 0), "a crash");
}

LEAK_TEST(restart, what_never_restarts)
{
	struct restart_policy p;
	struct plane_cause c;

	restart_init(&p);
	p.max_restarts = 5;
	c = rank_cause(127);
	cr_assert(!restart_allowed(&p, &c, 0), "command not found");
	c = rank_cause(126);
	cr_assert(!restart_allowed(&p, &c, 0), "not executable");
	c = rank_cause(1);
	c.when_ms = 0;
	cr_assert(!restart_allowed(&p, &c, 0), "a rank that never started");
	c = (struct plane_cause){ .kind = PLANE_CAUSE_SIGNAL, .code = 15 };
	cr_assert(!restart_allowed(&p, &c, 0), "a stop by signal");
	c = (struct plane_cause){ .kind = PLANE_CAUSE_LOST };
	cr_assert(!restart_allowed(&p, &c, 0), "a lost node");
	c = (struct plane_cause){ .kind = PLANE_CAUSE_NONE };
	cr_assert(!restart_allowed(&p, &c, 0), "success");
}

LEAK_TEST(restart, restart_on_narrows)
{
	struct restart_policy p;
	struct plane_cause c;
	char err[256];

	restart_init(&p);
	p.max_restarts = 5;
	cr_assert_eq(restart_parse_on(&p, "--restart-on", "signal,3,10-12", err, sizeof(err)), 0, "%s", err);
	c = rank_cause(139);
	cr_assert(restart_allowed(&p, &c, 0), "SIGSEGV");
	c = rank_cause(3);
	cr_assert(restart_allowed(&p, &c, 0));
	c = rank_cause(11);
	cr_assert(restart_allowed(&p, &c, 0));
	c = rank_cause(1);
	cr_assert(!restart_allowed(&p, &c, 0));
	c = rank_cause(13);
	cr_assert(!restart_allowed(&p, &c, 0));
	cr_assert_eq(restart_parse_on(&p, "--restart-on", "1", err, sizeof(err)), 0);
	c = rank_cause(139);
	cr_assert(!restart_allowed(&p, &c, 0), "signals only when asked");
	cr_assert_eq(restart_parse_on(&p, "--restart-on", "any", err, sizeof(err)), 0);
	cr_assert(restart_allowed(&p, &c, 0));
}

LEAK_TEST(restart, bad_specs_name_the_source)
{
	struct restart_policy p;
	char err[256];
	const char *bad[] = { "", "0", "256", "5-2", "sig", "1,x", "3-", "-3", "any,1" };

	restart_init(&p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(restart_parse_on(&p, "SLOTRUN_RESTART_ON", bad[i], err, sizeof(err)), -EINVAL,
			     "'%s'", bad[i]);
		cr_assert(strstr(err, "SLOTRUN_RESTART_ON '"), "%s", err);
	}
}

LEAK_TEST(restart, the_delay_doubles_to_a_cap)
{
	struct restart_policy p;

	restart_init(&p);
	cr_assert_float_eq(restart_delay(&p, 0), 1.0, 1e-9);
	cr_assert_float_eq(restart_delay(&p, 1), 2.0, 1e-9);
	cr_assert_float_eq(restart_delay(&p, 4), 16.0, 1e-9);
	cr_assert_float_eq(restart_delay(&p, 5), RESTART_DELAY_CAP, 1e-9);
	cr_assert_float_eq(restart_delay(&p, 500), RESTART_DELAY_CAP, 1e-9);
	p.delay = 0;
	cr_assert_float_eq(restart_delay(&p, 3), 0.0, 1e-9, "no delay stays none");
	p.delay = 100;
	cr_assert_float_eq(restart_delay(&p, 3), 100.0, 1e-9, "a long first delay is its own cap");
}
