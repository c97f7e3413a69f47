// SPDX-License-Identifier: MIT
/* The rounds of an elastic job (--nnodes MIN:MAX), as the chief decides
 * them: who is in the job (the roster), when the first round starts, which
 * node gets which rank in each round, and what follows the end of a round
 * (the next round, or the job's end).  Pure: values in, values out, no
 * clock (times come in as arguments), so every rule is unit-tested; the
 * chief carries the decisions out (plane_elastic.c).  docs/job-plane.md,
 * "Elastic jobs", says why each rule is what it is. */
#ifndef SLOTRUN_PLANE_ROUND_H
#define SLOTRUN_PLANE_ROUND_H

#include <stdbool.h>
#include <stdint.h>

#include "plane_proto.h"

struct restart_policy;

/* One node the chief knows.  Index 0 is the chief itself. */
struct plane_node {
	unsigned char id[PLANE_ID_LEN];
	char host[PLANE_HOST_MAX];   /* as the chief reaches it (the address it joined from) */
	int slots;
	int pref;                    /* the rank it asked for, or -1 */
	int rank;                    /* in the current round, or -1: it waits for the next */
	int prev;                    /* its rank in the round before the current one, or -1 */
	uint64_t order;              /* arrival: earlier is lower */
	bool gone;                   /* lost or left: it takes no further part */
	void *tag;                   /* the caller's (the chief: the node's connection) */
};

struct plane_roster {
	int min, max;                /* --nnodes MIN:MAX */
	struct plane_node *n;        /* every node that joined, gone ones too */
	int count, cap;
	uint64_t arrivals;
	int present;                 /* nodes not gone */
	int round;                   /* the current (or last) round; 0 before the first */
	int size;                    /* its node count */
	int *at;                     /* rank -> index into n, size entries */
	int *base;                   /* rank -> its first global rank, size entries */
	int world;                   /* the round's slots */
};

/* A roster with the chief (self, whose rank and prev are ignored) alone in
 * it.  0 or -ENOMEM. */
int plane_roster_init(struct plane_roster *r, int min, int max, const struct plane_node *self);
void plane_roster_free(struct plane_roster *r);

/* Nodes that have not gone: in the round, or waiting for the next. */
int plane_roster_present(const struct plane_roster *r);

/* A node joins (waiting for the next round; n->prev: its rank in the
 * round before, when it comes back after a failover, else -1).  Its index,
 * -EEXIST when a present node has its id (the same slotrun twice),
 * -ENOSPC when MAX nodes are present, or -ENOMEM.  Indexes change when a
 * round forms: look a node up by its tag (plane_roster_find). */
int plane_roster_add(struct plane_roster *r, const struct plane_node *n);

/* Node i is gone (lost, or left before its first round). */
void plane_roster_drop(struct plane_roster *r, int i);

/* The present node with this tag, or -1. */
int plane_roster_find(const struct plane_roster *r, const void *tag);

/* Whether the first round starts now: MAX nodes are present, or at least
 * MIN are and none came for settle seconds (since = seconds since the
 * last arrival). */
bool plane_roster_first_due(const struct plane_roster *r, double since, double settle);

/* Forms the next round from every present node: the chief is rank 0; the
 * nodes of the round before (prev >= 0) keep their order (ranks stay
 * dense, so a node may move down); the nodes that waited follow, in
 * arrival order.  In the
 * first round a node's preference is honoured where it is a free rank of
 * the round (in arrival order among those that ask for the same), the rest
 * fill the remaining ranks in arrival order.  Returns the round's node
 * count, or -ENOMEM. */
int plane_roster_form(struct plane_roster *r);

/* What START tells the node of rank k of the current round (O(1): START
 * to every node is O(N)): its rank,
 * rank base, the world size (the sum of the round's slots), the chief's
 * address for MASTER_ADDR, and the next chiefs (ranks 1.. up to
 * PLANE_CANDIDATES, their addresses).  round/restarts/why are the
 * caller's. */
void plane_roster_info(const struct plane_roster *r, int k, const char *chief_host,
		       struct plane_round_info *out);

/* ---- The end of a round ---- */

/* What ended the round, as the chief saw it once every node of the round
 * was done or lost. */
struct plane_round_end {
	struct plane_cause cause;    /* the round's root cause (kind NONE: every rank exited 0) */
	int code;                    /* the status the round alone would give the job */
	int alive;                   /* nodes of the round still there, the chief included */
	int dead;                    /* ... lost with their connection closed by their host:
				      * their slotrun is gone, not cut off */
	int present;                 /* present nodes in all: alive + those waiting */
	int restarts;                /* restarts used before this round ended */
	const char *lost;            /* the round's lost nodes, "node 2 (10.213.0.3), ..." or "" */
	bool told_stop;              /* a node was told to stop during the round: no round follows */
};

/* The policy of the whole job, agreed by every node at the join. */
struct plane_round_policy {
	int min;                                 /* --nnodes' MIN */
	int max_restarts;
	const struct restart_policy *restart;    /* the chief's --restart-on and delay; NULL: none */
};

/* What follows.  The job ends (end) with code and a line saying why no
 * round follows (why, "" when the cause says it all); or the next round
 * starts after delay seconds, counting a restart when counts.  The rules
 * (each tested): success ends; a stop by signal ends; a node's arrival
 * (GROW) re-forms at once and counts nothing; a lost node or a failed rank
 * re-forms when the round's survivors are more than half of its nodes
 * (not counting those whose host closed their connection: they cannot be
 * on another side), at least MIN nodes are present and a restart is left
 * (for a rank, one its --restart-on allows; a lost node re-forms at once,
 * a rank after the restart delay).  A side without that majority stops
 * with status 1, so that a cut network never makes two jobs. */
struct plane_round_next {
	bool end;
	int code;
	bool counts;
	double delay;
	char why[PLANE_TEXT_MAX];
};

struct plane_round_next plane_round_after(const struct plane_round_policy *pol, int round_size,
					  const struct plane_round_end *e);

/* "round 3: 2 nodes, 4 ranks (node 2 (10.213.0.3) lost: no heartbeat for
 * 5 s)": the line every node says when a round forms. */
void plane_round_line(const struct plane_round_info *ri, char *buf, size_t len);

#endif
