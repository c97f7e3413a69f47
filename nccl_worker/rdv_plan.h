// SPDX-License-Identifier: MIT
/* The rendezvous's decisions at scale, as pure functions (no I/O, no
 * clock: times and limits come in as values), so that unit tests reach
 * every branch: which connection rank 0 takes next under a join storm,
 * how many descriptors a communicator needs and what RLIMIT_NOFILE must
 * become for it, and how many distinct strings a table holds.  Internal to the comm library. */
#ifndef SLOTRUN_RDV_PLAN_H
#define SLOTRUN_RDV_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What rank 0 does with the next connection waiting in its listener's
 * backlog, np connections being held unregistered (at most cap), the
 * oldest since oldest_since (ns): take it (RDV_TAKE); take it and send the
 * oldest away to come back later (RDV_EVICT: it has been held min_age and
 * did not register, so a newer one gets its turn); or leave it in the
 * backlog (RDV_WAIT) until *when, the moment the oldest may be sent away.
 * A genuine rank registers within a round trip, so under a join storm of
 * genuine ranks the table turns over without evictions; silent strangers
 * cost a newcomer at most min_age, and nobody is ever dropped unheard the
 * moment a newer connection comes. */
enum rdv_admit { RDV_TAKE, RDV_EVICT, RDV_WAIT };
enum rdv_admit rdv_admit(int np, int cap, int64_t oldest_since, int64_t now, int64_t min_age,
			 int64_t *when);

/* Descriptors a rank of a communicator of size ranks uses beyond those
 * already open: rank 0 holds a control connection per other rank and up
 * to pending_max unregistered ones; every rank a control connection, two
 * listeners and two ring connections; a node of local_size ranks sharing
 * memory (may_shm) one socket per member at its leader, and the segment. */
long rdv_fds_needed(int rank, int size, int local_size, bool may_shm, int pending_max);

/* What RLIMIT_NOFILE's soft limit must become for need descriptors (the
 * limit bounds descriptor numbers, so need counts those open too): 0 when
 * soft is enough; 1 with *set the hard limit, to raise it to (as most
 * servers do at start; a soft limit exists for select(2)'s sake, which
 * the library does not use); -EMFILE when even the hard limit is too few.
 * UINT64_MAX is RLIM_INFINITY. */
int rdv_nofile_plan(uint64_t need, uint64_t soft, uint64_t hard, uint64_t *set);

/* How many distinct strings there are among the n of s.  O(n log n);
 * scratch holds n ints. */
int rdv_count_distinct(const char *const *s, int n, int *scratch);

#endif
