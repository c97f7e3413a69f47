// SPDX-License-Identifier: MIT
/* A node that is not the chief finding it: connect tries with a growing
 * delay until the join deadline; an elastic node's list of addresses (a
 * new node cycles through them; a node that may be the chief probes the
 * others for a running job first); after an elastic chief's loss, the
 * round's next chiefs in rank order, each for the heartbeat timeout, and
 * this node's own turn (it takes over).  What happens once connected is
 * plane_member.c's. */
#ifndef SLOTRUN_PLANE_SEEK_H
#define SLOTRUN_PLANE_SEEK_H

#include <stdbool.h>
#include <stddef.h>

#include "plane_int.h"

/* Arms the join deadline and makes the first try.  0, or -ENOMEM with err
 * set. */
int plane_seek_open(struct plane *p, char *err, size_t errlen);

/* Frees the search and its timers. */
void plane_seek_close(struct plane *p);

/* Stops looking (the chief started a round, or this node ends). */
void plane_seek_forget(struct plane *p);

/* A try failed for why: again later, or at the next address. */
void plane_seek_retry(struct plane *p, const char *why);

/* The current address's turn is over: the next one (a failover's next
 * chief; our own turn takes over). */
void plane_seek_next(struct plane *p);

/* The elastic round's chief is lost (chief_dead: its host closed the
 * connection): look for its successor. */
void plane_seek_successor(struct plane *p, bool chief_dead, const char *why);

/* Whether this node is looking for a lost chief's successor. */
bool plane_seek_failover(const struct plane *p);

/* The chief proved the secret: the current address's turn ends there. */
void plane_seek_found(struct plane *p);

/* The chief refused our secret: the node ends with status 2. */
void plane_seek_refused(struct plane *p);

#endif
