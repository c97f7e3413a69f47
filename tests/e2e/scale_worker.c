// SPDX-License-Identifier: MIT
/* The worker of the simulated nodes (sim_nodes.py, for test_scale.py and
 * bench/scale.py): as cheap as a worker can be, so that what a simulation
 * of many nodes on one machine measures is slotrun.  It appends one line
 * per event to the file LOG, each one write(2) of O_APPEND (so lines of
 * many workers never mix), stamped with CLOCK_MONOTONIC (the driver's
 * time.monotonic_ns):
 *
 *   start RANK ATTEMPT NS PID   when it runs
 *   fail RANK ATTEMPT NS        on SIGUSR1, then exit 4 (the failure)
 *   term RANK ATTEMPT NS        on SIGTERM (the stop reached it), then
 *                               dies of it
 *
 * Usage: scale_worker LOG hold|exit
 *   hold: the first attempt waits for a signal, later attempts exit 0
 *   exit: exit 0 at once
 * The attempt is TORCHELASTIC_RESTART_COUNT, the rank RANK. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_fd = -1;
static int rank, attempt;

static void say(const char *what, int with_pid)
{
	struct timespec ts;
	char line[128];
	int n;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (with_pid)
		n = snprintf(line, sizeof(line), "%s %d %d %lld %d\n", what, rank, attempt,
			     (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, (int)getpid());
	else
		n = snprintf(line, sizeof(line), "%s %d %d %lld\n", what, rank, attempt,
			     (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	if (write(log_fd, line, (size_t)n) != n)
		_exit(3);
}

static void on_usr1(int sig)
{
	(void)sig;
	say("fail", 0);
	_exit(4);
}

static void on_term(int sig)
{
	say("term", 0);
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(int argc, char **argv)
{
	const char *r = getenv("RANK"), *a = getenv("TORCHELASTIC_RESTART_COUNT");
	sigset_t none;

	if (argc != 3 || (strcmp(argv[2], "hold") && strcmp(argv[2], "exit"))) {
		fprintf(stderr, "usage: scale_worker LOG hold|exit\n");
		return 2;
	}
	rank = r ? atoi(r) : -1;
	attempt = a ? atoi(a) : 0;
	log_fd = open(argv[1], O_WRONLY | O_APPEND | O_CLOEXEC);
	if (log_fd < 0) {
		perror(argv[1]);
		return 3;
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGTERM, on_term);
	say("start", 1);
	if (strcmp(argv[2], "hold") || attempt > 0)
		return 0;
	sigemptyset(&none);
	for (;;)
		sigsuspend(&none);
}
