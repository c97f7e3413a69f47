// SPDX-License-Identifier: MIT
/* Where a connection comes from (plane_proto.h, plane_where): a JOIN's
 * source address against the nodes' listed addresses, for the evidence of
 * another secret.  Pure, as the rest of the protocol. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plane_proto.h"

/* A numeric address as 16 bytes, IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d),
 * so that both spellings compare equal.  false: not a numeric address. */
static bool parse_addr(const char *s, unsigned char out[16])
{
	struct in_addr a4;

	if (inet_pton(AF_INET, s, &a4) == 1) {
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &a4, 4);
		return true;
	}
	return inet_pton(AF_INET6, s, out) == 1;
}

static bool loopback16(const unsigned char a[16])
{
	static const unsigned char mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const unsigned char one[16] = { [15] = 1 };

	return (memcmp(a, mapped, 12) == 0 && a[12] == 127) || memcmp(a, one, 16) == 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct plane_addr_entry *x = a, *y = b;
	int c = memcmp(x->addr, y->addr, 16);

	return c ? c : (x->node > y->node) - (x->node < y->node);
}

void plane_addr_index_free(struct plane_addr_index *ix)
{
	free(ix->e);
	*ix = (struct plane_addr_index){ .doubt = true };
}

int plane_addr_index_build(struct plane_addr_index *ix, const struct plane_node_addrs *nodes, int nnodes)
{
	size_t cap = 0, n = 0;

	plane_addr_index_free(ix);
	ix->doubt = false;
	for (int k = 0; k < nnodes; k++)
		cap += nodes[k].n > 0 ? (size_t)nodes[k].n : 0;
	if (cap && !(ix->e = malloc(cap * sizeof(*ix->e)))) {
		ix->doubt = true;
		return -ENOMEM;
	}
	for (int k = 0; k < nnodes; k++) {
		if (nodes[k].n < 0)
			ix->doubt = true;
		for (int i = 0; i < nodes[k].n && i < PLANE_NODE_ADDRS; i++) {
			struct plane_addr_entry *e = &ix->e[n];

			if (!parse_addr(nodes[k].addr[i], e->addr)) {
				ix->doubt = true;
				continue;
			}
			ix->doubt = ix->doubt || loopback16(e->addr);
			e->node = k;
			n++;
		}
	}
	if (n)
		qsort(ix->e, n, sizeof(*ix->e), entry_cmp);
	ix->n = 0; /* one entry per (address, node): a node listing one address twice owns it once */
	for (size_t i = 0; i < n; i++)
		if (!ix->n || entry_cmp(&ix->e[ix->n - 1], &ix->e[i]) != 0)
			ix->e[ix->n++] = ix->e[i];
	return 0;
}

enum plane_from plane_where_indexed(const struct plane_addr_index *ix, int claimed, const char *from,
				    int *other)
{
	struct plane_addr_entry key = { .node = -1 };
	size_t lo = 0, hi = ix->n, owners = 0;
	int owner = -1;

	if (!from || !parse_addr(from, key.addr))
		return PLANE_FROM_UNSURE;
	while (lo < hi) { /* the first entry of this address */
		size_t mid = lo + (hi - lo) / 2;

		if (entry_cmp(&ix->e[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < ix->n && memcmp(ix->e[i].addr, key.addr, 16) == 0; i++) {
		if (ix->e[i].node == claimed)
			return PLANE_FROM_CLAIMED;
		owners++;
		owner = ix->e[i].node;
	}
	if (ix->doubt || loopback16(key.addr) || owners != 1)
		return PLANE_FROM_UNSURE;
	*other = owner;
	return PLANE_FROM_OTHER;
}

enum plane_from plane_where(const struct plane_node_addrs *nodes, int nnodes, int claimed,
			    const char *from, int *other)
{
	struct plane_addr_index ix = { 0 };
	enum plane_from r = PLANE_FROM_UNSURE;

	if (plane_addr_index_build(&ix, nodes, nnodes) == 0)
		r = plane_where_indexed(&ix, claimed, from, other);
	plane_addr_index_free(&ix);
	return r;
}
