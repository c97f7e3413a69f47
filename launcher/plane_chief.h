// SPDX-License-Identifier: MIT
/* The chief's side of the job plane: it listens, challenges every
 * connection, lets in the nodes that prove the secret, and carries out
 * what plane_coord decides (plane_proto.h) on the nodes and on its own
 * runner. */
#ifndef SLOTRUN_PLANE_CHIEF_H
#define SLOTRUN_PLANE_CHIEF_H

#include <stdbool.h>
#include <stddef.h>

#include "plane_int.h"

extern const struct plane_side plane_chief_side;

/* Listens on the control port and starts the join timeout.  Returns 0 or
 * a negative errno with a one-line reason in err (-EADDRINUSE: another
 * program holds the port). */
int plane_chief_open(struct plane *p, char *err, size_t errlen);

/* Listens on the control port and accepts there, as the chief does (a
 * relay for its group's nodes too: plane_relay.c).  0, or a negative errno
 * with a one-line reason in err. */
int plane_chief_listen(struct plane *p, char *err, size_t errlen);

/* A node's JOIN came through a relay, on the virtual connection c
 * (plane_tunnel.c): proved, it joins as on a connection of the chief's
 * own; else it is another secret's, or a forgery. */
void plane_chief_joined_via(struct conn *c, const unsigned char *frame, size_t len, bool proved);



/* Elastic: this node takes over as the chief of the job whose chief was
 * lost (plane_elastic_failover): it listens on the control port and waits
 * for the last round's other nodes.  0, or a negative errno with err (it
 * cannot listen: the next candidate's turn). */
int plane_chief_take_over(struct plane *p, bool chief_dead, const char *lost, char *err, size_t errlen);

/* This node's own events, as the coordinator's node 0. */
void plane_chief_local_fail(struct plane *p, const struct plane_cause *f);
void plane_chief_local_signal(struct plane *p, int sig, bool stops, const char *why);
void plane_chief_local_pause(struct plane *p, int sig);
void plane_chief_local_resume(struct plane *p);
void plane_chief_local_done(struct plane *p, int code);

/* Frees what plane_chief_open made (the connections are closed already).
 * Again is fine. */
void plane_chief_close(struct plane *p);

#endif
