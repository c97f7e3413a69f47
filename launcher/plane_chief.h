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
 * a negative errno with a one-line reason in err. */
int plane_chief_open(struct plane *p, char *err, size_t errlen);

/* This node's own events, as the coordinator's node 0. */
void plane_chief_local_fail(struct plane *p, const struct plane_cause *f);
void plane_chief_local_signal(struct plane *p, int sig, bool stops, const char *why);
void plane_chief_local_pause(struct plane *p, int sig);
void plane_chief_local_resume(struct plane *p);
void plane_chief_local_done(struct plane *p, int code);

/* Frees what plane_chief_open made (the connections are closed already). */
void plane_chief_close(struct plane *p);

#endif
