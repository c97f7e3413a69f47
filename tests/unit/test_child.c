// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "leak_check.h"

static int fail_prepare(void *ctx)
{
	return -*(int *)ctx;
}

LEAK_TEST_OPTS(child, failed_prepare_is_reported_with_its_errno, .timeout = 10)
{
	char *argv[] = { "true", NULL };
	int code = ENOTSUP, report, err = 0, status;
	sigset_t none;
	pid_t pid;
	struct child_spec s;

	sigemptyset(&none);
	s = (struct child_spec){ .argv = argv, .mask = &none, .stdio = { -1, -1, -1 },
				 .prepare = fail_prepare, .ctx = &code };
	cr_assert_eq(child_start(&s, &pid, &report), 0);
	cr_assert_eq(child_read_report(report, &err), CHILD_PREPARE);
	cr_assert_eq(err, ENOTSUP);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

LEAK_TEST_OPTS(child, path_lookup_failure_is_127_and_mask_and_dispositions_are_set, .timeout = 10)
{
	char *missing[] = { "no-such-command-xyz", NULL };
	char *show[] = { "grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status", NULL };
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit, old_pipe;
	int reset[] = { SIGINT }, report, err = 0, status, p[2];
	unsigned long long blk = 0, ignd = 0;
	char buf[256] = "";
	sigset_t mask;
	pid_t pid;
	struct child_spec s;

	sigemptyset(&mask);
	s = (struct child_spec){ .argv = missing, .mask = &mask, .stdio = { -1, -1, -1 } };
	cr_assert_eq(child_start(&s, &pid, &report), 0);
	cr_assert_eq(child_read_report(report, &err), CHILD_EXEC);
	cr_assert_eq(err, ENOENT);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 127);

	/* Ignored here: SIGINT (listed: back to default), SIGPIPE (given as
	 * ignored) and SIGQUIT (not listed: stays ignored).  Mask: SIGUSR2. */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGPIPE, &ign, &old_pipe);
	sigaddset(&mask, SIGUSR2);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	s = (struct child_spec){ .argv = show, .mask = &mask, .reset_signals = reset, .nreset = 1,
				 .sigpipe = &ign, .stdio = { -1, p[1], -1 } };
	cr_assert_eq(child_start(&s, &pid, &report), 0);
	close(p[1]);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	cr_assert_eq(child_read_report(report, &err), CHILD_OK);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_gt(read(p[0], buf, sizeof(buf) - 1), 0);
	close(p[0]);
	cr_assert_eq(sscanf(buf, "SigBlk: %llx SigIgn: %llx", &blk, &ignd), 2, "%s", buf);
	cr_assert_eq(blk, 1ull << (SIGUSR2 - 1), "%s", buf);
	cr_assert_eq(ignd & ((1ull << (SIGINT - 1)) | (1ull << (SIGQUIT - 1)) | (1ull << (SIGPIPE - 1))),
		     (1ull << (SIGQUIT - 1)) | (1ull << (SIGPIPE - 1)), "%s", buf);
}

static bool gone(pid_t pid)
{
	char path[64], st[512];
	FILE *f;
	bool dead;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	dead = !fgets(st, sizeof(st), f) || strstr(st, ") Z ") != NULL;
	fclose(f);
	return dead;
}

/* The program gets its parent-death signal: a middle process starts
 * `sleep` with SIGKILL as that signal, says its pid, and exits. */
LEAK_TEST_OPTS(child, program_dies_with_its_parent, .timeout = 20)
{
	int p[2];
	pid_t mid, pid = 0;
	struct timespec t0, t;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	mid = fork();
	cr_assert_geq(mid, 0);
	if (mid == 0) {
		char *argv[] = { "sleep", "60", NULL };
		sigset_t none;
		int report, err;
		struct child_spec s;

		sigemptyset(&none);
		s = (struct child_spec){ .argv = argv, .mask = &none, .death_signal = SIGKILL,
					 .stdio = { -1, -1, -1 } };
		if (child_start(&s, &pid, &report) < 0 || child_read_report(report, &err) != CHILD_OK)
			_exit(1);
		(void)!write(p[1], &pid, sizeof(pid));
		_exit(0);
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &pid, sizeof(pid)), (ssize_t)sizeof(pid));
	close(p[0]);
	waitpid(mid, NULL, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (gone(pid))
			return;
		usleep(1000); /* polling interval of a deadline wait */
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 10);
	kill(pid, SIGKILL);
	cr_assert_fail("sleep outlived its parent");
}

/* The #! line as the kernel reads it.  Arrays, not pointers: Criterion
 * hands the parameters to a worker process. */
struct shebang_case {
	char head[32];
	int ret;
	char path[24];
	char arg[16];
};

ParameterizedTestParameters(child, shebang_lines)
{
	static struct shebang_case cases[] = {
		{ "#!/bin/sh\necho hi\n", 0, "/bin/sh", "" },
		{ "#!/bin/sh\r\necho hi\r\n", 0, "/bin/sh\r", "" },
		{ "#! \t/usr/bin/python3 -u\n", 0, "/usr/bin/python3", "-u" },
		{ "#!/usr/bin/env python3\r\n", 0, "/usr/bin/env", "python3\r" },
		{ "#!/bin/sh -e  -x \t\n", 0, "/bin/sh", "-e  -x" }, /* one argument */
		{ "#!/bin/sh   \n", 0, "/bin/sh", "" },
		{ "#!/bin/sh", 0, "/bin/sh", "" },         /* no newline in the head */
		{ "#!python3\n", 0, "python3", "" },       /* relative: the kernel opens it so */
		{ "#!\n", -ENOEXEC, "", "" },
		{ "#!   \n/bin/sh\n", -ENOEXEC, "", "" },
		{ "#", -ENOEXEC, "", "" },
		{ "", -ENOEXEC, "", "" },
		{ "\x7f" "ELF\x02\x01", -ENOEXEC, "", "" },
		{ " #!/bin/sh\n", -ENOEXEC, "", "" },
	};
	return cr_make_param_array(struct shebang_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct shebang_case *c, child, shebang_lines)
{
	struct child_shebang sb = { "unchanged", "unchanged" };

	cr_assert_eq(child_shebang(c->head, strlen(c->head), &sb), c->ret, "%s", c->head);
	if (c->ret == 0) {
		cr_assert_str_eq(sb.path, c->path);
		cr_assert_str_eq(sb.arg, c->arg);
	}
}

Test(child, shebang_reads_only_the_bytes_given_and_refuses_a_long_line)
{
	char head[2 * CHILD_SHEBANG_MAX];
	struct child_shebang sb;

	cr_assert_eq(child_shebang("#!/bin/shX", 9, &sb), 0);
	cr_assert_str_eq(sb.path, "/bin/sh");
	memset(head, 'a', sizeof(head));
	memcpy(head, "#!/", 3);
	cr_assert_eq(child_shebang(head, sizeof(head), &sb), -ENAMETOOLONG);
	memcpy(head, "#!/bin/sh ", 10);
	cr_assert_eq(child_shebang(head, sizeof(head), &sb), -ENAMETOOLONG);
}

Test(child, explain_interp_names_the_interpreter_and_the_cause)
{
	char buf[256];

	child_explain_interp("/usr/bin/pyhton3", ENOENT, buf, sizeof(buf));
	cr_assert_str_eq(buf, "bad interpreter '/usr/bin/pyhton3' (No such file or directory)");
	child_explain_interp("/bin/sh\r", ENOENT, buf, sizeof(buf));
	cr_assert_str_eq(buf, "bad interpreter '/bin/sh\\r' (the #! line ends in CR: the script has "
			 "Windows line endings)");
	child_explain_interp("/tmp", EACCES, buf, sizeof(buf));
	cr_assert_str_eq(buf, "bad interpreter '/tmp' (Permission denied)");
	/* another control character stays one line */
	child_explain_interp("/bin/s\x1bh", ENOENT, buf, sizeof(buf));
	cr_assert_str_eq(buf, "bad interpreter '/bin/s\\x1bh' (No such file or directory)");
	child_explain_interp("/usr/bin/env python3\r", ENOENT, buf, sizeof(buf));
	cr_assert_str_eq(buf, "bad interpreter '/usr/bin/env python3\\r' (the #! line ends in CR: the "
			 "script has Windows line endings)");
	child_explain_interp("/usr/bin/pyhton3", ENOENT, buf, 12);
	cr_assert_str_eq(buf, "bad interpr");
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

LEAK_TEST(child, check_script_tells_a_missing_interpreter_apart)
{
	char dir[] = "/tmp/test_child.XXXXXX", path[64], buf[256] = "";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);

	write_file(path, "#!/nonexistent/pyhton3\nprint(1)\n", 0755);
	cr_assert_eq(child_check_script(path, buf, sizeof(buf)), -ENOENT);
	cr_assert_str_eq(buf, "bad interpreter '/nonexistent/pyhton3' (No such file or directory)");

	write_file(path, "#!/bin/sh\r\necho hi\r\n", 0755);
	cr_assert_eq(child_check_script(path, buf, sizeof(buf)), -ENOENT);
	cr_assert(strstr(buf, "Windows line endings"), "%s", buf);

	write_file(path, "#!/usr/bin/env sh\r\necho hi\r\n", 0755);
	cr_assert_eq(child_check_script(path, buf, sizeof(buf)), -ENOENT);
	cr_assert_str_eq(buf, "bad interpreter '/usr/bin/env sh\\r' (the #! line ends in CR: the "
			 "script has Windows line endings)");

	write_file(path, "#!/\n", 0755);                     /* a folder */
	cr_assert_eq(child_check_script(path, buf, sizeof(buf)), -EACCES);
	cr_assert_str_eq(buf, "bad interpreter '/' (Permission denied)");

	strcpy(buf, "untouched");
	write_file(path, "#!/bin/sh\necho hi\n", 0755);      /* a good script */
	cr_assert_eq(child_check_script(path, buf, sizeof(buf)), 0);
	write_file(path, "#!/usr/bin/env sh\necho hi\n", 0755);
	cr_assert_eq(child_check_script(path, buf, sizeof(buf)), 0);
	write_file(path, "#!/bin/sh -e\r\necho hi\r\n", 0755); /* the interpreter's to judge */
	cr_assert_eq(child_check_script(path, buf, sizeof(buf)), 0);
	write_file(path, "echo no shebang\n", 0755);
	cr_assert_eq(child_check_script(path, buf, sizeof(buf)), 0);
	cr_assert_eq(child_check_script("/nonexistent/file", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "untouched");

	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(rmdir(dir), 0);
}

/* The exec itself: ENOENT (127) for a script whose interpreter is missing. */
LEAK_TEST_OPTS(child, missing_interpreter_fails_the_exec_with_enoent, .timeout = 10)
{
	char dir[] = "/tmp/test_child.XXXXXX", path[64];
	char *argv[] = { path, NULL };
	int report, err = 0, status;
	sigset_t none;
	pid_t pid;
	struct child_spec s;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);
	write_file(path, "#!/nonexistent/pyhton3\n", 0755);
	sigemptyset(&none);
	s = (struct child_spec){ .path = path, .argv = argv, .mask = &none, .stdio = { -1, -1, -1 } };
	cr_assert_eq(child_start(&s, &pid, &report), 0);
	cr_assert_eq(child_read_report(report, &err), CHILD_EXEC);
	cr_assert_eq(err, ENOENT);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 127);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(rmdir(dir), 0);
}

/* child_start returns once the child has exec'd: it already runs the
 * program (a fork would still be our copy for a while). */
LEAK_TEST_OPTS(child, start_returns_after_the_exec, .timeout = 10)
{
	char *argv[] = { "/bin/sleep", "30", NULL };
	char path[64], exe[256], want[256];
	int report, err = 0, status;
	sigset_t none;
	pid_t pid;
	ssize_t n;
	struct child_spec s;

	cr_assert_not_null(realpath("/bin/sleep", want));
	sigemptyset(&none);
	s = (struct child_spec){ .path = argv[0], .argv = argv, .mask = &none, .stdio = { -1, -1, -1 } };
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(child_start(&s, &pid, &report), 0);
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
		n = readlink(path, exe, sizeof(exe) - 1);
		cr_assert_gt(n, 0);
		exe[n] = '\0';
		cr_assert_str_eq(exe, want, "the child runs sleep when child_start returns");
		cr_assert_eq(child_read_report(report, &err), CHILD_OK);
		cr_assert_eq(kill(pid, SIGKILL), 0);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}
}

/* Starts argv (looked up in PATH) with its stdout into buf (len bytes, NUL
 * ended), which must exec; returns its wait status. */
static int run_for_output(char **argv, char *buf, size_t len)
{
	int report, err = 0, status, p[2];
	sigset_t none;
	pid_t pid;
	ssize_t n;
	struct child_spec s;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	sigemptyset(&none);
	s = (struct child_spec){ .argv = argv, .mask = &none, .stdio = { -1, p[1], -1 } };
	cr_assert_eq(child_start(&s, &pid, &report), 0);
	close(p[1]);
	cr_assert_eq(child_read_report(report, &err), CHILD_OK, "errno %d", err);
	n = read(p[0], buf, len - 1);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	close(p[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/* A file without #! goes through /bin/sh (execvp's fallback), which copies
 * argv onto the child's stack: a long one must fit on it. */
LEAK_TEST_OPTS(child, a_script_without_shebang_runs_with_a_long_argv, .timeout = 30)
{
	enum { N = 60000 };
	char dir[] = "/tmp/test_child.XXXXXX", path[64], buf[64] = "";
	char **argv = calloc(N + 1, sizeof(char *));
	int status;

	cr_assert_not_null(argv);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);
	write_file(path, "echo $#\n", 0755);
	argv[0] = path;
	for (int i = 1; i < N; i++)
		argv[i] = "x";
	status = run_for_output(argv, buf, sizeof(buf));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	cr_assert_eq(atoi(buf), N - 1, "%s", buf);
	free(argv);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(rmdir(dir), 0);
}

/* The PATH search is execvp's whatever the C library: an entry whose file
 * cannot be run is passed over (and said when nothing else runs), and a
 * file without #! runs under /bin/sh. */
LEAK_TEST_OPTS(child, path_search_passes_over_what_cannot_run_and_runs_scripts_without_shebang,
	       .timeout = 10)
{
	char dir[] = "/tmp/test_child.XXXXXX", a[64], b[64], pa[80], pb[80], path[160];
	char *argv[] = { "prog", "arg1", NULL }, buf[64] = "";
	char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	int report, err = 0, status;
	sigset_t none;
	pid_t pid;
	struct child_spec s;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	cr_assert_eq(mkdir(a, 0755), 0);
	cr_assert_eq(mkdir(b, 0755), 0);
	snprintf(pa, sizeof(pa), "%s/prog", a);
	snprintf(pb, sizeof(pb), "%s/prog", b);
	write_file(pa, "echo from-a\n", 0644);          /* there, not executable */
	write_file(pb, "echo from-b \"$1\"\n", 0755);   /* no #! */
	sigemptyset(&none);

	snprintf(path, sizeof(path), "/nonexistent:%s:%s", a, b);
	cr_assert_eq(setenv("PATH", path, 1), 0);
	(void)run_for_output(argv, buf, sizeof(buf));
	cr_assert_str_eq(buf, "from-b arg1\n");

	snprintf(path, sizeof(path), "%s:/nonexistent", a);  /* only the one that cannot run */
	cr_assert_eq(setenv("PATH", path, 1), 0);
	s = (struct child_spec){ .argv = argv, .mask = &none, .stdio = { -1, -1, -1 } };
	cr_assert_eq(child_start(&s, &pid, &report), 0);
	cr_assert_eq(child_read_report(report, &err), CHILD_EXEC);
	cr_assert_eq(err, EACCES);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 126);

	if (old)
		setenv("PATH", old, 1);
	else
		unsetenv("PATH");
	free(old);
	cr_assert_eq(unlink(pa), 0);
	cr_assert_eq(unlink(pb), 0);
	cr_assert_eq(rmdir(a), 0);
	cr_assert_eq(rmdir(b), 0);
	cr_assert_eq(rmdir(dir), 0);
}
