// SPDX-License-Identifier: MIT
/* Slurm's hostlist syntax, as in SLURM_JOB_NODELIST. */
#ifndef SLOTRUN_HOSTLIST_H
#define SLOTRUN_HOSTLIST_H

#include <stddef.h>

/* Expands a Slurm hostlist ("gpu[01-04,07],cpu-a[1-2]", zero padding kept)
 * into *n malloc'd names (free each, then the array), in Slurm's order:
 * hosts as written, ranges in a bracket as written, and with several
 * brackets in one name ("r[1-2]n[01-02]") the last bracket varies fastest
 * (r1n01 r1n02 r2n01 r2n02).  The width of a range is that of its first
 * number ("08-10": 08 09 10; "8-10": 8 9 10).  label names the list in
 * messages ("SLURM_JOB_NODELIST 'gpu[01-': unclosed '['"); s NULL is the
 * empty list.  Returns 0, or -EINVAL with the reason in err (empty list or
 * name, unclosed or stray bracket, reversed or malformed range, more than
 * CI_MAX_NODES names, a name over 253 bytes, whitespace or control
 * characters), or -ENOMEM; *hosts is NULL then. */
int hostlist_parse(const char *label, const char *s, char ***hosts, int *n, char *err,
		   size_t errlen);

#endif
