// SPDX-License-Identifier: MIT
#include "plane.h"

#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cluster_info.h"
#include "sock.h"

/* A peer that stops reading gets this much queued before it counts as lost. */
#define OUT_MAX (1 << 20)
/* Said at most this many times: a port scan must not flood stderr. */
#define MAX_STRANGER_LINES 5

struct conn {
	struct plane *p;
	int fd;
	struct event *ev_read, *ev_write;
	bool connecting;          /* node: connect(2) in progress */
	bool authed;              /* proved the secret (both ways, on a node) */
	bool closing;             /* drop once out is flushed */
	bool told;                /* chief: sent ABORT */
	bool draining;            /* our side is shut: read until EOF, then drop */
	int node;                 /* chief: the node it joined as, or -1 */
	double born, last_rx, last_tx;
	unsigned char nonce[AUTH_NONCE_LEN];       /* the one we sent */
	unsigned char peer_nonce[AUTH_NONCE_LEN];  /* node: the chief's, until WELCOME */
	char peer[64];
	unsigned char in[4 + PLANE_MAX_FRAME];
	size_t in_len;
	unsigned char *out;
	size_t out_off, out_len, out_cap;
	struct conn *next;
};

enum member_state { M_CONNECTING, M_HELLO, M_WAITING, M_RUNNING, M_ENDED };

struct plane {
	struct event_base *base;
	const struct plane_cfg *cfg;
	const struct plane_hooks *h;
	void *arg;
	bool chief;
	bool ended;
	struct event *ev_tick;
	double interval;
	char **hosts;             /* per node, for messages: cfg->addrs, where one
	                           * is unknown the address it joined from */
	struct conn *conns;       /* every open connection */
	struct conn *dead;        /* closed, freed at the next tick or at close */
	/* chief */
	int lfd;
	struct event *ev_accept, *ev_join, *ev_restart;
	struct plane_coord_cfg ccfg;
	struct plane_coord coord;
	struct conn **by_node;
	int npending;
	int strangers_said;
	/* other nodes */
	enum member_state mstate;
	struct conn *chief_conn;
	struct event *ev_retry;
	double join_deadline, retry_delay;
	char connect_err[160];
	bool local_done;
	bool ever_started;        /* a first START came: a job, not a join */
	struct plane_cause chief_lost;  /* kind LOST once the chief is gone */
};

static void say(const struct plane *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Every line goes through the runner's stderr queue (the say hook): a
 * blocking write here would stall the loop on an unread stderr. */
static void say(const struct plane *p, const char *fmt, ...)
{
	char line[PLANE_TEXT_MAX + 64];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "slotrun: ");
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	p->h->say(p->arg, line);
}

static const char *host_of(const struct plane *p, int node)
{
	return p->hosts[node];
}

/* A node whose address no source named is called by the one it joined
 * from (the chief's view) or joins with (its own view). */
static void learn_host(struct plane *p, int node, const char *addr)
{
	char *copy;

	if (ci_addr_known(p->hosts[node]) || !ci_addr_known(addr) || !(copy = strdup(addr)))
		return;
	free(p->hosts[node]);
	p->hosts[node] = copy;
}

/* ---- Connections ---- */

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);

static struct conn *conn_new(struct plane *p, int fd, const char *peer)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->p = p;
	c->fd = fd;
	c->node = -1;
	c->born = c->last_rx = c->last_tx = clock_mono();
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	c->ev_read = event_new(p->base, fd, EV_READ | EV_PERSIST, on_read, c);
	c->ev_write = event_new(p->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
	if (!c->ev_read || !c->ev_write) {
		if (c->ev_read)
			event_free(c->ev_read);
		if (c->ev_write)
			event_free(c->ev_write);
		free(c);
		return NULL;
	}
	c->next = p->conns;
	p->conns = c;
	return c;
}

/* Closes at once; the memory lives until the next tick, since the caller
 * may still be inside one of its callbacks. */
static void conn_drop(struct conn *c)
{
	struct plane *p = c->p;

	if (c->fd < 0)
		return;
	event_del(c->ev_read);
	event_del(c->ev_write);
	close(c->fd);
	c->fd = -1;
	if (!c->authed && p->chief)
		p->npending--;
	for (struct conn **pp = &p->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (p->chief && c->node >= 0 && p->by_node[c->node] == c)
		p->by_node[c->node] = NULL;
	if (p->chief_conn == c)
		p->chief_conn = NULL;
	c->next = p->dead;
	p->dead = c;
}

static void conn_free(struct conn *c)
{
	event_free(c->ev_read);
	event_free(c->ev_write);
	free(c->out);
	free(c);
}

static void bury(struct plane *p)
{
	while (p->dead) {
		struct conn *c = p->dead;
		p->dead = c->next;
		conn_free(c);
	}
}

static void lost(struct conn *c, const char *why);

/* Writes what the socket takes now; the rest waits for EV_WRITE. */
static void conn_flush(struct conn *c)
{
	while (c->fd >= 0 && c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			c->out_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			event_add(c->ev_write, NULL);
			return;
		}
		lost(c, "connection closed");
		return;
	}
	if (c->fd < 0)
		return;
	c->out_off = c->out_len = 0;
	event_del(c->ev_write);
	if (c->closing && !c->draining) {
		/* A close with unread bytes in our queue would reset the
		 * connection, and the peer's kernel would throw away what we
		 * just sent: end our side, read until the peer closes. */
		c->draining = true;
		c->born = clock_mono();
		shutdown(c->fd, SHUT_WR);
	}
}

/* Queues one encoded frame and writes what the socket takes. */
static void conn_queue(struct conn *c, const unsigned char *frame, size_t n)
{
	if (c->fd < 0)
		return;
	if (c->out_len - c->out_off + (size_t)n > OUT_MAX) {
		lost(c, "it stopped reading");
		return;
	}
	if (c->out_len + (size_t)n > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		unsigned char *b;

		if (c->out_off > 0) {
			memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
			c->out_len -= c->out_off;
			c->out_off = 0;
		}
		while (cap < c->out_len + (size_t)n)
			cap *= 2;
		if (cap != c->out_cap) {
			b = realloc(c->out, cap);
			if (!b) {
				lost(c, "out of memory");
				return;
			}
			c->out = b;
			c->out_cap = cap;
		}
	}
	memcpy(c->out + c->out_len, frame, (size_t)n);
	c->out_len += (size_t)n;
	c->last_tx = clock_mono();
	if (!c->connecting)
		conn_flush(c);
}

static void conn_send(struct conn *c, const struct plane_msg *m)
{
	unsigned char frame[4 + PLANE_MAX_FRAME];
	int n = plane_encode(m, frame, sizeof(frame));

	if (n > 0) /* our own fields are bounded: it always fits */
		conn_queue(c, frame, (size_t)n);
}

static void on_connected(struct conn *c);

static void on_write(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	if (c->connecting)
		on_connected(c);
	else
		conn_flush(c);
}

/* ---- Ending ---- */

static void end(struct plane *p, int code, const struct plane_cause *cause)
{
	static const struct plane_cause none;

	if (p->ended)
		return;
	p->ended = true;
	p->mstate = M_ENDED;
	p->h->end(p->arg, code, cause ? cause : &none);
}

/* ---- The chief ---- */

static void chief_broadcast(struct plane *p, const struct plane_msg *m, int except)
{
	for (int k = 1; k < p->cfg->nnodes; k++)
		if (k != except && p->by_node[k])
			conn_send(p->by_node[k], m);
}

static void apply(struct plane *p, const struct plane_acts *a, struct conn *extra)
{
	if (a->abort) {
		struct plane_msg m = { .type = PLANE_ABORT, .code = a->code };

		snprintf(m.text, sizeof(m.text), "%s", a->text);
		if (a->first)
			say(p, "%s", a->text);
		/* every node that proved the secret hears why, the one that
		 * joined now too (a duplicate, a late one) */
		for (struct conn *c = p->conns; c; c = c->next)
			if ((c->authed || c == extra) && !c->told) {
				c->told = true;
				c->closing = true;
				conn_send(c, &m);
			}
	}
	if (a->exit) {
		end(p, a->code, NULL);
		return;
	}
	if (a->abort)
		return;
	if (a->start) {
		chief_broadcast(p, &(struct plane_msg){ .type = PLANE_START }, -1);
		p->h->start(p->arg);
	}
	if (a->stop) {
		struct plane_msg m = { .type = PLANE_STOP, .sig = a->stop_sig, .node = a->origin,
				       .cause = p->coord.cause };

		chief_broadcast(p, &m, a->origin);
		if (a->origin != 0) {
			if (!a->stop_sig) {
				char line[PLANE_TEXT_MAX];

				plane_cause_line(&p->coord.cause, line, sizeof(line));
				say(p, "stopping this node's workers: %s", line);
			}
			p->h->stop(p->arg, a->stop_sig);
		}
	}
	if (a->signal) {
		chief_broadcast(p, &(struct plane_msg){ .type = PLANE_SIGNAL, .sig = a->signal, .node = a->origin },
				a->origin);
		if (a->origin != 0)
			p->h->signal(p->arg, a->signal);
	}
	if (a->restart) {
		struct plane_msg m = { .type = PLANE_RESTART, .code = p->coord.restarts,
				       .delay_ms = (int)(p->coord.delay * 1000), .cause = p->coord.ended };
		struct timeval tv = clock_tv(p->coord.delay);

		chief_broadcast(p, &m, -1);
		p->local_done = false;
		p->h->restart(p->arg, p->coord.restarts, p->coord.delay, &p->coord.ended);
		evtimer_add(p->ev_restart, &tv);
	}
	if (a->end) {
		struct plane_msg m = { .type = PLANE_END, .code = p->coord.code, .cause = p->coord.cause };

		chief_broadcast(p, &m, -1);
		end(p, p->coord.code, &p->coord.cause);
	}
}

static void node_lost(struct plane *p, int node, const char *why)
{
	struct plane_acts a;

	a = plane_coord_lost(&p->coord, node, why);
	apply(p, &a, NULL);
}

static void chief_join(struct conn *c, const unsigned char *frame, size_t len, const struct plane_msg *m)
{
	struct plane *p = c->p;
	struct plane_msg welcome = { .type = PLANE_WELCOME };
	struct plane_acts a;

	if (!plane_check_join(p->cfg->secret, c->nonce, frame, len, m)) {
		struct plane_msg refuse = { .type = PLANE_REFUSE };

		if (p->strangers_said++ < MAX_STRANGER_LINES)
			say(p, "a node at %s presented another job secret: not joined (SLOTRUN_JOB_SECRET "
			    "or --secret-file must be the same on every node)", c->peer);
		snprintf(refuse.text, sizeof(refuse.text), "wrong job secret");
		c->closing = true;
		conn_send(c, &refuse);
		return;
	}
	c->authed = true;
	p->npending--;
	plane_welcome_mac(p->cfg->secret, m->nonce, c->nonce, welcome.mac);
	conn_send(c, &welcome);
	a = plane_coord_join(&p->coord, &m->join);
	if (!a.abort) {
		c->node = m->join.node_rank; /* in range: plane_coord_join checked */
		p->by_node[c->node] = c;
		learn_host(p, c->node, m->join.host[0] ? m->join.host : c->peer);
	}
	apply(p, &a, c);
}

static void chief_frame(struct conn *c, const unsigned char *frame, size_t len)
{
	struct plane *p = c->p;
	struct plane_msg m;
	struct plane_acts a = { .origin = -1 };

	if (plane_decode(frame, len, &m) < 0) {
		if (c->authed)
			lost(c, "it sent a malformed message");
		else
			conn_drop(c);
		return;
	}
	if (!c->authed) {
		if (m.type == PLANE_JOIN)
			chief_join(c, frame, len, &m);
		else
			conn_drop(c);
		return;
	}
	if (c->node < 0) /* a refused duplicate: it only waits for its ABORT */
		return;
	switch (m.type) {
	case PLANE_FAIL:
		snprintf(m.cause.host, sizeof(m.cause.host), "%s", host_of(p, c->node));
		a = plane_coord_fail(&p->coord, c->node, &m.cause, clock_mono());
		break;
	case PLANE_STOP_REQ:
		a = plane_coord_signal(&p->coord, c->node, m.sig, true);
		break;
	case PLANE_SIGNAL_REQ:
		a = plane_coord_signal(&p->coord, c->node, m.sig, false);
		break;
	case PLANE_DONE:
		a = plane_coord_done(&p->coord, c->node, m.code);
		break;
	case PLANE_PING:
		break;
	default:
		lost(c, "it sent a message out of turn");
		return;
	}
	apply(p, &a, NULL);
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct plane *p = arg;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char peer[64] = "?";
	struct conn *c;
	int fd;

	while ((fd = accept4((int)lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		/* The cap on connections that have not proved the secret:
		 * the newest waits its turn in the backlog no more. */
		if (p->npending >= PLANE_MAX_PENDING || p->ended) {
			close(fd);
			sl = sizeof(ss);
			continue;
		}
		sock_addr_host((struct sockaddr *)&ss, peer, sizeof(peer));
		(void)sock_tune(fd, 0);
		c = conn_new(p, fd, peer);
		if (!c) {
			close(fd);
			return;
		}
		p->npending++;
		auth_nonce(c->nonce);
		event_add(c->ev_read, NULL);
		{
			struct plane_msg chal = { .type = PLANE_CHAL };
			memcpy(chal.nonce, c->nonce, AUTH_NONCE_LEN);
			conn_send(c, &chal);
		}
		sl = sizeof(ss);
	}
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
	struct plane_acts a = plane_coord_join_timeout(&p->coord);

	apply(p, &a, NULL);
}

static int chief_listen(struct plane *p, char *err, size_t errlen)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT,
				   .sin6_port = htons((uint16_t)p->cfg->control_port) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY),
				  .sin_port = htons((uint16_t)p->cfg->control_port) };
	int r;

	/* Dual-stack where IPv6 exists, else IPv4 alone. */
	r = sock_listen((struct sockaddr *)&a6, sizeof(a6), 64, 0, &p->lfd);
	if (r == -EAFNOSUPPORT || r == -EADDRNOTAVAIL)
		r = sock_listen((struct sockaddr *)&a4, sizeof(a4), 64, 0, &p->lfd);
	if (r < 0) {
		snprintf(err, errlen, "cannot listen on the control port %d: %s%s", p->cfg->control_port,
			 strerror(-r), r == -EADDRINUSE ? " (choose another with --control-port)" : "");
		return r;
	}
	p->ev_accept = event_new(p->base, p->lfd, EV_READ | EV_PERSIST, on_accept, p);
	p->ev_join = evtimer_new(p->base, on_join_timeout, p);
	p->ev_restart = evtimer_new(p->base, on_restart_due, p);
	if (!p->ev_accept || !p->ev_join || !p->ev_restart) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	event_add(p->ev_accept, NULL);
	{
		struct timeval tv = clock_tv(p->cfg->join_timeout);
		evtimer_add(p->ev_join, &tv);
	}
	return 0;
}

/* ---- Another node ---- */

static void schedule_retry(struct plane *p);

static void member_frame(struct conn *c, const unsigned char *frame, size_t len)
{
	struct plane *p = c->p;
	struct plane_msg m;
	const struct plane_cfg *g = p->cfg;

	if (plane_decode(frame, len, &m) < 0) {
		lost(c, "it sent a malformed message");
		return;
	}
	if (p->mstate == M_HELLO) {
		unsigned char out[4 + PLANE_MAX_FRAME];
		struct plane_join j = { .node_rank = g->node_rank, .nnodes = g->nnodes,
					.slots = g->slot_counts[g->node_rank], .world_size = g->world_size,
					.max_restarts = g->max_restarts };
		int n;

		if (m.type != PLANE_CHAL) {
			lost(c, "it is not a slotrun control port");
			return;
		}
		snprintf(j.version, sizeof(j.version), "%s", SLOTRUN_VERSION);
		if (!ci_addr_known(host_of(p, g->node_rank))) {
			struct sockaddr_storage ss;
			socklen_t sl = sizeof(ss);
			char mine[64];

			if (getsockname(c->fd, (struct sockaddr *)&ss, &sl) == 0 &&
			    sock_addr_host((struct sockaddr *)&ss, mine, sizeof(mine)) == 0)
				learn_host(p, g->node_rank, mine);
		}
		snprintf(j.host, sizeof(j.host), "%s", host_of(p, g->node_rank));
		auth_nonce(c->nonce);
		memcpy(c->peer_nonce, m.nonce, AUTH_NONCE_LEN);
		n = plane_make_join(g->secret, m.nonce, c->nonce, &j, out, sizeof(out));
		if (n < 0) {
			lost(c, "cannot build the join message");
			return;
		}
		conn_queue(c, out, (size_t)n);
		p->mstate = M_WAITING; /* for WELCOME, then START */
		return;
	}
	if (!c->authed) {
		if (m.type == PLANE_REFUSE) {
			say(p, "the chief at %s:%d refused our job secret: set the same SLOTRUN_JOB_SECRET "
			    "(or --secret-file) on every node", host_of(p, 0), g->control_port);
			end(p, 2, NULL);
			return;
		}
		if (m.type != PLANE_WELCOME ||
		    !plane_check_welcome(g->secret, c->nonce, c->peer_nonce, m.mac)) {
			say(p, "the listener at %s:%d did not prove it holds the job secret: is it this job's chief?",
			    host_of(p, 0), g->control_port);
			end(p, 2, NULL);
			return;
		}
		c->authed = true;
		return;
	}
	switch (m.type) {
	case PLANE_START:
		if (p->mstate == M_WAITING) {
			p->mstate = M_RUNNING;
			p->ever_started = true;
			p->local_done = false;
			p->h->start(p->arg);
		}
		return;
	case PLANE_RESTART:
		if (p->mstate == M_RUNNING) {
			p->mstate = M_WAITING; /* for the next START */
			p->h->restart(p->arg, m.code, m.delay_ms / 1000.0, &m.cause);
		}
		return;
	case PLANE_ABORT:
		say(p, "%s", m.text);
		end(p, m.code, NULL);
		return;
	case PLANE_STOP:
		if (!m.sig && m.node != g->node_rank) {
			char line[PLANE_TEXT_MAX];

			plane_cause_line(&m.cause, line, sizeof(line));
			say(p, "stopping this node's workers: %s", line);
		}
		p->h->stop(p->arg, m.sig);
		return;
	case PLANE_SIGNAL:
		p->h->signal(p->arg, m.sig);
		return;
	case PLANE_END:
		end(p, m.code, &m.cause);
		return;
	case PLANE_PING:
		return;
	default:
		lost(c, "it sent a message out of turn");
	}
}

static void on_connected(struct conn *c)
{
	int e = 0;
	socklen_t el = sizeof(e);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	if (e) {
		snprintf(c->p->connect_err, sizeof(c->p->connect_err), "%s", strerror(e));
		conn_drop(c);
		schedule_retry(c->p);
		return;
	}
	c->connecting = false;
	c->born = c->last_rx = clock_mono();
	c->p->mstate = M_HELLO;
	event_del(c->ev_write);
	event_add(c->ev_read, NULL);
}

static void try_connect(struct plane *p)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	char port[16];
	struct conn *c;
	int fd, r;

	snprintf(port, sizeof(port), "%d", p->cfg->control_port);
	r = getaddrinfo(host_of(p, 0), port, &hints, &res);
	if (r != 0) {
		snprintf(p->connect_err, sizeof(p->connect_err), "cannot resolve %s: %s", host_of(p, 0),
			 gai_strerror(r));
		schedule_retry(p);
		return;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(p->connect_err, sizeof(p->connect_err), "%s", strerror(errno));
		freeaddrinfo(res);
		schedule_retry(p);
		return;
	}
	(void)sock_tune(fd, 0);
	r = connect(fd, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	if (r < 0 && errno != EINPROGRESS) {
		snprintf(p->connect_err, sizeof(p->connect_err), "%s", strerror(errno));
		close(fd);
		schedule_retry(p);
		return;
	}
	c = conn_new(p, fd, host_of(p, 0));
	if (!c) {
		close(fd);
		snprintf(p->connect_err, sizeof(p->connect_err), "out of memory");
		schedule_retry(p);
		return;
	}
	p->chief_conn = c;
	c->connecting = true;
	p->mstate = M_CONNECTING;
	event_add(c->ev_write, NULL);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
	try_connect(arg);
}

static void schedule_retry(struct plane *p)
{
	double now = clock_mono();
	struct timeval tv;

	if (p->ended)
		return;
	p->mstate = M_CONNECTING;
	if (now + p->retry_delay > p->join_deadline) {
		say(p, "could not join the chief at %s:%d within %g s: %s", host_of(p, 0), p->cfg->control_port,
		    p->cfg->join_timeout, p->connect_err[0] ? p->connect_err : "no answer");
		end(p, 2, NULL);
		return;
	}
	tv = clock_tv(p->retry_delay);
	evtimer_add(p->ev_retry, &tv);
	p->retry_delay = p->retry_delay * 2 > 1.0 ? 1.0 : p->retry_delay * 2;
}

/* The chief is gone: stop our workers on our own; the job's status is ours
 * to decide once they are reaped. */
static void chief_gone(struct plane *p, const char *why)
{
	char line[PLANE_TEXT_MAX];

	p->chief_lost = (struct plane_cause){ .kind = PLANE_CAUSE_LOST, .node = 0 };
	snprintf(p->chief_lost.host, sizeof(p->chief_lost.host), "%s", host_of(p, 0));
	snprintf(p->chief_lost.text, sizeof(p->chief_lost.text), "%s", why);
	plane_cause_line(&p->chief_lost, line, sizeof(line));
	if (!p->ever_started) {
		say(p, "%s before the job started", line);
		end(p, 2, NULL);
		return;
	}
	say(p, "stopping this node's workers: %s", line);
	p->h->stop(p->arg, 0);
	if (p->local_done)
		end(p, plane_cause_code(&p->chief_lost), &p->chief_lost);
}

/* ---- Both ---- */

static void lost(struct conn *c, const char *why)
{
	struct plane *p = c->p;
	int node = c->node;
	bool authed = c->authed;

	conn_drop(c);
	if (p->ended)
		return;
	if (p->chief) {
		if (authed && node >= 0)
			node_lost(p, node, why);
		return;
	}
	if (!authed) { /* not our chief yet: try again */
		snprintf(p->connect_err, sizeof(p->connect_err), "%s", why);
		schedule_retry(p);
		return;
	}
	chief_gone(p, why);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	ssize_t n;

	if (c->connecting)
		return;
	if (c->draining) {
		unsigned char sink[4096];

		n = read(c->fd, sink, sizeof(sink));
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			conn_drop(c);
		return;
	}
	n = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		lost(c, n == 0 ? "connection closed" : strerror(errno));
		return;
	}
	c->in_len += (size_t)n;
	c->last_rx = clock_mono();
	while (c->fd >= 0 && !c->p->ended) {
		long len = plane_frame_len(c->in, c->in_len);

		if (len == 0)
			return;
		if (len < 0) {
			if (c->authed)
				lost(c, "it sent a malformed message");
			else
				conn_drop(c);
			return;
		}
		if (c->p->chief)
			chief_frame(c, c->in, (size_t)len);
		else
			member_frame(c, c->in, (size_t)len);
		if (c->fd < 0)
			return;
		memmove(c->in, c->in + len, c->in_len - (size_t)len);
		c->in_len -= (size_t)len;
	}
}

/* Heartbeats out, silence in: every interval. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct plane *p = arg;
	double now = clock_mono();
	char why[64];

	bury(p);
	snprintf(why, sizeof(why), "no heartbeat for %g s", p->cfg->hb_timeout);
	for (struct conn *c = p->conns, *next; c && !p->ended; c = next) {
		next = c->next;
		/* (a loss may close others, this one's next too: closed ones
		 * link only to closed ones) */
		if (c->fd < 0 || c->connecting)
			continue;
		if (c->draining) {
			if (now - c->born > PLANE_AUTH_DEADLINE)
				conn_drop(c);
			continue;
		}
		if (!c->authed) {
			if (now - c->born > PLANE_AUTH_DEADLINE)
				lost(c, "no answer to the handshake");
			continue;
		}
		if (c->closing || (p->chief && c->node < 0))
			continue;
		if (now - c->last_rx > p->cfg->hb_timeout) {
			lost(c, why);
			continue;
		}
		if (now - c->last_tx >= p->interval * 0.95)
			conn_send(c, &(struct plane_msg){ .type = PLANE_PING });
	}
}

int plane_open(struct plane **pp, struct event_base *base, const struct plane_cfg *cfg,
	       const struct plane_hooks *hooks, void *arg, char *err, size_t errlen)
{
	struct plane *p = calloc(1, sizeof(*p));
	struct timeval tv;
	int r;

	*pp = NULL;
	if (!p || auth_init() < 0) {
		free(p);
		snprintf(err, errlen, "%s", p ? "cannot initialise libsodium" : "out of memory");
		return p ? -EIO : -ENOMEM;
	}
	*p = (struct plane){ .base = base, .cfg = cfg, .h = hooks, .arg = arg, .lfd = -1,
			     .chief = cfg->node_rank == 0, .retry_delay = 0.05 };
	p->interval = cfg->hb_timeout / PLANE_HB_PER_TIMEOUT;
	p->ev_tick = event_new(base, -1, EV_PERSIST, on_tick, p);
	p->hosts = calloc((size_t)cfg->nnodes, sizeof(char *));
	for (int k = 0; p->hosts && k < cfg->nnodes && p->ev_tick; k++)
		if (!(p->hosts[k] = strdup(cfg->addrs[k]))) {
			event_free(p->ev_tick);    /* out of memory: fail below */
			p->ev_tick = NULL;
		}
	if (!p->ev_tick || !p->hosts) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	tv = clock_tv(p->interval / 2);
	event_add(p->ev_tick, &tv);
	if (p->chief) {
		p->ccfg = (struct plane_coord_cfg){ .nnodes = cfg->nnodes, .slot_counts = cfg->slot_counts,
						    .world_size = cfg->world_size, .version = SLOTRUN_VERSION,
						    .addrs = p->hosts, .join_timeout = cfg->join_timeout,
						    .restart = cfg->restart, .max_restarts = cfg->max_restarts };
		p->by_node = calloc((size_t)cfg->nnodes, sizeof(*p->by_node));
		if (!p->by_node || plane_coord_init(&p->coord, &p->ccfg) < 0) {
			r = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		r = chief_listen(p, err, errlen);
		if (r < 0)
			goto fail;
	} else {
		p->ev_retry = evtimer_new(base, on_retry, p);
		if (!p->ev_retry) {
			r = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		p->join_deadline = clock_mono() + cfg->join_timeout;
		try_connect(p);
	}
	*pp = p;
	return 0;
fail:
	plane_close(p);
	return r;
}

void plane_local_fail(struct plane *p, const struct plane_cause *f)
{
	struct plane_acts a;

	if (p->ended)
		return;
	if (p->chief) {
		struct plane_cause mine = *f;

		snprintf(mine.host, sizeof(mine.host), "%s", host_of(p, 0));
		a = plane_coord_fail(&p->coord, 0, &mine, clock_mono());
		apply(p, &a, NULL);
	} else if (p->chief_conn && p->chief_conn->authed) {
		conn_send(p->chief_conn, &(struct plane_msg){ .type = PLANE_FAIL, .cause = *f });
	}
}

void plane_local_signal(struct plane *p, int sig, bool stops)
{
	struct plane_acts a;

	if (p->ended)
		return;
	if (p->chief) {
		a = plane_coord_signal(&p->coord, 0, sig, stops);
		apply(p, &a, NULL);
		return;
	}
	if (p->chief_conn && p->chief_conn->authed && p->chief_lost.kind == PLANE_CAUSE_NONE) {
		conn_send(p->chief_conn, &(struct plane_msg){ .type = stops ? PLANE_STOP_REQ : PLANE_SIGNAL_REQ,
							      .sig = sig });
		return;
	}
	if (stops && p->mstate != M_RUNNING) {
		/* not in the job yet: nothing started, nothing to tell */
		say(p, "stopped by SIG%s before the job started", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
		end(p, 128 + sig, NULL);
	}
}

void plane_local_done(struct plane *p, int code)
{
	struct plane_acts a;

	if (p->ended)
		return;
	p->local_done = true;
	if (p->chief) {
		a = plane_coord_done(&p->coord, 0, code);
		apply(p, &a, NULL);
	} else if (p->chief_lost.kind != PLANE_CAUSE_NONE) {
		end(p, plane_cause_code(&p->chief_lost), &p->chief_lost);
	} else if (p->chief_conn) {
		conn_send(p->chief_conn, &(struct plane_msg){ .type = PLANE_DONE, .code = code });
	}
}

/* The last words (ABORT, END) must reach the other nodes before we exit:
 * send what is queued, end our side, and read until each peer closes (or a
 * second passes), so that no reset throws our words away. */
static void linger(struct plane *p)
{
	double deadline = clock_mono() + 1.0;
	struct pollfd pf[64];
	int n = 0;

	for (struct conn *c = p->conns; c; c = c->next) {
		if (c->fd < 0 || c->connecting)
			continue;
		if (c->out_off < c->out_len)
			(void)sock_send_all(c->fd, c->out + c->out_off, c->out_len - c->out_off,
					    sock_deadline_in(deadline - clock_mono()));
		c->out_off = c->out_len;
		shutdown(c->fd, SHUT_WR);
		if (n < (int)(sizeof(pf) / sizeof(pf[0])) && (c->authed || c->draining))
			pf[n++] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
	}
	for (int open = n; open > 0 && clock_mono() < deadline;) {
		int ms = (int)((deadline - clock_mono()) * 1000) + 1;

		if (poll(pf, (nfds_t)n, ms) <= 0)
			break;
		for (int i = 0; i < n; i++) {
			unsigned char sink[4096];
			ssize_t got;

			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			got = read(pf[i].fd, sink, sizeof(sink));
			if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
				pf[i].fd = -1;
				open--;
			}
		}
	}
}

void plane_close(struct plane *p)
{
	if (!p)
		return;
	linger(p);
	while (p->conns)
		conn_drop(p->conns);
	bury(p);
	if (p->ev_tick)
		event_free(p->ev_tick);
	if (p->ev_accept)
		event_free(p->ev_accept);
	if (p->ev_join)
		event_free(p->ev_join);
	if (p->ev_restart)
		event_free(p->ev_restart);
	if (p->ev_retry)
		event_free(p->ev_retry);
	if (p->lfd >= 0)
		close(p->lfd);
	if (p->chief)
		plane_coord_free(&p->coord);
	free(p->by_node);
	for (int k = 0; p->hosts && k < p->cfg->nnodes; k++)
		free(p->hosts[k]);
	free(p->hosts);
	free(p);
}
