// SPDX-License-Identifier: MIT
/* The chief's side of the relay tree (docs/job-plane.md, "The tree"): each
 * node behind a relay is a virtual connection (struct conn's virt), so the
 * chief's side and its coordinator treat it as they treat a node of its
 * own; its frames travel on the relay's connection as PLANE_FWD, and a
 * broadcast crosses each relay's connection once. */
#ifndef SLOTRUN_PLANE_TUNNEL_H
#define SLOTRUN_PLANE_TUNNEL_H

#include <stddef.h>
#include <stdint.h>

#include "plane_proto.h"

struct conn;
struct plane;

/* A relay's connection, on the chief: the nodes behind it, by the relay's
 * id of their connection. */
struct plane_tunnels {
	struct conn **by_id;
	uint32_t cap;
	int *orphans;     /* the nodes that were behind it when it was dropped */
	int norphans;
};

/* A relay's id of a connection is below this: a relay hands them out one
 * by one, to its group's nodes and their retries. */
#define PLANE_TUNNEL_MAX_ID (1u << 20)

/* PLANE_FWD or PLANE_GONE (m) on relay r's connection. */
void plane_tunnel_in(struct conn *r, const struct plane_msg *m);

/* A plain frame for the virtual connection c, sent on its relay's. */
void plane_tunnel_send(struct conn *c, const unsigned char *frame, size_t n);

/* The virtual connection c is dropped: the relay closes the node's
 * connection, unless the node's loss came from the relay. */
void plane_tunnel_dropped(struct conn *c);

/* Relay r's connection is dropped: so is every node behind it, and
 * r->tun->orphans names them (plane_chief.c counts them lost after r). */
void plane_tunnel_relay_dropped(struct conn *r);

/* frame for every node behind every relay, but node except (-1: none):
 * one PLANE_FWD per relay. */
void plane_tunnel_broadcast(struct plane *p, const unsigned char *frame, size_t n, int except);

/* c's tunnel state, at its end. */
void plane_tunnel_free(struct conn *c);

#endif
