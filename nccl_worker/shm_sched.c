// SPDX-License-Identifier: MIT
#include "shm_sched.h"

#include <stdlib.h>
#include <string.h>

static uint64_t round_up(uint64_t x, uint64_t to)
{
	return (x + to - 1) / to * to;
}

void shm_plan_make(struct shm_plan *p, uint64_t bytes, int m, uint64_t slot_bytes,
		   uint64_t small_max)
{
	p->bytes = bytes;
	p->m = m;
	p->small = bytes <= small_max && bytes <= slot_bytes;
	if (p->small) {
		p->nsteps = 1;
		p->window = bytes;
		p->piece = bytes;
		return;
	}
	p->piece = slot_bytes / (uint64_t)m / SHM_GRAIN * SHM_GRAIN;
	p->window = p->piece * (uint64_t)m;
	p->nsteps = bytes ? (bytes + p->window - 1) / p->window : 1;
}

void shm_plan_step(const struct shm_plan *p, uint64_t s, uint64_t *off, uint64_t *len)
{
	*off = s * p->window;
	if (*off >= p->bytes) {
		*off = p->bytes;
		*len = 0;
	} else {
		*len = p->bytes - *off < p->window ? p->bytes - *off : p->window;
	}
}

void shm_plan_piece(const struct shm_plan *p, uint64_t s, int i, uint64_t *off, uint64_t *len)
{
	uint64_t woff, wlen, q;

	shm_plan_step(p, s, &woff, &wlen);
	if (p->small) {
		/* Every rank reduces the whole buffer: each "owns" all of it. */
		*off = 0;
		*len = wlen;
		return;
	}
	/* A full window cuts into m pieces of p->piece; the last, shorter one
	 * into pieces of a grain-aligned m-th, the tail ones shorter or empty. */
	q = wlen == p->window ? p->piece : round_up((wlen + (uint64_t)p->m - 1) / (uint64_t)p->m,
						      SHM_GRAIN);
	*off = (uint64_t)i * q;
	if (*off >= wlen) {
		*off = wlen;
		*len = 0;
	} else {
		*len = wlen - *off < q ? wlen - *off : q;
	}
}

void shm_layout_make(struct shm_layout *l, int m, int depth, uint64_t slot_bytes)
{
	l->m = m;
	l->depth = depth;
	l->slot_bytes = round_up(slot_bytes, SHM_LINE);
	l->ctl_off = SHM_LINE;
	l->wait_off = l->ctl_off + (uint64_t)m * SHM_LINE;
	l->abort_off = l->wait_off + (uint64_t)m * SHM_LINE;
	l->slots_off = round_up(l->abort_off + (uint64_t)m * SHM_ABORT_BYTES, 4096);
	l->total = round_up(l->slots_off + (uint64_t)m * (uint64_t)depth * l->slot_bytes, 4096);
}

uint64_t shm_slot_off(const struct shm_layout *l, int i, uint32_t s)
{
	return l->slots_off + ((uint64_t)i * (uint64_t)l->depth + s % (uint32_t)l->depth) *
				      l->slot_bytes;
}

static int same_node(const char *keys, size_t stride, int a, int b)
{
	const char *ka = keys + (size_t)a * stride, *kb = keys + (size_t)b * stride;

	return a == b || (ka[0] && strcmp(ka, kb) == 0);
}

int shm_node_members(const char *keys, size_t stride, int n, int me, int *members)
{
	int m = 0;

	for (int r = 0; r < n; r++)
		if (same_node(keys, stride, r, me))
			members[m++] = r;
	return m;
}

struct keyed {
	const char *keys;
	size_t stride;
};

/* By key, then rank; an empty key sorts by rank only, a node of its own. */
static int by_key(const void *a, const void *b, void *arg)
{
	const struct keyed *t = arg;
	int x = *(const int *)a, y = *(const int *)b, d;
	const char *kx = t->keys + (size_t)x * t->stride, *ky = t->keys + (size_t)y * t->stride;

	d = strcmp(kx, ky);
	return d ? d : (x > y) - (x < y);
}

static int by_rank(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int shm_node_leaders(const char *keys, size_t stride, int n, int *leaders)
{
	struct keyed t = { keys, stride };
	int k = 0;

	/* Sorted by (key, rank), a node's leader is the first of its run. */
	for (int r = 0; r < n; r++)
		leaders[r] = r;
	qsort_r(leaders, (size_t)n, sizeof(*leaders), by_key, &t);
	for (int i = 0; i < n; i++)
		if (i == 0 || !same_node(keys, stride, leaders[i - 1], leaders[i]))
			leaders[k++] = leaders[i];
	qsort(leaders, (size_t)k, sizeof(*leaders), by_rank);
	return k;
}
