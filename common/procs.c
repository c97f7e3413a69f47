// SPDX-License-Identifier: MIT
#include "procs.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"

struct pp {
	pid_t pid, ppid;
};

/* "pid (comm) S ppid ...": comm may hold spaces and ')', so parse from the
 * last ')'.  Zombies are skipped: they are already dead. */
ssize_t procs_read(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	if (len == 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = io_read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return n;
	buf[n] = '\0';
	return n;
}

static int read_ppid(pid_t pid, pid_t *ppid)
{
	char buf[512], *p;
	ssize_t n = procs_read(pid, "stat", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	if (n == 0)
		return -EIO;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2] || p[2] == 'Z' || p[2] == 'X')
		return -ESRCH;
	*ppid = (pid_t)strtol(p + 4, NULL, 10);
	return 0;
}

/* A /proc of another PID namespace (PID 1 of `unshare --pid` without
 * --mount-proc) would name other processes by our numbers: walk only ours. */
static bool proc_is_ours(void)
{
	char buf[32];
	ssize_t n = readlink("/proc/self", buf, sizeof(buf) - 1);

	if (n <= 0)
		return false;
	buf[n] = '\0';
	return atoi(buf) == (int)getpid();
}

/* Every process in /proc with its parent, in *out (malloc'd).  Returns
 * how many, or a negative errno. */
static int scan(struct pp **out)
{
	struct pp *all = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	if (!proc_is_ours())
		return -ENOTSUP;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid, ppid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = (pid_t)atoi(de->d_name);
		if (read_ppid(pid, &ppid) < 0)
			continue;
		if (n == cap) {
			struct pp *m = realloc(all, (cap = cap ? cap * 2 : 256) * sizeof(*all));
			if (!m) {
				free(all);
				closedir(d);
				return -ENOMEM;
			}
			all = m;
		}
		all[n++] = (struct pp){ pid, ppid };
	}
	closedir(d);
	*out = all;
	return (int)n;
}

static int by_ppid(const void *a, const void *b)
{
	pid_t x = ((const struct pp *)a)->ppid, y = ((const struct pp *)b)->ppid;

	return (x > y) - (x < y);
}

/* The first entry of all (sorted by parent) whose parent is ppid. */
static size_t first_child(const struct pp *all, size_t n, pid_t ppid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (all[mid].ppid < ppid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A descendant: its pid, its parent's, and its parent's index in the list
 * (-1: the parent is root). */
struct desc {
	pid_t pid, ppid;
	int up;
};

/* Every live descendant of root, parents before their children, in *out
 * (malloc'd; free it): one pass over /proc, sorted by parent so that each
 * process's children are found by a binary search.  The reads of /proc
 * are not one snapshot: a recycled pid may make a loop of parents, which
 * is never reached from root (each process is listed once, after its
 * parent).  Returns how many, or a negative errno. */
static int descendants(pid_t root, struct desc **out)
{
	struct pp *all;
	struct desc *found;
	int n = scan(&all), count = 0;

	*out = NULL;
	if (n < 0)
		return n;
	qsort(all, (size_t)n, sizeof(*all), by_ppid);
	found = malloc((n ? (size_t)n : 1) * sizeof(*found));
	if (!found) {
		free(all);
		return -ENOMEM;
	}
	for (int i = -1; i < count; i++) {
		pid_t parent = i < 0 ? root : found[i].pid;

		for (size_t k = first_child(all, (size_t)n, parent);
		     k < (size_t)n && all[k].ppid == parent && count < n; k++)
			if (all[k].pid != root)
				found[count++] = (struct desc){ all[k].pid, parent, i };
	}
	free(all);
	*out = found;
	return count;
}

#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
static int pidfd_open(pid_t pid)
{
	/* the kernel makes it close-on-exec */
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_signal(int fd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
}
#else
static int pidfd_open(pid_t pid)
{
	(void)pid;
	errno = ENOSYS;
	return -1;
}

static int pidfd_signal(int fd, int sig)
{
	(void)fd;
	(void)sig;
	errno = ENOSYS;
	return -1;
}
#endif

/* Whether the process behind a pidfd has ended (it reads as ready then). */
static bool pidfd_ended(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) != 0;
}

/* A pidfd on d's process, taken only while d's pid still names the process
 * the walk saw: opened first, then d's parent read again, and the parent
 * still alive behind its own pidfd (fds[d->up]; root is the caller's and
 * trusted).  A pid that was recycled since the walk then either names a
 * dead process (the pidfd is stale: signals fail) or fails the check.
 * A process whose parent died since the walk has been reparented to root
 * (the caller, a subreaper): it is still root's, and no process can be
 * born root's child meanwhile, since root is here and not forking.
 * Returns the fd, -1 when the process is gone or is another one, or -2
 * when pidfds are unavailable (no kernel support, no fd left). */
static int hold(const struct desc *d, const int *fds, pid_t root)
{
	pid_t ppid;
	int fd = pidfd_open(d->pid);

	if (fd < 0)
		return errno == ESRCH ? -1 : -2;
	if (read_ppid(d->pid, &ppid) < 0) {
		close(fd);
		return -1;
	}
	if (ppid == root && d->ppid != root)
		return fd;
	if (ppid != d->ppid || (d->up >= 0 && (fds[d->up] < 0 || pidfd_ended(fds[d->up])))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Signals every process in list.  All are held (pidfds) before the first
 * signal: a parent killed first would otherwise fail its children's
 * check.  Where pidfds are unavailable, kill(2) on the pid as walked. */
static int signal_all(const struct desc *list, int n, int sig, pid_t root)
{
	int *fds = malloc((n ? (size_t)n : 1) * sizeof(*fds)), count = 0;

	if (!fds)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		fds[i] = hold(&list[i], fds, root);
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0) {
			if (pidfd_signal(fds[i], sig) == 0)
				count++;
			close(fds[i]);
		} else if (fds[i] == -2 && kill(list[i].pid, sig) == 0) {
			count++;
		}
	}
	free(fds);
	return count;
}

int procs_signal_descendants(pid_t root, int sig)
{
	struct desc *list;
	int n = descendants(root, &list), count;

	if (n < 0)
		return n;
	count = signal_all(list, n, sig, root);
	free(list);
	return count;
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int procs_tree(pid_t root, pid_t *pids, int max)
{
	struct desc *list;
	pid_t *all;
	int n = descendants(root, &list), k = 0;

	if (n < 0)
		return n;
	all = malloc((n ? (size_t)n : 1) * sizeof(*all));
	if (!all) {
		free(list);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		all[i] = list[i].pid;
	free(list);
	if (max > 0)
		pids[k++] = root;
	qsort(all, (size_t)n, sizeof(*all), by_pid);
	for (int i = 0; i < n && k < max; i++)
		pids[k++] = all[i];
	free(all);
	return k;
}

bool procs_have_children(void)
{
	siginfo_t si = { 0 };

	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

int procs_kill_subtree(void)
{
	pid_t self = getpid();

	for (;;) {
		int n = procs_signal_descendants(self, SIGKILL);

		if (n < 0)
			return n;
		/* One death at least is coming (everything found was killed);
		 * a process forked after the walk is found by the next one. */
		if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD)
			return 0;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}
