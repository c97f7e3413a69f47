// SPDX-License-Identifier: MIT
#include "plane_chief.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "plane_conn.h"
#include "plane_elastic.h"
#include "plane_query.h"
#include "plane_relay.h"
#include "plane_tree.h"
#include "plane_tunnel.h"
#include "sock.h"

/* Said at most this many times: a port scan must not flood stderr. */
#define MAX_STRANGER_LINES 5

/* Encoded once; each connection seals its own copy (its key, its count).
 * The nodes behind relays first, in one PLANE_FWD per relay: a relay that
 * hears its own END after its nodes' has passed theirs on before it
 * ends. */
void plane_chief_broadcast(struct plane *p, const struct plane_msg *m, int except)
{
	unsigned char frame[4 + PLANE_MAX_FRAME];
	int n = plane_encode(m, frame, sizeof(frame));

	if (n <= 0)
		return;
	plane_tunnel_broadcast(p, frame, (size_t)n, except);
	for (int k = 1; k < p->nnodes; k++)
		if (k != except && p->by_node[k] && !p->by_node[k]->virt)
			plane_conn_queue(p->by_node[k], frame, (size_t)n);
}

#define broadcast plane_chief_broadcast

/* What START tells node k of a fixed-size job, whose first global rank
 * is rank_base: its plan, attempt after attempt. */
static void fixed_round(const struct plane *p, int k, int rank_base, struct plane_round_info *ri)
{
	const struct plane_cfg *g = p->cfg;

	*ri = (struct plane_round_info){ .round = p->coord.restarts + 1, .restarts = p->coord.restarts,
					 .nnodes = g->nnodes, .node_rank = k, .rank_base = rank_base,
					 .world_size = g->world_size };
}

/* Every node starts its workers, ours too. */
static void start_all(struct plane *p)
{
	struct plane_msg m = { .type = PLANE_START };
	int base = p->cfg->slot_counts[0];

	for (int k = 1; k < p->nnodes; base += p->cfg->slot_counts[k++])
		if (p->by_node[k]) {
			fixed_round(p, k, base, &m.round);
			plane_conn_send(p->by_node[k], &m);
		}
	fixed_round(p, 0, 0, &p->round);
	p->h->start(p->arg, &p->round);
}

/* Every node that proved the secret hears why the job will not start, the
 * one that joined now (extra) too: a duplicate, a late one. */
static void do_abort(struct plane *p, const struct plane_acts *a, struct conn *extra)
{
	struct plane_msg m = { .type = PLANE_ABORT, .code = a->code };

	snprintf(m.text, sizeof(m.text), "%s", a->text);
	if (a->first)
		plane_say(p, "%s", a->text);
	/* the nodes behind relays first (pass 0): a relay told its own
	 * ABORT ends, and passes on nothing after it */
	for (int pass = 0; pass < 2; pass++)
	for (struct conn *c = p->conns; c; c = c->next) {
		if (c->told || c->virt != (pass == 0))
			continue;
		if (c->authed || c == extra) {
			c->told = true;
			/* a relay's stays open: the nodes behind it that join
			 * later hear it through it */
			c->closing = !c->relay;
			plane_conn_send(c, &m);
		} else if (c->node >= 0) { /* held: it hears whose secret is odd */
			c->told = true;
			c->closing = true;
			plane_conn_send(c, &(struct plane_msg){ .type = PLANE_MISMATCH,
								.node = plane_coord_odd(&p->coord, c->node) });
		}
	}
}

/* The other nodes stop; ours too unless the stop came from here. */
static void do_stop(struct plane *p, const struct plane_acts *a)
{
	struct plane_msg m = { .type = PLANE_STOP, .sig = a->stop_sig, .node = a->origin,
			       .cause = p->coord.cause };

	broadcast(p, &m, a->origin);
	if (a->origin == 0)
		return;
	if (!a->stop_sig) {
		char line[PLANE_TEXT_MAX];

		plane_cause_line(&p->coord.cause, line, sizeof(line));
		plane_say(p, "stopping this node's workers: %s", line);
	}
	p->h->stop(p->arg, a->stop_sig);
}

static void do_signal(struct plane *p, const struct plane_acts *a)
{
	broadcast(p, &(struct plane_msg){ .type = PLANE_SIGNAL, .sig = a->signal, .node = a->origin },
		  a->origin);
	if (a->origin != 0)
		p->h->signal(p->arg, a->signal);
}

/* A node was stopped: every other node pauses.  Or one was continued
 * while another is still stopped: it hears which. */
static void do_pause(struct plane *p, const struct plane_acts *a)
{
	struct plane_msg m = { .type = PLANE_PAUSE, .sig = a->pause, .node = a->pause_node };

	if (a->still) {
		if (a->origin == 0)
			plane_pause_here(p, a->pause, a->pause_node);
		else if (p->by_node[a->origin])
			plane_conn_send(p->by_node[a->origin], &m);
		return;
	}
	broadcast(p, &m, a->origin);
	if (a->origin != 0)
		plane_pause_here(p, a->pause, a->pause_node);
}

/* No node is stopped any more: every node continues, the last one
 * continued too (it waited for this). */
static void do_resume(struct plane *p, const struct plane_acts *a)
{
	broadcast(p, &(struct plane_msg){ .type = PLANE_RESUME, .node = a->origin }, -1);
	plane_resume_here(p, a->origin);
}

/* Every node's workers are gone: all wait the delay, then the next START. */
static void do_restart(struct plane *p)
{
	struct plane_msg m = { .type = PLANE_RESTART, .code = p->coord.restarts,
			       .delay_ms = (int)(p->coord.delay * 1000), .cause = p->coord.ended };
	struct timeval tv = clock_tv(p->coord.delay);

	broadcast(p, &m, -1);
	p->local_done = false;
	p->h->restart(p->arg, p->coord.restarts, p->coord.delay, &p->coord.ended);
	evtimer_add(p->ev_restart, &tv);
}

/* Carries out what the coordinator decided, in plane_acts' order. */
void plane_chief_apply(struct plane *p, const struct plane_acts *a, struct conn *extra)
{
	if (a->abort)
		do_abort(p, a, extra);
	if (a->exit) {
		plane_end_job(p, a->code, NULL);
		return;
	}
	if (a->abort)
		return;
	if (a->start)
		start_all(p);
	if (a->stop)
		do_stop(p, a);
	if (a->signal)
		do_signal(p, a);
	if (a->pause)
		do_pause(p, a);
	if (a->resume)
		do_resume(p, a);
	if (a->restart)
		do_restart(p);
	if (a->end && p->el) {
		plane_elastic_round_over(p);
	} else if (a->end) {
		broadcast(p, &(struct plane_msg){ .type = PLANE_END, .code = p->coord.code, .cause = p->coord.cause },
			  -1);
		plane_end_job(p, p->coord.code, &p->coord.cause);
	}
}

#define apply plane_chief_apply

/* Out of fds, the listener is not read for a while: the connection stays
 * in the backlog, and the listener would only wake us again at once. */
static void accept_pause(struct plane *p)
{
	if (!p->accept_paused && p->ev_accept)
		event_del(p->ev_accept);
	p->accept_paused = true;
}

static void accept_resume(struct plane *p)
{
	if (!p->accept_paused || !p->ev_accept || p->ended)
		return;
	p->accept_paused = false;
	event_add(p->ev_accept, NULL);
}

/* A connection's handshake is over (it proved the secret, is held for the
 * verdict, or closed): room for the next one under the cap. */
static void pending_over(struct plane *p)
{
	p->npending--;
}

/* Every listed node's addresses, for plane_where.  An entry that does not
 * resolve is asked again later (names may resolve late), at most once a
 * second, so that strangers' JOINs cannot keep the loop in the resolver;
 * one that did is kept.  The lookups block the loop: they run only for a
 * JOIN during the join, before any worker runs here. */
static void resolve_nodes(struct plane *p)
{
	double now = clock_mono();

	bool more = false;

	if (p->where_at > 0 && now - p->where_at < 1.0)
		return;
	if (p->where_at == 0)
		more = true; /* the first index, of what resolves now */
	p->where_at = now;
	for (int k = 0; k < p->cfg->nnodes; k++) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
		struct plane_node_addrs *w = &p->where[k];

		if (w->n >= 0 || !ci_addr_known(p->cfg->addrs[k]) ||
		    getaddrinfo(p->cfg->addrs[k], NULL, &hints, &res) != 0)
			continue;
		w->n = 0;
		for (struct addrinfo *ai = res; ai && w->n < PLANE_NODE_ADDRS; ai = ai->ai_next)
			if (sock_addr_host(ai->ai_addr, w->addr[w->n], sizeof(w->addr[w->n])) == 0)
				w->n++;
		freeaddrinfo(res);
		more = true;
	}
	if (more) /* out of memory: it stays in doubt, as before any resolved */
		(void)plane_addr_index_build(&p->where_ix, p->where, p->cfg->nnodes);
}

/* What c's address says about its claim to be node `node` (plane_where);
 * nothing once the join is over. */
static enum plane_from where_from(struct conn *c, int node, int *other)
{
	struct plane *p = c->p;

	if (node < 1 || node >= p->cfg->nnodes ||
	    (p->coord.phase != PLANE_JOINING && p->coord.phase != PLANE_ABORTING))
		return PLANE_FROM_UNSURE;
	resolve_nodes(p);
	return plane_where_indexed(&p->where_ix, node, c->peer, other);
}

/* A JOIN whose MAC failed.  When it comes during the join from the address
 * of the node it claims to be, with another secret's id, it is evidence
 * that the secrets differ: the connection is held until the chief can say
 * whose secret is the odd one (plane_coord_secret), then hears it
 * (MISMATCH) as every node does.  Anything else (a stranger, a replayed or
 * forged JOIN, a node once the job runs) is refused alone: the job goes
 * on. */
static void other_secret(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;
	struct plane_msg refuse = { .type = PLANE_REFUSE };
	struct plane_acts a = { .origin = -1 };
	unsigned char ours[AUTH_MAC_LEN];
	bool another;
	int k = m->join.node_rank, other;

	plane_secret_id(p->cfg->secret, ours);
	another = m->join.has_id && memcmp(ours, m->join.secret_id, AUTH_MAC_LEN) != 0;
	if (another && where_from(c, k, &other) == PLANE_FROM_CLAIMED)
		a = plane_coord_secret(&p->coord, k, m->join.secret_id);
	snprintf(refuse.text, sizeof(refuse.text), "wrong job secret");
	if (a.held) {
		/* bounded by the node count, not by the strangers' cap */
		c->node = k;
		if (!c->virt)
			pending_over(p);
	} else {
		bool say = p->strangers_said++ < MAX_STRANGER_LINES;

		if (say && another)
			plane_say(p, "a node at %s presented another job secret: not joined (SLOTRUN_JOB_SECRET "
				  "or --secret-file must be the same on every node)", c->peer);
		else if (say)
			plane_say(p, "a connection from %s did not prove the job secret (a replayed or forged "
				  "join?): not joined", c->peer);
		c->closing = true;
	}
	plane_conn_send(c, &refuse);
	apply(p, &a, NULL);
}

/* A JOIN on a connection that has not proved the secret yet. */
static void admit(struct conn *c, const struct plane_msg *m);

static void join(struct conn *c, const unsigned char *frame, size_t len, const struct plane_msg *m)
{
	struct plane *p = c->p;
	struct plane_msg welcome = { .type = PLANE_WELCOME };

	if (!plane_check_join(p->cfg->secret, c->nonce, frame, len, m)) {
		other_secret(c, m);
		return;
	}
	c->authed = true;
	pending_over(p);
	plane_conn_seal(c, p->cfg->secret, c->nonce, m->nonce, true);
	c->sealed_in = true;
	plane_welcome_mac(p->cfg->secret, m->nonce, c->nonce, welcome.mac);
	plane_conn_send(c, &welcome);
	c->sealed_out = true;
	admit(c, m);
}

/* A node proved the secret (to us, or to its relay): the coordinator
 * decides whether it is in. */
static void admit(struct conn *c, const struct plane_msg *m)
{
	struct plane *p = c->p;
	struct plane_acts a;
	int other;

	if (p->el) {
		plane_elastic_join(c, m);
		return;
	}
	/* a relay's connection, told an ABORT, stays open for its nodes */
	c->relay = !c->virt && plane_tree_relays(p->cfg->fanout, p->cfg->nnodes, m->join.node_rank);
	if (where_from(c, m->join.node_rank, &other) == PLANE_FROM_OTHER)
		a = plane_coord_misplaced(&p->coord, m->join.node_rank, other, c->peer);
	else
		a = plane_coord_join(&p->coord, &m->join);
	if (a.refuse) {
		struct plane_msg told = { .type = PLANE_ABORT, .code = a.code };

		snprintf(told.text, sizeof(told.text), "%s", a.text);
		plane_say(p, "%s", a.text);
		c->closing = true;
		plane_conn_send(c, &told);
		return;
	}
	if (!a.abort) {
		c->node = m->join.node_rank; /* in range: plane_coord_join checked */
		p->by_node[c->node] = c;
		plane_learn_host(p, c->node, m->join.host[0] ? m->join.host : c->peer);
	}
	apply(p, &a, c);
}

void plane_chief_joined_via(struct conn *c, const unsigned char *frame, size_t len, bool proved)
{
	struct plane_msg m;

	if (plane_decode(frame, len, &m) < 0 || m.type != PLANE_JOIN) {
		plane_conn_drop(c);
		return;
	}
	if (!proved) {
		other_secret(c, &m);
		return;
	}
	c->authed = true;
	admit(c, &m);
}

static void on_frame(struct conn *c, const unsigned char *frame, size_t len)
{
	struct plane *p = c->p;
	struct plane_msg m;
	struct plane_acts a = { .origin = -1 };

	if (plane_decode(frame, len, &m) < 0) {
		if (c->authed)
			plane_conn_lost(c, "it sent a malformed message");
		else
			plane_conn_drop(c);
		return;
	}
	if (!c->authed) {
		if (c->node >= 0) /* held: it waits for the verdict */
			return;
		if (m.type == PLANE_JOIN)
			join(c, frame, len, &m);
		else
			plane_conn_drop(c);
		return;
	}
	if (c->closing) /* refused or told: it only waits for its last word */
		return;
	switch (m.type) { /* seeing inside: any node of the job, in any phase */
	case PLANE_FWD: /* a relay's: a node behind it */
	case PLANE_GONE:
		if (c->virt)
			break;
		plane_tunnel_in(c, &m);
		return;
	case PLANE_QUERY:
		plane_query_asked(c, &m);
		return;
	case PLANE_PART:
		plane_query_piece(c, &m);
		return;
	case PLANE_EVENT:
		plane_query_event(c, &m);
		return;
	default:
		break;
	}
	if (c->waiting || (p->el && plane_elastic_idle(p))) { /* elastic: no round for it now */
		plane_elastic_frame(c, &m);
		return;
	}
	if (c->node < 0) /* a refused duplicate: it only waits for its ABORT */
		return;
	switch (m.type) {
	case PLANE_FAIL:
		snprintf(m.cause.host, sizeof(m.cause.host), "%s", plane_host(p, c->node));
		a = plane_coord_fail(&p->coord, c->node, &m.cause, clock_mono());
		break;
	case PLANE_STOP_REQ:
		a = plane_coord_signal_why(&p->coord, c->node, m.sig, true, m.text);
		break;
	case PLANE_SIGNAL_REQ:
		a = plane_coord_signal_why(&p->coord, c->node, m.sig, false, m.text);
		break;
	case PLANE_DONE:
		a = plane_coord_done(&p->coord, c->node, m.code);
		break;
	case PLANE_PAUSE_REQ:
		plane_conn_pause(c, true);
		a = plane_coord_pause(&p->coord, c->node, m.sig);
		break;
	case PLANE_RESUME_REQ:
		plane_conn_pause(c, false);
		a = plane_coord_resume(&p->coord, c->node);
		break;
	case PLANE_PING:
		break;
	default:
		plane_conn_lost(c, "it sent a message out of turn");
		return;
	}
	apply(p, &a, NULL);
}

static void on_dropped(struct conn *c)
{
	struct plane *p = c->p;

	if (!c->authed && c->node < 0 && !c->virt)
		pending_over(p);
	if (c->node >= 0 && c->node < p->cfg->nnodes && p->by_node[c->node] == c)
		p->by_node[c->node] = NULL;
	plane_tunnel_relay_dropped(c);
	if (p->el)
		plane_elastic_dropped(c);
	plane_query_dropped(c);
}

/* A relay was lost: the nodes behind it are lost with it (after it: the
 * relay is the root cause). */
static void orphans_lost(struct conn *r)
{
	struct plane *p = r->p;
	char why[PLANE_TEXT_MAX];

	if (!r->tun || !r->tun->norphans)
		return;
	snprintf(why, sizeof(why), "its relay, node %d (%s), was lost", r->node, plane_host(p, r->node));
	for (int i = 0; i < r->tun->norphans && !p->ended; i++) {
		struct plane_acts a = plane_coord_lost(&p->coord, r->tun->orphans[i], why);

		apply(p, &a, NULL);
	}
	r->tun->norphans = 0;
}

static void on_lost(struct conn *c, const char *why)
{
	struct plane_acts a;

	if (!c->authed)
		return;
	if (c->p->self_stalled) /* it gave us up: our stall, said already */
		why = "it gave this node up";
	if (c->p->el && plane_elastic_lost(c, why))
		return;
	if (c->node < 0)
		return;
	a = plane_coord_lost(&c->p->coord, c->node, why);
	apply(c->p, &a, NULL);
	orphans_lost(c);
}

static void on_connected(struct conn *c, int err)
{
	(void)c;
	(void)err; /* the chief connects to nobody */
}

/* Our loop did not run for longer than the nodes wait (plane_conn_awake):
 * they gave the chief up, and the job ends naming this node. */
static void on_stalled(struct plane *p, double gap)
{
	char why[PLANE_TEXT_MAX];
	struct plane_acts a;

	if (!p->ever_started && !(p->el && !plane_elastic_idle(p)) && p->coord.phase != PLANE_RUNNING &&
	    p->coord.phase != PLANE_RESTARTING)
		return;
	p->self_stalled = true;
	snprintf(why, sizeof(why), "it did not run for %.1f s (its slotrun was stopped or starved), longer than "
		 "the other nodes wait", gap);
	plane_say(p, "this node, node 0 (%s), did not run for %.1f s: the other nodes gave it up", plane_host(p, 0),
		  gap);
	if (p->el && plane_elastic_idle(p)) {
		plane_elastic_self_lost(p, why);
		return;
	}
	a = plane_coord_self_lost(&p->coord, plane_host(p, 0), why);
	apply(p, &a, NULL);
}

const struct plane_side plane_chief_side = {
	.frame = on_frame, .dropped = on_dropped, .lost = on_lost, .connected = on_connected,
	.stalled = on_stalled,
};

/* A new connection: it gets our nonce and has PLANE_AUTH_DEADLINE to
 * answer it.  0, or -ENOMEM (fd closed). */
static int challenge(struct plane *p, int fd, const struct sockaddr *sa)
{
	struct plane_msg chal = { .type = PLANE_CHAL };
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)sa;
	char peer[64] = "?";
	struct conn *c;

	/* the dual-stack listener sees an IPv4 node as ::ffff:a.b.c.d: named
	 * as the IPv4 address it is */
	if (sa->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
		struct sockaddr_in a4 = { .sin_family = AF_INET };

		memcpy(&a4.sin_addr, a6->sin6_addr.s6_addr + 12, 4);
		sock_addr_host((struct sockaddr *)&a4, peer, sizeof(peer));
	} else {
		sock_addr_host(sa, peer, sizeof(peer));
	}
	(void)sock_tune(fd, 0);
	c = plane_conn_new(p, fd, peer);
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	if (!p->chief) /* a relay's: a node of its group */
		c->side = &plane_relay_side;
	p->npending++;
	auth_nonce(c->nonce);
	event_add(c->ev_read, NULL);
	memcpy(chal.nonce, c->nonce, AUTH_NONCE_LEN);
	plane_conn_send(c, &chal);
	return 0;
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct plane *p = arg;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd;

	while (true) {
		fd = accept4((int)lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
			struct timeval tv = clock_tv(0.1);

			accept_pause(p);
			evtimer_add(p->ev_accept_again, &tv);
			return;
		}
		if (fd < 0)
			return;
		/* Past the cap only strangers are in excess (every node
		 * of the job fits under it): the newest is closed, not left
		 * in the backlog, where a node would wait behind every
		 * stranger before it, a deadline's worth per cap of them;
		 * closed, it retries and takes the first place freed. */
		if (p->ended || p->npending >= plane_max_pending(p->cfg->nnodes))
			close(fd);
		else if (challenge(p, fd, (struct sockaddr *)&ss) < 0)
			return;
		sl = sizeof(ss);
	}
}

static void on_accept_again(evutil_socket_t fd, short what, void *arg)
{
	accept_resume(arg);
}

static void on_restart_due(evutil_socket_t fd, short what, void *arg)
{
	struct plane *p = arg;
	struct plane_acts a = plane_coord_restart_now(&p->coord);

	apply(p, &a, NULL);
}

static void on_join_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct plane *p = arg;
	struct plane_acts a;

	if (p->el) {
		plane_elastic_join_timeout(p);
		return;
	}
	a = plane_coord_join_timeout(&p->coord);
	apply(p, &a, NULL);
}

static int listen_on_port(struct plane *p, char *err, size_t errlen)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT,
				   .sin6_port = htons((uint16_t)p->cfg->control_port) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
				  .sin_port = htons((uint16_t)p->cfg->control_port) };
	int r;

	/* Dual-stack where IPv6 exists, else IPv4 alone. */
	r = sock_listen((struct sockaddr *)&a6, sizeof(a6), PLANE_BACKLOG, 0, &p->lfd);
	if (r == -EAFNOSUPPORT || r == -EADDRNOTAVAIL)
		r = sock_listen((struct sockaddr *)&a4, sizeof(a4), PLANE_BACKLOG, 0, &p->lfd);
	if (r < 0)
		snprintf(err, errlen, "cannot listen on the control port %d: %s%s", p->cfg->control_port,
			 strerror(-r), r == -EADDRINUSE ? " (choose another with --control-port)" : "");
	return r;
}

int plane_chief_open(struct plane *p, char *err, size_t errlen)
{
	const struct plane_cfg *cfg = p->cfg;
	struct timeval tv = clock_tv(cfg->join_timeout);
	int r;

	p->ccfg = (struct plane_coord_cfg){ .nnodes = cfg->nnodes, .slot_counts = cfg->slot_counts,
					    .world_size = cfg->world_size, .version = SLOTRUN_VERSION,
					    .addrs = p->hosts, .join_timeout = cfg->join_timeout,
					    .restart = cfg->restart, .max_restarts = cfg->max_restarts,
					    .hb_timeout_ms = plane_hb_ms(cfg->hb_timeout),
					    .fanout = cfg->fanout };
	p->by_node = calloc((size_t)cfg->nnodes, sizeof(*p->by_node));
	p->where = calloc((size_t)cfg->nnodes, sizeof(*p->where));
	if (!p->by_node || !p->where ||
	    (plane_elastic(cfg) ? plane_elastic_open(p) : plane_coord_init(&p->coord, &p->ccfg)) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->rank = 0;
	r = plane_chief_listen(p, err, errlen);
	if (r < 0)
		return r;
	p->ev_join = evtimer_new(p->base, on_join_timeout, p);
	p->ev_restart = evtimer_new(p->base, on_restart_due, p);
	if (!p->ev_join || !p->ev_restart) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int k = 0; k < cfg->nnodes; k++)
		p->where[k].n = -1;
	evtimer_add(p->ev_join, &tv);
	return 0;
}

int plane_chief_listen(struct plane *p, char *err, size_t errlen)
{
	int r = listen_on_port(p, err, errlen);

	if (r < 0)
		return r;
	p->ev_accept = event_new(p->base, p->lfd, EV_READ | EV_PERSIST, on_accept, p);
	p->ev_accept_again = evtimer_new(p->base, on_accept_again, p);
	if (!p->ev_accept || !p->ev_accept_again) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	event_add(p->ev_accept, NULL);
	return 0;
}

int plane_chief_take_over(struct plane *p, bool chief_dead, const char *lost, char *err, size_t errlen)
{
	int r = plane_chief_open(p, err, errlen);

	if (r < 0)
		return r;
	evtimer_del(p->ev_join);
	plane_elastic_failover(p, chief_dead, lost);
	return 0;
}

/* Elastic: no round runs (the first has not formed, or the next is to
 * come): the coordinator of the last one has nothing to say. */
static bool idle(const struct plane *p)
{
	return p->el && plane_elastic_idle(p);
}

void plane_chief_local_fail(struct plane *p, const struct plane_cause *f)
{
	struct plane_cause mine = *f;
	struct plane_acts a;

	if (idle(p))
		return;
	snprintf(mine.host, sizeof(mine.host), "%s", plane_host(p, 0));
	a = plane_coord_fail(&p->coord, 0, &mine, clock_mono());
	apply(p, &a, NULL);
}

void plane_chief_local_signal(struct plane *p, int sig, bool stops, const char *why)
{
	struct plane_acts a;

	if (idle(p)) {
		plane_elastic_local_signal(p, sig, stops, why);
		return;
	}
	a = plane_coord_signal_why(&p->coord, 0, sig, stops, why);
	apply(p, &a, NULL);
}

void plane_chief_local_pause(struct plane *p, int sig)
{
	struct plane_acts a;

	if (idle(p))
		return;
	a = plane_coord_pause(&p->coord, 0, sig);
	apply(p, &a, NULL);
}

void plane_chief_local_resume(struct plane *p)
{
	struct plane_acts a = { .origin = -1 };

	if (!idle(p))
		a = plane_coord_resume(&p->coord, 0);
	if (!a.resume && !a.still) { /* the job was not paused: our workers alone were */
		plane_resume_here(p, 0);
		return;
	}
	apply(p, &a, NULL);
}

void plane_chief_local_done(struct plane *p, int code)
{
	struct plane_acts a;

	if (idle(p)) {
		plane_elastic_local_done(p);
		return;
	}
	a = plane_coord_done(&p->coord, 0, code);
	apply(p, &a, NULL);
}

void plane_chief_close(struct plane *p)
{
	if (p->ev_accept)
		event_free(p->ev_accept);
	if (p->ev_join)
		event_free(p->ev_join);
	if (p->ev_restart)
		event_free(p->ev_restart);
	if (p->ev_accept_again)
		event_free(p->ev_accept_again);
	if (p->lfd >= 0)
		close(p->lfd);
	plane_elastic_close(p);
	plane_coord_free(&p->coord);
	free(p->by_node);
	free(p->where);
	plane_addr_index_free(&p->where_ix);
	p->ev_accept = p->ev_join = p->ev_restart = p->ev_accept_again = NULL;
	p->accept_paused = false;
	p->lfd = -1;
	p->by_node = NULL;
	p->where = NULL;
}
