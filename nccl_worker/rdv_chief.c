// SPDX-License-Identifier: MIT
/* Rank 0's side of the rendezvous (rendezvous.c has the protocol and the
 * members' side; docs/comm.md the figures at scale).
 *
 * Rank 0 listens on MASTER_PORT with a backlog of WORLD_SIZE, so that a
 * whole job's connects fit in the kernel's queue at once, and greets each
 * connection it takes with a CHALLENGE.  It holds at most PENDING_MAX
 * connections that have not registered, each at most RDV_UNAUTH_S, and
 * reads nothing longer than a registration from them.  While that table
 * is full, new connections wait in the backlog; once the oldest has been
 * held RDV_EVICT_MS without registering it is sent away with BUSY (a
 * genuine rank that was merely slow connects again), so that silent
 * strangers can delay a rank but never fail it (rdv_plan.h).  Each loop
 * costs O(PENDING_MAX), whatever WORLD_SIZE is.
 *
 * One that stays silent RDV_UNAUTH_S is sent away with BUSY too.
 *
 * A registration with a wrong MAC is refused and rank 0 goes on waiting
 * for the genuine rank; one with the right MAC but a different WORLD_SIZE,
 * a rank out of range or a rank that came twice fails the whole job (it is
 * a configuration error, not a stranger).  When all have come, every rank
 * gets the TABLE, sealed over its nonces; on timeout the registered ranks
 * get a REJECT naming the ranks that never came. */
#include "rendezvous.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "auth.h"
#include "rdv_plan.h"
#include "sock.h"

#define RDV_UNAUTH_S 10
#define RDV_EVICT_MS 1000

static void list_ranks(char *buf, size_t len, const int *missing, int nmissing)
{
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i < nmissing && o < len; i++) {
		if (i == 12) {
			snprintf(buf + o, len - o, " and %d more", nmissing - i);
			return;
		}
		o += (size_t)snprintf(buf + o, len - o, "%s%d", i ? ", " : "", missing[i]);
	}
}

struct pending {
	int fd;
	size_t got, need;
	int64_t since;                      /* taken then */
	int64_t until;                      /* dropped then if not registered */
	uint8_t challenge[FRAME_NONCE_LEN];
	char from[80];
	uint8_t buf[FRAME_HDR_LEN + FRAME_REGISTER_MAX];
};

/* A registered rank: its control connection and the handshake's nonces,
 * which the table's MAC is bound to. */
struct registered {
	int fd;
	uint8_t challenge[FRAME_NONCE_LEN];
	uint8_t nonce[FRAME_NONCE_LEN];
	uint8_t mac[FRAME_MAC_LEN];         /* the table's seal for it */
	size_t sent;                        /* bytes of the table sent */
};

/* One frame of type with an optional reason, in a single non-blocking
 * send: the connection is fresh or idle, so it fits, and a peer that does
 * not read costs nothing (rank 0 may have thousands to tell). */
static void send_reason(int fd, unsigned type, const char *reason)
{
	uint8_t buf[FRAME_HDR_LEN + FRAME_REJECT_MAX];
	long n = reason ? frame_reason_encode(reason, buf + FRAME_HDR_LEN,
					      sizeof(buf) - FRAME_HDR_LEN) : 0;

	if (n < 0)
		return;
	frame_encode_hdr(buf, type, 0, (uint64_t)n);
	(void)send(fd, buf, FRAME_HDR_LEN + (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void drop_pending(struct pending *p, int *np, int i)
{
	close(p[i].fd);
	p[i] = p[*np - 1];
	(*np)--;
}

/* A complete registration from pending connection p.  Returns 1 when it was
 * taken (fd moved to reg[]), 0 when refused and dropped, or the job-fatal
 * error. */
static int take_registration(struct slotcomm *c, struct pending *p, struct registered *reg,
			     char *note, size_t notelen, int *refused)
{
	struct frame_register m;
	const char *why;
	char reason[FRAME_REASON_MAX];

	if (frame_register_decode(p->buf + FRAME_HDR_LEN, p->need - FRAME_HDR_LEN, &m, &why) < 0) {
		snprintf(reason, sizeof(reason), "malformed registration: %s", why);
		send_reason(p->fd, FRAME_REJECT, reason);
		snprintf(note, notelen, "%s from %s", reason, p->from);
		(*refused)++;
		return 0;
	}
	if (!frame_sealed(p->buf + FRAME_HDR_LEN, p->need - FRAME_HDR_LEN, c->cfg.secret,
			RDV_LABEL_REGISTER, p->challenge, m.nonce)) {
		send_reason(p->fd, FRAME_REJECT, "wrong job secret (SLOTRUN_JOB_SECRET differs)");
		snprintf(note, notelen, "wrong job secret from %s claiming rank %u (its MAC does "
			 "not match)", p->from, m.rank);
		(*refused)++;
		return 0;
	}
	if (m.size != (uint32_t)c->size)
		snprintf(reason, sizeof(reason), "rank %u at %s has WORLD_SIZE=%u, rank 0 has %d",
			 m.rank, p->from, m.size, c->size);
	else if (m.rank == 0 || m.rank >= (uint32_t)c->size)
		snprintf(reason, sizeof(reason), "a process at %s registered as rank %u, outside 1..%d",
			 p->from, m.rank, c->size - 1);
	else if (reg[m.rank].fd >= 0)
		snprintf(reason, sizeof(reason), "rank %u registered twice (again from %s)", m.rank,
			 p->from);
	else
		reason[0] = '\0';
	if (reason[0]) {
		send_reason(p->fd, FRAME_REJECT, reason);
		return comm_init_err(c, -EINVAL, "rendezvous failed: %s", reason);
	}
	if (comm_set_host(c, (int)m.rank, m.host) < 0)
		return comm_init_err(c, -ENOMEM, "out of memory");
	reg[m.rank].fd = p->fd;
	memcpy(reg[m.rank].challenge, p->challenge, FRAME_NONCE_LEN);
	memcpy(reg[m.rank].nonce, m.nonce, FRAME_NONCE_LEN);
	snprintf(c->peers[m.rank].addr, sizeof(c->peers[m.rank].addr), "%s", m.addr);
	c->peers[m.rank].port = m.port;
	memcpy(c->peers[m.rank].ring_nonce, m.ring_nonce, FRAME_NONCE_LEN);
	c->peers[m.rank].node = m.node;
	return 1;
}

/* Reads what pending connection i has for us.  Returns 1 when a
 * registration is complete, 0 to wait for more, -1 when the connection was
 * dropped. */
static int pending_read(struct pending *p, char *note, size_t notelen, int *refused)
{
	ssize_t n = recv(p->fd, p->buf + p->got, p->need - p->got, MSG_DONTWAIT);
	struct frame_hdr h;
	const char *why;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return -1;  /* went away before registering: nothing to say */
	p->got += (size_t)n;
	if (p->got == FRAME_HDR_LEN && p->need == FRAME_HDR_LEN) {
		int r = frame_decode_hdr(p->buf, FRAME_REGISTER_MAX, &h, &why);

		if (r == 0 && h.type != FRAME_REGISTER) {
			why = "not a registration";
			r = -EPROTO;
		}
		if (r < 0) {
			snprintf(note, notelen, "malformed message from %s: %s", p->from, why);
			(*refused)++;
			return -1;
		}
		p->need += h.len;
	}
	return p->got == p->need ? 1 : 0;
}

static int oldest(const struct pending *p, int np)
{
	int o = 0;

	for (int i = 1; i < np; i++)
		if (p[i].since < p[o].since)
			o = i;
	return o;
}

/* Greets a new connection with the challenge, in one non-blocking send (a
 * fresh connection's buffer takes it).  Returns 0, or -1 when it could not
 * be sent (the connection is then dropped). */
static int greet(struct pending *p)
{
	uint8_t buf[FRAME_HDR_LEN + FRAME_CHALLENGE_LEN];

	auth_nonce(p->challenge);
	frame_encode_hdr(buf, FRAME_CHALLENGE, 0, FRAME_CHALLENGE_LEN);
	memcpy(buf + FRAME_HDR_LEN, p->challenge, FRAME_CHALLENGE_LEN);
	return send(p->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(buf) ?
		       0 : -1;
}

/* What rank 0 holds while the ranks register. */
struct chief {
	struct slotcomm *c;
	int lfd;                  /* listening on MASTER_ADDR:MASTER_PORT */
	struct pending *p;        /* PENDING_MAX connections not registered yet */
	int np;
	struct pollfd *pfd;       /* p, then the listener */
	struct registered *reg;   /* by rank */
	int left, refused;        /* ranks still to come; connections refused */
	char note[FRAME_REASON_MAX + 128];  /* the last refusal, for a timeout */
};

/* Whether the next connection may be taken now (evicting the oldest
 * pending one first when the table is full); else *when says when. */
static enum rdv_admit admit(const struct chief *ch, int64_t now, int64_t *when)
{
	int64_t since = ch->np ? ch->p[oldest(ch->p, ch->np)].since : now;

	return rdv_admit(ch->np, RDV_PENDING_MAX, since, now, (int64_t)RDV_EVICT_MS * 1000000, when);
}

/* Out of descriptors while taking connections: the limit, and the fix. */
static int out_of_fds(struct chief *ch, int err)
{
	struct slotcomm *c = ch->c;

	return comm_init_err(c, -err, "rank 0 ran out of file descriptors (%s) with %d of %d ranks "
			     "registered: WORLD_SIZE=%d needs about %ld on rank 0 (%s)",
			     strerror(err), c->size - 1 - ch->left, c->size - 1, c->size,
			     rdv_fds_needed(0, c->size, c->cfg.local_size,
					    c->cfg.transport != SLOTCOMM_TRANSPORT_TCP, RDV_PENDING_MAX),
			     err == ENFILE ? "the system's limit, fs.file-max, is reached"
					   : "raise RLIMIT_NOFILE: ulimit -n, LimitNOFILE=");
}

/* Takes the connections waiting in the backlog while admit() lets it. */
static int accept_all(struct chief *ch)
{
	for (;;) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		int64_t now = sock_now_ns(), when;
		enum rdv_admit a = admit(ch, now, &when);
		struct pending *q;
		int fd;

		if (a == RDV_WAIT)
			return 0;
		fd = accept4(ch->lfd, (struct sockaddr *)&from, &flen, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				return out_of_fds(ch, errno);
			return 0;  /* EAGAIN: none left; a connection that failed in the queue */
		}
		if (a == RDV_EVICT) {
			int o = oldest(ch->p, ch->np);

			send_reason(ch->p[o].fd, FRAME_BUSY, NULL);
			drop_pending(ch->p, &ch->np, o);
		}
		(void)sock_tune(fd, 0);
		q = &ch->p[ch->np];
		q->fd = fd;
		q->got = 0;
		q->need = FRAME_HDR_LEN;
		q->since = now;
		q->until = now + (int64_t)RDV_UNAUTH_S * 1000000000;
		sock_addr_str((struct sockaddr *)&from, q->from, sizeof(q->from));
		if (greet(q) < 0)
			close(fd);
		else
			ch->np++;
	}
}

/* The rendezvous timed out: which ranks never came, and whom we refused. */
static int timed_out(struct slotcomm *c, const struct registered *reg, int refused,
		     const char *note)
{
	int missing[SLOTCOMM_MAX_RANKS], nm = 0;
	char list[256];

	for (int i = 1; i < c->size; i++)
		if (reg[i].fd < 0)
			missing[nm++] = i;
	list_ranks(list, sizeof(list), missing, nm);
	return comm_init_err(c, -ETIMEDOUT, "rendezvous timed out after %gs: rank%s %s never came%s%s%s",
			     c->cfg.timeout_s, nm > 1 ? "s" : "", list,
			     refused ? " (refused: " : "", refused ? note : "", refused ? ")" : "");
}

/* Moves what fits of the table to registered rank g (its MAC last) in one
 * non-blocking sendmsg.  0, or the connection's error. */
static int table_push(const uint8_t *buf, size_t total, struct registered *g)
{
	size_t body = total - FRAME_MAC_LEN, at = g->sent > body ? g->sent : body;
	struct iovec iov[2];
	struct msghdr msg = { .msg_iov = iov };
	ssize_t w;

	if (g->sent < body)
		iov[msg.msg_iovlen++] = (struct iovec){ (uint8_t *)buf + g->sent, body - g->sent };
	iov[msg.msg_iovlen++] = (struct iovec){ g->mac + (at - body), total - at };
	w = sendmsg(g->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (w < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	g->sent += (size_t)w;
	return 0;
}

/* Everyone came: every rank gets the table, sealed over its nonces.  It is
 * encoded and hashed once, and each rank's seal is a MAC over the digest,
 * so the seals cost O(N) in all rather than O(N^2).  The sends go out
 * together, non-blocking: a rank slow to read (or not running: a
 * simulation puts thousands on one machine) holds up nobody else.  todo
 * lists the ranks not served yet. */
static int send_table(struct chief *ch, int64_t deadline)
{
	struct slotcomm *c = ch->c;
	size_t cap = FRAME_TABLE_MAX(c->size), total;
	uint8_t *buf = malloc(FRAME_HDR_LEN + cap), digest[FRAME_DIGEST_LEN];
	uint8_t zero[FRAME_MAC_LEN] = { 0 };
	int *todo = malloc(sizeof(int) * (size_t)c->size);
	struct pollfd *pfd = calloc((size_t)c->size, sizeof(*pfd));
	int ntodo = 0, r = 0;
	long n;

	if (!buf || !todo || !pfd) {
		r = comm_init_err(c, -ENOMEM, "out of memory");
		goto out;
	}
	n = frame_table_encode(c->peers, c->hosts, (uint32_t)c->size, zero, buf + FRAME_HDR_LEN, cap);
	frame_encode_hdr(buf, FRAME_TABLE, 0, (uint64_t)n);
	frame_digest(buf + FRAME_HDR_LEN, (size_t)n - FRAME_MAC_LEN, digest);
	total = FRAME_HDR_LEN + (size_t)n;
	for (int i = 1; i < c->size; i++) {
		struct registered *g = &ch->reg[i];

		frame_seal_digest(g->mac, digest, c->cfg.secret, RDV_LABEL_TABLE, g->nonce,
				  g->challenge);
		g->sent = 0;
		todo[ntodo] = i;
		pfd[ntodo++].revents = POLLOUT;  /* try everyone at once first */
	}
	while (ntodo > 0) {
		int k = 0, ms;

		for (int j = 0; j < ntodo; j++) {
			struct registered *g = &ch->reg[todo[j]];

			if (pfd[j].revents && (r = table_push(buf, total, g)) < 0) {
				r = comm_init_io_err(c, r, todo[j], "during the rendezvous");
				goto out;
			}
			if (g->sent < total)
				todo[k++] = todo[j];
		}
		ntodo = k;
		for (int j = 0; j < ntodo; j++)
			pfd[j] = (struct pollfd){ .fd = ch->reg[todo[j]].fd, .events = POLLOUT };
		if (ntodo && (ms = sock_poll_ms(deadline)) == 0) {
			r = comm_init_io_err(c, -ETIMEDOUT, todo[0], "during the rendezvous (taking "
					     "the table)");
			goto out;
		}
		if (ntodo && poll(pfd, (nfds_t)ntodo, ms) < 0 && errno != EINTR) {
			r = comm_init_err(c, -errno, "poll: %s", strerror(errno));
			goto out;
		}
	}
out:
	free(buf);
	free(todo);
	free(pfd);
	return r;
}

/* Allocates and listens on the master address (on every address when it
 * is not one of this machine's: NAT, a service address).  The backlog
 * holds a whole job's connects (the kernel caps it at net.core.somaxconn):
 * a connect that overflows it is dropped and retried by the kernel only
 * after a second or more. */
static int chief_open(struct chief *ch, const struct sockaddr_storage *master, socklen_t mlen)
{
	struct slotcomm *c = ch->c;
	struct sockaddr_storage ss = *master;
	socklen_t sslen = mlen;
	int backlog = c->size > 128 ? c->size : 128;
	char where[128];
	int r;

	ch->p = calloc(RDV_PENDING_MAX, sizeof(*ch->p));
	ch->pfd = calloc(RDV_PENDING_MAX + 1, sizeof(*ch->pfd));
	ch->reg = calloc((size_t)c->size, sizeof(*ch->reg));
	if (!ch->p || !ch->pfd || !ch->reg)
		return comm_init_err(c, -ENOMEM, "out of memory");
	for (int i = 0; i < c->size; i++)
		ch->reg[i].fd = -1;
	sock_addr_str((struct sockaddr *)master, where, sizeof(where));
	r = sock_listen((struct sockaddr *)&ss, sslen, backlog, 0, &ch->lfd);
	if (r == -EADDRNOTAVAIL) {
		sslen = sock_addr_any(master->ss_family, c->cfg.master_port, &ss);
		r = sock_listen((struct sockaddr *)&ss, sslen, backlog, 0, &ch->lfd);
	}
	if (r < 0)
		return comm_init_err(c, r, "cannot listen on MASTER_ADDR:MASTER_PORT (%s): %s", where,
				     strerror(-r));
	return 0;
}

/* Pending connection i has something, or nothing (revents 0): reads it,
 * takes a complete registration, and drops a connection that failed, was
 * refused, or sent nothing within RDV_UNAUTH_S.  0, or the rendezvous's
 * failure (a registration that cannot be right). */
static int chief_serve(struct chief *ch, int i, short revents, int64_t now)
{
	struct pending *p = &ch->p[i];
	int got, t;

	if (!revents) {
		if (p->until <= now) {
			snprintf(ch->note, sizeof(ch->note), "%s sent no registration within %ds",
				 p->from, RDV_UNAUTH_S);
			ch->refused++;
			/* a rank merely not scheduled that long comes back */
			send_reason(p->fd, FRAME_BUSY, NULL);
			drop_pending(ch->p, &ch->np, i);
		}
		return 0;
	}
	got = pending_read(p, ch->note, sizeof(ch->note), &ch->refused);
	if (got < 0) {
		drop_pending(ch->p, &ch->np, i);
		return 0;
	}
	if (got == 0)
		return 0;
	t = take_registration(ch->c, p, ch->reg, ch->note, sizeof(ch->note), &ch->refused);
	if (t < 0)
		return t;
	if (t == 1) {
		/* registered: the connection now belongs to reg[] */
		ch->left--;
		ch->p[i] = ch->p[ch->np - 1];
		ch->np--;
	} else {
		drop_pending(ch->p, &ch->np, i);
	}
	return 0;
}

/* One wait for connections and registrations, and what it brought.  The
 * listener is watched only while admit() would take a connection; poll
 * waits at most until the rendezvous's deadline, the first pending
 * connection's, or the moment the oldest may be sent away. */
static int chief_step(struct chief *ch, int64_t deadline)
{
	int64_t now = sock_now_ns(), until = deadline;
	int nready, np, r;

	if (sock_poll_ms(deadline) == 0)
		return timed_out(ch->c, ch->reg, ch->refused, ch->note);
	for (np = 0; np < ch->np; np++) {
		ch->pfd[np] = (struct pollfd){ .fd = ch->p[np].fd, .events = POLLIN };
		if (ch->p[np].until < until)
			until = ch->p[np].until;
	}
	if (admit(ch, now, &until) != RDV_WAIT)
		ch->pfd[np++] = (struct pollfd){ .fd = ch->lfd, .events = POLLIN };
	nready = poll(ch->pfd, (nfds_t)np, sock_poll_ms(until));
	if (nready < 0)
		return errno == EINTR ? 0 : comm_init_err(ch->c, -errno, "poll: %s", strerror(errno));
	/* Pending connections first, from the last: serving one moves the
	 * last into its place, and the pfd indexes of those before it stay
	 * valid. */
	now = sock_now_ns();
	for (int i = ch->np - 1; i >= 0; i--)
		if ((r = chief_serve(ch, i, ch->pfd[i].revents, now)) < 0)
			return r;
	return accept_all(ch);  /* non-blocking: whatever came, or room made */
}

/* Closes what the chief holds; after a failure the registered ranks are
 * told why. */
static void chief_close(struct chief *ch, bool failed)
{
	for (int i = 1; failed && ch->reg && i < ch->c->size; i++) {
		if (ch->reg[i].fd >= 0) {
			send_reason(ch->reg[i].fd, FRAME_REJECT, ch->c->err);
			close(ch->reg[i].fd);
		}
	}
	for (int i = 0; ch->p && i < ch->np; i++)
		close(ch->p[i].fd);
	if (ch->lfd >= 0)
		close(ch->lfd);
	free(ch->p);
	free(ch->pfd);
	free(ch->reg);
}

int rdv_chief(struct slotcomm *c, const struct sockaddr_storage *master, socklen_t mlen,
	      int64_t deadline)
{
	struct chief ch = { .c = c, .lfd = -1, .left = c->size - 1 };
	int r = chief_open(&ch, master, mlen);

	while (r == 0 && ch.left > 0)
		r = chief_step(&ch, deadline);
	if (r == 0)
		r = send_table(&ch, deadline);
	if (r == 0) {
		for (int i = 1; i < c->size; i++) {
			c->ctl[i] = ch.reg[i].fd;
			ch.reg[i].fd = -1;
		}
	}
	chief_close(&ch, r < 0);
	return r;
}
