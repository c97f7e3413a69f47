// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
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

#include "folder.h"
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

static void write_script(const char *path, const char *text)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0755);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

LEAK_TEST(spawn, env_program_is_looked_up_on_the_path_given)
{
	char buf[512], dir[] = "/tmp/slotrun-envcheck-XXXXXX", path[PATH_MAX];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);
	write_script(path, "#!/usr/bin/env typo\n");
	cr_assert_eq(spawn_check_script(path, "/bin:/usr/bin", buf, sizeof(buf)), -ENOENT);
	cr_assert_str_eq(buf, "its #! line runs '/usr/bin/env typo', and 'typo' is not on PATH");
	cr_assert_eq(spawn_check_script(path, dir, buf, sizeof(buf)), -ENOENT);
	write_script(path, "#!/usr/bin/env s\n");
	cr_assert_eq(spawn_check_script(path, dir, buf, sizeof(buf)), 0, "on the path given: the script itself");
	cr_assert_eq(spawn_check_script(path, "/bin", buf, sizeof(buf)), -ENOENT, "not on that one");
	write_script(path, "#!/usr/bin/env -S A=1 B=2 sh -e\n");
	cr_assert_eq(spawn_check_script(path, "/bin:/usr/bin", buf, sizeof(buf)), 0, "-S: the first word past the variables");
	write_script(path, "#!/usr/bin/env -Styp\\x1bo\n");
	cr_assert_eq(spawn_check_script(path, "/bin", buf, sizeof(buf)), -ENOENT, "-S joined to its word");
	write_script(path, "#!/usr/bin/env -S typ\x1bo -u\n");
	cr_assert_eq(spawn_check_script(path, "/bin", buf, sizeof(buf)), -ENOENT);
	cr_assert_str_eq(buf, "its #! line runs '/usr/bin/env -S typ\\x1bo -u', and 'typ\\x1bo' is not on PATH",
			 "control characters escaped");
	/* what cannot be told for sure is left to env */
	for (const char *t = "#!/usr/bin/env -i typo\n\0#!/usr/bin/env A=1\n\0#!/usr/bin/env\n\0"
			     "#!/usr/bin/env -S -i typo\n\0#!/usr/bin/env -S A=1\n\0#!/bin/sh\n\0plain\n\0";
	     *t; t += strlen(t) + 1) {
		write_script(path, t);
		cr_assert_eq(spawn_check_script(path, "/bin", buf, sizeof(buf)), 0, "%s", t);
	}
	write_script(path, "#!/usr/bin/env /nonexistent/typo\n");
	cr_assert_eq(spawn_check_script(path, "/bin", buf, sizeof(buf)), -ENOENT);
	cr_assert_str_eq(buf, "its #! line runs '/usr/bin/env /nonexistent/typo', and there is no '/nonexistent/typo'");
	write_script(path, "#!/usr/bin/env /dev/null\n");
	cr_assert_eq(spawn_check_script(path, "/bin", buf, sizeof(buf)), -EACCES);
	write_script(path, "#!/nonexistent/env typo\n");
	cr_assert_eq(spawn_check_script(path, "/bin", buf, sizeof(buf)), -ENOENT, "a missing env is a bad interpreter");
	cr_assert_str_eq(buf, "bad interpreter '/nonexistent/env' (No such file or directory)");
	unlink(path);
	rmdir(dir);
}

/* Open fds of this process (the directory's own fd not counted): a test
 * that spawns must leave as many as it found. */
static int open_fds(void)
{
	return folder_entries("/proc/self/fd") - 1;
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
