// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "leak_check.h"
#include "status_sock.h"
#include "tmp_dir.h"

TestSuite(status_sock, .init = tmp_dir_setup, .fini = tmp_dir_teardown);

LEAK_TEST(status_sock, a_folder_must_be_ours_and_closed)
{
	struct stat st = { .st_mode = S_IFDIR | 0700, .st_uid = 1000 };

	cr_assert_eq(status_dir_check(&st, 1000), 0);
	cr_assert_eq(status_dir_check(&st, 1001), -EPERM, "someone else's");
	st.st_mode = S_IFDIR | 0750;
	cr_assert_eq(status_dir_check(&st, 1000), -EACCES, "open to the group");
	st.st_mode = S_IFDIR | 0701;
	cr_assert_eq(status_dir_check(&st, 1000), -EACCES, "others may traverse");
	st.st_mode = S_IFLNK | 0700;
	cr_assert_eq(status_dir_check(&st, 1000), -ENOTDIR, "a link is never followed");
	st.st_mode = S_IFREG | 0700;
	cr_assert_eq(status_dir_check(&st, 1000), -ENOTDIR);
}

LEAK_TEST(status_sock, the_candidates_in_order)
{
	char d[STATUS_DIR_CANDIDATES][PATH_MAX];

	status_dir_candidates("/run/user/7", 7, d);
	cr_assert_str_eq(d[0], "/run/user/7/slotrun");
	cr_assert_str_eq(d[1], "/run/user/7/slotrun");
	cr_assert_str_eq(d[2], "/tmp/slotrun-7");
	status_dir_candidates("relative", 7, d);
	cr_assert_str_eq(d[0], "", "a relative XDG_RUNTIME_DIR does not count");
	status_dir_candidates(NULL, 7, d);
	cr_assert_str_eq(d[0], "");
}

LEAK_TEST(status_sock, socket_names)
{
	char p[PATH_MAX], longdir[200];

	cr_assert_eq(status_sock_pid("1234.sock"), 1234);
	cr_assert_eq(status_sock_pid(".sock"), 0);
	cr_assert_eq(status_sock_pid("12a.sock"), 0);
	cr_assert_eq(status_sock_pid("1234.socket"), 0);
	cr_assert_eq(status_sock_pid("0.sock"), 0);
	cr_assert_eq(status_sock_path("/run/user/0/slotrun", 42, p, sizeof(p)), 0);
	cr_assert_str_eq(p, "/run/user/0/slotrun/42.sock");
	memset(longdir, 'x', sizeof(longdir) - 1);
	longdir[sizeof(longdir) - 1] = '\0';
	cr_assert_eq(status_sock_path(longdir, 42, p, sizeof(p)), -ENAMETOOLONG);
}

LEAK_TEST(status_sock, the_server_folder_is_made_closed_under_xdg_runtime_dir)
{
	char dir[PATH_MAX], err[512], found[PATH_MAX], foreign[PATH_MAX];
	struct stat st;

	setenv("XDG_RUNTIME_DIR", tmpdir, 1);
	cr_assert_eq(status_dir_make(dir, sizeof(dir), err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(dir, tmp_path("slotrun"));
	cr_assert_eq(lstat(dir, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700);
	cr_assert_eq(chmod(dir, 0755), 0);
	cr_assert_eq(status_dir_make(dir, sizeof(dir), err, sizeof(err)), 0, "ours but open: closed again");
	cr_assert_eq(lstat(dir, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700);
	cr_assert_eq(status_dir_find(found, sizeof(found), foreign, sizeof(foreign)), 1);
	cr_assert_str_eq(found, dir);
	cr_assert_str_eq(foreign, "");
	unsetenv("XDG_RUNTIME_DIR");
}

LEAK_TEST(status_sock, a_client_names_a_folder_that_is_not_its_own)
{
	char found[PATH_MAX], foreign[PATH_MAX];

	if (geteuid() != 0)
		cr_skip_test("needs root to give a folder away");
	cr_assert_eq(mkdir(tmp_path("slotrun"), 0700), 0);
	cr_assert_eq(chown(tmp_path("slotrun"), 65534, 65534), 0);
	setenv("XDG_RUNTIME_DIR", tmpdir, 1);
	cr_assert_eq(status_dir_find(found, sizeof(found), foreign, sizeof(foreign)), 0, "not where to look");
	cr_assert_str_eq(foreign, tmp_path("slotrun"));
	unsetenv("XDG_RUNTIME_DIR");
}

LEAK_TEST(status_sock, stale_sockets_are_swept_live_ones_and_other_files_kept)
{
	int live = status_sock_listen(tmp_path("111.sock")), dead = status_sock_listen(tmp_path("222.sock"));
	int other = open(tmp_path("333.sock"), O_CREAT | O_WRONLY | O_CLOEXEC, 0600), fd;

	cr_assert_geq(live, 0);
	cr_assert_geq(dead, 0);
	cr_assert_geq(other, 0);
	close(other);
	close(dead); /* its slotrun died: the file stays, nothing listens */
	cr_assert_eq(status_sock_connect(tmp_path("222.sock")), -ECONNREFUSED);
	cr_assert_eq(status_sock_sweep(tmpdir, 0, false), 1);
	cr_assert_neq(access(tmp_path("222.sock"), F_OK), 0, "the stale one is gone");
	cr_assert_eq(access(tmp_path("111.sock"), F_OK), 0, "the live one stays");
	cr_assert_eq(access(tmp_path("333.sock"), F_OK), 0, "not a socket: not ours to remove");
	cr_assert_eq(status_sock_listen(tmp_path("333.sock")), -EEXIST, "nor to replace");
	fd = status_sock_connect(tmp_path("111.sock"));
	cr_assert_geq(fd, 0);
	cr_assert_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(fd);
	close(live);
	cr_assert_geq(live = status_sock_listen(tmp_path("111.sock")), 0, "a socket left there is replaced");
	close(live);
}

LEAK_TEST(status_sock, a_starting_slotrun_wakes_no_live_one)
{
	char name[32], dead_name[32];
	int live, dead, fd;
	pid_t gone = fork();

	cr_assert_geq(gone, 0);
	if (gone == 0)
		_exit(0);
	cr_assert_eq(waitpid(gone, NULL, 0), gone); /* a pid nobody has now */
	snprintf(name, sizeof(name), "%d.sock", (int)getpid());
	snprintf(dead_name, sizeof(dead_name), "%d.sock", (int)gone);
	cr_assert_geq(live = status_sock_listen(tmp_path(name)), 0);
	cr_assert_geq(dead = status_sock_listen(tmp_path(dead_name)), 0);
	close(dead);
	cr_assert_eq(status_sock_sweep(tmpdir, 0, true), 1, "a dead pid's socket is still tried");
	cr_assert_neq(access(tmp_path(dead_name), F_OK), 0);
	/* a live pid's socket was not connected to: nothing to accept */
	fd = accept4(live, NULL, NULL, SOCK_CLOEXEC);
	cr_assert(fd < 0 && errno == EAGAIN, "the sweep connected to a live slotrun's socket");
	cr_assert_eq(status_sock_sweep(tmpdir, 0, false), 0);
	fd = accept4(live, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(fd, 0, "without pid_first every socket is tried");
	close(fd);
	close(live);
	unlink(tmp_path(name));
}
