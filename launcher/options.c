// SPDX-License-Identifier: MIT
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "metrics_http.h"
#include "plane_tree.h"

const char opt_usage[] =
"Usage: slotrun [OPTIONS] [--] COMMAND [ARGS...]\n"
"\n"
"Starts one worker per slot on this node, each as `wrap_rank RANK -- COMMAND`\n"
"with the distributed-training environment (RANK, WORLD_SIZE, LOCAL_RANK,\n"
"MASTER_ADDR, ...), pinned to its GPU's cores; stops every worker on the first\n"
"failure and exits with its status.\n"
"\n"
"Where this node stands (flags override Determined, Slurm, torchrun's PET_*,\n"
"JOB_COMPLETION_INDEX, then SLOTRUN_*; see slotrun(1)):\n"
"  --slots N|N,N,...    workers on this node (or per node); default: visible GPUs, else 1\n"
"                                                              [SLOTRUN_SLOTS]\n"
"  --nnodes N|MIN:MAX   nodes in the job; MIN:MAX: elastic     [SLOTRUN_NNODES]\n"
"  --node-rank R        this node's index, 0 = chief           [SLOTRUN_NODE_RANK]\n"
"  --addrs A,B,...      node addresses, chief first; or a hostlist such as\n"
"                       node[01-04]                            [SLOTRUN_ADDRS]\n"
"  --master-addr A      the chief's address, when the others are not known\n"
"                                                              [SLOTRUN_MASTER_ADDR]\n"
"  --master-port P      rendezvous port on the chief (29400)   [SLOTRUN_MASTER_PORT]\n"
"  --iface NAME         network interface for NCCL/Gloo        [SLOTRUN_IFACE]\n"
"                       (default: the one that routes to the chief, multi-node only)\n"
"Several nodes (the job plane: nodes join the chief's slotrun before any worker\n"
"starts; a failure, stop or signal on any node reaches every node):\n"
"  --control-port P     the chief's control port (MASTER_PORT+1) [SLOTRUN_CONTROL_PORT]\n"
"  --join-timeout S     seconds for every node to join (300)  [SLOTRUN_JOIN_TIMEOUT]\n"
"  --heartbeat-timeout S  a node silent this long is lost (5; heartbeats every S/5)\n"
"                                                              [SLOTRUN_HEARTBEAT_TIMEOUT]\n"
"  --secret-file PATH   the job secret is this file's first line [SLOTRUN_SECRET_FILE]\n"
"                       (else SLOTRUN_JOB_SECRET; else derived, and so not secret)\n"
"  --fanout F           past F nodes, every F-th node relays for the next F-1 (a tree;\n"
"                       needs every node's address); 0: all join the chief (64) [SLOTRUN_FANOUT]\n"
"Elastic jobs (--nnodes MIN:MAX: rounds re-formed on the nodes there are):\n"
"  --settle-time S      the first round starts with MIN+ nodes once none came for S (10)\n"
"                                                              [SLOTRUN_SETTLE_TIME]\n"
"  --admit now|next-round  a node that arrives mid-round re-forms the job at once (now),\n"
"                       or waits for the next round              [SLOTRUN_ADMIT]\n"
"Restarts (on every node at once; not after a stop by signal, 126/127; a lost node\n"
"only in an elastic job):\n"
"  --max-restarts N     start a failed job again up to N times (0) [SLOTRUN_MAX_RESTARTS]\n"
"  --restart-delay S    wait S seconds first, doubling up to 30 (1) [SLOTRUN_RESTART_DELAY]\n"
"  --restart-on LIST    any (default), or signal and exit codes, e.g. signal,1,3-5\n"
"                                                              [SLOTRUN_RESTART_ON]\n"
"Running:\n"
"  --grace SECONDS      from SIGTERM to SIGKILL when stopping (30)   [SLOTRUN_GRACE]\n"
"  --hang-timeout S     a rank that neither writes nor exits for S seconds\n"
"                       fails the job with status 124 (0: off)  [SLOTRUN_HANG_TIMEOUT]\n"
"  --on-hangup auto|stop|ignore\n"
"                       stop the job (as SIGHUP, 129) when the session that started\n"
"                       slotrun ends (auto: an ssh session, not under nohup)\n"
"                                                              [SLOTRUN_ON_HANGUP]\n"
"  --bind auto|none|core|numa|gpu\n"
"                       pinning (auto: gpu on GPU slots, core on CPU slots) [SLOTRUN_BIND]\n"
"  --report-bindings    one line per rank on stderr: GPU, cpus, NUMA node\n"
"                                                              [SLOTRUN_REPORT_BINDINGS=1]\n"
"  --no-wrap            no [rank=N] prefix: COMMAND writes into slotrun's pipes itself\n"
"                       (under wrap_rank --no-prefix, for containment) [SLOTRUN_NO_WRAP=1]\n"
"  --no-python          run a COMMAND ending in .py as it is, not under python3\n"
"                                                              [SLOTRUN_NO_PYTHON=1]\n"
"  --log-dir DIR        also write DIR/rank-N.stdout and DIR/rank-N.stderr [SLOTRUN_LOG_DIR]\n"
"  --ranks-filter LIST  console shows only these ranks, e.g. 0,2-3; files get all\n"
"                                                              [SLOTRUN_RANKS_FILTER]\n"
"  --error-file PATH    on failure, write the summary as JSON  [SLOTRUN_ERROR_FILE]\n"
"Seeing inside (slotrun status [--json] [--watch[=S]] [--stacks] [JOB] shows the job):\n"
"  --metrics-port [ADDR:]PORT  serve OpenMetrics at http://ADDR:PORT/metrics\n"
"                       (every address by default; 0: off) [SLOTRUN_METRICS_PORT]\n"
"  --metrics-file PATH  rewrite PATH with the metrics every second, for\n"
"                       node_exporter's textfile collector [SLOTRUN_METRICS_FILE]\n"
"  --timeline PATH      write the job's events as a Chrome/Perfetto trace\n"
"                                                              [SLOTRUN_TIMELINE]\n"
"  --dry-run            start nothing; print the plan, one JSON object per slot\n"
"                                                              [SLOTRUN_DRY_RUN=1]\n"
"  -h, --help           this help\n"
"  --version            slotrun's version\n"
"torchrun's spellings work too: --nproc-per-node (= --slots; auto, gpu or N),\n"
"--nproc_per_node, --node_rank, --master_addr, --master_port.\n"
"\n"
"Exit status: 0 when every worker exited 0; else the first failure's exit code\n"
"(128+N for death by signal N); 127/126 when COMMAND cannot be found/executed;\n"
"128+N when slotrun was stopped by signal N; 2 for usage and ClusterInfo errors\n"
"and for nodes that do not join or do not agree; 1 when a node was lost.  On\n"
"several nodes every node exits with the job's status.\n"
"SIGINT/TERM/HUP/QUIT/USR1/USR2 are forwarded to every worker; a second SIGINT\n"
"kills at once.\n";

enum {
	O_SLOTS = 256, O_NNODES, O_NODE_RANK, O_ADDRS, O_MASTER_PORT, O_IFACE, O_GRACE,
	O_NO_WRAP, O_LOG_DIR, O_RANKS_FILTER, O_DRY_RUN, O_ERROR_FILE, O_BIND,
	O_REPORT_BINDINGS, O_VERSION, O_CONTROL_PORT, O_JOIN_TIMEOUT, O_HB_TIMEOUT, O_SECRET_FILE,
	O_MAX_RESTARTS, O_RESTART_DELAY, O_RESTART_ON, O_HANG_TIMEOUT,
	O_MASTER_ADDR, O_NO_PYTHON, O_ON_HANGUP, O_SETTLE_TIME, O_ADMIT, O_FANOUT, O_METRICS_PORT, O_METRICS_FILE,
	O_TIMELINE,
	/* torchrun's spellings, told apart for messages */
	O_NPROC_DASH, O_NPROC_UNDERSCORE, O_NODE_RANK_UNDERSCORE, O_MASTER_ADDR_UNDERSCORE,
	O_MASTER_PORT_UNDERSCORE,
};

static const struct option longopts[] = {
	{ "slots", required_argument, NULL, O_SLOTS },
	{ "nnodes", required_argument, NULL, O_NNODES },
	{ "node-rank", required_argument, NULL, O_NODE_RANK },
	{ "addrs", required_argument, NULL, O_ADDRS },
	{ "master-port", required_argument, NULL, O_MASTER_PORT },
	{ "master-addr", required_argument, NULL, O_MASTER_ADDR },
	{ "nproc-per-node", required_argument, NULL, O_NPROC_DASH },
	{ "nproc_per_node", required_argument, NULL, O_NPROC_UNDERSCORE },
	{ "node_rank", required_argument, NULL, O_NODE_RANK_UNDERSCORE },
	{ "master_addr", required_argument, NULL, O_MASTER_ADDR_UNDERSCORE },
	{ "master_port", required_argument, NULL, O_MASTER_PORT_UNDERSCORE },
	{ "no-python", no_argument, NULL, O_NO_PYTHON },
	{ "iface", required_argument, NULL, O_IFACE },
	{ "grace", required_argument, NULL, O_GRACE },
	{ "no-wrap", no_argument, NULL, O_NO_WRAP },
	{ "log-dir", required_argument, NULL, O_LOG_DIR },
	{ "ranks-filter", required_argument, NULL, O_RANKS_FILTER },
	{ "dry-run", no_argument, NULL, O_DRY_RUN },
	{ "error-file", required_argument, NULL, O_ERROR_FILE },
	{ "bind", required_argument, NULL, O_BIND },
	{ "report-bindings", no_argument, NULL, O_REPORT_BINDINGS },
	{ "control-port", required_argument, NULL, O_CONTROL_PORT },
	{ "join-timeout", required_argument, NULL, O_JOIN_TIMEOUT },
	{ "heartbeat-timeout", required_argument, NULL, O_HB_TIMEOUT },
	{ "secret-file", required_argument, NULL, O_SECRET_FILE },
	{ "max-restarts", required_argument, NULL, O_MAX_RESTARTS },
	{ "restart-delay", required_argument, NULL, O_RESTART_DELAY },
	{ "restart-on", required_argument, NULL, O_RESTART_ON },
	{ "hang-timeout", required_argument, NULL, O_HANG_TIMEOUT },
	{ "on-hangup", required_argument, NULL, O_ON_HANGUP },
	{ "settle-time", required_argument, NULL, O_SETTLE_TIME },
	{ "admit", required_argument, NULL, O_ADMIT },
	{ "fanout", required_argument, NULL, O_FANOUT },
	{ "metrics-port", required_argument, NULL, O_METRICS_PORT },
	{ "metrics-file", required_argument, NULL, O_METRICS_FILE },
	{ "timeline", required_argument, NULL, O_TIMELINE },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, O_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* A ClusterInfo flag and how it was spelled (NULL: the canonical way). */
static void set_as(const char **value, const char **spelling, const char *as)
{
	*value = optarg;
	*spelling = as;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n > t && strcmp(s + n - t, tail) == 0;
}

static int parse_bool(const char *name, const char *v, bool *out, char *err, size_t errlen)
{
	if (!v || !*v || !strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no")) {
		*out = false;
		return 0;
	}
	if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes")) {
		*out = true;
		return 0;
	}
	snprintf(err, errlen, "%s='%s': expected 1 or 0", name, v);
	return -EINVAL;
}

static int parse_seconds(const char *what, const char *v, double lo, double hi, double *out,
			 char *err, size_t errlen)
{
	char *end;
	double g;

	errno = 0;
	g = strtod(v, &end);
	if (!*v || *end || errno || !isfinite(g) || g < lo || g > hi) {
		snprintf(err, errlen, "%s '%s': expected seconds, a number from %g to %g", what, v, lo, hi);
		return -EINVAL;
	}
	*out = g;
	return 0;
}

static const char *nonempty(const struct ci_env *env, const char *name)
{
	const char *v = env->getenv(env->ctx, name);
	return v && *v ? v : NULL;
}

/* The flag's value, else its variable's; what names the one used. */
static const char *flag_or_env(const char *flag, const char *flagname, const struct ci_env *env,
			       const char *var, const char **what)
{
	*what = flag ? flagname : var;
	return flag ? flag : nonempty(env, var);
}


/* Values given as text, flag or variable, read after all the flags. */
struct raw {
	const char *grace, *bind, *join, *hb, *port, *restarts, *delay, *restart_on, *hang, *hangup, *metrics;
	const char *settle, *admit, *fanout;
};

/* The booleans and paths that come from variables; flags override them. */
static int from_env(const struct ci_env *env, struct options *o, char *err, size_t errlen)
{
	const struct { const char *var; bool *out; } bools[] = {
		{ "SLOTRUN_NO_WRAP", &o->no_wrap },
		{ "SLOTRUN_DRY_RUN", &o->dry_run },
		{ "SLOTRUN_REPORT_BINDINGS", &o->report_bindings },
		{ "SLOTRUN_NO_PYTHON", &o->no_python },
	};

	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++)
		if (parse_bool(bools[i].var, nonempty(env, bools[i].var), bools[i].out, err, errlen) < 0)
			return -EINVAL;
	o->log_dir = nonempty(env, "SLOTRUN_LOG_DIR");
	o->ranks_filter = nonempty(env, "SLOTRUN_RANKS_FILTER");
	o->error_file = nonempty(env, "SLOTRUN_ERROR_FILE");
	o->secret_file = nonempty(env, "SLOTRUN_SECRET_FILE");
	o->metrics_file = nonempty(env, "SLOTRUN_METRICS_FILE");
	o->timeline = nonempty(env, "SLOTRUN_TIMELINE");
	return 0;
}

/* ClusterInfo's flags, each with how it was spelled.  false: c is not one. */
static bool ci_flag(int c, struct ci_flags *f)
{
	switch (c) {
	case O_SLOTS: set_as(&f->slots, &f->slots_flag, NULL); break;
	case O_NPROC_DASH: set_as(&f->slots, &f->slots_flag, "--nproc-per-node"); break;
	case O_NPROC_UNDERSCORE: set_as(&f->slots, &f->slots_flag, "--nproc_per_node"); break;
	case O_NNODES: f->nnodes = optarg; break;
	case O_NODE_RANK: set_as(&f->node_rank, &f->node_rank_flag, NULL); break;
	case O_NODE_RANK_UNDERSCORE: set_as(&f->node_rank, &f->node_rank_flag, "--node_rank"); break;
	case O_ADDRS: f->addrs = optarg; break;
	case O_MASTER_ADDR: set_as(&f->master_addr, &f->master_addr_flag, NULL); break;
	case O_MASTER_ADDR_UNDERSCORE:
		set_as(&f->master_addr, &f->master_addr_flag, "--master_addr");
		break;
	case O_MASTER_PORT: set_as(&f->master_port, &f->master_port_flag, NULL); break;
	case O_MASTER_PORT_UNDERSCORE:
		set_as(&f->master_port, &f->master_port_flag, "--master_port");
		break;
	case O_IFACE: f->iface = optarg; break;
	default: return false;
	}
	return true;
}

/* slotrun's own flags.  false: c is not one. */
static bool own_flag(int c, struct options *o, struct raw *raw)
{
	switch (c) {
	case O_NO_PYTHON: o->no_python = true; break;
	case O_GRACE: raw->grace = optarg; break;
	case O_NO_WRAP: o->no_wrap = true; break;
	case O_LOG_DIR: o->log_dir = optarg; break;
	case O_RANKS_FILTER: o->ranks_filter = optarg; break;
	case O_DRY_RUN: o->dry_run = true; break;
	case O_ERROR_FILE: o->error_file = optarg; break;
	case O_BIND: raw->bind = optarg; break;
	case O_REPORT_BINDINGS: o->report_bindings = true; break;
	case O_CONTROL_PORT: raw->port = optarg; break;
	case O_JOIN_TIMEOUT: raw->join = optarg; break;
	case O_HB_TIMEOUT: raw->hb = optarg; break;
	case O_SECRET_FILE: o->secret_file = optarg; break;
	case O_MAX_RESTARTS: raw->restarts = optarg; break;
	case O_RESTART_DELAY: raw->delay = optarg; break;
	case O_RESTART_ON: raw->restart_on = optarg; break;
	case O_HANG_TIMEOUT: raw->hang = optarg; break;
	case O_ON_HANGUP: raw->hangup = optarg; break;
	case O_SETTLE_TIME: raw->settle = optarg; break;
	case O_ADMIT: raw->admit = optarg; break;
	case O_FANOUT: raw->fanout = optarg; break;
	case O_METRICS_PORT: raw->metrics = optarg; break;
	case O_METRICS_FILE: o->metrics_file = optarg; break;
	case O_TIMELINE: o->timeline = optarg; break;
	default: return false;
	}
	return true;
}

/* Every flag up to the command.  Returns OPT_RUN, OPT_EXIT_OK after
 * --help or --version, or -EINVAL. */
static int read_flags(int argc, char **argv, struct options *o, struct raw *raw, char *err,
		      size_t errlen)
{
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		if (ci_flag(c, &o->ci) || own_flag(c, o, raw))
			continue;
		switch (c) {
		case 'h':
			fputs(opt_usage, stdout);
			return OPT_EXIT_OK;
		case O_VERSION:
			puts("slotrun " SLOTRUN_VERSION);
			return OPT_EXIT_OK;
		case ':':
			snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
			return -EINVAL;
		default:
			snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]);
			return -EINVAL;
		}
	}
	return OPT_RUN;
}

static int read_seconds(const struct ci_env *env, struct options *o, const struct raw *raw,
			char *err, size_t errlen)
{
	const struct { const char *flag, *name, *var; double lo, hi; double *out; } secs[] = {
		{ raw->grace, "--grace", "SLOTRUN_GRACE", 0, 86400, &o->grace },
		{ raw->join, "--join-timeout", "SLOTRUN_JOIN_TIMEOUT", 0.1, 86400, &o->join_timeout },
		{ raw->hb, "--heartbeat-timeout", "SLOTRUN_HEARTBEAT_TIMEOUT", 0.1, 600, &o->hb_timeout },
		{ raw->delay, "--restart-delay", "SLOTRUN_RESTART_DELAY", 0, 3600, &o->restart.delay },
		{ raw->hang, "--hang-timeout", "SLOTRUN_HANG_TIMEOUT", 0, 604800, &o->hang_timeout },
		{ raw->settle, "--settle-time", "SLOTRUN_SETTLE_TIME", 0, 86400, &o->settle },
	};
	const char *what, *v;

	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++)
		if ((v = flag_or_env(secs[i].flag, secs[i].name, env, secs[i].var, &what)) &&
		    parse_seconds(what, v, secs[i].lo, secs[i].hi, secs[i].out, err, errlen) < 0)
			return -EINVAL;
	return 0;
}

/* The counts, the port, the policy, the binding and the hangup's effect,
 * flag over variable. */
static int read_values(const struct ci_env *env, struct options *o, const struct raw *raw,
		       char *err, size_t errlen)
{
	const char *what, *v;
	long n;

	if ((v = flag_or_env(raw->restarts, "--max-restarts", env, "SLOTRUN_MAX_RESTARTS", &what))) {
		if (io_parse_long(v, 0, RESTART_MAX, &n) < 0) {
			snprintf(err, errlen, "%s '%s': expected a count from 0 to %d", what, v, RESTART_MAX);
			return -EINVAL;
		}
		o->restart.max_restarts = (int)n;
	}
	if ((v = flag_or_env(raw->restart_on, "--restart-on", env, "SLOTRUN_RESTART_ON", &what)) &&
	    restart_parse_on(&o->restart, what, v, err, errlen) < 0)
		return -EINVAL;
	if ((v = flag_or_env(raw->port, "--control-port", env, "SLOTRUN_CONTROL_PORT", &what))) {
		if (io_parse_long(v, 1, 65535, &n) < 0) {
			snprintf(err, errlen, "%s '%s': expected a port number from 1 to 65535", what, v);
			return -EINVAL;
		}
		o->control_port = (int)n;
	}
	if ((v = flag_or_env(raw->bind, "--bind", env, "SLOTRUN_BIND", &what)) &&
	    topo_parse_bind(v, &o->bind) < 0) {
		snprintf(err, errlen, "%s '%s': expected auto, none, core, numa or gpu", what, v);
		return -EINVAL;
	}
	if ((v = flag_or_env(raw->hangup, "--on-hangup", env, "SLOTRUN_ON_HANGUP", &what)) &&
	    session_parse_mode(v, &o->on_hangup) < 0) {
		snprintf(err, errlen, "%s '%s': expected auto, stop or ignore", what, v);
		return -EINVAL;
	}
	if ((v = flag_or_env(raw->fanout, "--fanout", env, "SLOTRUN_FANOUT", &what))) {
		if (io_parse_long(v, 0, OPT_MAX_FANOUT, &n) < 0 || n == 1) {
			snprintf(err, errlen, "%s '%s': expected 0 (no relays) or a fan-out from 2 to %d", what, v,
				 OPT_MAX_FANOUT);
			return -EINVAL;
		}
		o->fanout = (int)n;
	}
	if ((v = flag_or_env(raw->admit, "--admit", env, "SLOTRUN_ADMIT", &what))) {
		if (!strcmp(v, "now")) {
			o->admit = PLANE_ADMIT_NOW;
		} else if (!strcmp(v, "next-round")) {
			o->admit = PLANE_ADMIT_NEXT_ROUND;
		} else {
			snprintf(err, errlen, "%s '%s': expected now or next-round", what, v);
			return -EINVAL;
		}
	}
	if ((v = flag_or_env(raw->metrics, "--metrics-port", env, "SLOTRUN_METRICS_PORT", &what)) &&
	    metrics_parse_listen(v, &o->metrics_addr, &o->metrics_port) < 0) {
		snprintf(err, errlen, "%s '%s': expected a port from 0 to 65535, or ADDRESS:PORT "
			 "(e.g. 9400, 127.0.0.1:9400, [::1]:9400)", what, v);
		return -EINVAL;
	}
	return 0;
}

/* A path flag given as an empty string is a mistake, not "none". */
static int check_paths(const struct options *o, char *err, size_t errlen)
{
	const struct { const char *v, *flag, *expected; } paths[] = {
		{ o->secret_file, "--secret-file", "a path" },
		{ o->log_dir, "--log-dir", "a directory" },
		{ o->error_file, "--error-file", "a path" },
		{ o->metrics_file, "--metrics-file", "a path" },
		{ o->timeline, "--timeline", "a path" },
	};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (paths[i].v && !*paths[i].v) {
			snprintf(err, errlen, "%s: expected %s, got an empty string", paths[i].flag,
				 paths[i].expected);
			return -EINVAL;
		}
	return 0;
}

int opt_parse(int argc, char **argv, const struct ci_env *env, struct options *o,
	      char *err, size_t errlen)
{
	struct raw raw = { 0 };
	int r;

	*o = (struct options){ .grace = OPT_DEFAULT_GRACE, .bind = TOPO_BIND_AUTO,
			       .join_timeout = OPT_DEFAULT_JOIN_TIMEOUT, .hb_timeout = OPT_DEFAULT_HB_TIMEOUT,
			       .settle = OPT_DEFAULT_SETTLE, .fanout = PLANE_DEFAULT_FANOUT };
	restart_init(&o->restart);
	if (from_env(env, o, err, errlen) < 0)
		return -EINVAL;
	r = read_flags(argc, argv, o, &raw, err, errlen);
	if (r != OPT_RUN)
		return r;
	if (read_seconds(env, o, &raw, err, errlen) < 0 || read_values(env, o, &raw, err, errlen) < 0 ||
	    check_paths(o, err, errlen) < 0)
		return -EINVAL;
	if (optind >= argc && !o->dry_run) {
		snprintf(err, errlen, "missing COMMAND (e.g. slotrun --slots 2 -- python3 train.py)");
		return -EINVAL;
	}
	o->argv = argv + optind;
	/* as torchrun does: a script is run by the interpreter */
	if (!o->no_python && o->argv[0] && ends_with(o->argv[0], ".py"))
		o->interpreter = OPT_PYTHON;
	return OPT_RUN;
}

void opt_free(struct options *o)
{
	free(o->metrics_addr);
	o->metrics_addr = NULL;
}
