// SPDX-License-Identifier: MIT
#include "train.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <slotcomm/slotcomm.h>

#include "ckpt.h"
#include "clock.h"
#include "half.h"
#include "io.h"
#include "model.h"
#include "round.h"

static volatile sig_atomic_t stop_asked;

static void on_stop(int sig)
{
	(void)sig;
	stop_asked = 1;
}

struct trainer {
	const struct train_opts *o;
	struct slotcomm *c;
	int rank, size;
	struct model_split split;
	size_t n;                 /* parameters */
	float *params, *target, *acc, *grad;
	uint16_t *half;           /* the fp16 wire buffer (fp16 only) */
	double *losses;           /* rank 0: every rank's loss of this step */
	uint64_t step;            /* steps completed */
	uint32_t acc_count;       /* steps summed in acc */
	uint64_t exchanges;
	double comm_s, reduce_s;  /* time in every collective; in the all-reduces */
};

/* Says why the communicator failed; returns the exit status. */
static int comm_failed(const struct trainer *t, const char *during)
{
	fprintf(stderr, "slotcomm_train: rank %d: %s: %s\n", t->rank, during, slotcomm_error(t->c));
	return 1;
}

/* The mean gradient of the steps in acc, averaged over the ranks and
 * applied.  The CPU ring leaves the same bits on every rank, in an order
 * fixed by the count, type and world size (docs/comm.md, "The TCP
 * ring"), so the ranks' parameters stay equal (final() checks) and a
 * rerun repeats them.
 *
 * With fp16 the mean is rounded to fp16 (to nearest even) and the sum
 * happens in fp16: the ring adds in float and rounds to fp16 at every hop.
 * The division by the world size comes after unpacking, in float32: one
 * fp16 rounding fewer than SLOTCOMM_AVG, whose fp16 division also costs more
 * than the sum.  Each rounding is off by at most 2^-11 relative, so
 * the result is within about n * 2^-11 relative of the float32 mean when
 * the ranks agree in sign (more where they cancel); magnitudes below 2^-14
 * keep fewer bits and below 2^-25 become 0; a partial sum above 65504
 * would overflow to infinity, which dividing by the step count before
 * packing keeps far off (a single step's gradient, times n). */
static int exchange(struct trainer *t)
{
	double t0;
	int r;

	model_mean(t->grad, t->acc, t->n, t->acc_count);
	if (t->o->fp16)
		half_pack(t->half, t->grad, t->n);
	t0 = clock_mono();
	if (t->o->fp16)
		r = slotcomm_allreduce(t->c, t->half, t->n, SLOTCOMM_FP16, SLOTCOMM_SUM);
	else
		r = slotcomm_allreduce(t->c, t->grad, t->n, SLOTCOMM_FLOAT32, SLOTCOMM_AVG);
	t0 = clock_mono() - t0;
	t->comm_s += t0;
	t->reduce_s += t0;
	if (r < 0)
		return r;
	if (t->o->fp16) {
		half_unpack(t->grad, t->half, t->n);
		model_mean(t->grad, t->grad, t->n, (uint32_t)t->size);
	}
	model_apply(t->params, t->grad, t->n);
	memset(t->acc, 0, t->n * sizeof(*t->acc));
	t->acc_count = 0;
	t->exchanges++;
	return 0;
}

/* Rank 0 prints the step's loss: the mean over ranks (in rank order, so the
 * same digits every run) or its own. */
static int report(struct trainer *t, double loss)
{
	if (t->o->average_metrics) {
		double t0 = clock_mono(), sum = 0;
		int r = slotcomm_gather(t->c, &loss, sizeof(loss), t->losses);

		t->comm_s += clock_mono() - t0;
		if (r < 0)
			return r;
		if (t->rank == 0) {
			for (int i = 0; i < t->size; i++)
				sum += t->losses[i];
			loss = sum / t->size;
		}
	}
	if (t->rank == 0) {
		printf("step %llu loss %.9g\n", (unsigned long long)t->step, loss);
		fflush(stdout);
	}
	return 0;
}

/* Test hook (NCCL_WORKER_TEST_HOLD_AFTER_STEP=S): rank 0 waits after step S
 * until SIGTERM or SIGUSR1 arrives (for at most half the timeout, so that
 * its peers, waiting in should_preempt, do not give up on it).  A test can
 * then preempt at a known step with a signal sent when it has seen step S,
 * and no sleep. */
static void hold(const struct trainer *t)
{
	double deadline = clock_mono() + slotcomm_timeout_s(t->c) / 2;
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!stop_asked) {
		double left = deadline - clock_mono();
		struct timespec ts;

		if (left <= 0)
			break;
		ts = clock_ts(left);
		ppoll(NULL, 0, &ts, &old);  /* the signals are let in only here */
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static struct ckpt_state state_of(const struct trainer *t)
{
	const struct train_opts *o = t->o;
	struct ckpt_state s = {
		.cfg = { .seed = o->seed, .grad_bytes = o->grad_bytes, .global_batch = o->global_batch,
			 .world_size = (uint32_t)t->size, .agg_freq = o->agg_freq, .fp16 = o->fp16 },
		.step = t->step, .acc_count = t->acc_count,
	};

	return s;
}

/* Rank 0 writes the checkpoint of the state after t->step, with accs (every
 * rank's accumulator, gathered; NULL when none has a step in it). */
static int save(const struct trainer *t, const float *accs)
{
	struct ckpt_state s = state_of(t);
	size_t len = ckpt_size(&s);
	char err[512];
	uint8_t *buf = malloc(len);

	if (!buf) {
		fprintf(stderr, "slotcomm_train: rank 0: cannot allocate %zu bytes for the checkpoint\n",
			len);
		return 1;
	}
	if (ckpt_encode(&s, t->params, accs, buf, len, err, sizeof(err)) < 0 ||
	    ckpt_write_file(t->o->ckpt_dir, buf, len, err, sizeof(err)) < 0) {
		fprintf(stderr, "slotcomm_train: rank 0: checkpoint: %s\n", err);
		free(buf);
		return 1;
	}
	free(buf);
	printf("checkpoint %s/%s: step %llu, %u steps accumulated, %zu bytes\n", t->o->ckpt_dir,
	       CKPT_FILE, (unsigned long long)t->step, t->acc_count, len);
	return 0;
}

/* Every rank's accumulator to rank 0, which writes the checkpoint: 0, or
 * the exit status. */
static int checkpoint(struct trainer *t)
{
	float *accs = NULL;
	int status;

	if (t->acc_count) {
		double t0 = clock_mono();
		int r;

		if (t->rank == 0 && !(accs = calloc((size_t)t->size * t->n, sizeof(float)))) {
			fprintf(stderr, "slotcomm_train: rank 0: cannot allocate %zu accumulators of "
				"%zu bytes for the checkpoint\n", (size_t)t->size,
				t->n * sizeof(float));
			return 1;  /* the others then fail in the gather, naming rank 0 */
		}
		r = slotcomm_gather(t->c, t->acc, t->n * sizeof(float), accs);
		t->comm_s += clock_mono() - t0;
		if (r < 0) {
			free(accs);
			return comm_failed(t, "checkpoint");
		}
	}
	status = t->rank == 0 ? save(t, accs) : 0;
	free(accs);
	return status;
}

/* Test hook (NCCL_WORKER_TEST_CORRUPT_RANK=R, as nccl_worker's): rank R
 * flips the lowest bit of its first parameter before the ranks compare
 * them at the end, so a test sees the disagreement named. */
static void corrupt_for_test(struct trainer *t)
{
	const char *env = getenv("NCCL_WORKER_TEST_CORRUPT_RANK");
	long rank;
	uint32_t u;

	if (!env || io_parse_long(env, 0, MODEL_MAX_WORLD, &rank) < 0 || rank != t->rank)
		return;
	memcpy(&u, &t->params[0], sizeof(u));
	u ^= 1u;
	memcpy(&t->params[0], &u, sizeof(u));
}

/* Every rank's step and parameter checksum against rank 0's, on every rank
 * (one allgather): 0 with this rank's checksum in *checksum (when not
 * NULL); or 1 after one line naming the ranks that differ, the same on
 * every rank, or naming the failed collective. */
static int agree(struct trainer *t, const char *when, uint64_t *checksum)
{
	struct round_mark mine = { .step = t->step, .checksum = model_checksum(t->params, t->n) };
	struct round_mark *all = calloc((size_t)t->size, sizeof(*all));
	double t0 = clock_mono();
	char err[512];
	int r, status = 0;

	if (!all) {
		fprintf(stderr, "slotcomm_train: rank %d: out of memory\n", t->rank);
		return 1;  /* the others then fail in the allgather, naming this rank */
	}
	r = slotcomm_allgather(t->c, &mine, sizeof(mine), all);
	t->comm_s += clock_mono() - t0;
	if (r < 0) {
		free(all);
		return comm_failed(t, when);
	}
	if (round_agree(all, (uint32_t)t->size, err, sizeof(err))) {
		fprintf(stderr, "slotcomm_train: rank %d: the ranks disagree %s: %s\n", t->rank, when,
			err);
		status = 1;
	}
	free(all);
	if (checksum)
		*checksum = mine.checksum;
	return status;
}

/* Rank 0 reads and checks the checkpoint, plans how this run takes it in
 * and takes its parameters: 0 with the checkpoint in *buf, its state in *s
 * and the plan in *plan; 0 with *fresh set when there is none and
 * --resume-if-present allows that; or the exit status after saying why it
 * refuses (one line). */
static int load(struct trainer *t, uint8_t **buf, struct ckpt_state *s,
		struct round_resume *plan, bool *fresh)
{
	const struct train_opts *o = t->o;
	struct ckpt_config want = state_of(t).cfg;
	size_t len = 0;
	char err[512];
	int status = 0, r;

	r = ckpt_read_file(o->ckpt_dir, ckpt_max_size(&want), buf, &len, err, sizeof(err));
	if (r == -ENOENT && o->resume == TRAIN_RESUME_IF_PRESENT) {
		*fresh = true;
		return 0;
	}
	if (r < 0) {
		fprintf(stderr, "slotcomm_train: rank 0: %s\n", err);
		return 1;
	}
	if (ckpt_decode(*buf, len, s, err, sizeof(err)) < 0)
		status = 1;
	else if (round_resume_plan(s, &want, o->steps, plan, err, sizeof(err)) < 0)
		status = TRAIN_EXIT_USAGE;
	if (status) {
		fprintf(stderr, "slotcomm_train: rank 0: cannot resume from %s/%s: %s\n", o->ckpt_dir,
			CKPT_FILE, err);
		free(*buf);
		*buf = NULL;
		return status;
	}
	ckpt_params(*buf, s, t->params);
	return 0;
}

/* Every rank gets the checkpoint's accumulators as plan says: rank i its
 * own (into acc on rank i, through the scratch grad elsewhere), or the
 * mean of them all that rank 0 computes.  0 or -errno. */
static int share_accs(struct trainer *t, enum round_accs accs, const uint8_t *buf,
		      const struct ckpt_state *s)
{
	size_t bytes = t->n * sizeof(float);
	int r = 0;

	if (accs == ROUND_ACCS_FOLD) {
		if (t->rank == 0)
			ckpt_acc_mean(buf, s, t->grad, t->acc);
		return slotcomm_broadcast(t->c, t->acc, bytes);
	}
	for (int i = 0; r == 0 && accs == ROUND_ACCS_EACH && i < t->size; i++) {
		float *dst = i == t->rank ? t->acc : t->grad;

		if (t->rank == 0)
			ckpt_acc(buf, s, (uint32_t)i, dst);
		r = slotcomm_broadcast(t->c, dst, bytes);
	}
	return r;
}

/* Rank 0 says where the run starts. */
static void print_resumed(const struct trainer *t, bool fresh, const struct round_resume *plan)
{
	char path[4200], line[4600];

	if (t->rank != 0)
		return;
	snprintf(path, sizeof(path), "%s/%s", t->o->ckpt_dir, CKPT_FILE);
	if (fresh)
		printf("no checkpoint %s yet: starting at step 0\n", path);
	else {
		round_resume_line(plan, path, line, sizeof(line));
		printf("%s\n", line);
	}
	fflush(stdout);
}

/* Every rank gets rank 0's checkpoint (the parameters, and the
 * accumulators as round.h says), or its verdict, then the ranks check that
 * they agree: 0; on rank 0 the exit status when it refused; elsewhere -1
 * when rank 0 refused; 1 when the ranks disagree or a collective failed. */
static int resume(struct trainer *t)
{
	struct {
		int32_t status;
		uint32_t fresh, acc_count, accs;
		uint64_t step;
	} m = { 0 };
	struct round_resume plan = { 0 };
	struct ckpt_state s;
	uint8_t *buf = NULL;
	bool fresh = false;
	double t0;
	int r;

	if (t->rank == 0) {
		m.status = load(t, &buf, &s, &plan, &fresh);
		m.fresh = fresh;
		m.step = plan.step;
		m.acc_count = plan.acc_count;
		m.accs = plan.accs;
	}
	t0 = clock_mono();
	r = slotcomm_broadcast(t->c, &m, sizeof(m));
	if (r == 0 && m.status == 0 && !m.fresh)
		r = slotcomm_broadcast(t->c, t->params, t->n * sizeof(float));
	if (r == 0 && m.status == 0 && !m.fresh)
		r = share_accs(t, (enum round_accs)m.accs, buf, &s);
	t->comm_s += clock_mono() - t0;
	free(buf);
	if (r < 0)
		return comm_failed(t, "resume");
	if (m.status) {
		/* Rank 0 said why and exits with the status; the others did
		 * nothing wrong and exit 0, so that a launcher (slotrun's first
		 * failure) always names rank 0 and its line, never a silent peer
		 * that happened to exit first. */
		return t->rank == 0 ? m.status : -1;
	}
	print_resumed(t, m.fresh, &plan);
	if (m.fresh)
		return 0;
	t->step = m.step;
	t->acc_count = m.acc_count;
	return agree(t, "after the resume", NULL);
}

/* The options every rank must share, as the ranks compare them. */
struct shared_opts {
	uint64_t steps, grad_bytes, global_batch, seed, checkpoint_every;
	uint32_t agg_freq;
	uint8_t fp16, average_metrics, resume, resume_if_present;
};

/* The first option in which a and b differ: its name, and both values in
 * av and bv; NULL when they agree. */
static const char *opts_diff(const struct shared_opts *a, const struct shared_opts *b, char *av,
			     char *bv, size_t len)
{
	const struct {
		const char *name;
		uint64_t a, b;
		int flag;  /* a switch: shown as on/off */
	} opt[] = {
		{ "--steps", a->steps, b->steps, 0 },
		{ "--grad-bytes", a->grad_bytes, b->grad_bytes, 0 },
		{ "--global-batch-size", a->global_batch, b->global_batch, 0 },
		{ "--aggregation-frequency", a->agg_freq, b->agg_freq, 0 },
		{ "--seed", a->seed, b->seed, 0 },
		{ "--fp16-compress", a->fp16, b->fp16, 1 },
		{ "--no-average-metrics", !a->average_metrics, !b->average_metrics, 1 },
		{ "--checkpoint-every", a->checkpoint_every, b->checkpoint_every, 0 },
		{ "--resume", a->resume, b->resume, 1 },
		{ "--resume-if-present", a->resume_if_present, b->resume_if_present, 1 },
	};

	for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++) {
		if (opt[i].a == opt[i].b)
			continue;
		if (opt[i].flag) {
			snprintf(av, len, "%s", opt[i].a ? "on" : "off");
			snprintf(bv, len, "%s", opt[i].b ? "on" : "off");
		} else {
			snprintf(av, len, "%llu", (unsigned long long)opt[i].a);
			snprintf(bv, len, "%llu", (unsigned long long)opt[i].b);
		}
		return opt[i].name;
	}
	return NULL;
}

/* Every rank's options against rank 0's, once before the first step: ranks
 * that disagree would otherwise run different collectives, or the same
 * ones on different data, and fail later or not at all.  0; the exit
 * status after one line naming the option, both values and both ranks
 * (the same line on every rank); or 1 when the allgather failed. */
static int check_opts(struct trainer *t)
{
	const struct train_opts *o = t->o;
	struct shared_opts mine = {
		.steps = o->steps, .grad_bytes = o->grad_bytes, .global_batch = o->global_batch,
		.seed = o->seed, .checkpoint_every = o->checkpoint_every, .agg_freq = o->agg_freq,
		.fp16 = o->fp16, .average_metrics = o->average_metrics,
		.resume = o->resume == TRAIN_RESUME,
		.resume_if_present = o->resume == TRAIN_RESUME_IF_PRESENT,
	}, *all = calloc((size_t)t->size, sizeof(*all));
	char av[32], bv[32];
	int status = 0;

	if (!all) {
		fprintf(stderr, "slotcomm_train: rank %d: out of memory\n", t->rank);
		return 1;  /* the others then fail in the allgather, naming this rank */
	}
	if (slotcomm_allgather(t->c, &mine, sizeof(mine), all) < 0) {
		free(all);
		return comm_failed(t, "checking the options");
	}
	for (int i = 1; i < t->size && !status; i++) {
		const char *name = opts_diff(&all[i], &all[0], av, bv, sizeof(av));

		if (name) {
			fprintf(stderr, "slotcomm_train: rank %d: rank %d has %s %s, rank 0 has %s: "
				"every rank must be given the same options\n", t->rank, i, name, av,
				bv);
			status = TRAIN_EXIT_USAGE;
		}
	}
	free(all);
	return status;
}

static void print_start(const struct trainer *t)
{
	const struct train_opts *o = t->o;
	char warn[256];

	if (t->rank != 0)
		return;
	printf("per-slot batch %llu (global %llu over %d slot%s, %llu dropped)\n",
	       (unsigned long long)t->split.per_slot, (unsigned long long)o->global_batch, t->size,
	       t->size == 1 ? "" : "s", (unsigned long long)t->split.dropped);
	printf("train: %zu float32 parameters, %llu steps, all-reduce every %u step%s in %s, "
	       "loss %s, seed %llu\n", t->n, (unsigned long long)o->steps, o->agg_freq,
	       o->agg_freq == 1 ? "" : "s", o->fp16 ? "fp16" : "float32",
	       o->average_metrics ? "averaged over the ranks" : "of rank 0 only",
	       (unsigned long long)o->seed);
	fflush(stdout);
	if (round_split_warning(o->global_batch, (uint64_t)t->size, warn, sizeof(warn)))
		fprintf(stderr, "slotcomm_train: warning: %s\n", warn);
}

static void print_comm(const struct trainer *t, double total)
{
	size_t wire = t->n * (t->o->fp16 ? sizeof(uint16_t) : sizeof(float));

	if (t->rank != 0)
		return;
	printf("comm %.3f s of %.3f s (%.0f%%): %llu all-reduce%s of %zu B (%s) %.3f s, "
	       "metrics and preemption checks %.3f s\n", t->comm_s, total,
	       total > 0 ? 100.0 * t->comm_s / total : 0.0, (unsigned long long)t->exchanges,
	       t->exchanges == 1 ? "" : "s", wire, t->o->fp16 ? "fp16" : "float32", t->reduce_s,
	       t->comm_s - t->reduce_s);
	fflush(stdout);
}

/* Every rank checks that all end at the same step with the same
 * parameters; rank 0 writes the final checkpoint and prints the checksum:
 * 0, or the exit status. */
static int final(struct trainer *t)
{
	uint64_t sum;
	int status;

	corrupt_for_test(t);
	status = agree(t, "at the end", &sum);
	if (t->rank != 0 || status)
		return status;
	if (save(t, NULL))
		return 1;
	printf("final step=%llu checksum=%016llx\n", (unsigned long long)t->step,
	       (unsigned long long)sum);
	fflush(stdout);
	return 0;
}

/* The steps after t->step up to --steps, or until a preemption: 0, or the
 * exit status. */
static int loop(struct trainer *t)
{
	const struct train_opts *o = t->o;
	const char *hold_env = getenv("NCCL_WORKER_TEST_HOLD_AFTER_STEP");
	long hold_step = -1;

	if (hold_env && io_parse_long(hold_env, 1, MODEL_MAX_STEPS, &hold_step) < 0)
		hold_step = -1;
	while (t->step < o->steps) {
		double loss, t0;
		bool stop = false;
		int r;

		loss = model_grad(t->params, t->target, t->n, o->seed, (uint32_t)t->rank,
				  t->step + 1, t->split.per_slot, t->acc);
		if (o->step_ms) { /* a signal cuts it short: the stop is checked below */
			struct timespec ts = clock_ts(o->step_ms / 1000.0);

			(void)nanosleep(&ts, NULL);
		}
		t->step++;
		t->acc_count++;
		if (t->acc_count == o->agg_freq) {
			if (exchange(t) < 0)
				return comm_failed(t, "all-reduce");
			/* the end writes one anyway */
			if (t->rank == 0 && t->step < o->steps &&
			    round_checkpoint_due(t->step, o->agg_freq, o->checkpoint_every) &&
			    save(t, NULL))
				return 1;  /* the others then fail in a collective, naming rank 0 */
		}
		if (report(t, loss) < 0)
			return comm_failed(t, "metrics");
		if (t->rank == 0 && (long)t->step == hold_step)
			hold(t);
		if (t->step == o->steps)
			break;
		t0 = clock_mono();
		r = slotcomm_should_preempt(t->c, stop_asked != 0, &stop);
		t->comm_s += clock_mono() - t0;
		if (r < 0)
			return comm_failed(t, "should_preempt");
		if (stop) {
			printf("preempted at step %llu\n", (unsigned long long)t->step);
			fflush(stdout);
			return checkpoint(t);
		}
	}
	/* The last step always exchanges what is pending (also when a run
	 * preempted with steps pending is resumed with --steps at its step). */
	if (t->acc_count && exchange(t) < 0)
		return comm_failed(t, "all-reduce");
	return final(t);
}

static int run(struct trainer *t, const struct slotcomm_config *cfg)
{
	char err[SLOTCOMM_ERR_MAX];
	double t0;
	int status;

	t->params = calloc(t->n, sizeof(float));
	t->target = calloc(t->n, sizeof(float));
	t->acc = calloc(t->n, sizeof(float));
	t->grad = calloc(t->n, sizeof(float));
	t->half = t->o->fp16 ? calloc(t->n, sizeof(uint16_t)) : NULL;
	t->losses = t->rank == 0 ? calloc((size_t)t->size, sizeof(double)) : NULL;
	if (!t->params || !t->target || !t->acc || !t->grad || (t->o->fp16 && !t->half) ||
	    (t->rank == 0 && !t->losses)) {
		fprintf(stderr, "slotcomm_train: rank %d: cannot allocate the model (%llu bytes each)\n",
			t->rank, (unsigned long long)t->o->grad_bytes);
		return 1;
	}
	model_init(t->params, t->target, t->n, t->o->seed);
	if (slotcomm_init(&t->c, cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "slotcomm_train: rank %d: %s\n", t->rank, err);
		return 1;
	}
	status = check_opts(t);
	if (status)
		return status;
	t0 = clock_mono();
	print_start(t);
	status = t->o->resume != TRAIN_FRESH ? resume(t) : 0;
	if (status < 0)
		return 0;  /* rank 0 refused the checkpoint and is the one to fail */
	if (status == 0)
		status = loop(t);
	if (status == 0)
		print_comm(t, clock_mono() - t0);
	return status;
}

int train_main(const struct train_opts *o)
{
	struct sigaction sa = { .sa_handler = on_stop };
	struct trainer t = { .o = o, .n = (size_t)(o->grad_bytes / 4) };
	struct slotcomm_config cfg;
	char err[SLOTCOMM_ERR_MAX];
	int status;

	/* SIGTERM (what slotrun forwards when it is stopped) and SIGUSR1 (its
	 * preemption signal) only ask: every rank stops after the same step. */
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);

	if (slotcomm_config_from_env(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "slotcomm_train: %s\n", err);
		return TRAIN_EXIT_USAGE;
	}
	t.rank = cfg.rank;
	t.size = cfg.size;
	if (model_split(o->global_batch, (uint64_t)cfg.size, &t.split) == -ERANGE) {
		fprintf(stderr, "slotcomm_train: WORLD_SIZE=%d: slotcomm_train runs at most %u "
			"ranks\n", cfg.size, MODEL_MAX_WORLD);
		return TRAIN_EXIT_USAGE;
	}
	if (t.split.per_slot == 0) {
		fprintf(stderr, "slotcomm_train: --global-batch-size %llu is smaller than the world "
			"size %d: every slot needs at least one sample\n",
			(unsigned long long)o->global_batch, cfg.size);
		return TRAIN_EXIT_USAGE;
	}
	status = run(&t, &cfg);
	slotcomm_destroy(t.c);
	free(t.params);
	free(t.target);
	free(t.acc);
	free(t.grad);
	free(t.half);
	free(t.losses);
	return status;
}
