// SPDX-License-Identifier: MIT
/* Inside the job plane: its state, shared by plane.c (the entry points),
 * plane_conn.c (the connections), plane_chief.c (the chief's side) and
 * plane_member.c and plane_seek.c (another node's side).  Not for use outside them. */
#ifndef SLOTRUN_PLANE_INT_H
#define SLOTRUN_PLANE_INT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_info.h"
#include "plane.h"

struct conn;

/* What a side does with its connections; the connection layer calls it. */
struct plane_side {
	/* One whole frame arrived on c (not yet decoded). */
	void (*frame)(struct conn *c, const unsigned char *frame, size_t len);
	/* c was closed: forget it. */
	void (*dropped)(struct conn *c);
	/* c was lost for why (closed first; c's fields are still readable);
	 * not called once the job has ended. */
	void (*lost)(struct conn *c, const char *why);
	/* c's connect(2) finished: 0 or an errno. */
	void (*connected)(struct conn *c, int err);
	/* Our own loop did not run for gap seconds, longer than the peers
	 * wait for a silent node: they gave this node up; it names itself. */
	void (*stalled)(struct plane *p, double gap);
};

/* M_REFUSED: the chief refused our secret and may still say whose secret
 * is the odd one (PLANE_MISMATCH) before it closes. */
enum member_state { M_CONNECTING, M_HELLO, M_WAITING, M_REFUSED, M_RUNNING, M_ENDED };

struct plane_elastic;   /* the chief's side of an elastic job (plane_elastic.c) */
struct pq_gather;       /* the chief's gather of a status (plane_query.c) */
struct pq_asked;        /* a node's status query waiting for the chief's answer (plane_query.c) */
struct plane_seek;      /* a node looking for an elastic job's chief (plane_seek.c) */

struct plane {
	struct event_base *base;
	const struct plane_cfg *cfg;
	const struct plane_hooks *h;
	void *arg;
	const struct plane_side *side;
	bool chief;
	bool ended;
	unsigned char id[PLANE_ID_LEN];   /* this slotrun's (plane_join) */
	int nnodes, rank;         /* the current round's node count and our rank in it
				   * (a fixed-size job's: cfg's) */
	int up;                   /* the node this one joins: 0, the chief, or its relay
				   * (plane_tree.h) */
	struct plane_relay *relay;  /* this node relays for its group (plane_relay.c), or NULL */
	struct plane_round_info round;  /* the last round this node started (round 0: none) */
	struct event *ev_tick;
	bool tick_quiet;             /* ev_tick put off by the chief's heartbeats (plane_conn.c) */
	double interval;
	double last_run;          /* clock_mono() when the plane last ran (plane_conn_awake) */
	bool self_stalled;        /* this node did not run for longer than its peers wait */
	char **hosts;             /* per node, for messages: cfg->addrs, where one
	                           * is unknown the address it joined from */
	struct conn *conns;       /* every open connection */
	struct conn *dead;        /* closed, freed at the next tick or at close */
	struct event *ev_join;    /* the join's deadline */
	/* chief */
	int lfd;
	struct event *ev_accept, *ev_restart;
	struct plane_coord_cfg ccfg;
	struct plane_coord coord;
	struct conn **by_node;
	struct plane_node_addrs *where;  /* per node, resolved once needed (plane_where) */
	struct plane_addr_index where_ix;  /* ... sorted for lookups, rebuilt as entries resolve */
	struct plane_elastic *el; /* an elastic job's chief, else NULL */
	double where_at;          /* clock_mono() of the last lookup of those not resolved */
	int npending;             /* connections accepted that have not proved the secret */
	bool accept_paused;       /* out of fds: the backlog waits a while */
	struct event *ev_accept_again;  /* out of fds: try accepting again then */
	int strangers_said;
	/* other nodes */
	enum member_state mstate;
	struct conn *chief_conn;
	struct event *ev_retry, *ev_deadline;  /* the next try; the join's deadline */
	double join_deadline, retry_delay;  /* clock_mono() */
	char connect_err[160];
	bool local_done;
	bool ever_started;        /* a first START came: a job, not a join */
	struct plane_cause chief_lost;  /* kind LOST once the chief is gone */
	struct plane_seek *seek;  /* elastic: where to look for the chief, or NULL */
	struct conn *abandoned;   /* elastic: a chief given up for silence, kept open (never
				   * read) so that it does not see us as gone: docs/job-plane.md */
	/* status queries (plane_query.c) */
	uint32_t next_id;
	struct pq_gather *gathers;
	struct pq_asked *asked;
};

/* The chief's side (plane_chief.c), for plane_elastic.c: carries out what
 * the coordinator decided (extra: a connection that joined now and is told
 * an abort as well), and sends m to every node of the round but `except`
 * (-1: none). */
void plane_chief_apply(struct plane *p, const struct plane_acts *a, struct conn *extra);
void plane_chief_broadcast(struct plane *p, const struct plane_msg *m, int except);

/* The current round's node count and each node's address (copied):
 * p->nnodes and p->hosts.  0 or -ENOMEM (nothing changed then). */
int plane_set_hosts(struct plane *p, int n, char *const *hosts);

static inline void plane_say(const struct plane *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Every line goes through the runner's stderr queue (the say hook): a
 * blocking write here would stall the loop on an unread stderr. */
static inline void plane_say(const struct plane *p, const char *fmt, ...)
{
	char line[PLANE_TEXT_MAX + 64];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "slotrun: ");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (p->h->say)
		p->h->say(p->arg, line);
}

static inline const char *plane_host(const struct plane *p, int node)
{
	return node >= 0 && node < p->nnodes ? p->hosts[node] : CI_ADDR_UNKNOWN;
}

/* What this node joins, for messages: the chief, or its relay. */
static inline const char *plane_up_what(const struct plane *p)
{
	return p->up ? "this node's relay" : "the chief";
}

/* A node whose address no source named is called by the one it joined
 * from (the chief's view) or joins with (its own view). */
static inline void plane_learn_host(struct plane *p, int node, const char *addr)
{
	char *copy;

	if (node < 0 || node >= p->nnodes || ci_addr_known(p->hosts[node]) || !ci_addr_known(addr) ||
	    !(copy = strdup(addr)))
		return;
	free(p->hosts[node]);
	p->hosts[node] = copy;
}

/* The job pauses here: node `node`'s slotrun was stopped by sig. */
static inline void plane_pause_here(struct plane *p, int sig, int node)
{
	int n = p->h->pause ? p->h->pause(p->arg, true) : 0;
	const char *abbrev = sigabbrev_np(sig);

	plane_say(p, "job paused: SIG%s to node %d (%s): %d rank%s stopped here until it is continued",
		  abbrev ? abbrev : "?", node, plane_host(p, node), n, n == 1 ? "" : "s");
}

/* The job resumes here: node `node` was the last one continued. */
static inline void plane_resume_here(struct plane *p, int node)
{
	int n = p->h->pause ? p->h->pause(p->arg, false) : 0;

	if (node == p->rank)
		plane_say(p, "continued: the job resumes: %d rank%s continued here", n, n == 1 ? "" : "s");
	else
		plane_say(p, "job resumed: node %d (%s) was continued: %d rank%s continued here", node,
			  plane_host(p, node), n, n == 1 ? "" : "s");
}

/* The end hook, once. */
static inline void plane_end_job(struct plane *p, int code, const struct plane_cause *cause)
{
	static const struct plane_cause none;

	if (p->ended)
		return;
	p->ended = true;
	p->mstate = M_ENDED;
	p->h->end(p->arg, code, cause ? cause : &none);
}

#endif
