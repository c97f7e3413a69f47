// SPDX-License-Identifier: MIT
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "io.h"
#include "quote.h"

/* The worker's own step in the child: its binding and fd limit. */
static int prepare(void *ctx)
{
	const struct spawn_req *r = ctx;
	int e;

	if (r->topo && r->slot && (e = topo_bind_self(r->topo, r->slot)) < 0)
		return e;
	if (r->nofile)
		(void)setrlimit(RLIMIT_NOFILE, r->nofile);
	if (r->pass_fd > STDERR_FILENO && fcntl(r->pass_fd, F_SETFD, 0) < 0)
		return -errno;
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
	p = path_env ? path_env : CHILD_DEFAULT_PATH;
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

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The program env runs, from its one #! argument, into name: the whole
 * argument (Linux passes the rest of the line as one), or with -S the
 * first word after the options' variables.  Returns 0, or -EINVAL when
 * that cannot be told for sure (other options, only assignments). */
static int env_program(const char *arg, char *name, size_t len)
{
	const char *p = arg, *end;

	if (strncmp(arg, "-S", 2) != 0) {
		if (!*arg || *arg == '-' || strchr(arg, '='))
			return -EINVAL;
		snprintf(name, len, "%s", arg);
		return 0;
	}
	for (p = arg + 2;; p = end) {
		while (blank(*p))
			p++;
		for (end = p; *end && !blank(*end); end++)
			;
		if (end == p || *p == '-')
			return -EINVAL;
		if (!memchr(p, '=', (size_t)(end - p)))
			break; /* NAME=VALUE words set the program's environment */
	}
	if ((size_t)(end - p) >= len)
		return -EINVAL;
	memcpy(name, p, (size_t)(end - p));
	name[end - p] = '\0';
	return 0;
}

static int is_env(const char *path)
{
	const char *slash = strrchr(path, '/');

	return strcmp(slash ? slash + 1 : path, "env") == 0;
}

int spawn_check_script(const char *path, const char *path_env, char *buf, size_t len)
{
	char head[CHILD_SHEBANG_MAX], name[CHILD_SHEBANG_MAX], found[4096];
	char line[QUOTE_SIZE(2 * CHILD_SHEBANG_MAX)], shown[QUOTE_SIZE(CHILD_SHEBANG_MAX)];
	char both[2 * CHILD_SHEBANG_MAX];
	struct child_shebang sb;
	ssize_t n;
	int fd, r;

	if ((r = child_check_script(path, buf, len)) < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = io_read(fd, head, sizeof(head));
	close(fd);
	if (n <= 0 || child_shebang(head, (size_t)n, &sb) < 0 || !is_env(sb.path) ||
	    env_program(sb.arg, name, sizeof(name)) < 0)
		return 0;
	r = spawn_resolve(name, path_env, found, sizeof(found));
	if (r == 0 || r == -ENAMETOOLONG)
		return 0;
	snprintf(both, sizeof(both), "%s %s", sb.path, sb.arg);
	quote_ctl(line, sizeof(line), both, sizeof(both));
	quote_ctl(shown, sizeof(shown), name, sizeof(name));
	if (r == -EACCES)
		snprintf(buf, len, "its #! line runs '%s', and '%s'%s cannot be executed (Permission denied)",
			 line, shown, strchr(name, '/') ? "" : " on PATH");
	else if (strchr(name, '/'))
		snprintf(buf, len, "its #! line runs '%s', and there is no '%s'", line, shown);
	else
		snprintf(buf, len, "its #! line runs '%s', and '%s' is not on PATH%s", line, shown,
			 strpbrk(name, " \t") ? " (env takes the rest of the #! line as one name: "
			 "'env -S' splits it)" : "");
	return r;
}
