/* slotrun: options -> topology -> ClusterInfo -> interface -> slot plan ->
 * dry run, or spawn and supervise. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster_info.h"
#include "iface.h"
#include "options.h"
#include "output.h"
#include "plan.h"
#include "runner.h"
#include "spawn.h"
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
		/* fds 0..2 must not be CLOEXEC: dup over themselves without it */
		if (keep >= 0) {
			dup2(keep, fd);
			close(keep);
		}
	}
	if (fd > 2)
		close(fd);
}

/* Workers need up to five fds each in slotrun (two pipes, the exec report,
 * two log files): raise the soft limit to the hard one (workers get the
 * original back), and say clearly when even that is too few. */
static int fd_budget(int slots, bool logs, struct rlimit *orig, char *err, size_t errlen)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)slots * (logs ? 5 : 3) + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	*orig = rl;
	if (rl.rlim_cur < need && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		snprintf(err, errlen, "%d slots need about %llu open files, but the limit is %llu "
			 "(raise it with ulimit -n)", slots, (unsigned long long)need,
			 (unsigned long long)rl.rlim_cur);
		return -EMFILE;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	struct cluster_info ci = { 0 };
	struct topo *topo = NULL;
	struct topo_slot *tslots = NULL;
	struct plan plan = { 0 };
	struct plan_opts po = { 0 };
	struct plan_secret secret;
	char err[1024], ifname[64], exec_path[PATH_MAX], **gpus = NULL, (*gpubuf)[16] = NULL;
	bool pci_order = false;
	struct rlimit nofile = { RLIM_INFINITY, RLIM_INFINITY };
	int r, code = 2, visible = 0;

	hold_std_fds();
	r = opt_parse(argc, argv, &ci_process_env, &o, err, sizeof(err));
	if (r == OPT_EXIT_OK)
		return 0;
	if (r < 0) {
		fprintf(stderr, "slotrun: %s\nTry 'slotrun --help'.\n", err);
		return 2;
	}

	if (topo_open(&topo, err, sizeof(err)) < 0) {
		if (o.bind != TOPO_BIND_NONE)
			return fail(2, err);
		topo = NULL;
	}
	if (topo)
		visible = topo_gpu_count(topo, &pci_order);

	if (ci_load(&o.ci, &ci_process_env, visible, &ci, err, sizeof(err)) < 0) {
		fail(2, err);
		goto out;
	}

	if (ci.iface) {
		if (iface_exists(ci.iface) < 0) {
			snprintf(err, sizeof(err), "%s interface '%s' does not exist on this node",
				 ci_source_name(ci.src_iface), ci.iface);
			fail(2, err);
			goto out;
		}
		po.iface = ci.iface;
	} else if (ci.nnodes > 1) {
		if (iface_for_peer(ci.addrs[0], ifname, sizeof(ifname), err, sizeof(err)) < 0) {
			fail(2, err);
			goto out;
		}
		po.iface = ifname;
	}

	/* Each slot's GPU for placement: ClusterInfo's list (physical ids),
	 * else the topology's GPUs by index (shared round-robin when there are
	 * more slots than GPUs). */
	if (!ci.gpus_none && (ci.gpus || visible > 0)) {
		gpus = calloc((size_t)ci.slots + 1, sizeof(char *));
		gpubuf = calloc((size_t)ci.slots, sizeof(*gpubuf));
		if (!gpus || !gpubuf) {
			code = fail(1, "out of memory");
			goto out;
		}
		for (int i = 0; i < ci.slots; i++) {
			if (ci.gpus) {
				gpus[i] = ci.gpus[i % ci.ngpus];
			} else {
				snprintf(gpubuf[i], sizeof(gpubuf[i]), "%d", i % visible);
				gpus[i] = gpubuf[i];
			}
		}
	}
	if (topo) {
		tslots = calloc((size_t)ci.slots, sizeof(*tslots));
		if (!tslots) {
			code = fail(1, "out of memory");
			goto out;
		}
		if (topo_plan(topo, o.bind, ci.slots, gpus, tslots, err, sizeof(err)) < 0) {
			fail(2, err);
			goto out;
		}
	}

	plan_job_secret(&ci, &ci_process_env, &secret);
	po.secret = secret.value;
	po.pci_order = pci_order;
	r = plan_build(&ci, tslots, &po, &ci_process_env, &plan);
	free(tslots);
	tslots = NULL;
	if (r < 0) {
		code = fail(1, "out of memory");
		goto out;
	}

	if (o.report_bindings && topo)
		for (int i = 0; i < plan.nslots; i++) {
			char line[512];
			topo_format_binding(&plan.slots[i].place, plan.slots[i].rank, line, sizeof(line));
			fprintf(stderr, "slotrun: %s\n", line);
		}

	if (o.dry_run) {
		for (int i = 0; i < plan.nslots; i++) {
			char *row = plan_slot_json(&plan, i);
			if (row)
				puts(row);
			free(row);
		}
		code = 0;
		goto out;
	}

	if (o.ranks_filter) {
		bool *by_rank;
		if (out_parse_ranks(o.ranks_filter, ci.world_size, &by_rank, err, sizeof(err)) < 0) {
			fail(2, err);
			goto out;
		}
		for (int i = 0; i < plan.nslots; i++)
			plan.slots[i].shown = by_rank[plan.slots[i].rank];
		free(by_rank);
	}
	if (o.log_dir && (r = mkdir_p(o.log_dir)) < 0) {
		snprintf(err, sizeof(err), "--log-dir %s: cannot create or write it: %s", o.log_dir, strerror(-r));
		fail(2, err);
		goto out;
	}

	if (fd_budget(ci.slots, o.log_dir != NULL, &nofile, err, sizeof(err)) < 0) {
		fail(2, err);
		goto out;
	}

	/* Said once here, rather than by every wrap_rank. */
	r = spawn_resolve(o.argv[0], getenv("PATH"), exec_path, sizeof(exec_path));
	if (r < 0) {
		code = r == -EACCES ? 126 : 127;
		snprintf(err, sizeof(err), "cannot execute '%s': %s", o.argv[0],
			 r == -EACCES ? "Permission denied" : "command not found");
		fail(code, err);
		goto out;
	}
	if (!o.no_wrap && find_wrap_rank(exec_path, sizeof(exec_path)) < 0) {
		code = fail(127, "cannot find wrap_rank beside slotrun or on PATH (set SLOTRUN_WRAP_RANK, or use --no-wrap)");
		goto out;
	}

	code = runner_run(&(struct runner_cfg){
		.plan = &plan, .topo = topo, .exec_path = exec_path,
		.wrapped = !o.no_wrap, .cmd = o.argv, .base_env = environ,
		.log_dir = o.log_dir, .error_file = o.error_file, .grace = o.grace,
		.nofile = &nofile,
	});
out:
	plan_free(&plan);
	if (tslots) {
		for (int i = 0; i < ci.slots; i++)
			topo_slot_free(&tslots[i]);
		free(tslots);
	}
	free(gpus);
	free(gpubuf);
	ci_free(&ci);
	if (topo)
		topo_close(topo);
	return code;
}
