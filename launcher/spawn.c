#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"

struct report {
	int stage;
	int err;
};

static void child_fail(int fd, enum spawn_stage stage, int err)
{
	struct report rep = { stage, err };

	(void)!write(fd, &rep, sizeof(rep));
	_exit(stage == SPAWN_EXEC ? (err == ENOENT ? 127 : 126) : 1);
}

/* Runs in the child only; never returns. */
static void child(const struct spawn_req *r, pid_t parent, int report_w)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int e;

	for (int i = 0; i < r->nreset; i++)
		sigaction(r->reset_signals[i], &dfl, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	if (setpgid(0, 0) < 0)
		child_fail(report_w, SPAWN_SETUP, errno);
	/* The parent may have died before prctl took effect: then getppid()
	 * is no longer it, and nobody would send the death signal. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		child_fail(report_w, SPAWN_SETUP, errno);
	if (getppid() != parent)
		_exit(128 + SIGKILL);
	if (r->topo && r->slot && (e = topo_bind_self(r->topo, r->slot)) < 0)
		child_fail(report_w, SPAWN_BIND, -e);
	if (dup2(r->stdin_fd, STDIN_FILENO) < 0 || dup2(r->stdout_fd, STDOUT_FILENO) < 0 ||
	    dup2(r->stderr_fd, STDERR_FILENO) < 0)
		child_fail(report_w, SPAWN_SETUP, errno);
	if (r->nofile)
		(void)setrlimit(RLIMIT_NOFILE, r->nofile);
	sigprocmask(SIG_SETMASK, r->child_mask, NULL);
	execve(r->path, r->argv, r->envp);
	child_fail(report_w, SPAWN_EXEC, errno);
}

int spawn_start(const struct spawn_req *r, pid_t *pid, int *report_fd)
{
	pid_t parent = getpid();
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	*pid = fork();
	if (*pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (*pid == 0)
		child(r, parent, p[1]);
	/* Both sides set the group, so signals sent right after fork already
	 * reach it whichever side runs first. */
	(void)setpgid(*pid, *pid);
	close(p[1]);
	*report_fd = p[0];
	return 0;
}

enum spawn_stage spawn_read_report(int report_fd, int *err)
{
	struct report rep;
	ssize_t n = io_read(report_fd, &rep, sizeof(rep));

	close(report_fd);
	if (n != (ssize_t)sizeof(rep))
		return SPAWN_OK;
	*err = rep.err;
	return (enum spawn_stage)rep.stage;
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
