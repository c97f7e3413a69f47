// SPDX-License-Identifier: MIT
/* A relay's side of the relay tree (docs/job-plane.md, "The tree"): the
 * first node of a group listens on the control port, runs the handshake
 * with its group's nodes as the chief would, and carries their frames to
 * the chief and back as PLANE_FWD on its own connection to the chief.  It
 * decides nothing: the chief's coordinator does, as for its own nodes.
 * Heartbeats run per hop: the relay judges its nodes' silence, and says a
 * node's loss to the chief (PLANE_GONE); its nodes judge the relay's. */
#ifndef SLOTRUN_PLANE_RELAY_H
#define SLOTRUN_PLANE_RELAY_H

#include <stdbool.h>
#include <stddef.h>

#include "plane_int.h"

extern const struct plane_side plane_relay_side;

/* This node relays for its group: it listens on the control port.  0, or
 * a negative errno with a one-line reason in err.  Where another slotrun
 * of this host listens there already (several nodes on one host), it says
 * so and relays for none: the group's nodes reach that one, which passes
 * them on as any relay does. */
int plane_relay_open(struct plane *p, char *err, size_t errlen);

/* The chief welcomed this node: what its group said meanwhile goes up. */
void plane_relay_up(struct plane *p);

/* PLANE_FWD or PLANE_GONE from the chief. */
void plane_relay_down(struct plane *p, const struct plane_msg *m);

/* This node lost the chief (cause): every node behind it hears that cause
 * and stops as it does. */
void plane_relay_upstream_lost(struct plane *p, const struct plane_cause *cause);

/* This node's slotrun stops itself (a terminal stop): its group pauses at
 * once, since the chief's PAUSE reaches them only through it. */
void plane_relay_pause(struct plane *p, int sig);

/* The chief says the job will not start (ABORT, code): whether this relay
 * stays to pass it on, until every node of its group has heard it or the
 * join timeout; it ends with code then. */
bool plane_relay_hold_abort(struct plane *p, int code);

/* The chief closed while this relay held its ABORT: it ends with it
 * (true), as the chief ended the join. */
bool plane_relay_end_held(struct plane *p);

void plane_relay_close(struct plane *p);

#endif
