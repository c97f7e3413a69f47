// SPDX-License-Identifier: MIT
#include "plane_tunnel.h"

#include <stdlib.h>
#include <string.h>

#include "plane_chief.h"
#include "plane_conn.h"
#include "plane_tree.h"

static struct conn *by_id(const struct conn *r, uint32_t id)
{
	return r->tun && id < r->tun->cap ? r->tun->by_id[id] : NULL;
}

/* Room for id in r's table: 0, or -1 (out of memory, or an id no relay
 * hands out). */
static int make_room(struct conn *r, uint32_t id)
{
	struct plane_tunnels *t = r->tun;
	uint32_t cap;
	struct conn **b;

	if (id >= PLANE_TUNNEL_MAX_ID)
		return -1;
	if (!t && !(t = r->tun = calloc(1, sizeof(*t))))
		return -1;
	if (id < t->cap)
		return 0;
	for (cap = t->cap ? t->cap : 128; cap <= id; cap *= 2)
		;
	b = realloc(t->by_id, cap * sizeof(*b));
	if (!b)
		return -1;
	memset(b + t->cap, 0, (cap - t->cap) * sizeof(*b));
	t->by_id = b;
	t->cap = cap;
	return 0;
}

/* A node's first frame through relay r: its JOIN, proved to the relay or
 * not. */
static void first(struct conn *r, const struct plane_msg *m)
{
	struct conn *c;

	if (m->fwd.frame[4] != PLANE_JOIN) /* a connection the chief dropped meanwhile */
		return;
	if (make_room(r, m->fwd.id) < 0) {
		plane_conn_lost(r, "it relayed more connections than a relay has");
		return;
	}
	c = plane_conn_new_virtual(r->p, r, m->fwd.id, m->fwd.peer);
	if (!c) {
		plane_conn_lost(r, "out of memory");
		return;
	}
	r->tun->by_id[m->fwd.id] = c;
	plane_chief_joined_via(c, m->fwd.frame, m->fwd.len, m->fwd.flags & PLANE_FWD_PROVED);
}

void plane_tunnel_in(struct conn *r, const struct plane_msg *m)
{
	struct plane *p = r->p;
	struct conn *c;

	if (!r->relay || m->fwd.id == 0 || m->fwd.id == PLANE_FWD_ALL) {
		plane_conn_lost(r, "it sent a message out of turn");
		return;
	}
	r->batch = true;
	c = by_id(r, m->fwd.id);
	if (m->type == PLANE_GONE) {
		if (!c)
			return;
		r->tun->by_id[m->fwd.id] = NULL; /* closed there already */
		c->peer_gone = m->fwd.flags & PLANE_FWD_HOST_GONE;
		plane_conn_lost(c, m->cause.text[0] ? m->cause.text : "connection closed");
		return;
	}
	if (!c)
		first(r, m);
	else
		p->side->frame(c, m->fwd.frame, m->fwd.len);
}

void plane_tunnel_send(struct conn *c, const unsigned char *frame, size_t n)
{
	unsigned char out[4 + PLANE_MAX_FRAME];
	struct plane_fwd f = { .id = c->tid, .flags = c->closing ? PLANE_FWD_CLOSE : 0, .frame = frame, .len = n };
	int len = plane_encode_fwd(&f, out, sizeof(out));

	if (len > 0)
		plane_conn_queue(c->via, out, (size_t)len);
}

void plane_tunnel_dropped(struct conn *c)
{
	struct conn *r = c->via;

	if (!r || by_id(r, c->tid) != c)
		return;
	r->tun->by_id[c->tid] = NULL;
	if (!c->p->ended && r->fd >= 0) {
		struct plane_msg m = { .type = PLANE_GONE, .fwd = { .id = c->tid } };

		plane_conn_send(r, &m);
	}
}

void plane_tunnel_relay_dropped(struct conn *r)
{
	struct plane_tunnels *t = r->tun;

	if (!t)
		return;
	free(t->orphans);
	t->orphans = calloc(t->cap ? t->cap : 1, sizeof(*t->orphans));
	t->norphans = 0;
	for (uint32_t id = 0; id < t->cap; id++) {
		struct conn *c = t->by_id[id];

		if (!c)
			continue;
		t->by_id[id] = NULL; /* no word to a relay that is gone */
		if (t->orphans && c->authed && c->node >= 0)
			t->orphans[t->norphans++] = c->node;
		plane_conn_drop(c);
	}
}

void plane_tunnel_broadcast(struct plane *p, const unsigned char *frame, size_t n, int except)
{
	int f = p->cfg->fanout;
	unsigned char out[4 + PLANE_MAX_FRAME];

	for (int r = f; f && r < p->nnodes; r += f) {
		struct conn *c = p->by_node[r], *x = except >= 0 ? p->by_node[except] : NULL;
		struct plane_fwd fw = { .id = PLANE_FWD_ALL, .frame = frame, .len = n };
		int len;

		if (!c || c->virt || !plane_tree_relays(f, p->nnodes, r))
			continue;
		if (x && x->virt && x->via == c)
			fw.except = x->tid;
		len = plane_encode_fwd(&fw, out, sizeof(out));
		if (len > 0)
			plane_conn_queue(c, out, (size_t)len);
	}
}

void plane_tunnel_free(struct conn *c)
{
	if (!c->tun)
		return;
	free(c->tun->by_id);
	free(c->tun->orphans);
	free(c->tun);
	c->tun = NULL;
}
