// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"
#include "folder.h"
#include "leak_check.h"
#include "tmp_dir.h"

LEAK_TEST(io, parse_long_accepts_plain_numbers)
{
	long v;

	cr_assert_eq(io_parse_long("0", 0, 10, &v), 0);
	cr_assert_eq(v, 0);
	cr_assert_eq(io_parse_long("10", 0, 10, &v), 0);
	cr_assert_eq(v, 10);
	cr_assert_eq(io_parse_long("-3", -5, 10, &v), 0);
	cr_assert_eq(v, -3);
}

LEAK_TEST(io, parse_long_rejects_junk_and_range)
{
	long v;
	const char *bad[] = { "", " 1", "+1", "1 ", "1x", "x", "0x10", "-1" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(io_parse_long(bad[i], 0, 100, &v), -EINVAL, "'%s'", bad[i]);
	cr_assert_eq(io_parse_long("101", 0, 100, &v), -ERANGE);
	cr_assert_eq(io_parse_long("99999999999999999999999", 0, LONG_MAX, &v), -ERANGE);
	cr_assert_eq(io_parse_long(NULL, 0, 100, &v), -EINVAL);
}

LEAK_TEST_OPTS(io, write_all_finishes_on_nonblocking_pipe, .timeout = 10)
{
	int p[2], status;
	static char big[1 << 20];
	char rbuf[65536];
	size_t got = 0;
	pid_t pid;

	cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
	pid = fork();
	if (pid == 0) {
		/* child drains slowly; never asserts */
		close(p[1]);
		fcntl(p[0], F_SETFL, 0);
		for (;;) {
			ssize_t n = read(p[0], rbuf, sizeof(rbuf));
			if (n <= 0)
				_exit(got == sizeof(big) ? 0 : 1);
			got += (size_t)n;
		}
	}
	close(p[0]);
	cr_assert_eq(io_write_all(p[1], big, sizeof(big)), 0);
	close(p[1]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the reader got less than was written");
}

/* write(2) of this test program: on zero_fd it takes nothing and sets no
 * errno, as some file systems and devices do; elsewhere it is the real
 * one.  It replaces libc's for io.c too, which is linked in statically. */
static int zero_fd = -1;
static int zero_calls;

ssize_t write(int fd, const void *buf, size_t len)
{
	if (fd >= 0 && fd == zero_fd) {
		zero_calls++;
		return 0;
	}
	return syscall(SYS_write, fd, buf, len);
}

LEAK_TEST_OPTS(io, write_all_fails_when_write_takes_nothing, .timeout = 10)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	zero_fd = fd;
	cr_assert_eq(io_write_all(fd, "abc", 3), -EIO, "a write that takes nothing must not spin");
	cr_assert_eq(zero_calls, 1);
	zero_fd = -1;
	cr_assert_eq(io_write_all(fd, "abc", 3), 0);
	cr_assert_eq(io_write_all(fd, "", 0), 0, "nothing to write is no error");
	close(fd);
}

LEAK_TEST(io, read_reports_eof_and_errors)
{
	int p[2];
	char c;

	cr_assert_eq(pipe(p), 0);
	close(p[1]);
	cr_assert_eq(io_read(p[0], &c, 1), 0);
	close(p[0]);
	cr_assert_eq(io_read(p[0], &c, 1), -EBADF);
}

/* ---- io_read_file, on files in a fresh folder ---- */

#define MAX (1 << 20)    /* what ClusterInfo allows an info file */

TestSuite(read_file, .init = tmp_dir_setup, .fini = tmp_dir_teardown, .timeout = 20);

LEAK_TEST(read_file, absent_files_are_enoent)
{
	errno = 0;
	cr_assert_null(io_read_file(tmp_path("none.json"), MAX));
	cr_assert_eq(errno, ENOENT);
}

LEAK_TEST(read_file, reads_a_file_whole)
{
	static char big[200000];
	char *got;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	tmp_write("big", big, sizeof(big));
	got = io_read_file(tmp_path("big"), MAX);
	cr_assert_not_null(got);
	cr_assert_eq(strlen(got), sizeof(big));
	cr_assert(!memcmp(got, big, sizeof(big)));
	free(got);
	tmp_write("empty", "", 0);
	got = io_read_file(tmp_path("empty"), MAX);
	cr_assert_not_null(got);
	cr_assert_str_eq(got, "");
	free(got);
}

LEAK_TEST(read_file, refuses_large_files)
{
	static char big[MAX + 1];

	memset(big, ' ', sizeof(big));
	tmp_write("big", big, sizeof(big));
	errno = 0;
	cr_assert_null(io_read_file(tmp_path("big"), MAX));
	cr_assert_eq(errno, EFBIG);
	tmp_write("exact", big, MAX);
	char *got = io_read_file(tmp_path("exact"), MAX);
	cr_assert_not_null(got, "a file of exactly the limit is fine");
	free(got);
	errno = 0;
	cr_assert_null(io_read_file(tmp_write("one", "x", 1), 0));
	cr_assert_eq(errno, EFBIG, "max 0 allows only an empty file");
}

LEAK_TEST(read_file, refuses_directories_and_fifos)
{
	const char *fifo = tmp_path("fifo");

	errno = 0;
	cr_assert_null(io_read_file(tmpdir, MAX));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	errno = 0;
	cr_assert_null(io_read_file(fifo, MAX), "a FIFO must not block");
	cr_assert_eq(errno, EINVAL);
}

LEAK_TEST(read_file, other_errors_come_through)
{
	tmp_write("file", "x", 1);
	errno = 0;
	cr_assert_null(io_read_file(tmp_path("file/x"), MAX));
	cr_assert_eq(errno, ENOTDIR);
}

/* ---- io_replace_file ---- */

TestSuite(replace_file, .init = tmp_dir_setup, .fini = tmp_dir_teardown, .timeout = 20);

/* Entries of tmpdir (or of tmpdir/sub), dot files included. */
static int entries(const char *sub)
{
	char path[256];

	snprintf(path, sizeof(path), "%s%s%s", tmpdir, sub ? "/" : "", sub ? sub : "");
	return folder_entries(path);
}

static void assert_file(const char *path, const char *text)
{
	char *got = io_read_file(path, 1 << 20);

	cr_assert_not_null(got, "%s: %s", path, strerror(errno));
	cr_assert_str_eq(got, text);
	free(got);
}

LEAK_TEST(replace_file, writes_then_replaces_leaving_nothing_else)
{
	const char *path = tmp_path("out.json");
	struct stat st;
	mode_t old = umask(022);

	cr_assert_eq(io_replace_file(path, "first\n", 6, 0644), 0);
	assert_file(path, "first\n");
	cr_assert_eq(io_replace_file(path, "second\n", 7, 0600), 0);
	assert_file(path, "second\n");
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(io_replace_file(path, "", 0, 0644), 0);
	assert_file(path, "");
	cr_assert_eq(entries(NULL), 1, "a temporary file was left");
	umask(old);
}

LEAK_TEST(replace_file, relative_paths_use_the_working_folder)
{
	char cwd[4096];

	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(chdir(tmpdir), 0);
	cr_assert_eq(io_replace_file("rel", "x", 1, 0644), 0);
	cr_assert_eq(chdir(cwd), 0);
	assert_file(tmp_path("rel"), "x");
}

LEAK_TEST(replace_file, a_link_at_the_name_is_replaced_not_followed)
{
	const char *victim = tmp_write("victim", "keep", 4), *path = tmp_path("out");
	struct stat st;

	cr_assert_eq(symlink(victim, path), 0);
	cr_assert_eq(io_replace_file(path, "new", 3, 0644), 0);
	assert_file(victim, "keep");
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	assert_file(path, "new");
}

LEAK_TEST(replace_file, errors_come_back_and_leave_nothing)
{
	tmp_write("file", "x", 1);
	cr_assert_eq(io_replace_file(tmp_path("none/out"), "x", 1, 0644), -ENOENT);
	cr_assert_eq(io_replace_file(tmp_path("file/out"), "x", 1, 0644), -ENOTDIR);
	cr_assert_eq(io_replace_file(tmp_path(""), "x", 1, 0644), -EISDIR);
	cr_assert_eq(mkdir(tmp_path("dir"), 0755), 0);
	cr_assert_eq(io_replace_file(tmp_path("dir"), "x", 1, 0644), -EISDIR, "rename over a folder");
	cr_assert_eq(entries(NULL), 2, "a temporary file was left");
	cr_assert_eq(entries("dir"), 0);
}

LEAK_TEST(replace_file, long_names_are_refused_before_anything_is_written)
{
	char name[NAME_MAX + 1], path[sizeof(tmpdir) + sizeof(name)];

	memset(name, 'n', NAME_MAX - 10);
	name[NAME_MAX - 10] = '\0';
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	cr_assert_eq(io_replace_file(path, "x", 1, 0644), -ENAMETOOLONG);
	cr_assert_eq(entries(NULL), 0);
}

/* A file size limit fails the write part-way as a full disk does: the old
 * file stays whole and the temporary one goes.  Run in a child: the limit
 * and the ignored SIGXFSZ must not outlive the test. */
LEAK_TEST(replace_file, a_failed_write_keeps_the_old_file)
{
	static char big[1 << 16];
	const char *path = tmp_write("out", "old", 3);
	int status;
	pid_t pid;

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { 4096, 4096 };

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(2);
		_exit(io_replace_file(path, big, sizeof(big), 0644) == -EFBIG ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
	assert_file(path, "old");
	cr_assert_eq(entries(NULL), 1, "a temporary file was left");
}

/* A real full disk: a tiny tmpfs, which only root can mount (in a mount
 * namespace of this test's own, so nothing outside sees it). */
LEAK_TEST(replace_file, a_full_disk_keeps_the_old_file)
{
	static char big[1 << 20];
	const char *dir = tmp_path("small"), *path = tmp_path("small/out");

	if (geteuid() != 0)
		cr_skip_test("mounting a small tmpfs needs root");
	cr_assert_eq(mkdir(dir, 0755), 0);
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("none", dir, "tmpfs", 0, "size=64k") < 0)
		cr_skip_test("cannot mount a small tmpfs here: %s", strerror(errno));
	tmp_write("small/out", "old", 3);
	cr_assert_eq(io_replace_file(path, big, sizeof(big), 0644), -ENOSPC);
	assert_file(path, "old");
	cr_assert_eq(entries("small"), 1, "a temporary file was left");
	cr_assert_eq(umount(dir), 0);
}

LEAK_TEST(replace_file, a_fifo_at_the_name_is_left_and_said)
{
	const char *path = tmp_path("fifo");
	struct stat st;

	cr_assert_eq(mkfifo(path, 0644), 0);
	cr_assert_eq(io_replace_file(path, "x", 1, 0644), -EEXIST);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISFIFO(st.st_mode));
	cr_assert_eq(entries(NULL), 1, "a temporary file was left");
}

/* ---- io_check_replace, io_remove_regular ---- */

TestSuite(check_replace, .init = tmp_dir_setup, .fini = tmp_dir_teardown, .timeout = 20);

LEAK_TEST(check_replace, accepts_nothing_a_file_and_links_to_a_file_or_nothing)
{
	mode_t found = 1;

	cr_assert_eq(io_check_replace(tmp_path("none"), &found), 0);
	cr_assert_eq(found, 0);
	cr_assert_eq(io_check_replace(tmp_write("file", "x", 1), &found), 0);
	cr_assert_eq(found, S_IFREG);
	cr_assert_eq(symlink(tmp_path("file"), tmp_path("link")), 0);
	cr_assert_eq(io_check_replace(tmp_path("link"), &found), 0);
	cr_assert_eq(found, S_IFREG);
	cr_assert_eq(symlink(tmp_path("gone"), tmp_path("dangling")), 0);
	cr_assert_eq(io_check_replace(tmp_path("dangling"), &found), 0);
	cr_assert_eq(found, 0);
	cr_assert_eq(entries(NULL), 3, "the check created or removed something");
}

LEAK_TEST(check_replace, refuses_folders_devices_fifos_and_links_to_them)
{
	mode_t found;

	cr_assert_eq(mkdir(tmp_path("dir"), 0755), 0);
	cr_assert_eq(io_check_replace(tmp_path("dir"), &found), -EISDIR);
	cr_assert_eq(io_check_replace(tmp_path("dir/"), &found), -EISDIR);
	cr_assert_eq(mkfifo(tmp_path("fifo"), 0644), 0);
	cr_assert_eq(io_check_replace(tmp_path("fifo"), &found), -EEXIST);
	cr_assert_eq(found, S_IFIFO);
	cr_assert_eq(symlink(tmp_path("fifo"), tmp_path("to_fifo")), 0);
	cr_assert_eq(io_check_replace(tmp_path("to_fifo"), &found), -EEXIST);
	cr_assert_eq(found, S_IFIFO);
	cr_assert_eq(symlink("/dev/null", tmp_path("to_null")), 0);
	cr_assert_eq(io_check_replace(tmp_path("to_null"), &found), -EEXIST);
	cr_assert_eq(found, S_IFCHR);
	cr_assert_eq(symlink(tmp_path("dir"), tmp_path("to_dir")), 0);
	cr_assert_eq(io_check_replace(tmp_path("to_dir"), &found), -EISDIR);
	cr_assert_eq(entries(NULL), 5, "the check created or removed something");
}

LEAK_TEST(check_replace, says_what_is_wrong_with_the_folder)
{
	mode_t found;

	tmp_write("file", "x", 1);
	cr_assert_eq(io_check_replace(tmp_path("none/out"), &found), -ENOENT);
	cr_assert_eq(io_check_replace(tmp_path("file/out"), &found), -ENOTDIR);
}

/* Root may write any folder its mode forbids, but no read-only mount:
 * as root the folder is a tmpfs mounted read-only in a mount namespace of
 * this test's own, otherwise a folder of mode 0555. */
LEAK_TEST(check_replace, a_folder_that_cannot_be_written_is_said)
{
	const char *dir = tmp_path("ro");
	mode_t found;

	cr_assert_eq(mkdir(dir, 0755), 0);
	if (geteuid() != 0) {
		cr_assert_eq(chmod(dir, 0555), 0);
		cr_assert_eq(io_check_replace(tmp_path("ro/out"), &found), -EACCES);
		cr_assert_eq(chmod(dir, 0755), 0);
		return;
	}
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("none", dir, "tmpfs", MS_RDONLY, NULL) < 0)
		cr_skip_test("cannot mount a read-only tmpfs here: %s", strerror(errno));
	cr_assert_eq(io_check_replace(tmp_path("ro/out"), &found), -EROFS);
	cr_assert_eq(umount(dir), 0);
}

LEAK_TEST(check_replace, remove_regular_removes_only_a_regular_file)
{
	struct stat st;

	cr_assert_eq(io_remove_regular(tmp_write("file", "x", 1)), 0);
	cr_assert_eq(lstat(tmp_path("file"), &st), -1);
	cr_assert_eq(io_remove_regular(tmp_path("file")), -ENOENT);
	tmp_write("target", "keep", 4);
	cr_assert_eq(symlink(tmp_path("target"), tmp_path("link")), 0);
	cr_assert_eq(io_remove_regular(tmp_path("link")), -EEXIST);
	cr_assert_eq(mkfifo(tmp_path("fifo"), 0644), 0);
	cr_assert_eq(io_remove_regular(tmp_path("fifo")), -EEXIST);
	cr_assert_eq(mkdir(tmp_path("dir"), 0755), 0);
	cr_assert_eq(io_remove_regular(tmp_path("dir")), -EEXIST);
	cr_assert_eq(entries(NULL), 4, "something else was removed");
	assert_file(tmp_path("target"), "keep");
}
