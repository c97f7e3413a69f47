// SPDX-License-Identifier: MIT
/* The ring schedule, checked by simulation for every n up to 9: which
 * segment each rank owns, that neighbours agree on every step, that every
 * rank ends with every contribution to every segment exactly once, and
 * that each forwarded segment is the one received just before. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "ring_schedule.h"
#include "leak_check.h"

#define NMAX 9

LEAK_TEST(ring_schedule, segments_cover_any_count_without_gaps)
{
	static const uint64_t counts[] = { 0, 1, 2, 3, 5, 7, 8, 9, 10, 17, 1000, 1001, 65537 };

	for (int n = 1; n <= NMAX; n++) {
		for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
			uint64_t next = 0, min = UINT64_MAX, max = 0;

			for (int i = 0; i < n; i++) {
				uint64_t off, len;

				ring_segment(counts[k], n, i, &off, &len);
				cr_assert_eq(off, next, "n=%d count=%lu seg %d starts at %lu", n,
					     (unsigned long)counts[k], i, (unsigned long)off);
				next = off + len;
				min = len < min ? len : min;
				max = len > max ? len : max;
			}
			cr_assert_eq(next, counts[k], "n=%d: segments end at %lu", n, (unsigned long)next);
			cr_assert(max - min <= 1, "n=%d count=%lu: unbalanced %lu..%lu", n,
				  (unsigned long)counts[k], (unsigned long)min, (unsigned long)max);
		}
	}
}

LEAK_TEST(ring_schedule, step_count_is_2_n_minus_1)
{
	for (int n = 1; n <= NMAX; n++)
		cr_assert_eq(ring_nsteps(n), 2 * (n - 1));
}

LEAK_TEST(ring_schedule, neighbours_agree_at_every_step)
{
	for (int n = 2; n <= NMAX; n++) {
		for (int s = 0; s < ring_nsteps(n); s++) {
			for (int r = 0; r < n; r++) {
				struct ring_step me, right;

				ring_schedule(n, r, s, &me);
				ring_schedule(n, (r + 1) % n, s, &right);
				cr_assert_eq(me.send_seg, right.recv_seg,
					     "n=%d step %d: rank %d sends %d, rank %d expects %d", n, s, r,
					     me.send_seg, (r + 1) % n, right.recv_seg);
				cr_assert_eq(me.reduce, s < n - 1);
				cr_assert_eq(me.last_reduce, s == n - 2);
				cr_assert(me.send_seg >= 0 && me.send_seg < n);
				cr_assert(me.recv_seg >= 0 && me.recv_seg < n);
			}
		}
	}
}

LEAK_TEST(ring_schedule, each_step_forwards_what_came_before)
{
	for (int n = 2; n <= NMAX; n++) {
		for (int r = 0; r < n; r++) {
			for (int s = 1; s < ring_nsteps(n); s++) {
				struct ring_step prev, cur;

				ring_schedule(n, r, s - 1, &prev);
				ring_schedule(n, r, s, &cur);
				cr_assert_eq(cur.send_seg, prev.recv_seg, "n=%d rank %d step %d", n, r, s);
			}
		}
	}
}

/* Each rank holds, per segment, the set of ranks whose contribution it
 * has (a bit mask) and whether the value is final.  Play the schedule and
 * check the outcome. */
LEAK_TEST(ring_schedule, simulation_gives_every_rank_the_full_reduction)
{
	for (int n = 1; n <= NMAX; n++) {
		uint32_t have[NMAX][NMAX], sent[NMAX];
		uint32_t all = (1u << n) - 1;

		for (int r = 0; r < n; r++)
			for (int g = 0; g < n; g++)
				have[r][g] = 1u << r;

		for (int s = 0; s < ring_nsteps(n); s++) {
			struct ring_step st[NMAX];

			/* Everyone sends first (what they hold before the step). */
			for (int r = 0; r < n; r++) {
				ring_schedule(n, r, s, &st[r]);
				sent[r] = have[r][st[r].send_seg];
			}
			for (int r = 0; r < n; r++) {
				int left = (r + n - 1) % n;
				uint32_t in = sent[left];
				uint32_t *mine = &have[r][st[r].recv_seg];

				if (st[r].reduce) {
					cr_assert_eq(*mine & in, 0,
						     "n=%d step %d: rank %d would count a contribution twice",
						     n, s, r);
					*mine |= in;
				} else {
					cr_assert_eq(in, all, "n=%d step %d: rank %d got a partial segment "
						     "in the all-gather", n, s, r);
					*mine = in;
				}
			}
			if (s == n - 2) {
				for (int r = 0; r < n; r++)
					cr_assert_eq(have[r][ring_owned_segment(n, r)], all,
						     "n=%d: rank %d does not own segment %d after the "
						     "reduce-scatter", n, r, ring_owned_segment(n, r));
			}
		}
		for (int r = 0; r < n; r++)
			for (int g = 0; g < n; g++)
				cr_assert_eq(have[r][g], all, "n=%d: rank %d segment %d is %#x", n, r, g,
					     have[r][g]);
	}
}

LEAK_TEST(ring_schedule, owners_are_a_permutation)
{
	for (int n = 1; n <= NMAX; n++) {
		uint32_t seen = 0;

		for (int r = 0; r < n; r++)
			seen |= 1u << ring_owned_segment(n, r);
		cr_assert_eq(seen, (1u << n) - 1, "n=%d", n);
	}
}

/* The all-gather ring: neighbours agree, each step forwards the block
 * received just before, and after n-1 steps every rank has every block. */
LEAK_TEST(ring_schedule, gather_ring_delivers_every_block_to_every_rank)
{
	for (int n = 2; n <= NMAX; n++) {
		cr_assert_eq(ring_gather_nsteps(n), n - 1);
		for (int r = 0; r < n; r++) {
			int have[NMAX] = { 0 };

			have[r] = 1;
			for (int s = 0; s < ring_gather_nsteps(n); s++) {
				struct ring_step me, right, prev;

				ring_gather_schedule(n, r, s, &me);
				ring_gather_schedule(n, (r + 1) % n, s, &right);
				cr_assert_eq(me.send_seg, right.recv_seg, "n=%d rank %d step %d", n, r, s);
				cr_assert(!me.reduce && !me.last_reduce);
				cr_assert(have[me.send_seg], "n=%d rank %d step %d sends block %d it lacks",
					  n, r, s, me.send_seg);
				if (s > 0) {
					ring_gather_schedule(n, r, s - 1, &prev);
					cr_assert_eq(me.send_seg, prev.recv_seg);
				}
				cr_assert(!have[me.recv_seg], "n=%d rank %d gets block %d twice", n, r,
					  me.recv_seg);
				have[me.recv_seg] = 1;
			}
			for (int i = 0; i < n; i++)
				cr_assert(have[i], "n=%d rank %d lacks block %d", n, r, i);
		}
	}
}

LEAK_TEST(ring_schedule, gather_ring_only_for_small_buffers_that_fit)
{
	cr_assert(ring_use_gather(2, 0, 48, 1000));
	cr_assert(ring_use_gather(2, 48, 48, 1000));
	cr_assert(!ring_use_gather(2, 49, 48, 1000));
	cr_assert(ring_use_gather(4, 16, 48, 1000));
	cr_assert(!ring_use_gather(4, 17, 48, 1000));
	cr_assert(!ring_use_gather(4, 16, 48, 63));  /* 4 blocks need 64 bytes of room */
	cr_assert(ring_use_gather(4, 16, 48, 64));
	cr_assert(!ring_use_gather(1, 0, 48, 1000));
	cr_assert(!ring_use_gather(3, UINT64_MAX, UINT64_MAX, UINT64_MAX));
}
