// SPDX-License-Identifier: MIT
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

LEAK_TEST(options, on_hangup_flag_over_variable)
{
	struct options o;
	char err[512];
	const char *e[] = { "SLOTRUN_ON_HANGUP=ignore", NULL };
	const char *flag[] = { "slotrun", "--on-hangup", "stop", "x", NULL };
	const char *none[] = { "slotrun", "x", NULL };

	fake_env = NULL;
	cr_assert_eq(parse(none, &o, err), OPT_RUN, "%s", err);
	cr_assert_eq(o.on_hangup, SESSION_AUTO);
	fake_env = e;
	cr_assert_eq(parse(none, &o, err), OPT_RUN, "%s", err);
	cr_assert_eq(o.on_hangup, SESSION_IGNORE);
	cr_assert_eq(parse(flag, &o, err), OPT_RUN, "%s", err);
	cr_assert_eq(o.on_hangup, SESSION_STOP);
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
		{ { "slotrun", "--on-hangup", "yes", "x", NULL }, NULL, "--on-hangup 'yes': expected auto" },
		{ { "slotrun", "x", NULL }, "SLOTRUN_ON_HANGUP=off", "SLOTRUN_ON_HANGUP 'off'" },
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

LEAK_TEST(options, job_plane_options_with_their_variables_and_defaults)
{
	struct options o;
	char err[512];
	const char *none[] = { NULL };
	const char *e[] = { "SLOTRUN_CONTROL_PORT=4000", "SLOTRUN_JOIN_TIMEOUT=7", "SLOTRUN_HEARTBEAT_TIMEOUT=2.5",
			    "SLOTRUN_SECRET_FILE=/env/secret", NULL };
	const char *plain[] = { "slotrun", "cmd", NULL };
	const char *flags[] = { "slotrun", "--control-port", "4001", "--join-timeout", "8",
				"--heartbeat-timeout", "3", "--secret-file", "/flag/secret", "cmd", NULL };

	fake_env = none;
	cr_assert_eq(parse(plain, &o, err), OPT_RUN, "%s", err);
	cr_assert_eq(o.control_port, 0, "0: the master port + 1, decided with ClusterInfo");
	cr_assert_float_eq(o.join_timeout, 300.0, 1e-9);
	cr_assert_float_eq(o.hb_timeout, 5.0, 1e-9);
	cr_assert_null(o.secret_file);
	fake_env = e;
	cr_assert_eq(parse(plain, &o, err), OPT_RUN, "%s", err);
	cr_assert_eq(o.control_port, 4000);
	cr_assert_float_eq(o.join_timeout, 7.0, 1e-9);
	cr_assert_float_eq(o.hb_timeout, 2.5, 1e-9);
	cr_assert_str_eq(o.secret_file, "/env/secret");
	cr_assert_eq(parse(flags, &o, err), OPT_RUN, "%s", err);
	cr_assert_eq(o.control_port, 4001, "the flag wins");
	cr_assert_float_eq(o.join_timeout, 8.0, 1e-9);
	cr_assert_float_eq(o.hb_timeout, 3.0, 1e-9);
	cr_assert_str_eq(o.secret_file, "/flag/secret");
}

LEAK_TEST(options, bad_job_plane_values_name_the_source)
{
	struct options o;
	char err[512];
	const char *none[] = { NULL };
	const char *bad_env[] = { "SLOTRUN_HEARTBEAT_TIMEOUT=0", NULL };
	const char *port[] = { "slotrun", "--control-port", "65536", "cmd", NULL };
	const char *join[] = { "slotrun", "--join-timeout", "soon", "cmd", NULL };
	const char *plain[] = { "slotrun", "cmd", NULL };

	fake_env = none;
	cr_assert_eq(parse(port, &o, err), -EINVAL);
	cr_assert_str_eq(err, "--control-port '65536': expected a port number from 1 to 65535");
	cr_assert_eq(parse(join, &o, err), -EINVAL);
	cr_assert_str_eq(err, "--join-timeout 'soon': expected seconds, a number from 0.1 to 86400");
	fake_env = bad_env;
	cr_assert_eq(parse(plain, &o, err), -EINVAL);
	cr_assert_str_eq(err, "SLOTRUN_HEARTBEAT_TIMEOUT '0': expected seconds, a number from 0.1 to 600");
}

LEAK_TEST(options, torchrun_spellings_fill_cluster_info)
{
	struct options o;
	char err[512];
	const char *none[] = { NULL };
	const char *dashes[] = { "slotrun", "--nproc-per-node", "4", "--nnodes", "2", "--node-rank", "1",
				 "--master-addr", "10.0.0.1", "--master-port=29555", "train.py", NULL };
	const char *underscores[] = { "slotrun", "--nproc_per_node=gpu", "--node_rank", "1",
				      "--master_addr", "h0", "--master_port", "29556", "--", "x", NULL };
	const char *mixed[] = { "slotrun", "--nproc-per-node", "2", "--slots", "3", "x", NULL };

	fake_env = none;
	cr_assert_eq(parse(dashes, &o, err), OPT_RUN, "%s", err);
	cr_assert_str_eq(o.ci.slots, "4");
	cr_assert_str_eq(o.ci.slots_flag, "--nproc-per-node");
	cr_assert_str_eq(o.ci.node_rank, "1");
	cr_assert_null(o.ci.node_rank_flag, "the canonical spelling");
	cr_assert_str_eq(o.ci.master_addr, "10.0.0.1");
	cr_assert_null(o.ci.master_addr_flag);
	cr_assert_str_eq(o.ci.master_port, "29555");
	cr_assert_null(o.ci.master_port_flag);
	cr_assert_eq(parse(underscores, &o, err), OPT_RUN, "%s", err);
	cr_assert_str_eq(o.ci.slots, "gpu");
	cr_assert_str_eq(o.ci.slots_flag, "--nproc_per_node");
	cr_assert_str_eq(o.ci.node_rank_flag, "--node_rank");
	cr_assert_str_eq(o.ci.master_addr, "h0");
	cr_assert_str_eq(o.ci.master_addr_flag, "--master_addr");
	cr_assert_str_eq(o.ci.master_port, "29556");
	cr_assert_str_eq(o.ci.master_port_flag, "--master_port");
	cr_assert_str_eq(o.argv[0], "x");
	/* the last of the two spellings wins, named as it was written */
	cr_assert_eq(parse(mixed, &o, err), OPT_RUN, "%s", err);
	cr_assert_str_eq(o.ci.slots, "3");
	cr_assert_null(o.ci.slots_flag);
}

LEAK_TEST(options, a_python_script_runs_under_python3)
{
	struct options o;
	char err[512];
	const char *none[] = { NULL };
	const char *no_py[] = { "SLOTRUN_NO_PYTHON=1", NULL };
	const char *script[] = { "slotrun", "--slots", "2", "train.py", "--lr", "1", NULL };
	const char *flag[] = { "slotrun", "--no-python", "./tool.py", NULL };
	const char *cmd[] = { "slotrun", "python3", "train.py", NULL };
	const char *named_py[] = { "slotrun", ".py", NULL };

	fake_env = none;
	cr_assert_eq(parse(script, &o, err), OPT_RUN, "%s", err);
	cr_assert_str_eq(o.interpreter, OPT_PYTHON);
	cr_assert_str_eq(o.argv[0], "train.py");
	cr_assert_eq(parse(flag, &o, err), OPT_RUN, "%s", err);
	cr_assert_null(o.interpreter, "--no-python");
	cr_assert(o.no_python);
	cr_assert_eq(parse(cmd, &o, err), OPT_RUN, "%s", err);
	cr_assert_null(o.interpreter, "only the COMMAND's own name counts");
	cr_assert_eq(parse(named_py, &o, err), OPT_RUN, "%s", err);
	cr_assert_null(o.interpreter, "a name that is only the suffix");
	fake_env = no_py;
	cr_assert_eq(parse(script, &o, err), OPT_RUN, "%s", err);
	cr_assert_null(o.interpreter, "SLOTRUN_NO_PYTHON=1");
}

LEAK_TEST(options, metrics_and_timeline_flags_beat_their_variables)
{
	struct options o;
	char err[512];
	const char *e[] = { "SLOTRUN_METRICS_PORT=9000", "SLOTRUN_METRICS_FILE=/env.prom", "SLOTRUN_TIMELINE=/env.json",
			    NULL };
	const char *flags[] = { "slotrun", "--metrics-port", "127.0.0.1:9401", "--metrics-file", "/m.prom",
				"--timeline", "/t.json", "cmd", NULL };
	const char *none[] = { "slotrun", "cmd", NULL };

	fake_env = e;
	cr_assert_eq(parse(none, &o, err), OPT_RUN, "%s", err);
	cr_assert_eq(o.metrics_port, 9000);
	cr_assert_null(o.metrics_addr, "every address");
	cr_assert_str_eq(o.metrics_file, "/env.prom");
	cr_assert_str_eq(o.timeline, "/env.json");
	opt_free(&o);
	cr_assert_eq(parse(flags, &o, err), OPT_RUN, "%s", err);
	cr_assert_eq(o.metrics_port, 9401);
	cr_assert_str_eq(o.metrics_addr, "127.0.0.1");
	cr_assert_str_eq(o.metrics_file, "/m.prom");
	cr_assert_str_eq(o.timeline, "/t.json");
	opt_free(&o);
	fake_env = NULL;
	cr_assert_eq(parse(none, &o, err), OPT_RUN);
	cr_assert_eq(o.metrics_port, 0, "off by default");
	cr_assert_null(o.metrics_file);
	cr_assert_null(o.timeline);
}

LEAK_TEST(options, a_bad_metrics_port_or_empty_path_is_one_line)
{
	struct options o;
	char err[512];
	const char *port[] = { "slotrun", "--metrics-port", "99999", "cmd", NULL };
	const char *file[] = { "slotrun", "--timeline", "", "cmd", NULL };
	const char *e[] = { "SLOTRUN_METRICS_PORT=x", NULL };
	const char *none[] = { "slotrun", "cmd", NULL };

	fake_env = NULL;
	cr_assert_eq(parse(port, &o, err), -EINVAL);
	cr_assert_str_eq(err, "--metrics-port '99999': expected a port from 0 to 65535, or ADDRESS:PORT "
		    "(e.g. 9400, 127.0.0.1:9400, [::1]:9400)");
	cr_assert_eq(parse(file, &o, err), -EINVAL);
	cr_assert_str_eq(err, "--timeline: expected a path, got an empty string");
	fake_env = e;
	cr_assert_eq(parse(none, &o, err), -EINVAL);
	cr_assert(strstr(err, "SLOTRUN_METRICS_PORT 'x'"), "%s", err);
	fake_env = NULL;
}
