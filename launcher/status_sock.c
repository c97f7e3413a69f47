// SPDX-License-Identifier: MIT
#include "status_sock.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "io.h"

#define BACKLOG 16

int status_dir_check(const struct stat *st, uid_t uid)
{
	if (!S_ISDIR(st->st_mode))
		return -ENOTDIR;
	if (st->st_uid != uid)
		return -EPERM;
	if (st->st_mode & 077)
		return -EACCES;
	return 0;
}

void status_dir_candidates(const char *xdg, uid_t uid, char dirs[STATUS_DIR_CANDIDATES][PATH_MAX])
{
	dirs[0][0] = '\0';
	if (xdg && xdg[0] == '/')
		snprintf(dirs[0], PATH_MAX, "%s/slotrun", xdg);
	snprintf(dirs[1], PATH_MAX, "/run/user/%u/slotrun", (unsigned)uid);
	snprintf(dirs[2], PATH_MAX, "/tmp/slotrun-%u", (unsigned)uid);
}

/* Whether the folder holding dir is ours (a user's runtime folder); /tmp's
 * is everyone's and fine for /tmp/slotrun-UID. */
static bool parent_ours(const char *dir, uid_t uid)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(dir, '/');
	struct stat st;

	if (!slash)
		return false;
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - dir), dir);
	if (strcmp(parent, "/tmp") == 0)
		return true;
	return stat(parent, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid;
}

static const char *why(int e)
{
	switch (e) {
	case -ENOTDIR: return "is not a folder (or is a link)";
	case -EPERM: return "belongs to another user";
	case -EACCES: return "is open to other users";
	default: return strerror(-e);
	}
}

/* Creates dir 0700 if missing and checks it; ours but open to others is
 * closed.  Returns 0 or -errno. */
static int make_one(const char *dir, uid_t uid)
{
	struct stat st;
	int e;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) < 0)
		return -errno;
	e = status_dir_check(&st, uid);
	if (e == -EACCES && chmod(dir, 0700) == 0)
		e = 0;
	return e;
}

int status_dir_make(char *dir, size_t size, char *err, size_t errlen)
{
	char dirs[STATUS_DIR_CANDIDATES][PATH_MAX];
	uid_t uid = geteuid();
	int e = -ENOENT;

	status_dir_candidates(getenv("XDG_RUNTIME_DIR"), uid, dirs);
	for (int k = 0; k < STATUS_DIR_CANDIDATES; k++) {
		if (!dirs[k][0] || !parent_ours(dirs[k], uid))
			continue;
		if ((e = make_one(dirs[k], uid)) == 0) {
			snprintf(dir, size, "%s", dirs[k]);
			return 0;
		}
		/* not the next one: a client in this environment looks here */
		snprintf(err, errlen, "%s %s: remove it, or set XDG_RUNTIME_DIR to a folder of yours", dirs[k],
			 why(e));
		return e;
	}
	snprintf(err, errlen, "no runtime folder of yours (XDG_RUNTIME_DIR, /run/user/%u, /tmp)", (unsigned)uid);
	return e;
}

int status_dir_find(char *dir, size_t size, char *foreign, size_t flen)
{
	char cand[STATUS_DIR_CANDIDATES][PATH_MAX];
	uid_t uid = geteuid();

	dir[0] = foreign[0] = '\0';
	status_dir_candidates(getenv("XDG_RUNTIME_DIR"), uid, cand);
	for (int k = 0; k < STATUS_DIR_CANDIDATES; k++) {
		struct stat st;
		bool mine = cand[k][0] && parent_ours(cand[k], uid);

		if (cand[k][0] && !foreign[0] && (lstat(cand[k], &st) < 0 ? errno == EACCES :
						   status_dir_check(&st, uid) < 0))
			snprintf(foreign, flen, "%s", cand[k]); /* someone else's, or not one to trust */
		if (!mine)
			continue;
		/* the server's choice: where a slotrun started here puts its socket */
		if (lstat(cand[k], &st) == 0 && status_dir_check(&st, uid) == 0)
			snprintf(dir, size, "%s", cand[k]);
		return dir[0] ? 1 : 0;
	}
	return 0;
}

int status_sock_path(const char *dir, pid_t pid, char *buf, size_t size)
{
	struct sockaddr_un sa;
	int n = snprintf(buf, size, "%s/%d.sock", dir, (int)pid);

	return n < 0 || (size_t)n >= size || (size_t)n >= sizeof(sa.sun_path) ? -ENAMETOOLONG : 0;
}

pid_t status_sock_pid(const char *name)
{
	char digits[16];
	size_t len = strlen(name);
	long pid;

	if (len <= 5 || len - 5 >= sizeof(digits) || strcmp(name + len - 5, ".sock") != 0)
		return 0;
	memcpy(digits, name, len - 5);
	digits[len - 5] = '\0';
	return io_parse_long(digits, 1, 0x7fffffff, &pid) == 0 ? (pid_t)pid : 0;
}

static socklen_t address(const char *path, struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	snprintf(sa->sun_path, sizeof(sa->sun_path), "%s", path);
	return (socklen_t)sizeof(*sa);
}

int status_sock_listen(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, e;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		(void)unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, address(path, &sa)) < 0 || listen(fd, BACKLOG) < 0) {
		e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

int status_sock_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), e;

	if (fd < 0)
		return -errno;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	/* a Unix socket connects at once, or fails (EAGAIN: its backlog is
	 * full; the listener is alive) */
	if (connect(fd, (struct sockaddr *)&sa, address(path, &sa)) < 0 && errno != EINPROGRESS) {
		e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* Whether the socket named name in dir is stale: a socket on which
 * nothing listens.  (Not
 * whether its pid lives: a slotrun in another PID namespace that shares
 * the folder has a pid that means nothing here.) */
static bool stale(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false; /* not ours to remove */
	fd = status_sock_connect(path);
	if (fd >= 0)
		close(fd);
	return fd == -ECONNREFUSED;
}

int status_sock_sweep(const char *dir, pid_t self, bool pid_first)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int removed = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid = status_sock_pid(de->d_name);

		if (pid <= 0 || pid == self || (pid_first && (kill(pid, 0) == 0 || errno == EPERM)))
			continue;
		if (stale(dir, de->d_name) && unlinkat(dirfd(d), de->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
