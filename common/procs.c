// SPDX-License-Identifier: MIT
#include "procs.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"

struct pp {
	pid_t pid, ppid;
};

/* "pid (comm) S ppid ...": comm may hold spaces and ')', so parse from the
 * last ')'.  Zombies are skipped: they are already dead. */
static int read_ppid(pid_t pid, pid_t *ppid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = io_read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
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

/* Every live descendant of root, in *out (malloc'd; free it).  Returns how
 * many, or a negative errno. */
static int descendants(pid_t root, pid_t **out)
{
	struct pp *all = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	pid_t *found;
	DIR *d;
	int count = 0;

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

	/* Mark descendants by repeated passes: ppid of a marked entry or root.
	 * Marked entries get ppid = root so the test stays one comparison. */
	for (bool grew = true; grew;) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (all[i].ppid == root || all[i].pid == root)
				continue;
			for (size_t j = 0; j < n; j++) {
				if (all[j].pid == all[i].ppid && all[j].ppid == root && all[j].pid != root) {
					all[i].ppid = root;
					grew = true;
					break;
				}
			}
		}
	}
	found = malloc((n ? n : 1) * sizeof(*found));
	if (!found) {
		free(all);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (all[i].ppid == root && all[i].pid != root)
			found[count++] = all[i].pid;
	free(all);
	*out = found;
	return count;
}

int procs_signal_descendants(pid_t root, int sig)
{
	pid_t *pids;
	int n = descendants(root, &pids), count = 0;

	for (int i = 0; i < n; i++)
		if (kill(pids[i], sig) == 0)
			count++;
	free(pids);
	return n < 0 ? n : count;
}

static int by_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int procs_tree(pid_t root, pid_t *pids, int max)
{
	pid_t *all;
	int n = descendants(root, &all), k = 0;

	if (n < 0)
		return n;
	if (max > 0)
		pids[k++] = root;
	qsort(all, (size_t)n, sizeof(*all), by_pid);
	for (int i = 0; i < n && k < max; i++)
		pids[k++] = all[i];
	free(all);
	return k;
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
