// SPDX-License-Identifier: MIT
#include "ring_schedule.h"

static int mod(int a, int n)
{
	int m = a % n;
	return m < 0 ? m + n : m;
}

void ring_segment(uint64_t count, int n, int i, uint64_t *off, uint64_t *len)
{
	uint64_t base = count / (uint64_t)n, extra = count % (uint64_t)n, ui = (uint64_t)i;

	*len = base + (ui < extra ? 1 : 0);
	*off = base * ui + (ui < extra ? ui : extra);
}

int ring_nsteps(int n)
{
	return 2 * (n - 1);
}

void ring_schedule(int n, int rank, int step, struct ring_step *st)
{
	if (step < n - 1) {
		st->send_seg = mod(rank - step, n);
		st->recv_seg = mod(rank - step - 1, n);
		st->reduce = 1;
		st->last_reduce = step == n - 2;
	} else {
		int t = step - (n - 1);

		st->send_seg = mod(rank + 1 - t, n);
		st->recv_seg = mod(rank - t, n);
		st->reduce = 0;
		st->last_reduce = 0;
	}
}

int ring_owned_segment(int n, int rank)
{
	return mod(rank + 1, n);
}

int ring_gather_nsteps(int n)
{
	return n - 1;
}

void ring_gather_schedule(int n, int rank, int step, struct ring_step *st)
{
	st->send_seg = mod(rank - step, n);
	st->recv_seg = mod(rank - step - 1, n);
	st->reduce = 0;
	st->last_reduce = 0;
}

int ring_use_gather(int n, uint64_t bytes, uint64_t max_fwd, uint64_t room)
{
	return n >= 2 && bytes <= max_fwd / (uint64_t)(n - 1) && bytes <= room / (uint64_t)n;
}
