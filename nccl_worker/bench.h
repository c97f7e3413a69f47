// SPDX-License-Identifier: MIT
/* nccl_worker's benchmark: an nccl-tests style all-reduce sweep, run by
 * every rank of the job described by the worker environment.  Rank 0
 * prints the table (nccl_worker(1), the benchmark table); every rank
 * checks its results; #wrong is summed over ranks. */
#ifndef SLOTRUN_BENCH_H
#define SLOTRUN_BENCH_H

#include <stdint.h>

enum bench_backend { BENCH_AUTO, BENCH_CPU, BENCH_NCCL };

/* Exit statuses of bench_main besides 0 and 1 (errors, wrong results). */
#define BENCH_EXIT_USAGE 2        /* bad flags or environment */
#define BENCH_EXIT_UNAVAILABLE 77 /* --backend nccl where NCCL or a GPU is missing */

struct bench_opts {
	enum bench_backend backend;
	uint64_t minbytes, maxbytes;
	uint64_t factor;     /* sizes grow by this factor ... */
	uint64_t stepbytes;  /* ... or by this many bytes when not 0 */
	long iters, warmup;
	int dtype;           /* enum slotcomm_dtype, or -1 for all */
	int op;              /* enum slotcomm_op, or -1 for all */
	int check;
	int out_of_place;    /* from a send into a receive buffer (NCCL only) */
};

#define BENCH_MAX_BYTES (1ull << 40)

/* "4096", "4K", "64M", "1G" (binary multiples, case-insensitive) into
 * [0, BENCH_MAX_BYTES]: 0 or -EINVAL / -ERANGE. */
int bench_parse_size(const char *s, uint64_t *out);

/* The size after cur: 1 and *next set, or 0 when cur was the last. */
int bench_next_size(const struct bench_opts *o, uint64_t cur, uint64_t *next);

/* Runs the benchmark; returns the exit status (0, 1, 2, 77). */
int bench_main(const struct bench_opts *o);

#endif
