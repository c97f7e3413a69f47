// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spawn.h"
#include "leak_check.h"

LEAK_TEST(spawn, resolve_like_execvp)
{
	char buf[PATH_MAX], dir[] = "/tmp/slotrun-resolve-XXXXXX", path[PATH_MAX + 64];
	int fd;

	cr_assert_eq(spawn_resolve("sh", "/nonexistent:/bin:/usr/bin", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "/bin/sh");
	cr_assert_eq(spawn_resolve("no-such-cmd-xyz", "/bin:/usr/bin", buf, sizeof(buf)), -ENOENT);
	cr_assert_eq(spawn_resolve("", "/bin", buf, sizeof(buf)), -ENOENT);
	cr_assert_eq(spawn_resolve("/bin/sh", NULL, buf, sizeof(buf)), 0);
	cr_assert_eq(spawn_resolve("/nonexistent/x", NULL, buf, sizeof(buf)), -ENOENT);
	cr_assert_eq(spawn_resolve("/tmp", NULL, buf, sizeof(buf)), -EACCES, "a directory is not executable");

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tool", dir);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(spawn_resolve("tool", dir, buf, sizeof(buf)), -EACCES, "found, not executable");
	chmod(path, 0755);
	cr_assert_eq(spawn_resolve("tool", dir, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, path);
	unlink(path);
	rmdir(dir);
}

/* Open fds of this process (the directory's own fd not counted): a test
 * that spawns must leave as many as it found. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;
}

static sigset_t empty;

/* stdin_fd is a fresh /dev/null: the caller closes it once spawn_start has
 * given it to the child. */
static struct spawn_req req_for(char *const *argv, const char *path, int out)
{
	static char *envp[] = { "SPAWN_TEST=1", NULL };
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	cr_assert_geq(devnull, 0);
	sigemptyset(&empty);
	return (struct spawn_req){ .path = path, .argv = argv, .envp = envp, .stdin_fd = devnull,
				   .stdout_fd = out, .stderr_fd = out, .child_mask = &empty };
}

LEAK_TEST_OPTS(spawn, exec_success_reports_ok_and_child_leads_its_group, .timeout = 10)
{
	char *argv[] = { "sh", "-c", "echo $SPAWN_TEST $(ps -o pgid= -p $$) $$", NULL };
	int p[2], report, err = 0, status;
	char buf[128] = "";
	pid_t pid;
	struct spawn_req r;
	int fds = open_fds();

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	r = req_for(argv, "/bin/sh", p[1]);
	cr_assert_eq(spawn_start(&r, &pid, &report), 0);
	close(r.stdin_fd);
	close(p[1]);
	cr_assert_eq(spawn_read_report(report, &err), SPAWN_OK);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert_gt(read(p[0], buf, sizeof(buf) - 1), 0);
	int one, pgid, self;
	cr_assert_eq(sscanf(buf, "%d %d %d", &one, &pgid, &self), 3, "%s", buf);
	cr_assert_eq(one, 1, "the environment given is the environment seen");
	cr_assert_eq(pgid, self, "the worker leads its own process group");
	close(p[0]);
	cr_assert_eq(open_fds(), fds, "every fd the test opened is closed");
}

LEAK_TEST_OPTS(spawn, exec_failure_comes_back_with_errno, .timeout = 10)
{
	char *argv[] = { "nope", NULL };
	int report, err = 0, status;
	pid_t pid;
	int fds = open_fds();
	struct spawn_req r = req_for(argv, "/nonexistent/nope", STDERR_FILENO);

	cr_assert_eq(spawn_start(&r, &pid, &report), 0);
	close(r.stdin_fd);
	cr_assert_eq(spawn_read_report(report, &err), SPAWN_EXEC);
	cr_assert_eq(err, ENOENT);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 127);
	cr_assert_eq(open_fds(), fds, "every fd the test opened is closed");
}
