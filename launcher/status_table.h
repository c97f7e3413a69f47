// SPDX-License-Identifier: MIT
/* `slotrun status` as text: the job's header line, a table with a row per
 * rank, a line per lagging rank saying why, and the stacks when asked for.
 * Pure: the rows come in decoded (status_row.h), the text goes out. */
#ifndef SLOTRUN_STATUS_TABLE_H
#define SLOTRUN_STATUS_TABLE_H

#include <jansson.h>
#include <stddef.h>

#include "status_row.h"

/* The whole text, malloc'd (NULL out of memory), every line ending in
 * '\n' and at most width columns wide where it can be (the last column,
 * the rank's last line, is cut to fit; width <= 0: not cut).  stacks is
 * the reply's "stacks" member or NULL: an array of {node, rank, pid,
 * text} or {node, rank, pid, error}. */
char *status_table(const struct status_job *job, const struct status_row *rows, int n, const json_t *stacks,
		   int width);

/* Short forms for the table: "850ms", "42s", "3m05s", "2h03m" (buf).  */
const char *status_table_duration(double s, char *buf, size_t size);

/* "512B", "3.2K", "12.0M", "1.5G" (powers of 1024). */
const char *status_table_bytes(unsigned long long b, char *buf, size_t size);

/* The prefix of s that fits in cols columns (each UTF-8 character one
 * column, never cut inside one): its length in bytes. */
size_t status_table_fit(const char *s, int cols);

#endif
