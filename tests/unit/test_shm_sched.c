// SPDX-License-Identifier: MIT
/* The shared-memory transport's arithmetic: steps and pieces tile any
 * buffer exactly, on cache-line boundaries and inside the slots; the
 * segment's lines and slots never overlap; counters compare across the
 * wrap; ranks group into nodes by key, which crosses the rendezvous in 49
 * bytes. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shm.h"
#include "shm_sched.h"
#include "leak_check.h"

static const uint64_t sizes[] = { 0, 2, 4, 6, 8, 62, 64, 66, 100, 128, 4094, 4096, 65534,
				  65536, 65538, 1000002, 4194304, 7340036 };

LEAK_TEST(shm_sched, steps_and_pieces_tile_the_buffer)
{
	static const uint64_t slots[] = { 4096, 65536, 256 << 10 };

	for (int m = 1; m <= 8; m++) {
		for (size_t k = 0; k < sizeof(slots) / sizeof(slots[0]); k++) {
			for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
				struct shm_plan p;
				uint64_t next = 0, bytes = sizes[z];

				shm_plan_make(&p, bytes, m, slots[k], 0);
				cr_assert_eq(p.small, bytes == 0, "m=%d bytes=%lu", m, (unsigned long)bytes);
				cr_assert_geq(p.nsteps, 1);
				for (uint64_t s = 0; s < p.nsteps; s++) {
					uint64_t off, len, pnext = 0;

					shm_plan_step(&p, s, &off, &len);
					cr_assert_eq(off, next, "m=%d bytes=%lu step %lu", m,
						     (unsigned long)bytes, (unsigned long)s);
					cr_assert(len > 0 || bytes == 0);
					cr_assert_leq(len, slots[k]);
					next = off + len;
					for (int i = 0; i < m; i++) {
						uint64_t po, pl;

						shm_plan_piece(&p, s, i, &po, &pl);
						cr_assert_eq(po, pnext, "m=%d bytes=%lu step %lu piece %d",
							     m, (unsigned long)bytes, (unsigned long)s, i);
						cr_assert(pl == 0 || po % SHM_GRAIN == 0,
							  "piece %d at %lu", i, (unsigned long)po);
						cr_assert_leq(po + pl, slots[k]);
						pnext = po + pl;
					}
					cr_assert_eq(pnext, len, "pieces end at %lu, window %lu",
						     (unsigned long)pnext, (unsigned long)len);
				}
				cr_assert_eq(next, bytes);
			}
		}
	}
}

LEAK_TEST(shm_sched, full_windows_split_evenly_and_the_last_one_too)
{
	struct shm_plan p;
	uint64_t off, len;

	shm_plan_make(&p, (1 << 20) + 200, 4, 256 << 10, 0);
	cr_assert_eq(p.piece, 64 << 10);
	cr_assert_eq(p.window, 256 << 10);
	cr_assert_eq(p.nsteps, 5);
	shm_plan_piece(&p, 2, 3, &off, &len);
	cr_assert(off == 3 * (64 << 10) && len == 64 << 10);
	/* 200 bytes over 4 ranks: pieces of 64, 64, 64, 8 bytes */
	shm_plan_piece(&p, 4, 0, &off, &len);
	cr_assert(off == 0 && len == 64);
	shm_plan_piece(&p, 4, 3, &off, &len);
	cr_assert(off == 192 && len == 8, "%lu %lu", (unsigned long)off, (unsigned long)len);
	/* 100 bytes over 4 ranks: 64, 36, then two empty pieces */
	shm_plan_make(&p, 100, 4, 256 << 10, 0);
	shm_plan_piece(&p, 0, 1, &off, &len);
	cr_assert(off == 64 && len == 36);
	shm_plan_piece(&p, 0, 2, &off, &len);
	cr_assert(off == 100 && len == 0);
}

LEAK_TEST(shm_sched, small_buffers_take_one_whole_step)
{
	struct shm_plan p;
	uint64_t off, len;

	shm_plan_make(&p, 4096, 4, 256 << 10, 16 << 10);
	cr_assert(p.small && p.nsteps == 1);
	for (int i = 0; i < 4; i++) {
		shm_plan_piece(&p, 0, i, &off, &len);
		cr_assert(off == 0 && len == 4096, "every rank reduces all of it");
	}
	shm_plan_make(&p, (16 << 10) + 2, 4, 256 << 10, 16 << 10);
	cr_assert(!p.small);
	/* never more than a slot holds */
	shm_plan_make(&p, 8192, 2, 4096, 1 << 20);
	cr_assert(!p.small && p.nsteps == 2);
}

LEAK_TEST(shm_sched, the_segment_layout_never_overlaps)
{
	for (int m = 1; m <= 9; m++) {
		struct shm_layout l;
		uint64_t prev_end;

		shm_layout_make(&l, m, 4, (256 << 10) + 8);
		cr_assert_eq(l.slot_bytes % SHM_LINE, 0);
		cr_assert_geq(l.ctl_off, SHM_LINE, "the header line comes first");
		cr_assert_geq(l.wait_off, l.ctl_off + (uint64_t)m * SHM_LINE);
		cr_assert_geq(l.abort_off, l.wait_off + (uint64_t)m * SHM_LINE);
		cr_assert_eq(l.abort_off % SHM_LINE, 0);
		cr_assert_geq(l.slots_off, l.abort_off + (uint64_t)m * SHM_ABORT_BYTES);
		cr_assert_eq(l.slots_off % 4096, 0);
		cr_assert_eq(l.total % 4096, 0);
		prev_end = l.slots_off;
		for (int i = 0; i < m; i++) {
			for (uint32_t s = 0; s < 4; s++) {
				uint64_t o = shm_slot_off(&l, i, s);

				cr_assert_eq(o, prev_end, "rank %d slot %u", i, s);
				prev_end = o + l.slot_bytes;
				cr_assert_eq(shm_slot_off(&l, i, s + 4), o, "step s and s+depth share");
			}
		}
		cr_assert_leq(prev_end, l.total);
		/* across the wrap of the 32-bit counter, slots keep their turn */
		cr_assert_eq(shm_slot_off(&l, m - 1, UINT32_MAX), shm_slot_off(&l, m - 1, 3));
		cr_assert_eq(shm_slot_off(&l, m - 1, 0), shm_slot_off(&l, m - 1, UINT32_MAX + 1u));
	}
}

LEAK_TEST(shm_sched, counters_compare_across_the_wrap)
{
	cr_assert(shm_reached(5, 5));
	cr_assert(shm_reached(6, 5));
	cr_assert(!shm_reached(4, 5));
	cr_assert(shm_reached(2, UINT32_MAX - 1), "2 comes after 2^32 - 2");
	cr_assert(!shm_reached(UINT32_MAX - 1, 2));
}

LEAK_TEST(shm_sched, ranks_group_into_nodes_by_key)
{
	static const char keys[6][16] = { "boot-a/1", "boot-a/1", "boot-b/1", "", "boot-b/1", "" };
	int members[6], leaders[6], m;

	m = shm_node_members(&keys[0][0], 16, 6, 1, members);
	cr_assert(m == 2 && members[0] == 0 && members[1] == 1);
	m = shm_node_members(&keys[0][0], 16, 6, 4, members);
	cr_assert(m == 2 && members[0] == 2 && members[1] == 4);
	m = shm_node_members(&keys[0][0], 16, 6, 3, members);
	cr_assert(m == 1 && members[0] == 3, "an empty key shares with nobody");
	m = shm_node_members(&keys[0][0], 16, 6, 5, members);
	cr_assert(m == 1 && members[0] == 5);
	m = shm_node_leaders(&keys[0][0], 16, 6, leaders);
	cr_assert_eq(m, 4);
	cr_assert(leaders[0] == 0 && leaders[1] == 2 && leaders[2] == 3 && leaders[3] == 5);
}

/* A thousand nodes, their ranks interleaved: each node's leader is its
 * lowest rank, in order, as a comparison of every pair would find. */
LEAK_TEST(shm_sched, leaders_of_many_nodes)
{
	enum { N = 4096, NODES = 1024, STRIDE = 24 };
	static char keys[N][STRIDE];
	static int leaders[N];
	int m, k = 0;

	for (int r = 0; r < N; r++) {
		if (r % 97 == 5)
			keys[r][0] = '\0';  /* unknown: a node of its own */
		else
			snprintf(keys[r], STRIDE, "boot-%d", (r * 389) % NODES);
	}
	m = shm_node_leaders(&keys[0][0], STRIDE, N, leaders);
	for (int r = 0; r < N; r++) {
		int first = 1;

		for (int q = 0; q < r && first && keys[r][0]; q++)
			first = strcmp(keys[q], keys[r]) != 0;
		if (!first)
			continue;
		cr_assert_lt(k, m, "rank %d leads a node, but only %d leaders were found", r, m);
		cr_assert_eq(leaders[k], r, "leader %d is %d, not %d", k, leaders[k], r);
		k++;
	}
	cr_assert_eq(k, m);
}

/* What a rank says about its node crosses the rendezvous as 49 bytes
 * (struct frame_node) and comes back the same; an unknown node or a
 * missing socket are zeros and come back empty; whatever bytes a peer
 * sends become hex, never a string of its own. */
LEAK_TEST(shm_sched, node_info_survives_the_table)
{
	struct shm_info in = { .transport = 'a' }, out;
	struct frame_node n;

	snprintf(in.key, sizeof(in.key), "0123456789abcdef00112233445566ff");
	snprintf(in.sock, sizeof(in.sock), "slotrun-ffeeddccbbaa99887766554433221100");
	memset(in.token, 0x5c, sizeof(in.token));
	shm_info_to_node(&in, &n);
	cr_assert_eq(n.transport, 'a');
	cr_assert_eq(n.id[0], 0x01);
	cr_assert_eq(n.id[15], 0xff);
	cr_assert_eq(n.sock[0], 0xff);
	shm_info_from_node(&n, &out);
	cr_assert_eq(memcmp(&in, &out, sizeof(in)), 0);

	memset(&in, 0, sizeof(in));
	in.transport = 't';
	shm_info_to_node(&in, &n);
	shm_info_from_node(&n, &out);
	cr_assert_str_eq(out.key, "");
	cr_assert_str_eq(out.sock, "");
	cr_assert_eq(out.transport, 't');

	memset(&n, 0x0a, sizeof(n));  /* newlines, as bytes */
	shm_info_from_node(&n, &out);
	cr_assert_str_eq(out.key, "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a");
	cr_assert_str_eq(out.sock, "slotrun-0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a");
}
