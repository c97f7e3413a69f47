// SPDX-License-Identifier: MIT
/* The chief of an elastic job (--nnodes MIN:MAX): the roster and the
 * rounds (plane_round.h decides, this carries it out), nodes that arrive,
 * leave or are lost between and during rounds, and the chief that takes
 * over after its predecessor's loss.  Within a round the coordinator
 * (plane_coord) runs the job as in a fixed-size one; its end comes here.
 * Internal to the job plane (plane_chief.c calls in). */
#ifndef SLOTRUN_PLANE_ELASTIC_H
#define SLOTRUN_PLANE_ELASTIC_H

#include <stdbool.h>

#include "plane_conn.h"
#include "plane_int.h"

/* The chief's elastic state, itself alone in the roster.  0 or -ENOMEM. */
int plane_elastic_open(struct plane *p);

/* Frees it.  Again is fine. */
void plane_elastic_close(struct plane *p);

/* A node proved the secret (its WELCOME is sent) and asks to join with m's
 * JOIN: agreed and taken in (it waits for the next round, which may be
 * formed now), or refused. */
void plane_elastic_join(struct conn *c, const struct plane_msg *m);

/* A frame from a node that waits for its round. */
void plane_elastic_frame(struct conn *c, const struct plane_msg *m);

/* c was lost.  True when handled here (a waiting node); false for a node
 * of the running round, which the coordinator handles (this remembers
 * whether its host closed the connection). */
bool plane_elastic_lost(struct conn *c, const char *why);

/* c was closed: it is no node's connection any more. */
void plane_elastic_dropped(struct conn *c);

/* The round's coordinator ended the round: the next one, or the job's end. */
void plane_elastic_round_over(struct plane *p);

/* Whether no round runs now: the first has not formed, or the next is to. */
bool plane_elastic_idle(const struct plane *p);

/* Our slotrun got sig while no round runs (a stop ends the job). */
void plane_elastic_local_signal(struct plane *p, int sig, bool stops, const char *why);

/* Our workers are all reaped while no round runs (after a failover). */
void plane_elastic_local_done(struct plane *p);

/* Our own loop did not run for longer than the nodes wait, while no round
 * runs: the job ends, naming this node (why). */
void plane_elastic_self_lost(struct plane *p, const char *why);

/* The join timeout, before the first round. */
void plane_elastic_join_timeout(struct plane *p);

/* This node, now listening as the chief (plane_chief_take_over), takes
 * over after the loss of the chief of the round it was in (p->round): it
 * waits for the round's other nodes to come back, for up to the heartbeat
 * timeout, then forms the next round, or stops the job for want of a
 * majority.  chief_dead: the lost chief's host closed its connection;
 * lost: why it was lost. */
void plane_elastic_failover(struct plane *p, bool chief_dead, const char *lost);

#endif
