// SPDX-License-Identifier: MIT
/* Documents across the job plane (plane.h, "Seeing inside"): a node's
 * status query, answered by the chief from every node's part, and another
 * node's timeline events for the chief.  The documents are JSON text the
 * runner makes and merges (live.c); the plane only carries them, in
 * pieces (PLANE_PART), each query with a deadline.  Internal to the plane:
 * plane_chief.c and plane_member.c hand it the frames. */
#ifndef SLOTRUN_PLANE_QUERY_H
#define SLOTRUN_PLANE_QUERY_H

#include "plane_conn.h"
#include "plane_int.h"

/* A document carried over the plane is at most this large: what a
 * connection queues must stay well below what counts as a peer that
 * stopped reading (1 MiB).  A larger one is replaced by a short JSON
 * error. */
#define PLANE_DOC_MAX (384 * 1024)

/* The chief: a node (c) asks for the whole job's status (QUERY). */
void plane_query_asked(struct conn *c, const struct plane_msg *m);

/* A node: the chief asks for this node's part (ASK). */
void plane_query_ask(struct plane *p, const struct plane_msg *m);

/* A piece of a document (PART): on the chief, a node's part; on a node,
 * the job's status it asked for. */
void plane_query_piece(struct conn *c, const struct plane_msg *m);

/* The chief: another node's timeline event (EVENT). */
void plane_query_event(struct conn *c, const struct plane_msg *m);

/* c is closing: nothing waits for it any more (a gather it asked for
 * answers nobody, its part is not waited for). */
void plane_query_dropped(struct conn *c);

/* Frees every query still waiting (their callbacks are not called). */
void plane_query_close(struct plane *p);

#endif
