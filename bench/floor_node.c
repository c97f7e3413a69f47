// SPDX-License-Identifier: MIT
/* The floor under bench/scale.py's simulated nodes: what N nodes of one
 * job cost on this machine with nothing of slotrun's, the same shape kept.
 * Node 0 is a hub that every other node connects to (a star, one TCP
 * connection per node, as the job plane); once all are in it sends each a
 * start byte, and every node then starts its rank as a chain of the same
 * four processes a slotrun node runs (the node, two relays standing for
 * wrap_rank and its guard, the worker).  A worker that fails (exit 4) is
 * told to the hub, which sends every node a stop byte; each node SIGTERMs
 * its chain, each relay forwards it, and every node exits 4.  No
 * handshake, seal, heartbeat, output, pinning or bookkeeping: a lower
 * bound for any launcher of this shape, not a rival.
 *
 * Usage: floor_node hub PORT N RELAYS WORKER LOG     node 0
 *        floor_node node PORT RANK RELAYS WORKER LOG  the others
 *        floor_node relay DEPTH WORKER LOG            (its own chain)
 * The worker runs as `WORKER LOG hold` with RANK set (scale_worker.c),
 * under RELAYS relays (2: wrap_rank and its guard; 0: the worker alone,
 * as a launcher without containment would run it). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define DEADLINE_S 120

static char self[4096];

static noreturn void die(const char *what)
{
	fprintf(stderr, "floor_node: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* argv[0] started with no signal blocked (ours are, for sigwaitinfo and
 * signalfd) */
static pid_t spawn(char **argv)
{
	posix_spawnattr_t at;
	sigset_t none;
	pid_t pid;
	int e;

	sigemptyset(&none);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
	e = posix_spawn(&pid, argv[0], NULL, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	if (e) {
		errno = e;
		die(argv[0]);
	}
	return pid;
}

/* A relay: starts the next stage, forwards SIGTERM to it, exits as it did. */
static int relay(int depth, char *worker, char *log)
{
	char d[16], *next[] = { self, "relay", d, worker, log, NULL }, *w[] = { worker, log, "hold", NULL };
	sigset_t set;
	siginfo_t si;
	pid_t child;
	int st;

	if (depth <= 0) {
		execv(worker, w);
		die(worker);
	}
	snprintf(d, sizeof(d), "%d", depth - 1);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	child = spawn(next);
	for (;;) {
		if (sigwaitinfo(&set, &si) < 0)
			continue;
		if (si.si_signo == SIGTERM) {
			kill(child, SIGTERM);
			continue;
		}
		if (waitpid(child, &st, WNOHANG) == child)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
}

/* The rank: the worker under `relays` relays. */
static pid_t start_chain(int rank, char *relays, char *worker, char *log)
{
	char r[16], *argv[] = { self, "relay", relays, worker, log, NULL };

	snprintf(r, sizeof(r), "%d", rank);
	setenv("RANK", r, 1);
	return spawn(argv);
}

/* SIGCHLD as a readable fd, for poll. */
static int child_fd(void)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		die("signalfd");
	return fd;
}

/* The chain's status once it ended, else -1. */
static int reaped(int sfd, pid_t chain)
{
	struct signalfd_siginfo si;
	int st;

	while (read(sfd, &si, sizeof(si)) > 0)
		;
	if (waitpid(chain, &st, WNOHANG) != chain)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int node(int port, int rank, char *relays, char *worker, char *log)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	double deadline = now() + DEADLINE_S;
	int fd, sfd, status = -1, one = 1;
	bool stopped = false;
	pid_t chain = 0;
	char c;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (;;) {
		if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
			die("socket");
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			break;
		close(fd);
		if (now() > deadline)
			die("connect");
		usleep(10000 + (unsigned)(rand() % 10000));
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (read(fd, &c, 1) != 1 || c != 'S')
		die("no start from the hub");
	sfd = child_fd();
	chain = start_chain(rank, relays, worker, log);
	while (status < 0) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[0].revents) {
			if (read(fd, &c, 1) != 1) /* the hub is gone: stop */
				c = 'X';
			if (c == 'X' && !stopped) {
				kill(chain, SIGTERM);
				stopped = true;
			}
		}
		if (p[1].revents)
			status = reaped(sfd, chain);
	}
	if (status == 4 && write(fd, "F", 1) != 1)
		die("write");
	return 4;
}

static int hub(int port, int n, char *relays, char *worker, char *log)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct pollfd *p = calloc((size_t)n + 1, sizeof(*p));
	int lfd, sfd, joined = 0, status = -1, one = 1, left = 0;
	double deadline = now() + DEADLINE_S;
	bool stopped = false;
	pid_t chain = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!p || (lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		die("socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 4096) < 0)
		die("listen");
	/* p[0]: our chain's SIGCHLD; p[1 .. n-1]: the nodes */
	while (joined < n - 1) {
		struct pollfd l = { .fd = lfd, .events = POLLIN };
		int fd;

		if (now() > deadline) {
			fprintf(stderr, "floor_node: %d of %d nodes joined\n", joined, n - 1);
			return 2;
		}
		if (poll(&l, 1, 1000) <= 0 || (fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		p[++joined] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	close(lfd);
	for (int i = 1; i < n; i++)
		if (write(p[i].fd, "S", 1) != 1)
			die("write");
	p[0] = (struct pollfd){ .fd = child_fd(), .events = POLLIN };
	sfd = p[0].fd;
	chain = start_chain(0, relays, worker, log);
	while (status < 0) {
		bool failed = false;
		char c;

		if (poll(p, (nfds_t)n, -1) < 0)
			continue;
		for (int i = 1; i < n; i++)
			if (p[i].revents) {
				if (read(p[i].fd, &c, 1) == 1 && c == 'F') {
					failed = true;
				} else { /* gone: ends with the job */
					close(p[i].fd);
					p[i].fd = -1;
				}
			}
		if (p[0].revents && (status = reaped(sfd, chain)) == 4)
			failed = true;
		if (failed && !stopped) {
			for (int i = 1; i < n; i++)
				if (p[i].fd >= 0)
					(void)!write(p[i].fd, "X", 1);
			if (status < 0)
				kill(chain, SIGTERM);
			stopped = true;
		}
	}
	/* until every node has gone, as the chief waits for every DONE */
	for (int i = 1; i < n; i++)
		left += p[i].fd >= 0;
	while (left > 0) {
		char c;

		if (poll(p + 1, (nfds_t)n - 1, 1000) <= 0)
			continue;
		for (int i = 1; i < n; i++)
			if (p[i].fd >= 0 && p[i].revents && read(p[i].fd, &c, 1) <= 0) {
				close(p[i].fd);
				p[i].fd = -1;
				left--;
			}
	}
	return 4;
}

int main(int argc, char **argv)
{
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (k <= 0)
		die("/proc/self/exe");
	self[k] = '\0';
	srand((unsigned)getpid());
	if (argc == 5 && !strcmp(argv[1], "relay"))
		return relay(atoi(argv[2]), argv[3], argv[4]);
	if (argc == 7 && !strcmp(argv[1], "hub"))
		return hub(atoi(argv[2]), atoi(argv[3]), argv[4], argv[5], argv[6]);
	if (argc == 7 && !strcmp(argv[1], "node"))
		return node(atoi(argv[2]), atoi(argv[3]), argv[4], argv[5], argv[6]);
	fprintf(stderr, "usage: floor_node hub PORT N RELAYS WORKER LOG | node PORT RANK RELAYS WORKER LOG\n");
	return 2;
}
