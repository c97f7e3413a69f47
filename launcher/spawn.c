// SPDX-License-Identifier: MIT
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"

/* The worker's own step in the child: its binding and fd limit. */
static int prepare(void *ctx)
{
	const struct spawn_req *r = ctx;
	int e;

	if (r->topo && r->slot && (e = topo_bind_self(r->topo, r->slot)) < 0)
		return e;
	if (r->nofile)
		(void)setrlimit(RLIMIT_NOFILE, r->nofile);
	return 0;
}

int spawn_start(const struct spawn_req *r, pid_t *pid, int *report_fd)
{
	struct child_spec s = {
		.path = r->path, .argv = r->argv, .envp = r->envp, .mask = r->child_mask,
		.reset_signals = r->reset_signals, .nreset = r->nreset, .death_signal = SIGKILL,
		.stdio = { r->stdin_fd, r->stdout_fd, r->stderr_fd },
		.prepare = prepare, .ctx = (void *)r,
	};

	return child_start(&s, pid, report_fd);
}

enum spawn_stage spawn_read_report(int report_fd, int *err)
{
	switch (child_read_report(report_fd, err)) {
	case CHILD_OK: return SPAWN_OK;
	case CHILD_PREPARE: return SPAWN_BIND;
	case CHILD_EXEC: return SPAWN_EXEC;
	default: return SPAWN_SETUP;
	}
}

static int check_exec(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -ENOENT;
	if (S_ISDIR(st.st_mode) || access(path, X_OK) < 0)
		return -EACCES;
	return 0;
}

int spawn_resolve(const char *name, const char *path_env, char *buf, size_t len)
{
	const char *p;
	int found_noexec = 0;

	if (!*name)
		return -ENOENT;
	if (strchr(name, '/')) {
		if (strlen(name) >= len)
			return -ENAMETOOLONG;
		strcpy(buf, name);
		return check_exec(buf);
	}
	p = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
	for (;;) {
		const char *end = strchrnul(p, ':');
		size_t dl = (size_t)(end - p);
		int r;

		if (dl == 0)
			r = snprintf(buf, len, "%s", name); /* empty entry: current directory */
		else
			r = snprintf(buf, len, "%.*s/%s", (int)dl, p, name);
		if (r >= 0 && (size_t)r < len) {
			int c = check_exec(buf);
			if (c == 0)
				return 0;
			if (c == -EACCES)
				found_noexec = 1;
		}
		if (!*end)
			break;
		p = end + 1;
	}
	return found_noexec ? -EACCES : -ENOENT;
}
