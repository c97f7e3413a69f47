// SPDX-License-Identifier: MIT
/* slotcomm_train --steps N --grad-bytes B --global-batch-size G ...
 *
 * An example program on the slotcomm library: a deterministic simulated
 * data-parallel training loop (train.h).  It uses the library only through
 * its public headers, <slotcomm/...>, as a trainer outside the tree would. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "model.h"
#include "train.h"

/* Errors are one line: every rank prints them into one log. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("slotcomm_train: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see slotcomm_train --help)\n", stderr);
	return TRAIN_EXIT_USAGE;
}

/* "4096", "4K", "64M" (binary multiples, case-insensitive): 0 or -EINVAL. */
static int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'k':
		shift = 10;
		end++;
		break;
	case 'm':
		shift = 20;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static const char train_usage[] =
	"Usage: slotcomm_train --steps N --grad-bytes B --global-batch-size G\n"
	"                      [--aggregation-frequency K] [--fp16-compress]\n"
	"                      [--no-average-metrics] --checkpoint-dir DIR\n"
	"                      [--checkpoint-every N] [--resume | --resume-if-present]\n"
	"                      [--seed S] [--step-time MS]\n"
	"\n"
	"A deterministic simulated data-parallel training loop, run as one rank of a job\n"
	"(the worker environment of the slotcomm library; slotrun sets it).  Every rank\n"
	"computes the gradient of its per-slot batch (global // ranks, the rest dropped)\n"
	"on B bytes of float32 parameters drawn from the seed; every K steps, and at the\n"
	"last, the mean gradient is all-reduced (averaged over the ranks) and applied.\n"
	"Rank 0 prints the split, 'step S loss L' each step, 'final step=N checksum=HEX'\n"
	"and the time spent communicating.\n"
	"\n"
	"  --steps N                   steps to run (from 1)\n"
	"  --grad-bytes B              parameter bytes, a multiple of 4; K, M suffixes (<= 256M)\n"
	"  --global-batch-size G       samples per step over all ranks (>= the world size)\n"
	"  --aggregation-frequency K   steps per gradient exchange                    [1]\n"
	"  --fp16-compress             all-reduce the gradient as fp16 (summed in fp16)\n"
	"  --no-average-metrics        print rank 0's loss, not the mean over the ranks\n"
	"  --checkpoint-dir DIR        rank 0 writes DIR/train.ckpt when preempted and at\n"
	"                              the end\n"
	"  --checkpoint-every N        and every N steps, after the exchange that ends\n"
	"                              them (steps N, 2N, ... when K divides N)   [0: off]\n"
	"  --resume                    continue from DIR/train.ckpt (same configuration,\n"
	"                              any world size)\n"
	"  --resume-if-present         the same when DIR/train.ckpt exists, else start\n"
	"                              from step 0: one command line for every round\n"
	"  --seed S                    the model's and the data's seed                [0]\n"
"  --step-time MS              simulated compute per step (sleeps; results do not\n"
"                              depend on it)                                  [0]\n"
	"  -h, --help                  this help\n"
	"\n"
	"SIGTERM or SIGUSR1 to any rank (slotrun forwards both) stops every rank after the\n"
	"same step: each prints 'preempted at step S', rank 0 writes the checkpoint, all\n"
	"exit 0.  Resumed with as many ranks, a run ends with the same checksum as one\n"
	"never interrupted.  With another number of ranks (a round of an elastic job),\n"
	"it keeps the global batch, splits it over the new ranks (with the same warning\n"
	"when it does not divide) and goes on from the checkpoint's step; gradients\n"
	"pending in the checkpoint are averaged over its ranks into every new rank's.\n"
	"Rank 0 says 'resumed at step S from DIR/train.ckpt (world size A -> B,\n"
	"per-slot batch X -> Y), P steps accumulated'.  After a resume and at the end,\n"
	"the ranks compare their step and parameters; a difference is one line naming\n"
	"the ranks, and exit 1 on every rank.\n"
	"Every rank must be given the same options but --checkpoint-dir: the ranks compare\n"
	"them at start, and one line on every rank names the first that differs.\n"
	"Exit status: 0 finished or preempted; 1 a failure, a missing or damaged\n"
	"checkpoint, or ranks that disagree; 2 bad flags or environment, ranks given\n"
	"different options, or a checkpoint of another configuration (--grad-bytes,\n"
	"--global-batch-size, --aggregation-frequency, --fp16-compress, --seed).\n";

/* What getopt_long's ':' (a missing value) or '?' (an unknown option) was
 * about. */
static int option_error(int ch, char **argv)
{
	if (ch == ':')
		return usage_error("option '%s' needs a value", argv[optind - 1]);
	return usage_error("unknown option '%s'", argv[optind - 1]);
}

enum {
	O_STEPS = 256, O_GRAD, O_BATCH, O_AGG, O_FP16, O_NOAVG, O_DIR, O_EVERY, O_RESUME,
	O_RESUME_IF, O_SEED, O_STEP_TIME
};

static const struct option longopts[] = {
	{ "steps", required_argument, NULL, O_STEPS },
	{ "grad-bytes", required_argument, NULL, O_GRAD },
	{ "global-batch-size", required_argument, NULL, O_BATCH },
	{ "aggregation-frequency", required_argument, NULL, O_AGG },
	{ "fp16-compress", no_argument, NULL, O_FP16 },
	{ "no-average-metrics", no_argument, NULL, O_NOAVG },
	{ "checkpoint-dir", required_argument, NULL, O_DIR },
	{ "checkpoint-every", required_argument, NULL, O_EVERY },
	{ "resume", no_argument, NULL, O_RESUME },
	{ "resume-if-present", no_argument, NULL, O_RESUME_IF },
	{ "seed", required_argument, NULL, O_SEED },
	{ "step-time", required_argument, NULL, O_STEP_TIME },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* apply_option's answer when parsing goes on; anything else is the exit
 * status. */
enum { KEEP_PARSING = -1 };

/* Applies one option that getopt_long returned as ch: KEEP_PARSING, or the
 * exit status (after --help or a usage error). */
static int apply_option(int ch, struct train_opts *o, char **argv)
{
	long v;

	switch (ch) {
	case O_STEPS:
		if (io_parse_long(optarg, 1, MODEL_MAX_STEPS, &v) < 0)
			return usage_error("--steps '%s': expected a count from 1 to %u", optarg,
					   MODEL_MAX_STEPS);
		o->steps = (uint64_t)v;
		return KEEP_PARSING;
	case O_GRAD:
		if (parse_size(optarg, &o->grad_bytes) < 0 || o->grad_bytes < 4 ||
		    o->grad_bytes % 4 || o->grad_bytes > MODEL_MAX_GRAD_BYTES)
			return usage_error("--grad-bytes '%s': expected a multiple of 4 from 4 to 256M",
					   optarg);
		return KEEP_PARSING;
	case O_BATCH:
		if (io_parse_long(optarg, 1, MODEL_MAX_BATCH, &v) < 0)
			return usage_error("--global-batch-size '%s': expected a count from 1 to %u",
					   optarg, MODEL_MAX_BATCH);
		o->global_batch = (uint64_t)v;
		return KEEP_PARSING;
	case O_AGG:
		if (io_parse_long(optarg, 1, MODEL_MAX_AGG, &v) < 0)
			return usage_error("--aggregation-frequency '%s': expected a count from 1 to %u",
					   optarg, MODEL_MAX_AGG);
		o->agg_freq = (uint32_t)v;
		return KEEP_PARSING;
	case O_FP16:
		o->fp16 = true;
		return KEEP_PARSING;
	case O_NOAVG:
		o->average_metrics = false;
		return KEEP_PARSING;
	case O_DIR:
		if (!*optarg)
			return usage_error("--checkpoint-dir: expected a folder");
		o->ckpt_dir = optarg;
		return KEEP_PARSING;
	case O_EVERY:
		if (io_parse_long(optarg, 0, MODEL_MAX_STEPS, &v) < 0)
			return usage_error("--checkpoint-every '%s': expected a count of steps from 0 "
					   "(off) to %u", optarg, MODEL_MAX_STEPS);
		o->checkpoint_every = (uint64_t)v;
		return KEEP_PARSING;
	case O_RESUME:
	case O_RESUME_IF:
		if (o->resume != TRAIN_FRESH &&
		    o->resume != (ch == O_RESUME ? TRAIN_RESUME : TRAIN_RESUME_IF_PRESENT))
			return usage_error("--resume and --resume-if-present: give one of them");
		o->resume = ch == O_RESUME ? TRAIN_RESUME : TRAIN_RESUME_IF_PRESENT;
		return KEEP_PARSING;
	case O_SEED:
		if (io_parse_long(optarg, 0, LONG_MAX, &v) < 0)
			return usage_error("--seed '%s': expected a number from 0", optarg);
		o->seed = (uint64_t)v;
		return KEEP_PARSING;
	case O_STEP_TIME:
		if (io_parse_long(optarg, 0, 60000, &v) < 0)
			return usage_error("--step-time '%s': expected milliseconds from 0 to 60000", optarg);
		o->step_ms = (unsigned)v;
		return KEEP_PARSING;
	case 'h':
		fputs(train_usage, stdout);
		return 0;
	default:
		return option_error(ch, argv);
	}
}

/* The options without a default: 0, or the usage error's exit status. */
static int check_required(const struct train_opts *o)
{
	if (!o->steps)
		return usage_error("--steps is required");
	if (!o->grad_bytes)
		return usage_error("--grad-bytes is required");
	if (!o->global_batch)
		return usage_error("--global-batch-size is required");
	if (!o->ckpt_dir)
		return usage_error("--checkpoint-dir is required");
	return 0;
}

int main(int argc, char **argv)
{
	struct train_opts o = { .agg_freq = 1, .average_metrics = true };
	int ch, rc;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1)
		if ((rc = apply_option(ch, &o, argv)) != KEEP_PARSING)
			return rc;
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	rc = check_required(&o);
	if (rc)
		return rc;
	return train_main(&o);
}
