// SPDX-License-Identifier: MIT
/* The job plane: the slotruns of one multi-node job, joined on the chief's
 * control port, so that a job runs whole or stops whole (docs/job-plane.md).  The
 * decisions are plane_proto.c's; plane.c carries them over TCP on the
 * runner's libevent loop, through plane_conn.c (the connections),
 * plane_chief.c (the chief's side) and plane_member.c (another node's).
 *
 * Contract for the runner: nothing starts until the start hook; the stop,
 * signal and end hooks come from other nodes (or the chief's decision); the
 * runner reports its own failures, stop signals, terminal stops and the
 * moment its workers are all reaped, and exits when the end hook says, with
 * its code. */
#ifndef SLOTRUN_PLANE_H
#define SLOTRUN_PLANE_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plane_proto.h"

#define PLANE_DEFAULT_JOIN_TIMEOUT 300.0
#define PLANE_DEFAULT_HB_TIMEOUT 5.0
/* A connection that has not proved the secret within this many seconds is
 * dropped.  The chief holds at most plane_max_pending(nnodes) of them at
 * once: every node of the job may be in its handshake at the same moment
 * (a join storm), and PLANE_MAX_PENDING strangers beside them; one more
 * is closed at once (its node retries).  A storm waits in the listener's
 * backlog (PLANE_BACKLOG; the kernel caps it at net.core.somaxconn) until
 * the chief's loop accepts it. */
#define PLANE_AUTH_DEADLINE 10.0
#define PLANE_MAX_PENDING 16
#define PLANE_BACKLOG 4096

static inline int plane_max_pending(int nnodes)
{
	return PLANE_MAX_PENDING + nnodes;
}
/* A node about to stop (a terminal stop) waits at most this many seconds
 * for its PAUSE messages to be written. */
#define PLANE_PAUSE_FLUSH 1.0

/* Which side a node starts on.  A fixed-size job's node 0 is the chief; an
 * elastic job's node may be the chief by address (its address is the
 * chief's), which it finds out by listening (PLANE_MAYBE_CHIEF: the port
 * is taken, so another slotrun on this host is the chief: it joins it). */
enum plane_role { PLANE_CHIEF, PLANE_MEMBER, PLANE_MAYBE_CHIEF };

struct plane_cfg {
	int nnodes, node_rank;      /* elastic: nnodes is MAX; node_rank a preference, or -1 */
	int nnodes_min;             /* < nnodes: an elastic job (docs/job-plane.md) */
	enum plane_role role;
	double settle;              /* elastic: seconds without a new node before the first
				     * round starts with fewer than MAX */
	enum plane_admit admit;     /* elastic: when a node that arrives mid-round is taken in */
	int slots;                  /* this node's slot count */
	char *const *addrs;         /* chief first; CI_ADDR_UNKNOWN ("?") where no
	                             * source named one: the plane then calls the
	                             * node by the address it joined from */
	const int *slot_counts;     /* per node */
	int world_size;
	int control_port;
	double join_timeout;        /* seconds */
	double hb_timeout;          /* seconds; checked alike on every node */
	const char *secret;
	const struct restart_policy *restart;  /* the chief's decides; NULL: none */
	int max_restarts;           /* checked alike on every node */
	int fanout;                 /* the relay tree's (plane_tree_fanout), 0: a star;
				     * checked alike on every node */
};

struct plane_hooks {
	/* Every node is in and agrees: start the workers for this round (its
	 * ranks, world size and chief; in a fixed-size job what the plan
	 * says). */
	void (*start)(void *arg, const struct plane_round_info *ri);
	/* Stop the workers: sig 0 when the job failed elsewhere, else the stop
	 * signal that another node's slotrun received (forward it). */
	void (*stop)(void *arg, int sig);
	/* A signal for every worker (USR1, USR2, ...) from another node. */
	void (*signal)(void *arg, int sig);
	/* The attempt that ended with cause restarts: the workers are all gone
	 * on every node; the next attempt (1 = the first restart) starts with
	 * the start hook after delay seconds. */
	void (*restart)(void *arg, int attempt, double delay, const struct plane_cause *cause);
	/* The job is over (or will not start): exit with code.  cause is the
	 * job's root cause (kind NONE on success, or when aborted before the
	 * start, in which case the plane has said the reason through say). */
	void (*end)(void *arg, int code, const struct plane_cause *cause);
	/* Stop (pause true) or continue this node's workers, the job being
	 * paused because a node's slotrun was stopped from its terminal (or
	 * resumed once none is).  Returns how many ranks that was. */
	int (*pause)(void *arg, bool pause);
	/* One line for slotrun's stderr ("slotrun: ...", no newline).  It must
	 * not block: the runner queues it behind what is already queued, so
	 * an unread stderr never stalls the plane and no line overtakes
	 * another. */
	void (*say)(void *arg, const char *line);
	/* Seeing inside (docs/observability.md).  ask: the plane wants this
	 * node's part of a status (stacks too when asked): answer later, on
	 * the loop, with plane_answer(id).  merge: the chief makes the job's
	 * whole status from the nodes' parts, docs[k] node k's (NULL: it did
	 * not answer; missing says which did not, or ""): a malloc'd JSON
	 * text, its length in *len.  event: the chief takes in another node's
	 * timeline event (JSON text), from the node at host.  Any may be
	 * NULL. */
	void (*ask)(void *arg, uint32_t id, bool stacks);
	char *(*merge)(void *arg, char *const *docs, const size_t *lens, int n, const char *missing, size_t *len);
	void (*event)(void *arg, const char *json, size_t len, const char *host);
};

/* The answer to a query: the document (malloc'd, the callee's to free; JSON
 * text), or NULL when none came within the deadline (the chief lost, or
 * the plane ended). */
typedef void (*plane_doc_fn)(void *ctx, char *doc, size_t len);

struct plane;

/* The chief starts listening (a port in use is an error, with err naming
 * it), another node starts connecting to the chief.  Returns 0 or a
 * negative errno with a one-line reason in err. */
int plane_open(struct plane **p, struct event_base *base, const struct plane_cfg *cfg,
	       const struct plane_hooks *hooks, void *arg, char *err, size_t errlen);

/* This node's root cause (its first failed worker; again if the supervisor
 * refines it). */
void plane_local_fail(struct plane *p, const struct plane_cause *f);

/* This node's slotrun received sig; stops: it is TERM or INT, or why
 * says why this node stops the job with sig (NULL: the signal alone). */
void plane_local_signal(struct plane *p, int sig, bool stops, const char *why);

/* This node's slotrun received sig (SIGTSTP), stopped its workers and is
 * about to stop itself: the other nodes pause their workers, and its
 * silence is not counted until it is continued (plane_conn_pause). */
void plane_local_pause(struct plane *p, int sig);

/* This node's slotrun was continued after plane_local_pause: nothing it
 * missed while stopped counts as the others' silence.  The job resumes,
 * this node's workers with it (the pause hook), once no node is stopped. */
void plane_local_resume(struct plane *p);

/* This node's workers are all reaped; code is what the node alone would
 * exit with. */
void plane_local_done(struct plane *p, int code);

/* The whole job's status, for `slotrun status` on this node: the chief
 * asks every node of the round for its part (the ask hook), waits up to
 * timeout seconds, merges them (its merge hook) and sends the document
 * here; done gets it later on the loop (or NULL).  0, or -ENOMEM / -ENOTCONN
 * (no chief to ask now) with done not called. */
int plane_query(struct plane *p, bool stacks, double timeout, plane_doc_fn done, void *ctx);

/* This node's part for the ask hook's id (doc: JSON text). */
void plane_answer(struct plane *p, uint32_t id, const char *doc, size_t len);

/* One timeline event of this node for the chief's --timeline (JSON text);
 * nothing on the chief itself or without a chief. */
void plane_event(struct plane *p, const char *json, size_t len);

/* Whether this node is the chief now (an elastic job's may change). */
bool plane_is_chief(const struct plane *p);

/* Whether the job is elastic (cfg->nnodes_min < cfg->nnodes). */
static inline bool plane_elastic(const struct plane_cfg *cfg)
{
	return cfg->nnodes_min < cfg->nnodes;
}

/* Sends what is still queued (waiting at most a second for slow peers),
 * then closes every connection and frees p.  NULL is fine. */
void plane_close(struct plane *p);

#endif
