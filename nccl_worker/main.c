// SPDX-License-Identifier: MIT
/* nccl_worker [--backend auto|cpu|nccl] [-b MIN] [-e MAX] [-f FACTOR] ...
 *
 * The all-reduce benchmark of the slotcomm library, which it links as any
 * program outside the tree would. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include <slotcomm/slotcomm.h>
#include "io.h"

static const char usage[] =
	"Usage: nccl_worker [--backend auto|cpu|nccl] [-b MINBYTES] [-e MAXBYTES] [-f FACTOR]\n"
	"                   [-i STEPBYTES] [-n ITERS] [-w WARMUP] [-d TYPE] [-o OP] [-c CHECK]\n"
	"                   [-O]\n"
	"\n"
	"An nccl-tests style all-reduce benchmark, run as one rank of a job: start one\n"
	"per rank (slotrun does) with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,\n"
	"MASTER_ADDR, MASTER_PORT and SLOTRUN_JOB_SECRET set.  Rank 0 prints the table:\n"
	"size count type redop root time algbw busbw #wrong (time in us, GB/s = 1e9 B/s,\n"
	"busbw = algbw * 2(n-1)/n).  Every rank checks every element.\n"
	"\n"
	"  --backend B       auto (NCCL when every rank has a GPU, else the CPU ring),\n"
	"                    cpu, or nccl                                  [auto]\n"
	"  -b, --minbytes N  smallest size; K, M, G suffixes              [32M]\n"
	"  -e, --maxbytes N  largest size                                  [32M]\n"
	"  -f, --stepfactor F  multiply the size by F each row             [2]\n"
	"  -i, --stepbytes N   or add N bytes each row\n"
	"  -n, --iters N     timed iterations per row                      [20]\n"
	"  -w, --warmup_iters N  untimed iterations first                  [5]\n"
	"  -d, --datatype T  float32|float|float64|double|int32|int|int64|bf16|bfloat16|\n"
	"                    fp16|half|all                                 [float32]\n"
	"  -o, --op OP       sum|prod|min|max|avg|all                      [sum]\n"
	"  -c, --check 0|1   check the results                             [1]\n"
	"  -O, --out-of-place  all-reduce from a send into a receive buffer\n"
	"                    (nccl-tests' out-of-place columns; NCCL backend only)\n"
	"  -h, --help        this help;  --version  the version\n"
	"\n"
	"Environment: SLOTRUN_TIMEOUT (seconds, default 300), SLOTRUN_TRANSPORT (auto|tcp|shm),\n"
	"NCCL_SOCKET_IFNAME.  SIGUSR1 to any rank stops all of them after the current row.\n"
	"Exit status: 0 all right; 1 wrong elements or a failure (one line on stderr names\n"
	"the rank at fault); 2 bad flags or environment; 77 --backend nccl without NCCL or\n"
	"a GPU.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("nccl_worker: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'nccl_worker --help'.\n", stderr);
	return BENCH_EXIT_USAGE;
}

/* What getopt_long's ':' (a missing value) or '?' (an unknown option) was
 * about. */
static int option_error(int ch, char **argv)
{
	if (ch == ':')
		return usage_error("option '%s' needs a value", argv[optind - 1]);
	return usage_error("unknown option '%s'", argv[optind - 1]);
}

static const struct option longopts[] = {
	{ "backend", required_argument, NULL, 'B' },
	{ "minbytes", required_argument, NULL, 'b' },
	{ "maxbytes", required_argument, NULL, 'e' },
	{ "stepfactor", required_argument, NULL, 'f' },
	{ "stepbytes", required_argument, NULL, 'i' },
	{ "iters", required_argument, NULL, 'n' },
	{ "warmup_iters", required_argument, NULL, 'w' },
	{ "datatype", required_argument, NULL, 'd' },
	{ "op", required_argument, NULL, 'o' },
	{ "check", required_argument, NULL, 'c' },
	{ "out-of-place", no_argument, NULL, 'O' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* apply_option's answer when parsing goes on; anything else is the exit
 * status. */
enum { KEEP_PARSING = -1 };

static int parse_backend(const char *arg, struct bench_opts *o)
{
	if (strcmp(arg, "auto") == 0)
		o->backend = BENCH_AUTO;
	else if (strcmp(arg, "cpu") == 0)
		o->backend = BENCH_CPU;
	else if (strcmp(arg, "nccl") == 0)
		o->backend = BENCH_NCCL;
	else
		return usage_error("--backend '%s': expected auto, cpu or nccl", arg);
	return KEEP_PARSING;
}

/* -d and -o take a name or "all" (-1: every one in turn). */
static int parse_dtype(const char *arg, struct bench_opts *o)
{
	if (strcmp(arg, "all") == 0)
		o->dtype = -1;
	else if ((o->dtype = slotcomm_dtype_parse(arg)) < 0)
		return usage_error("-d '%s': expected float32, float64, int32, int64, bf16, "
				   "fp16 or all", arg);
	return KEEP_PARSING;
}

static int parse_op(const char *arg, struct bench_opts *o)
{
	if (strcmp(arg, "all") == 0)
		o->op = -1;
	else if ((o->op = slotcomm_op_parse(arg)) < 0)
		return usage_error("-o '%s': expected sum, prod, min, max, avg or all", arg);
	return KEEP_PARSING;
}

/* Applies one option that getopt_long returned as ch: KEEP_PARSING, or the
 * exit status (after --help, --version or a usage error). */
static int apply_option(int ch, struct bench_opts *o, char **argv)
{
	long v;

	switch (ch) {
	case 'B':
		return parse_backend(optarg, o);
	case 'b':
		if (bench_parse_size(optarg, &o->minbytes) < 0)
			return usage_error("-b '%s': expected a size such as 4096, 4K or 64M", optarg);
		return KEEP_PARSING;
	case 'e':
		if (bench_parse_size(optarg, &o->maxbytes) < 0)
			return usage_error("-e '%s': expected a size such as 4096, 4K or 64M", optarg);
		return KEEP_PARSING;
	case 'f':
		if (io_parse_long(optarg, 2, 1024, &v) < 0)
			return usage_error("-f '%s': expected a factor from 2 to 1024", optarg);
		o->factor = (uint64_t)v;
		return KEEP_PARSING;
	case 'i':
		if (bench_parse_size(optarg, &o->stepbytes) < 0 || o->stepbytes == 0)
			return usage_error("-i '%s': expected a size above 0", optarg);
		return KEEP_PARSING;
	case 'n':
		if (io_parse_long(optarg, 1, 1000000000, &o->iters) < 0)
			return usage_error("-n '%s': expected a count from 1", optarg);
		return KEEP_PARSING;
	case 'w':
		if (io_parse_long(optarg, 0, 1000000000, &o->warmup) < 0)
			return usage_error("-w '%s': expected a count from 0", optarg);
		return KEEP_PARSING;
	case 'd':
		return parse_dtype(optarg, o);
	case 'o':
		return parse_op(optarg, o);
	case 'c':
		if (io_parse_long(optarg, 0, 1, &v) < 0)
			return usage_error("-c '%s': expected 0 or 1", optarg);
		o->check = (int)v;
		return KEEP_PARSING;
	case 'O':
		o->out_of_place = 1;
		return KEEP_PARSING;
	case 'h':
		fputs(usage, stdout);
		return 0;
	case 'V':
		puts("nccl_worker " SLOTRUN_VERSION);
		return 0;
	default:
		return option_error(ch, argv);
	}
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.backend = BENCH_AUTO, .minbytes = 32u << 20, .maxbytes = 32u << 20, .factor = 2,
		.iters = 20, .warmup = 5, .dtype = SLOTCOMM_FLOAT32, .op = SLOTCOMM_SUM, .check = 1,
	};
	int ch, rc;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":b:e:f:i:n:w:d:o:c:Oh", longopts, NULL)) != -1)
		if ((rc = apply_option(ch, &o, argv)) != KEEP_PARSING)
			return rc;
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (o.minbytes > o.maxbytes)
		return usage_error("-b is larger than -e");
	if (o.out_of_place && o.backend == BENCH_CPU)
		return usage_error("-O/--out-of-place: NCCL backend only (the CPU ring's all-reduce "
				   "is in place)");
	return bench_main(&o);
}
