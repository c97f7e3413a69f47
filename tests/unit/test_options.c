#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "fake_env.h"
#include "leak_check.h"


static int parse(const char *const *argv_in, struct options *o, char *err)
{
	static char *argv[32];
	int argc = 0;

	for (; argv_in[argc]; argc++)
		argv[argc] = (char *)argv_in[argc];
	argv[argc] = NULL;
	return opt_parse(argc, argv, &FAKE_ENV, o, err, 512);
}

LEAK_TEST(options, defaults)
{
	struct options o;
	char err[512];
	const char *argv[] = { "slotrun", "python3", "train.py", "--lr", "1", NULL };

	fake_env = NULL;
	cr_assert_eq(parse(argv, &o, err), OPT_RUN);
	cr_assert_float_eq(o.grace, 30.0, 1e-9);
	cr_assert(!o.no_wrap && !o.dry_run && !o.report_bindings);
	cr_assert_eq(o.bind, TOPO_BIND_AUTO);
	cr_assert_str_eq(o.argv[0], "python3");
	cr_assert_str_eq(o.argv[2], "--lr", "options after COMMAND belong to it");
}

LEAK_TEST(options, flags_fill_cluster_info_and_beat_env)
{
	struct options o;
	char err[512];
	const char *e[] = { "SLOTRUN_GRACE=5", "SLOTRUN_NO_WRAP=1", "SLOTRUN_LOG_DIR=/env", NULL };
	const char *argv[] = { "slotrun", "--slots", "4", "--nnodes=2", "--node-rank", "1",
			       "--addrs", "a,b", "--master-port", "99", "--iface", "eth0", "--grace", "1.5",
			       "--log-dir", "/flag", "--ranks-filter", "0", "--error-file", "/e.json",
			       "--bind", "none", "--report-bindings", "--dry-run", "--", "cmd", NULL };

	fake_env = e;
	cr_assert_eq(parse(argv, &o, err), OPT_RUN, "%s", err);
	cr_assert_str_eq(o.ci.slots, "4");
	cr_assert_str_eq(o.ci.nnodes, "2");
	cr_assert_str_eq(o.ci.node_rank, "1");
	cr_assert_str_eq(o.ci.addrs, "a,b");
	cr_assert_str_eq(o.ci.master_port, "99");
	cr_assert_str_eq(o.ci.iface, "eth0");
	cr_assert_float_eq(o.grace, 1.5, 1e-9);
	cr_assert_str_eq(o.log_dir, "/flag");
	cr_assert(o.no_wrap, "from SLOTRUN_NO_WRAP");
	cr_assert(o.dry_run && o.report_bindings);
	cr_assert_eq(o.bind, TOPO_BIND_NONE);
	cr_assert_str_eq(o.argv[0], "cmd");
}

LEAK_TEST(options, env_fills_what_flags_leave)
{
	struct options o;
	char err[512];
	const char *e[] = { "SLOTRUN_GRACE=2.5", "SLOTRUN_BIND=core", "SLOTRUN_DRY_RUN=true",
			    "SLOTRUN_RANKS_FILTER=1-2", "SLOTRUN_ERROR_FILE=/x", NULL };
	const char *argv[] = { "slotrun", "true", NULL };

	fake_env = e;
	cr_assert_eq(parse(argv, &o, err), OPT_RUN, "%s", err);
	cr_assert_float_eq(o.grace, 2.5, 1e-9);
	cr_assert_eq(o.bind, TOPO_BIND_CORE);
	cr_assert(o.dry_run);
	cr_assert_str_eq(o.ranks_filter, "1-2");
	cr_assert_str_eq(o.error_file, "/x");
}

LEAK_TEST(options, bad_values_name_the_option)
{
	struct { const char *argv[6]; const char *env; const char *want; } cases[] = {
		{ { "slotrun", "--grace", "-1", "x", NULL }, NULL, "--grace '-1'" },
		{ { "slotrun", "--grace", "1e9", "x", NULL }, NULL, "--grace" },
		{ { "slotrun", "--grace", "", "x", NULL }, NULL, "--grace" },
		{ { "slotrun", "x", NULL }, "SLOTRUN_GRACE=nan", "SLOTRUN_GRACE" },
		{ { "slotrun", "--bind", "left", "x", NULL }, NULL, "--bind 'left'" },
		{ { "slotrun", "x", NULL }, "SLOTRUN_BIND=up", "SLOTRUN_BIND 'up'" },
		{ { "slotrun", "x", NULL }, "SLOTRUN_NO_WRAP=maybe", "SLOTRUN_NO_WRAP" },
		{ { "slotrun", "--nope", "x", NULL }, NULL, "unknown option '--nope'" },
		{ { "slotrun", "--slots", NULL }, NULL, "needs a value" },
		{ { "slotrun", NULL }, NULL, "missing COMMAND" },
		{ { "slotrun", "--log-dir", "", "x", NULL }, NULL, "--log-dir" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct options o;
		char err[512] = "";
		const char *e[] = { cases[i].env, NULL };

		fake_env = e;
		cr_assert_eq(parse(cases[i].argv, &o, err), -EINVAL, "case %zu", i);
		cr_assert(strstr(err, cases[i].want), "case %zu: '%s' lacks '%s'", i, err, cases[i].want);
	}
}
