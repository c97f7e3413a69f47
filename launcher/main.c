// SPDX-License-Identifier: MIT
/* slotrun: options -> command -> topology -> ClusterInfo -> interface ->
 * slot plan -> dry run, or spawn and supervise. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "cluster_info.h"
#include "iface.h"
#include "io.h"
#include "options.h"
#include "output.h"
#include "plan.h"
#include "plane_tree.h"
#include "runner.h"
#include "sock.h"
#include "spawn.h"
#include "status_client.h"
#include "topology.h"

extern char **environ;

static int fail(int code, const char *msg)
{
	fprintf(stderr, "slotrun: %s\n", msg);
	return code;
}

/* wrap_rank beside slotrun, then in the build tree's layout, then PATH;
 * SLOTRUN_WRAP_RANK names it outright. */
static int find_wrap_rank(char *buf, size_t len)
{
	const char *env = getenv("SLOTRUN_WRAP_RANK");
	char self[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env)
		return spawn_resolve(env, getenv("PATH"), buf, len);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(buf, len, "%s/wrap_rank", self);
			if (access(buf, X_OK) == 0)
				return 0;
			snprintf(buf, len, "%s/../wrap_rank/wrap_rank", self);
			if (access(buf, X_OK) == 0)
				return 0;
		}
	}
	return spawn_resolve("wrap_rank", getenv("PATH"), buf, len);
}

static int mkdir_p(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return access(path, W_OK) < 0 ? -errno : 0;
}

/* With fd 0, 1 or 2 closed, the next open would take its number, and a
 * worker's stderr could land in libevent's signal pipe: hold them with
 * /dev/null. */
static void hold_std_fds(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0 && fd <= 2) {
		int keep = fcntl(fd, F_DUPFD, 3);
		/* fds 0..2 must not be CLOEXEC: dup over themselves without it.
		 * Should that fail, the CLOEXEC one still holds the number,
		 * which is what matters here; workers get their own stdio. */
		if (keep >= 0) {
			(void)dup2(keep, fd);
			close(keep);
		}
	}
	if (fd > 2)
		close(fd);
}

/* Each worker holds up to five fds in slotrun (its stdout's and stderr's
 * pipes, the pipe its wrap_rank tells its command's pid on, its two log
 * files); slotrun itself about 24 (std streams, libevent, /dev/null,
 * topology, and the few a worker's start holds for a moment: workers.c
 * reads each exec report before the next start), 20 for seeing inside
 * (the status socket and its STATUS_CONNS clients, the metrics listener).
 * The chief (any node of an elastic job may become it) holds one per other
 * node and up to plane_max_pending handshakes beside them; another node
 * one, its chief's, and a relay of the tree (plane_tree.h) as many again as
 * a chief of its group.  Raise the soft limit to the hard one when short
 * (workers get the original back), and say clearly when even that is too
 * few. */
/* The fan-out this node relays with (plane_tree.h), or 0. */
static int relay_fanout(const struct cluster_info *ci, int asked)
{
	int f = plane_tree_fanout(asked, ci->nnodes, ci->nnodes_min < ci->nnodes, ci->addrs);

	return plane_tree_relays(f, ci->nnodes, ci->node_rank) ? f : 0;
}

static int fd_budget(int slots, int nnodes, bool chief, int relays, bool logs, struct rlimit *orig, char *err,
		     size_t errlen)
{
	struct rlimit rl;
	rlim_t plane = nnodes <= 1 ? 0 : chief ? (rlim_t)(nnodes - 1 + plane_max_pending(nnodes)) :
			relays ? (rlim_t)(1 + relays - 1 + plane_max_pending(relays)) : 1;
	rlim_t need = (rlim_t)slots * (logs ? 5 : 3) + 44 + plane;
	char nodes[96] = "";

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	*orig = rl;
	if (rl.rlim_cur < need && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		if (nnodes > 1 && chief)
			snprintf(nodes, sizeof(nodes), " and the chief's connections to %d other nodes", nnodes - 1);
		snprintf(err, errlen, "%d slot%s%s need%s about %llu open files, but the limit is %llu "
			 "(raise it with ulimit -n)", slots, slots == 1 ? "" : "s", nodes,
			 slots == 1 && !nodes[0] ? "s" : "", (unsigned long long)need, (unsigned long long)rl.rlim_cur);
		return -EMFILE;
	}
	return 0;
}

/* What the steps of main share; launch_free releases it. */
struct launch {
	struct options o;
	struct topo *topo;           /* NULL: none could be read and --bind none */
	int visible_gpus;            /* GPUs the topology found */
	bool pci_order;              /* ... numbered by PCI bus */
	struct cluster_info ci;
	int64_t resolve_deadline;    /* names that do not resolve yet are asked
	                              * again until then (sock.h's clock) */
	bool waited_chief;           /* the chief's address was waited for */
	const char *list_what;       /* the node list being searched, in messages */
	struct iface_me me;          /* this node's addresses and names */
	bool me_loaded;
	char ifname[64];
	const char *iface;           /* for NCCL and Gloo, or NULL */
	struct plan_secret secret;
	struct plan plan;
	struct plane_cfg plane;      /* several nodes: the job plane */
	char **cmd;                  /* what each worker runs: o.argv, or with the
	                              * interpreter before it (malloc'd then) */
	char exec_path[PATH_MAX];    /* wrap_rank, or the command with --no-wrap */
	char **guarded;              /* --no-wrap: wrap_rank --no-prefix ... COMMAND, or NULL */
	struct rlimit nofile;        /* the fd limit workers get back */
	char err[1024];
};

/* A step returns GO_ON, or the status slotrun exits with. */
#define GO_ON (-1)

static int parse_options(struct launch *l, int argc, char **argv)
{
	int r = opt_parse(argc, argv, &ci_process_env, &l->o, l->err, sizeof(l->err));

	if (r == OPT_EXIT_OK)
		return 0;
	if (r < 0) {
		fprintf(stderr, "slotrun: %s\nTry 'slotrun --help'.\n", l->err);
		return 2;
	}
	return GO_ON;
}

/* Without a topology slotrun can still run unbound, if it was told to. */
static int open_topology(struct launch *l)
{
	if (topo_open(&l->topo, l->err, sizeof(l->err)) < 0) {
		if (l->o.bind != TOPO_BIND_NONE)
			return fail(2, l->err);
		l->topo = NULL;
	}
	if (l->topo)
		l->visible_gpus = topo_gpu_count(l->topo, &l->pci_order);
	return GO_ON;
}

/* A name that does not resolve yet is waited for until the join timeout
 * (a container's name is in its network's DNS only once it runs); a dry
 * run asks once. */
static void start_resolve_clock(struct launch *l)
{
	l->resolve_deadline = sock_deadline_in(l->o.dry_run ? 0 : l->o.join_timeout);
}

static int load_me(struct launch *l)
{
	int r;

	if (l->me_loaded)
		return 0;
	r = iface_me_load(&l->me);
	if (r < 0)
		return r;
	l->me_loaded = true;
	return 0;
}

static void say_waiting_for_entry(void *arg, const char *entry, int gai)
{
	struct launch *l = arg;

	fprintf(stderr, "slotrun: waiting for '%s' to resolve (%s) to find this node in %s: asking again "
		"until the join timeout (%g s)\n", entry, gai_strerror(gai), l->list_what, l->o.join_timeout);
}

/* ci_env.self_rank: this node's place in the list, waiting for names that
 * do not resolve yet until the join timeout. */
static int self_rank(void *ctx, char *const *addrs, int n, const char *what, int *rank, char *err,
		     size_t errlen)
{
	struct launch *l = ctx;
	struct ci_self found;
	int r;

	if ((r = load_me(l)) < 0) {
		snprintf(err, errlen, "cannot find this node in %s: cannot list its addresses: %s", what,
			 strerror(-r));
		return r;
	}
	l->list_what = what;
	r = iface_find_self(&l->me, addrs, n, what, l->resolve_deadline, say_waiting_for_entry, l, &found,
			    err, errlen);
	if (r == -ETIMEDOUT && !l->o.dry_run) {
		char why[512];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "cannot find this node's rank within the join timeout (%g s): %s",
			 l->o.join_timeout, why);
	}
	*rank = found.rank;
	return r;
}

/* The list joined with commas, for a message. */
static void join_addrs(const struct cluster_info *ci, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < ci->nnodes && o + 1 < len; i++) {
		snprintf(buf + o, len - o, "%s%s", i ? "," : "", ci->addrs[i]);
		o += strlen(buf + o);
	}
}

/* A node rank given by hand (--node-rank, SLOTRUN_NODE_RANK) that puts
 * this node at another node's address: its slotrun would listen as a chief
 * nobody reaches, or join a chief on its own host that is not there, and
 * the job would wait out the join timeout.  Said here at once.  Only a
 * certain answer counts, asked once: every entry resolves now, exactly one
 * is this node, and none is a loopback address (which every node has). */
static int check_given_rank(struct launch *l)
{
	const struct cluster_info *ci = &l->ci;
	struct ci_self found;
	char list[256], mine[512], given[64];

	if (l->o.dry_run || ci->nnodes < 2 ||
	    (ci->src_node_rank != CI_SRC_FLAG && ci->src_node_rank != CI_SRC_SLOTRUN_ENV))
		return GO_ON;
	for (int i = 0; i < ci->nnodes; i++)
		if (!ci_addr_known(ci->addrs[i]))
			return GO_ON;
	if (load_me(l) < 0)
		return GO_ON;
	join_addrs(ci, list, sizeof(list));
	if (iface_find_self(&l->me, ci->addrs, ci->nnodes, "the node list", 0, NULL, NULL, &found, l->err,
			    sizeof(l->err)) < 0 || found.loopback || found.rank == ci->node_rank)
		return GO_ON;
	ci_me_describe(&l->me.me, mine, sizeof(mine));
	snprintf(given, sizeof(given), ci->src_node_rank == CI_SRC_FLAG ? "--node-rank %d" :
		 "SLOTRUN_NODE_RANK=%d", ci->node_rank);
	snprintf(l->err, sizeof(l->err), "%s disagrees with the node list '%s': this node (%s) is its "
		 "entry %d '%s', not entry %d '%s': give --node-rank %d, or leave the rank out and slotrun "
		 "finds it", given, list, mine, found.rank, ci->addrs[found.rank], ci->node_rank,
		 ci->addrs[ci->node_rank], found.rank);
	return fail(2, l->err);
}

static int load_cluster_info(struct launch *l)
{
	struct ci_env env = ci_process_env;

	env.self_rank = self_rank;
	env.ctx = l;
	start_resolve_clock(l);
	if (ci_load(&l->o.ci, &env, l->visible_gpus, &l->ci, l->err, sizeof(l->err)) < 0)
		return fail(2, l->err);
	return check_given_rank(l);
}

static void say_waiting_for_chief(void *arg, int gai)
{
	struct launch *l = arg;

	fprintf(stderr, "slotrun: waiting for the chief's address '%s' to resolve (%s): asking again "
		"until the join timeout (%g s)\n", l->ci.addrs[0], gai_strerror(gai), l->o.join_timeout);
	l->waited_chief = true;
}

/* The interface NCCL and Gloo use: the one a source named, which must
 * exist here, else on several nodes the one that routes to the chief. */
static int choose_iface(struct launch *l)
{
	const struct cluster_info *ci = &l->ci;

	if (ci->iface) {
		if (iface_exists(ci->iface) < 0) {
			snprintf(l->err, sizeof(l->err), "%s interface '%s' does not exist on this node",
				 ci_source_name(ci->src_iface), ci->iface);
			return fail(2, l->err);
		}
		l->iface = ci->iface;
	} else if (ci->nnodes > 1) {
		if (iface_for_peer(ci->addrs[0], l->resolve_deadline, say_waiting_for_chief, l, l->ifname,
				   sizeof(l->ifname), l->err, sizeof(l->err)) == 0) {
			l->iface = l->ifname;
		} else if (!l->o.dry_run) { /* a plan needs no route: it shows none */
			size_t o = strlen(l->err);

			if (l->waited_chief)
				snprintf(l->err + o, sizeof(l->err) - o, " (asked until the join timeout, %g s)",
					 l->o.join_timeout);
			return fail(2, l->err);
		}
	}
	return GO_ON;
}

/* Each slot's GPU for placement: ClusterInfo's list (physical ids), else
 * the topology's GPUs by index (shared round-robin when there are more
 * slots than GPUs).  *tslots: a malloc'd array from topo_plan, NULL without
 * a topology. */
static int place_slots(struct launch *l, struct topo_slot **tslots)
{
	const struct cluster_info *ci = &l->ci;
	char **gpus = NULL, (*gpubuf)[16] = NULL;
	int code = GO_ON;

	*tslots = NULL;
	if (!ci->gpus_none && (ci->gpus || l->visible_gpus > 0)) {
		gpus = calloc((size_t)ci->slots + 1, sizeof(char *));
		gpubuf = calloc((size_t)ci->slots, sizeof(*gpubuf));
		if (!gpus || !gpubuf) {
			code = fail(1, "out of memory");
			goto out;
		}
		for (int i = 0; i < ci->slots; i++) {
			if (ci->gpus) {
				gpus[i] = ci->gpus[i % ci->ngpus];
			} else {
				snprintf(gpubuf[i], sizeof(gpubuf[i]), "%d", i % l->visible_gpus);
				gpus[i] = gpubuf[i];
			}
		}
	}
	if (l->topo) {
		*tslots = calloc((size_t)ci->slots, sizeof(**tslots));
		if (!*tslots) {
			code = fail(1, "out of memory");
			goto out;
		}
		if (topo_plan(l->topo, l->o.bind, ci->slots, gpus, *tslots, l->err,
			      sizeof(l->err)) < 0) {
			free(*tslots);
			*tslots = NULL;
			code = fail(2, l->err);
		}
	}
out:
	free(gpus);
	free(gpubuf);
	return code;
}

/* --secret-file: the job secret is its first line, without the newline. */
static int read_secret_file(struct launch *l)
{
	const char *path = l->o.secret_file;
	char *text = io_read_file(path, 64 * 1024);
	size_t n;
	int r;

	if (!text) {
		snprintf(l->err, sizeof(l->err), "--secret-file %s: %s", path,
			 errno == EFBIG ? "larger than 64 KiB" : strerror(errno));
		return fail(2, l->err);
	}
	n = strcspn(text, "\r\n");
	r = plan_secret_given(&l->secret, text, n);
	free(text);
	if (r < 0) {
		snprintf(l->err, sizeof(l->err), "--secret-file %s: the first line is %s", path,
			 r == -E2BIG ? PLAN_SECRET_TOO_LONG : "empty");
		return fail(2, l->err);
	}
	return GO_ON;
}

static int build_plan(struct launch *l)
{
	struct plan_opts po = { .iface = l->iface, .pci_order = l->pci_order };
	struct topo_slot *tslots;
	int code, r;

	if (l->o.secret_file) {
		if ((code = read_secret_file(l)) != GO_ON)
			return code;
	} else if (plan_job_secret(&l->ci, &ci_process_env, &l->secret) < 0) {
		return fail(2, "SLOTRUN_JOB_SECRET is " PLAN_SECRET_TOO_LONG ": give a shorter one");
	}
	code = place_slots(l, &tslots);
	if (code != GO_ON)
		return code;
	po.secret = l->secret.value;
	r = plan_build(&l->ci, tslots, &po, &ci_process_env, &l->plan);
	free(tslots);    /* the plan took the entries */
	return r < 0 ? fail(1, "out of memory") : GO_ON;
}

static void report_bindings(const struct launch *l)
{
	if (!l->o.report_bindings || !l->topo)
		return;
	for (int i = 0; i < l->plan.nslots; i++) {
		char line[512];
		topo_format_binding(&l->plan.slots[i].place, l->plan.slots[i].rank, line, sizeof(line));
		fprintf(stderr, "slotrun: %s\n", line);
	}
}

/* A .py COMMAND runs as `python3 COMMAND...`, as under torchrun. */
static int build_command(struct launch *l)
{
	int n = 0;

	if (!l->o.interpreter) {
		l->cmd = l->o.argv;
		return GO_ON;
	}
	while (l->o.argv[n])
		n++;
	l->cmd = calloc((size_t)n + 2, sizeof(char *));
	if (!l->cmd)
		return fail(1, "out of memory");
	l->cmd[0] = (char *)l->o.interpreter;
	memcpy(l->cmd + 1, l->o.argv, (size_t)n * sizeof(char *));
	return GO_ON;
}

static int dry_run(const struct launch *l)
{
	for (int i = 0; i < l->plan.nslots; i++) {
		char *row = plan_slot_json(&l->plan, i, l->cmd);
		if (row)
			puts(row);
		free(row);
	}
	return 0;
}

/* --ranks-filter is checked only when something runs: a dry run prints
 * every slot anyway. */
static int filter_console(struct launch *l)
{
	bool *by_rank;

	if (!l->o.ranks_filter)
		return GO_ON;
	if (out_parse_ranks(l->o.ranks_filter, l->ci.world_size, &by_rank, l->err,
			    sizeof(l->err)) < 0)
		return fail(2, l->err);
	for (int i = 0; i < l->plan.nslots; i++)
		l->plan.slots[i].shown = by_rank[l->plan.slots[i].rank];
	free(by_rank);
	return GO_ON;
}

static int make_log_dir(struct launch *l)
{
	int r;

	if (l->o.log_dir && (r = mkdir_p(l->o.log_dir)) < 0) {
		snprintf(l->err, sizeof(l->err), "--log-dir %s: cannot create or write it: %s",
			 l->o.log_dir, strerror(-r));
		return fail(2, l->err);
	}
	return GO_ON;
}

/* --no-wrap still runs COMMAND under wrap_rank, with --no-prefix: no
 * prefix and no pipe of its own (COMMAND writes into slotrun's pipes), only
 * its guard, without which what COMMAND starts would outlive a slotrun
 * killed with SIGKILL (docs/supervision.md, "Containment").  Without a wrap_rank to be
 * found COMMAND runs directly, and that is said once. */
static int guard_no_wrap(struct launch *l)
{
	static char *opts[] = { "--no-redirect-stdio", "--no-prefix", "RANK", "--" };
	size_t nopt = sizeof(opts) / sizeof(opts[0]), n = 0;
	char path[PATH_MAX];

	if (find_wrap_rank(path, sizeof(path)) < 0) {
		fprintf(stderr, "slotrun: warning: wrap_rank not found: with --no-wrap only COMMAND itself "
			"dies with slotrun, not what it starts in the background\n");
		return GO_ON;
	}
	while (l->cmd[n])
		n++;
	l->guarded = calloc(n + nopt + 2, sizeof(char *));
	if (!l->guarded)
		return fail(1, "out of memory");
	l->guarded[0] = "wrap_rank";
	memcpy(l->guarded + 1, opts, sizeof(opts));
	memcpy(l->guarded + 1 + nopt, l->cmd, n * sizeof(char *));
	snprintf(l->exec_path, sizeof(l->exec_path), "%s", path);
	return GO_ON;
}

/* Said once here, rather than by every wrap_rank. */
static int find_executables(struct launch *l)
{
	char why[512];
	int r;

	if (l->o.interpreter && access(l->o.argv[0], R_OK) < 0) {
		int e = errno;

		snprintf(l->err, sizeof(l->err), "cannot run '%s' with %s: %s (use --no-python to run "
			 "it as a command)", l->o.argv[0], l->o.interpreter, strerror(e));
		return fail(e == EACCES ? 126 : 127, l->err);
	}
	r = spawn_resolve(l->cmd[0], getenv("PATH"), l->exec_path, sizeof(l->exec_path));
	if (r < 0) {
		snprintf(l->err, sizeof(l->err), "cannot execute '%s': %s", l->cmd[0],
			 r == -EACCES ? "Permission denied" : "command not found");
		return fail(r == -EACCES ? 126 : 127, l->err);
	}
	/* A missing #! interpreter fails every rank's exec with ENOENT, a
	 * program env cannot find every rank with 127. */
	if ((r = spawn_check_script(l->exec_path, getenv("PATH"), why, sizeof(why))) < 0) {
		snprintf(l->err, sizeof(l->err), "cannot execute '%s': %s", l->cmd[0], why);
		return fail(r == -ENOENT ? 127 : 126, l->err);
	}
	if (l->o.no_wrap)
		return guard_no_wrap(l);
	if (find_wrap_rank(l->exec_path, sizeof(l->exec_path)) < 0)
		return fail(127, "cannot find wrap_rank beside slotrun or on PATH "
			    "(set SLOTRUN_WRAP_RANK, or use --no-wrap)");
	return GO_ON;
}

/* Which side this node starts on.  A fixed-size job's node 0 is the chief.
 * In an elastic job a rank given is a preference, 0 the chief's; without
 * one, a node whose address is the chief's (one of its own, or a loopback
 * address: several nodes on one host) may be the chief: the first to
 * listen on the control port is (plane.h). */
static enum plane_role plane_role(struct launch *l)
{
	const struct cluster_info *ci = &l->ci;
	struct ci_self found;
	char err[256];

	if (ci->nnodes_min == ci->nnodes || ci->rank_given)
		return ci->node_rank == 0 ? PLANE_CHIEF : PLANE_MEMBER;
	if (load_me(l) < 0 || iface_find_self(&l->me, ci->addrs, 1, "the chief's address", l->resolve_deadline, NULL,
					      NULL, &found, err, sizeof(err)) < 0)
		return PLANE_MEMBER;
	return PLANE_MAYBE_CHIEF;
}

/* Several nodes: the job plane's settings.  The control port defaults to
 * the master port + 1 (the master port is the workers' rendezvous). */
static int setup_plane(struct launch *l)
{
	const struct cluster_info *ci = &l->ci;
	int port = l->o.control_port ? l->o.control_port : ci->master_port + 1;
	bool elastic = ci->nnodes_min < ci->nnodes;

	if (port > 65535) {
		snprintf(l->err, sizeof(l->err), "the control port would be the master port %d + 1: "
			 "choose one with --control-port", ci->master_port);
		return fail(2, l->err);
	}
	if (l->secret.kind == PLAN_SECRET_DERIVED)
		fprintf(stderr, "slotrun: no SLOTRUN_JOB_SECRET or --secret-file: the job secret is derived "
			"from the job's addresses and ids, and is therefore not secret\n");
	l->plane = (struct plane_cfg){ .nnodes = ci->nnodes, .node_rank = ci->node_rank,
				       .nnodes_min = ci->nnodes_min, .role = plane_role(l),
				       .settle = l->o.settle, .admit = l->o.admit, .slots = ci->slots,
				       .addrs = ci->addrs, .slot_counts = ci->slot_counts,
				       .world_size = ci->world_size, .control_port = port,
				       .join_timeout = l->o.join_timeout, .hb_timeout = l->o.hb_timeout,
				       .secret = l->secret.value,
				       .restart = l->o.restart.max_restarts ? &l->o.restart : NULL,
				       .max_restarts = l->o.restart.max_restarts,
				       .fanout = plane_tree_fanout(l->o.fanout, ci->nnodes, elastic, ci->addrs) };
	if (elastic && !ci->rank_given)
		l->plane.node_rank = -1;
	if (elastic && !l->o.restart.max_restarts)
		fprintf(stderr, "slotrun: note: --nnodes %d:%d with --max-restarts 0: a lost node or a failed "
			"rank ends the job; give --max-restarts N to let it re-form on the nodes left\n",
			ci->nnodes_min, ci->nnodes);
	return GO_ON;
}

static const char *file_type(mode_t type)
{
	switch (type) {
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFIFO: return "a FIFO";
	case S_IFSOCK: return "a socket";
	default: return "something else";
	}
}

/* --error-file (and --timeline, --metrics-file) is written as a new
 * regular file renamed over the path: what would make that fail, or
 * replace something that is not such a file (a device, a FIFO, a folder,
 * a link to one), stops the job here, before anything starts, rather than
 * after it ran.  Nothing at the path is touched. */
static int check_out_file(struct launch *l, const char *flag, const char *path, const char *example)
{
	const char *slash, *link;
	char dir[PATH_MAX];
	struct stat st;
	mode_t found;
	int r;

	if (!path || (r = io_check_replace(path, &found)) == 0)
		return GO_ON;
	slash = strrchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1,
		 slash ? path : ".");
	link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? "a link to " : "";
	if (r == -EISDIR) {
		size_t len = strlen(path);

		while (len && path[len - 1] == '/')
			len--;
		snprintf(l->err, sizeof(l->err), "%s %s: is %sa folder: give a file's path, "
			 "e.g. %.*s/%s", flag, path, link, (int)len, path, example);
	} else if (r == -EEXIST) {
		snprintf(l->err, sizeof(l->err), "%s %s: is %s%s, not a file slotrun may "
			 "replace: give the path of a regular file, or of none yet", flag, path, link,
			 file_type(found));
	} else if (r == -ENOENT) {
		snprintf(l->err, sizeof(l->err), "%s %s: its folder %s does not exist: create "
			 "it, or give a path in an existing folder", flag, path, dir);
	} else if (r == -ENOTDIR) {
		snprintf(l->err, sizeof(l->err), "%s %s: %s is not a folder: give a path in "
			 "an existing folder", flag, path, dir);
	} else {
		snprintf(l->err, sizeof(l->err), "%s %s: cannot create a file in its folder "
			 "%s: %s: give a path in a writable folder", flag, path, dir, strerror(-r));
	}
	return fail(2, l->err);
}

static int run(struct launch *l)
{
	int code = check_out_file(l, "--error-file", l->o.error_file, "slotrun-error.json");

	if (code == GO_ON)
		code = check_out_file(l, "--timeline", l->o.timeline, "slotrun-timeline.json");
	if (code == GO_ON)
		code = check_out_file(l, "--metrics-file", l->o.metrics_file, "slotrun.prom");

	if (code == GO_ON)
		code = filter_console(l);
	if (code == GO_ON)
		code = make_log_dir(l);
	if (code == GO_ON && fd_budget(l->ci.slots, l->ci.nnodes, l->ci.node_rank == 0 || l->ci.nnodes_min < l->ci.nnodes,
				       relay_fanout(&l->ci, l->o.fanout), l->o.log_dir != NULL, &l->nofile, l->err,
				       sizeof(l->err)) < 0)
		code = fail(2, l->err);
	if (code == GO_ON)
		code = find_executables(l);
	if (code == GO_ON && l->ci.nnodes > 1)
		code = setup_plane(l);
	if (code != GO_ON)
		return code;
	return runner_run(&(struct runner_cfg){
		.plan = &l->plan, .topo = l->topo, .exec_path = l->exec_path,
		.wrapped = !l->o.no_wrap, .guarded = l->guarded != NULL,
		.cmd = l->guarded ? l->guarded : l->cmd, .base_env = environ,
		.log_dir = l->o.log_dir, .error_file = l->o.error_file, .grace = l->o.grace,
		.hang_timeout = l->o.hang_timeout, .on_hangup = l->o.on_hangup,
		.nofile = &l->nofile, .plane = l->ci.nnodes > 1 ? &l->plane : NULL,
		.restart = l->o.restart.max_restarts ? &l->o.restart : NULL,
		.secret = l->secret.value, .host = l->ci.addrs[l->ci.node_rank],
		.metrics_addr = l->o.metrics_addr, .metrics_port = l->o.metrics_port,
		.metrics_file = l->o.metrics_file, .timeline = l->o.timeline,
	});
}

static void launch_free(struct launch *l)
{
	if (l->cmd != l->o.argv)
		free(l->cmd);
	free(l->guarded);
	plan_free(&l->plan);
	ci_free(&l->ci);
	opt_free(&l->o);
	if (l->me_loaded)
		iface_me_free(&l->me);
	if (l->topo)
		topo_close(l->topo);
}

int main(int argc, char **argv)
{
	struct launch l = { .nofile = { RLIM_INFINITY, RLIM_INFINITY } };
	int code;

	hold_std_fds();
	/* `slotrun status ...`: a client of a running job, not a job */
	if (argc > 1 && strcmp(argv[1], "status") == 0)
		return status_main(argc - 1, argv + 1);
	code = parse_options(&l, argc, argv);
	if (code == GO_ON)
		code = build_command(&l);
	if (code == GO_ON)
		code = open_topology(&l);
	if (code == GO_ON)
		code = load_cluster_info(&l);
	if (code == GO_ON)
		code = choose_iface(&l);
	if (code == GO_ON)
		code = build_plan(&l);
	if (code == GO_ON) {
		report_bindings(&l);
		code = l.o.dry_run ? dry_run(&l) : run(&l);
	}
	launch_free(&l);
	return code;
}
