// SPDX-License-Identifier: MIT
/* The comm library's rendezvous at scale, simulated on one machine: forks
 * N ranks (no exec, no launcher, no wrap_rank: only the library is
 * measured), holds them at a gate, then releases them all at once into
 * slotcomm_init, ITERS barriers and ITERS allgathers of an 8-byte value
 * that every rank checks.  Prints one JSON object on stdout:
 *
 *   ok, ranks, failed (ranks that said why they failed), error (the first
 *   failure's line, a rank's that failed in init first), wrong (allgather
 *   values wrong, over every rank), init_s (from the last rank's start to
 *   the last rank past init), barrier_ms and allgather_ms (per iteration:
 *   from the last rank's entry to the last rank's exit; the median), rank0
 *   {cpu_s (init to the end), init_cpu_s, peak_rss_kib (VmHWM), heap_bytes
 *   (what slotcomm_init left allocated, mallinfo2), fds (descriptors init
 *   opened), nofile_soft (RLIMIT_NOFILE after init)}, ranks_cpu_s (every
 *   rank's CPU time).
 *
 *   rdv_scale -n N [-p PORT] [-t TIMEOUT_S] [-i ITERS] [-T tcp|auto|shm] [-s]
 *
 * Every rank talks to 127.0.0.1:PORT (default: a free port outside the
 * ephemeral range, which the ranks' own sockets use) and calls its
 * host "node-RANK", as if each ran on a machine of its own (-s: the real
 * host name, the same for all).  The ranks race rank 0 to the
 * rendezvous, as under a launcher.  The driver runs itself again with
 * LD_BIND_NOW=1 first, so that the dynamic linker resolves the library's
 * symbols once, before the forks, and not once per rank.  Exit status 0
 * when every rank passed and every value was right, 1 otherwise, 2 for
 * usage. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slotcomm/slotcomm.h>

#define ITERS_MAX 16

struct rank_rec {
	int64_t start, init_end;
	int64_t bar_in[ITERS_MAX], bar_out[ITERS_MAX];
	int64_t ag_in[ITERS_MAX], ag_out[ITERS_MAX];
	uint64_t wrong;
	int done;
	char err[256];
};

struct rank0_rec {
	double cpu_s, init_cpu_s;
	long peak_rss_kib;
	long long heap_bytes;
	int fds;
	long long nofile_soft;
};

struct opts {
	int n, port, iters, same_host;
	double timeout_s;
	enum slotcomm_transport transport;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;  /* the directory's own */
}

static long vm_hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static long long heap_bytes(void)
{
	struct mallinfo2 m = mallinfo2();

	return (long long)(m.uordblks + m.hblkhd);
}

static uint64_t value_of(int rank, int iter)
{
	uint64_t x = (uint64_t)rank * 0x9e3779b97f4a7c15ull + (uint64_t)iter * 0xbf58476d1ce4e5b9ull;

	return x ^ (x >> 29);
}

/* One rank, in a child: never returns. */
static void rank_main(const struct opts *o, int rank, int gate, struct rank_rec *rec,
		      struct rank0_rec *r0)
{
	struct slotcomm_config cfg;
	struct slotcomm *c;
	char b;
	uint64_t *all = NULL;
	double cpu0 = 0;
	long long heap0 = 0;
	int fds0 = 0, st = 1;

	if (read(gate, &b, 1) != 0)  /* EOF: the parent opened the gate */
		_exit(1);
	close(gate);
	slotcomm_config_init(&cfg);
	cfg.rank = rank;
	cfg.size = o->n;
	cfg.local_rank = rank;
	cfg.local_size = o->n;
	snprintf(cfg.master_addr, sizeof(cfg.master_addr), "127.0.0.1");
	cfg.master_port = o->port;
	cfg.timeout_s = o->timeout_s;
	cfg.transport = o->transport;
	snprintf(cfg.secret, sizeof(cfg.secret), "rdv-scale-secret");
	if (!o->same_host)
		snprintf(cfg.host, sizeof(cfg.host), "node-%d", rank);
	if (rank == 0) {
		cpu0 = cpu_s();
		heap0 = heap_bytes();
		fds0 = count_fds();
	}
	rec->start = now_ns();
	if (slotcomm_init(&c, &cfg, rec->err, sizeof(rec->err)) < 0)
		_exit(1);
	rec->init_end = now_ns();
	if (rank == 0) {
		struct rlimit rl;

		r0->init_cpu_s = cpu_s() - cpu0;
		r0->heap_bytes = heap_bytes() - heap0;
		r0->fds = count_fds() - fds0;
		r0->nofile_soft = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (long long)rl.rlim_cur : -1;
	}
	all = malloc(sizeof(*all) * (size_t)o->n);
	if (!all) {
		snprintf(rec->err, sizeof(rec->err), "out of memory");
		goto out;
	}
	for (int i = 0; i < o->iters; i++) {
		rec->bar_in[i] = now_ns();
		if (slotcomm_barrier(c) < 0)
			goto failed;
		rec->bar_out[i] = now_ns();
	}
	for (int i = 0; i < o->iters; i++) {
		uint64_t mine = value_of(rank, i);

		memset(all, 0xee, sizeof(*all) * (size_t)o->n);
		rec->ag_in[i] = now_ns();
		if (slotcomm_allgather(c, &mine, sizeof(mine), all) < 0)
			goto failed;
		rec->ag_out[i] = now_ns();
		for (int r = 0; r < o->n; r++)
			rec->wrong += all[r] != value_of(r, i);
	}
	if (rank == 0) {
		r0->cpu_s = cpu_s() - cpu0;
		r0->peak_rss_kib = vm_hwm_kib();
	}
	rec->done = 1;
	st = rec->wrong ? 1 : 0;
	if (rec->wrong)
		snprintf(rec->err, sizeof(rec->err), "%" PRIu64 " allgather values wrong", rec->wrong);
	goto out;
failed:
	snprintf(rec->err, sizeof(rec->err), "%s", slotcomm_error(c));
out:
	free(all);
	slotcomm_destroy(c);
	_exit(st);
}

/* A free port below the kernel's ephemeral range: a thousand ranks bind
 * and connect from ephemeral ports while rank 0 starts, and one of them
 * would otherwise take the port first now and then. */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
	int lo = 32768, hi = 60999, port = -1;

	if (f) {
		if (fscanf(f, "%d %d", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	srand((unsigned)now_ns() ^ (unsigned)getpid());
	for (int tries = 0; tries < 100 && port < 0; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), p;

		if (lo > 11024)
			p = 10000 + rand() % (lo - 11024);
		else if (hi < 64535)
			p = hi + 1 + rand() % (65535 - hi);
		else
			p = 1024 + rand() % 64000;
		a.sin_port = htons((uint16_t)p);
		if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			port = p;
		if (fd >= 0)
			close(fd);
	}
	return port;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Over iterations: max(out) - max(in), the median, in ms. */
static double phase_ms(const struct rank_rec *recs, int n, int iters, int barrier)
{
	int64_t span[ITERS_MAX];

	for (int i = 0; i < iters; i++) {
		int64_t in = 0, out = 0;

		for (int r = 0; r < n; r++) {
			int64_t a = barrier ? recs[r].bar_in[i] : recs[r].ag_in[i];
			int64_t b = barrier ? recs[r].bar_out[i] : recs[r].ag_out[i];

			in = a > in ? a : in;
			out = b > out ? b : out;
		}
		span[i] = out - in;
	}
	qsort(span, (size_t)iters, sizeof(span[0]), cmp_i64);
	return iters % 2 ? span[iters / 2] / 1e6 : (span[iters / 2 - 1] + span[iters / 2]) / 2e6;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void report(const struct opts *o, const struct rank_rec *recs, const struct rank0_rec *r0,
		   int failed, int first_failed, double ranks_cpu)
{
	int64_t last_start = 0, last_init = 0;
	uint64_t wrong = 0;
	int ok = failed == 0;

	for (int r = 0; r < o->n; r++) {
		last_start = recs[r].start > last_start ? recs[r].start : last_start;
		last_init = recs[r].init_end > last_init ? recs[r].init_end : last_init;
		wrong += recs[r].wrong;
	}
	printf("{\"ok\": %s, \"ranks\": %d, \"iters\": %d, \"failed\": %d, \"wrong\": %" PRIu64,
	       ok ? "true" : "false", o->n, o->iters, failed, wrong);
	printf(", \"error\": ");
	if (first_failed >= 0) {
		char line[400];

		snprintf(line, sizeof(line), "rank %d: %s", first_failed,
			 recs[first_failed].err[0] ? recs[first_failed].err : "died");
		json_str(line);
	} else {
		json_str("");
	}
	if (ok)
		printf(", \"init_s\": %.4f, \"barrier_ms\": %.3f, \"allgather_ms\": %.3f"
		       ", \"rank0\": {\"cpu_s\": %.4f, \"init_cpu_s\": %.4f, \"peak_rss_kib\": %ld"
		       ", \"heap_bytes\": %lld, \"fds\": %d, \"nofile_soft\": %lld}",
		       (last_init - last_start) / 1e9, phase_ms(recs, o->n, o->iters, 1),
		       phase_ms(recs, o->n, o->iters, 0), r0->cpu_s, r0->init_cpu_s, r0->peak_rss_kib,
		       r0->heap_bytes, r0->fds, r0->nofile_soft);
	printf(", \"ranks_cpu_s\": %.3f}\n", ranks_cpu);
}

static int usage(void)
{
	fprintf(stderr, "usage: rdv_scale -n N [-p PORT] [-t TIMEOUT_S] [-i ITERS] [-T tcp|auto|shm] "
		"[-s]\n");
	return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
	int opt;

	*o = (struct opts){ .n = 0, .port = 0, .iters = 5, .timeout_s = 60,
			    .transport = SLOTCOMM_TRANSPORT_TCP };
	while ((opt = getopt(argc, argv, "n:p:t:i:T:s")) != -1) {
		switch (opt) {
		case 's': o->same_host = 1; break;
		case 'n': o->n = atoi(optarg); break;
		case 'p': o->port = atoi(optarg); break;
		case 't': o->timeout_s = atof(optarg); break;
		case 'i': o->iters = atoi(optarg); break;
		case 'T':
			if (!strcmp(optarg, "tcp"))
				o->transport = SLOTCOMM_TRANSPORT_TCP;
			else if (!strcmp(optarg, "auto"))
				o->transport = SLOTCOMM_TRANSPORT_AUTO;
			else if (!strcmp(optarg, "shm"))
				o->transport = SLOTCOMM_TRANSPORT_SHM;
			else
				return -1;
			break;
		default: return -1;
		}
	}
	if (optind != argc || o->n < 2 || o->n > SLOTCOMM_MAX_RANKS || o->iters < 1 ||
	    o->iters > ITERS_MAX || o->timeout_s <= 0)
		return -1;
	if (!o->port)
		o->port = free_port();
	return o->port > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct rank_rec *recs;
	struct rank0_rec *r0;
	pid_t *pids;
	int gate[2], failed = 0, first_failed = -1, killed = 0, left;
	struct rusage ru;
	size_t maplen;

	if (!getenv("LD_BIND_NOW")) {
		setenv("LD_BIND_NOW", "1", 1);
		execv("/proc/self/exe", argv);
	}
	if (parse(argc, argv, &o) < 0)
		return usage();
	maplen = sizeof(*recs) * (size_t)o.n + sizeof(*r0);
	recs = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pids = calloc((size_t)o.n, sizeof(*pids));
	if (recs == MAP_FAILED || !pids || pipe2(gate, O_CLOEXEC) < 0) {
		perror("rdv_scale");
		return 1;
	}
	r0 = (struct rank0_rec *)(recs + o.n);
	fflush(stdout);
	for (int r = 0; r < o.n; r++) {
		pids[r] = fork();
		if (pids[r] < 0) {
			fprintf(stderr, "rdv_scale: fork of rank %d: %s\n", r, strerror(errno));
			for (int q = 0; q < r; q++)
				kill(pids[q], SIGKILL);
			return 1;
		}
		if (pids[r] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(1);
			close(gate[1]);
			rank_main(&o, r, gate[0], &recs[r], r0);
		}
	}
	close(gate[0]);
	close(gate[1]);  /* every rank starts now */

	/* A rank that fails ends the run: the others are killed, as a launcher
	 * would, instead of waiting out their timeout. */
	for (left = o.n; left > 0; left--) {
		int st;
		pid_t p = wait(&st);

		if (p < 0)
			break;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue;
		for (int r = 0; r < o.n; r++)
			if (pids[r] == p && (first_failed < 0 || (!recs[first_failed].err[0] && recs[r].err[0])))
				first_failed = r;
		if (!killed) {
			killed = 1;
			for (int r = 0; r < o.n; r++)
				if (pids[r] != p)
					kill(pids[r], SIGKILL);
		}
	}
	for (int r = 0; r < o.n; r++) {
		failed += recs[r].err[0] != '\0';
		/* a rank that failed in init is nearer the cause than those told */
		if (recs[r].err[0] && !recs[r].init_end &&
		    (first_failed < 0 || recs[first_failed].init_end || !recs[first_failed].err[0]))
			first_failed = r;
	}
	if (killed && !failed)
		failed = 1;  /* one died without a word */
	getrusage(RUSAGE_CHILDREN, &ru);
	report(&o, recs, r0, failed, first_failed,
	       (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
		       ru.ru_stime.tv_usec / 1e6);
	fflush(stdout);
	free(pids);
	munmap(recs, maplen);
	return failed ? 1 : 0;
}
