// SPDX-License-Identifier: MIT
#include "bench.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "clock.h"
#include <slotcomm/slotcomm.h>
#include <slotcomm/nccl.h>
#include "verify.h"

int bench_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'k':
		mult = 1ull << 10;
		end++;
		break;
	case 'm':
		mult = 1ull << 20;
		end++;
		break;
	case 'g':
		mult = 1ull << 30;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	if (v > BENCH_MAX_BYTES / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

int bench_next_size(const struct bench_opts *o, uint64_t cur, uint64_t *next)
{
	uint64_t n;

	if (o->stepbytes)
		n = cur + o->stepbytes;
	else if (cur == 0)
		n = 1;
	else if (cur > BENCH_MAX_BYTES / o->factor)
		return 0;
	else
		n = cur * o->factor;
	if (n > o->maxbytes || n <= cur)
		return 0;
	*next = n;
	return 1;
}

/* --- running ------------------------------------------------------------- */

static volatile sig_atomic_t preempt_asked;

static void on_usr1(int sig)
{
	(void)sig;
	preempt_asked = 1;
}

struct run {
	const struct bench_opts *o;
	struct slotcomm *c;
	const struct backend_ops *be;  /* what the all-reduces run on */
	struct backend *b;
	int rank, size;
	void *host;
	double busbw_sum;
	int rows;
	uint64_t wrong_total;
	int corrupt_rank;  /* test hook: this rank spoils one element per buffer checked */
};

struct row_stats {
	double us;
	uint64_t wrong;
};

/* Says why the communicator failed (unless the caller already said why). */
static int die(struct run *r, const char *what)
{
	if (slotcomm_error(r->c)[0])
		fprintf(stderr, "nccl_worker: rank %d: %s%s%s\n", r->rank, what ? what : "",
			what ? ": " : "", slotcomm_error(r->c));
	return 1;
}

/* The inputs into the send buffer and, out of place with exp given, into
 * the receive buffer values that the check against exp counts wrong.
 * Leaves the inputs in host. */
static int load_inputs(struct run *r, size_t count, enum slotcomm_dtype t, enum slotcomm_op op,
		       const struct verify_table *exp)
{
	size_t bytes = count * slotcomm_dtype_size(t);

	if (r->o->out_of_place && exp) {
		verify_poison(r->host, count, exp);
		if (r->be->load(r->b, BACKEND_RECV, r->host, bytes) < 0)
			return -1;
	}
	verify_fill(r->host, count, t, op, r->rank);
	return r->be->load(r->b, BACKEND_SEND, r->host, bytes);
}

/* One checked all-reduce: the wrong elements of its result and, out of
 * place, of the send buffer, which must be left as it was.  The first wrong
 * element of each goes to stderr once the row's counts are exchanged. */
struct row_check {
	uint64_t wrong, first;
	double got, want;
	uint64_t send_wrong, send_first;
	double send_got, send_want;
};

static int check(struct run *r, size_t count, enum slotcomm_dtype t, enum slotcomm_op op,
		 struct row_check *k)
{
	size_t esize = slotcomm_dtype_size(t), bytes = count * esize;
	struct verify_table exp;

	verify_expect(&exp, t, op, r->size);
	if (load_inputs(r, count, t, op, &exp) < 0 || r->be->run(r->b, 1, count, t, op) < 0 ||
	    r->be->fetch(r->b, BACKEND_RECV, r->host, bytes) < 0)
		return -1;
	if (r->corrupt_rank == r->rank && count)
		for (size_t b = 0; b < esize; b++)
			((uint8_t *)r->host)[count / 2 * esize + b] ^= 0x40;
	k->wrong = verify_check(r->host, count, &exp, &k->first, &k->got, &k->want);
	if (!r->o->out_of_place)
		return 0;
	if (r->be->fetch(r->b, BACKEND_SEND, r->host, bytes) < 0)
		return -1;
	if (r->corrupt_rank == r->rank && count)
		for (size_t b = 0; b < esize; b++)
			((uint8_t *)r->host)[b] ^= 0x40;
	verify_expect_input(&exp, t, op, r->rank);
	k->send_wrong = verify_check(r->host, count, &exp, &k->send_first, &k->send_got,
				     &k->send_want);
	return 0;
}

static void say_wrong(const struct run *r, const struct row_check *k, size_t count,
		      enum slotcomm_dtype t, enum slotcomm_op op)
{
	if (k->wrong)
		fprintf(stderr, "nccl_worker: rank %d: %llu wrong elements in %s %s of %zu elements "
			"(first at %llu: got %g, expected %g)\n", r->rank,
			(unsigned long long)k->wrong, slotcomm_dtype_name(t), slotcomm_op_name(op),
			count, (unsigned long long)k->first, k->got, k->want);
	if (k->send_wrong)
		fprintf(stderr, "nccl_worker: rank %d: the out-of-place %s %s of %zu elements changed "
			"%llu elements of its send buffer (first at %llu: %g, was %g)\n", r->rank,
			slotcomm_dtype_name(t), slotcomm_op_name(op), count,
			(unsigned long long)k->send_wrong, (unsigned long long)k->send_first,
			k->send_got, k->send_want);
}

static int row(struct run *r, uint64_t bytes, enum slotcomm_dtype t, enum slotcomm_op op)
{
	size_t esize = slotcomm_dtype_size(t), count = bytes / esize;
	struct row_stats mine = { 0 }, *all;
	struct row_check k = { 0 };
	double t0, us = 0, algbw, busbw;
	uint64_t wrong = 0;

	bytes = count * esize;
	if (load_inputs(r, count, t, op, NULL) < 0 || slotcomm_barrier(r->c) < 0 ||
	    r->be->run(r->b, r->o->warmup, count, t, op) < 0 || slotcomm_barrier(r->c) < 0)
		return -1;
	t0 = clock_mono();
	if (r->be->run(r->b, r->o->iters, count, t, op) < 0)
		return -1;
	mine.us = (clock_mono() - t0) * 1e6 / (double)r->o->iters;
	if (r->o->check) {
		if (check(r, count, t, op, &k) < 0)
			return -1;
		mine.wrong = k.wrong + k.send_wrong;
	}

	all = calloc((size_t)r->size, sizeof(*all));
	if (!all) {
		fprintf(stderr, "nccl_worker: rank %d: out of memory\n", r->rank);
		return -1;
	}
	if (slotcomm_allgather(r->c, &mine, sizeof(mine), all) < 0) {
		free(all);
		return -1;
	}
	/* Said once the ranks are known to agree on this row: ranks that ran
	 * a different number of all-reduces reduced each other's unrelated
	 * data, and the line to see then is the one naming where they parted
	 * (the allgather's failure). */
	say_wrong(r, &k, count, t, op);
	for (int i = 0; i < r->size; i++) {
		us = all[i].us > us ? all[i].us : us;  /* the slowest rank's time */
		wrong += all[i].wrong;
	}
	free(all);
	r->wrong_total += wrong;
	algbw = us > 0 ? (double)bytes / (us * 1e-6) / 1e9 : 0;
	busbw = algbw * 2.0 * (r->size - 1) / r->size;
	r->busbw_sum += busbw;
	r->rows++;
	if (r->rank == 0) {
		printf("%12llu  %12zu  %8s  %6s  %6d  %10.1f  %7.3f  %7.3f  %6llu\n",
		       (unsigned long long)bytes, count, slotcomm_dtype_name(t), slotcomm_op_name(op), -1, us,
		       algbw, busbw, (unsigned long long)wrong);
		fflush(stdout);
	}
	return 0;
}

static void header(struct run *r, const char *backend_note)
{
	const struct bench_opts *o = r->o;
	int shown = r->size < 64 ? r->size : 64;

	if (r->rank != 0)
		return;
	printf("# nccl_worker %s: all-reduce, %s, %ld iterations after %ld warm-up, check %s\n",
	       SLOTRUN_VERSION, o->out_of_place ? "out of place" : "in place", o->iters, o->warmup,
	       o->check ? "on" : "off");
	printf("# ranks %d, hosts %d, nodes %d, local ranks %d, timeout %gs\n", r->size,
	       slotcomm_nhosts(r->c), slotcomm_nnodes(r->c), slotcomm_local_size(r->c), slotcomm_timeout_s(r->c));
	{
		char how[256];

		r->be->describe(r->b, how, sizeof(how));
		printf("# backend %s: %s\n", r->be->name, how);
	}
	if (backend_note)
		printf("# %s\n", backend_note);
	if (r->be == &backend_cpu && slotcomm_transport_note(r->c)[0])
		printf("# %s\n", slotcomm_transport_note(r->c));
	printf("# transport %s\n", r->be == &backend_nccl ? "nccl" : slotcomm_transport_name(r->c));
	for (int i = 0; i < shown; i++)
		printf("#   rank %d: host %s, data plane %s\n", i, slotcomm_peer_host(r->c, i),
		       slotcomm_peer_addr(r->c, i));
	if (shown < r->size)
		printf("#   ... and %d more ranks\n", r->size - shown);
	if (o->check)
		printf("# check: integers exact; floats within a relative float32 %g, float64 %g, "
		       "bf16 %g, fp16 %g\n", verify_tolerance(SLOTCOMM_FLOAT32),
		       verify_tolerance(SLOTCOMM_FLOAT64), verify_tolerance(SLOTCOMM_BF16),
		       verify_tolerance(SLOTCOMM_FP16));
	printf("#\n");
	printf("# %10s  %12s  %8s  %6s  %6s  %10s  %7s  %7s  %6s\n", "size", "count", "type", "redop",
	       "root", "time", "algbw", "busbw", "#wrong");
	printf("# %10s  %12s  %8s  %6s  %6s  %10s  %7s  %7s  %6s\n", "(B)", "(elements)", "", "", "",
	       "(us)", "(GB/s)", "(GB/s)", "");
	fflush(stdout);
}

/* Which backend, agreed by all ranks: NCCL for auto only when every rank
 * can use it; when that is the CPU ring, why in why_cpu ("built without
 * NCCL ...", "rank 3 cannot use NCCL").  NULL when the agreement failed
 * (slotcomm_error says why). */
static const struct backend_ops *choose_backend(struct run *r, int local_ok, const char *why,
						char *why_cpu, size_t len)
{
	unsigned char mine = (unsigned char)local_ok, *all;
	int all_ok = 1, first_bad = -1;

	if (r->o->backend == BENCH_CPU)
		return &backend_cpu;
	if (r->o->backend == BENCH_NCCL)
		return &backend_nccl;  /* checked before the rendezvous */
	all = malloc((size_t)r->size);
	if (!all || slotcomm_allgather(r->c, &mine, 1, all) < 0) {
		free(all);
		return NULL;
	}
	for (int i = 0; i < r->size; i++) {
		if (!all[i]) {
			all_ok = 0;
			if (first_bad < 0)
				first_bad = i;
		}
	}
	free(all);
	if (all_ok)
		return &backend_nccl;
	if (!local_ok)
		snprintf(why_cpu, len, "%s", why);
	else
		snprintf(why_cpu, len, "rank %d cannot use NCCL", first_bad);
	return &backend_cpu;
}

static int run_rows(struct run *r)
{
	const struct bench_opts *o = r->o;
	int t0 = o->dtype < 0 ? 0 : o->dtype, t1 = o->dtype < 0 ? SLOTCOMM_DTYPE_COUNT : o->dtype + 1;
	int p0 = o->op < 0 ? 0 : o->op, p1 = o->op < 0 ? SLOTCOMM_OP_COUNT : o->op + 1;

	for (int t = t0; t < t1; t++) {
		for (int p = p0; p < p1; p++) {
			uint64_t size = o->minbytes;

			for (;;) {
				bool stop = false;

				if (row(r, size, (enum slotcomm_dtype)t, (enum slotcomm_op)p) < 0)
					return die(r, NULL);
				if (slotcomm_should_preempt(r->c, preempt_asked != 0, &stop) < 0)
					return die(r, NULL);
				if (stop) {
					if (r->rank == 0) {
						printf("# preempted: a rank asked to stop (SIGUSR1); "
						       "stopping after %d rows\n", r->rows);
						fflush(stdout);
					}
					return 0;
				}
				if (!bench_next_size(o, size, &size))
					break;
			}
		}
	}
	return 0;
}

int bench_main(const struct bench_opts *o)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct slotcomm_config cfg;
	struct run r = { .o = o };
	char err[SLOTCOMM_ERR_MAX], why[256] = "", why_cpu[256] = "", note[512] = "";
	int local_ok = 0, status = 0;
	size_t cap = o->maxbytes ? (size_t)o->maxbytes : 1;

	/* SIGUSR1 is slotrun's preemption signal: note it, stop at the next row. */
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);

	if (slotcomm_config_from_env(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "nccl_worker: %s\n", err);
		return BENCH_EXIT_USAGE;
	}
	r.rank = cfg.rank;
	r.size = cfg.size;
	/* For the end-to-end test of the check itself: proves that a wrong
	 * element is seen, summed and turned into exit status 1 (out of place,
	 * in the result and in the send buffer as read back). */
	r.corrupt_rank = getenv("NCCL_WORKER_TEST_CORRUPT_RANK")
				 ? atoi(getenv("NCCL_WORKER_TEST_CORRUPT_RANK")) : -1;
	if (o->backend != BENCH_CPU)
		local_ok = slotcomm_nccl_probe(why, sizeof(why)) > 0;
	if (o->backend == BENCH_NCCL && !local_ok) {
		fprintf(stderr, "nccl_worker: rank %d: --backend nccl: %s\n", r.rank, why);
		return BENCH_EXIT_UNAVAILABLE;
	}
	r.host = aligned_alloc(4096, (cap + 4095) / 4096 * 4096);
	if (!r.host) {
		fprintf(stderr, "nccl_worker: rank %d: cannot allocate %zu bytes\n", r.rank, cap);
		return 1;
	}
	if (slotcomm_init(&r.c, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "nccl_worker: rank %d: %s\n", r.rank, err);
		free(r.host);
		return 1;
	}

	r.be = choose_backend(&r, local_ok, why, why_cpu, sizeof(why_cpu));
	if (!r.be) {
		status = die(&r, NULL);
		goto out;
	}
	/* Every rank chose alike, so every rank stops here alike. */
	if (o->out_of_place && !r.be->out_of_place) {
		fprintf(stderr, "nccl_worker: rank %d: -O/--out-of-place: NCCL backend only, and "
			"backend auto chose the CPU ring: %s\n", r.rank, why_cpu);
		status = BENCH_EXIT_USAGE;
		goto out;
	}
	if (why_cpu[0])
		snprintf(note, sizeof(note), "backend auto: %s; using the CPU ring instead", why_cpu);
	if (r.be->open(r.c, cap, o->out_of_place, &r.b) < 0) {
		if (!slotcomm_error(r.c)[0])
			fprintf(stderr, "nccl_worker: rank %d: cannot open the %s backend: out of memory\n",
				r.rank, r.be->name);
		status = die(&r, r.be == &backend_nccl ? "NCCL" : NULL);
		goto out;
	}
	header(&r, note[0] ? note : NULL);
	status = run_rows(&r);
	if (status == 0 && r.rank == 0) {
		printf("# Out of bounds values : %llu %s\n", (unsigned long long)r.wrong_total,
		       r.wrong_total ? "FAILED" : "OK");
		printf("# Avg bus bandwidth    : %g\n", r.rows ? r.busbw_sum / r.rows : 0.0);
		fflush(stdout);
	}
	if (status == 0 && r.wrong_total) {
		if (r.rank == 0)
			fprintf(stderr, "nccl_worker: rank 0: %llu wrong elements over all ranks\n",
				(unsigned long long)r.wrong_total);
		status = 1;
	}
out:
	if (r.b)
		r.be->close(r.b);
	slotcomm_destroy(r.c);
	free(r.host);
	return status;
}
