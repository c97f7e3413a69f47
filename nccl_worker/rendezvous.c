// SPDX-License-Identifier: MIT
/* The rendezvous through rank 0 (docs/comm.md).
 *
 * Rank 0 listens on MASTER_PORT and greets each connection with a
 * CHALLENGE, a fresh nonce.  The rank answers with REGISTER (rank, sizes,
 * host, the address and port its data plane listens on, its data plane's
 * nonce, a nonce of its own) sealed with an HMAC over the challenge, its
 * nonce and those bytes (common/auth.c).  The secret never crosses the
 * wire, and a recorded registration fails on any other connection, where
 * the challenge differs.  Rank 0 refuses a wrong MAC and goes on waiting
 * for the genuine rank; a registration with the right MAC but a different
 * WORLD_SIZE, a rank out of range or a rank that came twice fails the
 * whole job (it is a configuration error, not a stranger).  When all have
 * come, rank 0 sends every rank the TABLE, sealed over that rank's nonce,
 * so that a rank knows the table comes from a holder of the secret; on
 * timeout it sends the registered ranks a REJECT naming the ranks that
 * never came.
 *
 * A connection that has not registered is held at most RDV_UNAUTH_S
 * seconds, at most PENDING_MAX of them at once (the oldest goes first),
 * and nothing longer than a registration is read from it.  The rendezvous
 * connections stay open as the control plane (collectives.c,
 * comm_fail.c). */
#include "rendezvous.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "sock.h"

#define PENDING_MAX 64
#define RDV_UNAUTH_S 10

#define LABEL_REGISTER "slotrun-rdv-register"
#define LABEL_TABLE "slotrun-rdv-table"

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

/* --- rank 0 -------------------------------------------------------------- */

struct pending {
	int fd;
	size_t got, need;
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
};

static void send_reason(int fd, unsigned type, const char *reason)
{
	uint8_t buf[FRAME_HDR_LEN + FRAME_REJECT_MAX];
	long n = frame_reason_encode(reason, buf + FRAME_HDR_LEN, sizeof(buf) - FRAME_HDR_LEN);

	if (n < 0)
		return;
	frame_encode_hdr(buf, type, 0, (uint64_t)n);
	(void)sock_send_all(fd, buf, FRAME_HDR_LEN + (size_t)n, sock_deadline_in(0.5));
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
			LABEL_REGISTER, p->challenge, m.nonce)) {
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
	reg[m.rank].fd = p->fd;
	memcpy(reg[m.rank].challenge, p->challenge, FRAME_NONCE_LEN);
	memcpy(reg[m.rank].nonce, m.nonce, FRAME_NONCE_LEN);
	snprintf(c->peers[m.rank].host, sizeof(c->peers[m.rank].host), "%s", m.host);
	snprintf(c->peers[m.rank].addr, sizeof(c->peers[m.rank].addr), "%s", m.addr);
	c->peers[m.rank].port = m.port;
	memcpy(c->peers[m.rank].ring_nonce, m.ring_nonce, FRAME_NONCE_LEN);
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

static void drop_oldest(struct pending *p, int *np)
{
	int oldest = 0;

	for (int i = 1; i < *np; i++)
		if (p[i].until < p[oldest].until)
			oldest = i;
	drop_pending(p, np, oldest);
}

/* Greets a new connection: the challenge.  Returns 0, or -1 when it could
 * not be sent (the connection is then dropped). */
static int greet(struct pending *p)
{
	uint8_t buf[FRAME_HDR_LEN + FRAME_CHALLENGE_LEN];

	auth_nonce(p->challenge);
	frame_encode_hdr(buf, FRAME_CHALLENGE, 0, FRAME_CHALLENGE_LEN);
	memcpy(buf + FRAME_HDR_LEN, p->challenge, FRAME_CHALLENGE_LEN);
	return sock_send_all(p->fd, buf, sizeof(buf), sock_deadline_in(0.5)) < 0 ? -1 : 0;
}

static void accept_all(int lfd, struct pending *p, int *np)
{
	for (;;) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		int fd = accept4(lfd, (struct sockaddr *)&from, &flen, SOCK_CLOEXEC);
		struct pending *q;

		if (fd < 0)
			return;
		if (*np == PENDING_MAX)
			drop_oldest(p, np);
		(void)sock_tune(fd, 0);
		q = &p[*np];
		q->fd = fd;
		q->got = 0;
		q->need = FRAME_HDR_LEN;
		q->until = sock_deadline_in(RDV_UNAUTH_S);
		sock_addr_str((struct sockaddr *)&from, q->from, sizeof(q->from));
		if (greet(q) < 0)
			close(fd);
		else
			(*np)++;
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

/* Everyone came: every rank gets the table, sealed over its nonces. */
static int send_table(struct slotcomm *c, const struct registered *reg, int64_t deadline)
{
	size_t cap = FRAME_TABLE_MAX(c->size);
	uint8_t *buf = malloc(FRAME_HDR_LEN + cap), zero[FRAME_MAC_LEN] = { 0 };
	long n;
	int r = 0;

	if (!buf)
		return comm_init_err(c, -ENOMEM, "out of memory");
	n = frame_table_encode(c->peers, (uint32_t)c->size, zero, buf + FRAME_HDR_LEN, cap);
	frame_encode_hdr(buf, FRAME_TABLE, 0, (uint64_t)n);
	for (int i = 1; i < c->size && r == 0; i++) {
		frame_seal(buf + FRAME_HDR_LEN, (size_t)n, c->cfg.secret, LABEL_TABLE, reg[i].nonce,
			 reg[i].challenge);
		r = sock_send_all(reg[i].fd, buf, FRAME_HDR_LEN + (size_t)n, deadline);
		if (r < 0)
			r = comm_init_io_err(c, r, i, "during the rendezvous");
	}
	free(buf);
	return r;
}

/* How long poll may wait: until the rendezvous's deadline or the first
 * unregistered connection's, whichever comes first. */
static int poll_ms(const struct pending *p, int np, int64_t deadline)
{
	for (int i = 0; i < np; i++)
		if (p[i].until < deadline)
			deadline = p[i].until;
	return sock_poll_ms(deadline);
}

/* What rank 0 holds while the ranks register. */
struct chief {
	struct slotcomm *c;
	int lfd;                  /* listening on MASTER_ADDR:MASTER_PORT */
	struct pending *p;        /* PENDING_MAX connections not registered yet */
	int np;
	struct pollfd *pfd;       /* the listener, then p */
	struct registered *reg;   /* by rank */
	int left, refused;        /* ranks still to come; connections refused */
	char note[FRAME_REASON_MAX + 128];  /* the last refusal, for a timeout */
};

/* Allocates and listens on the master address (on every address when it
 * is not one of this machine's: NAT, a service address). */
static int chief_open(struct chief *ch, const struct sockaddr_storage *master, socklen_t mlen)
{
	struct slotcomm *c = ch->c;
	struct sockaddr_storage ss = *master;
	socklen_t sslen = mlen;
	char where[128];
	int r;

	ch->p = calloc(PENDING_MAX, sizeof(*ch->p));
	ch->pfd = calloc(PENDING_MAX + 1, sizeof(*ch->pfd));
	ch->reg = calloc((size_t)c->size, sizeof(*ch->reg));
	if (!ch->p || !ch->pfd || !ch->reg)
		return comm_init_err(c, -ENOMEM, "out of memory");
	for (int i = 0; i < c->size; i++)
		ch->reg[i].fd = -1;
	sock_addr_str((struct sockaddr *)master, where, sizeof(where));
	r = sock_listen((struct sockaddr *)&ss, sslen, 128, 0, &ch->lfd);
	if (r == -EADDRNOTAVAIL) {
		sslen = sock_addr_any(master->ss_family, c->cfg.master_port, &ss);
		r = sock_listen((struct sockaddr *)&ss, sslen, 128, 0, &ch->lfd);
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

/* One wait for connections and registrations, and what it brought. */
static int chief_step(struct chief *ch, int64_t deadline)
{
	int64_t now;
	int nready, r;

	if (sock_poll_ms(deadline) == 0)
		return timed_out(ch->c, ch->reg, ch->refused, ch->note);
	ch->pfd[0] = (struct pollfd){ .fd = ch->lfd, .events = POLLIN };
	for (int i = 0; i < ch->np; i++)
		ch->pfd[i + 1] = (struct pollfd){ .fd = ch->p[i].fd, .events = POLLIN };
	nready = poll(ch->pfd, (nfds_t)ch->np + 1, poll_ms(ch->p, ch->np, deadline));
	if (nready < 0)
		return errno == EINTR ? 0 : comm_init_err(ch->c, -errno, "poll: %s", strerror(errno));
	/* Pending connections first, from the last: serving one moves the
	 * last into its place, and the pfd indexes of those before it stay
	 * valid. */
	now = sock_now_ns();
	for (int i = ch->np - 1; i >= 0; i--)
		if ((r = chief_serve(ch, i, ch->pfd[i + 1].revents, now)) < 0)
			return r;
	if (ch->pfd[0].revents)
		accept_all(ch->lfd, ch->p, &ch->np);
	return 0;
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

static int chief_rendezvous(struct slotcomm *c, const struct sockaddr_storage *master,
			    socklen_t mlen, int64_t deadline)
{
	struct chief ch = { .c = c, .lfd = -1, .left = c->size - 1 };
	int r = chief_open(&ch, master, mlen);

	while (r == 0 && ch.left > 0)
		r = chief_step(&ch, deadline);
	if (r == 0)
		r = send_table(c, ch.reg, deadline);
	if (r == 0) {
		for (int i = 1; i < c->size; i++) {
			c->ctl[i] = ch.reg[i].fd;
			ch.reg[i].fd = -1;
		}
	}
	chief_close(&ch, r < 0);
	return r;
}

/* --- other ranks --------------------------------------------------------- */

/* Reads one message from rank 0 into buf (cap bytes): its header into *h.
 * Rank 0 says why when the rendezvous fails; its word gets a moment past
 * our own deadline to arrive. */
static int member_recv(struct slotcomm *c, int fd, uint8_t *buf, size_t cap, struct frame_hdr *h,
		       int64_t deadline, const char *waiting_for)
{
	uint8_t hdr[FRAME_HDR_LEN];
	const char *why;
	int r;

	r = sock_recv_all(fd, hdr, sizeof(hdr), deadline + 1000000000);
	if (r == 0) {
		r = frame_decode_hdr(hdr, cap, h, &why);
		if (r < 0)
			return comm_init_err(c, r, "rank 0 sent a malformed message: %s", why);
		r = sock_recv_all(fd, buf, h->len, deadline + 1000000000);
	}
	if (r == -ETIMEDOUT)
		return comm_init_err(c, r, "timed out after %gs waiting for %s", c->cfg.timeout_s,
				     waiting_for);
	if (r < 0)
		return comm_init_io_err(c, r, 0, "during the rendezvous");
	if (h->type == FRAME_REJECT) {
		char reason[FRAME_REASON_MAX];

		if (frame_reason_decode(buf, h->len, reason, sizeof(reason), &why) < 0)
			snprintf(reason, sizeof(reason), "(unreadable reason: %s)", why);
		return comm_init_err(c, -ECONNREFUSED, "rank 0 refused this rank: %s", reason);
	}
	return 0;
}

int rdv_resolve_master(struct slotcomm *c, int64_t deadline, struct sockaddr_storage *master,
		       socklen_t *mlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
	char port[16], b[80];
	int gai, r;

	snprintf(port, sizeof(port), "%d", c->cfg.master_port);
	r = sock_resolve(c->cfg.master_addr, port, &hints, deadline, NULL, NULL, &res, &gai);
	if (r == -ETIMEDOUT)
		return comm_init_err(c, -EHOSTUNREACH, "cannot resolve MASTER_ADDR=%s within %gs: %s",
				     comm_shown(c->cfg.master_addr, b, sizeof(b)), c->cfg.timeout_s,
				     gai_strerror(gai));
	if (r < 0)
		return comm_init_err(c, r == -EINVAL ? -EHOSTUNREACH : r, "cannot resolve MASTER_ADDR=%s: %s",
				     comm_shown(c->cfg.master_addr, b, sizeof(b)),
				     gai == EAI_SYSTEM ? strerror(-r) : gai_strerror(gai));
	memcpy(master, res->ai_addr, res->ai_addrlen);
	*mlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* Connects to rank 0 as c->ctl[0]; where names it for the messages. */
static int member_connect(struct slotcomm *c, const struct sockaddr_storage *master,
			  socklen_t mlen, int64_t deadline, char *where, size_t wlen)
{
	int fd, r;

	sock_addr_str((const struct sockaddr *)master, where, wlen);
	r = sock_connect((const struct sockaddr *)master, mlen, 0, deadline, &fd);
	if (r == -ETIMEDOUT)
		return comm_init_err(c, r, "cannot reach rank 0 at MASTER_ADDR:MASTER_PORT (%s) within %gs",
				where, c->cfg.timeout_s);
	if (r < 0)
		return comm_init_err(c, r, "cannot connect to rank 0 at %s: %s", where, strerror(-r));
	c->ctl[0] = fd;
	return 0;
}

/* Receives rank 0's challenge, which the registration's seal answers. */
static int member_challenge(struct slotcomm *c, uint8_t *buf, int64_t deadline, const char *where,
			    uint8_t *challenge)
{
	struct frame_hdr h;
	const char *why;
	int r;

	r = member_recv(c, c->ctl[0], buf, FRAME_CHALLENGE_LEN, &h, deadline,
			"the challenge from rank 0 (is MASTER_PORT some other service?)");
	if (r < 0)
		return r;
	if (h.type != FRAME_CHALLENGE ||
	    frame_challenge_decode(buf, h.len, challenge, &why) < 0)
		return comm_init_err(c, -EPROTO, "rank 0 at %s sent a %s message where its challenge "
				     "belongs", where, frame_type_name(h.type));
	return 0;
}

/* Fills this rank's registration, offering my_addr or, without one, the
 * address of the control connection. */
static int member_fill(struct slotcomm *c, const char *my_addr, int dport,
		       struct frame_register *m)
{
	if (my_addr[0]) {
		snprintf(m->addr, sizeof(m->addr), "%s", my_addr);
	} else {
		/* The address this connection leaves from reaches the chief,
		 * so it is the one to offer. */
		struct sockaddr_storage ls;
		socklen_t llen = sizeof(ls);

		if (getsockname(c->ctl[0], (struct sockaddr *)&ls, &llen) < 0 ||
		    sock_addr_host((struct sockaddr *)&ls, m->addr, sizeof(m->addr)) < 0)
			return comm_init_err(c, -errno, "getsockname: %s", strerror(errno));
	}
	m->rank = (uint32_t)c->rank;
	m->size = (uint32_t)c->size;
	m->local_rank = (uint32_t)c->cfg.local_rank;
	m->local_size = (uint32_t)c->cfg.local_size;
	m->port = (uint16_t)dport;
	snprintf(m->host, sizeof(m->host), "%s", c->cfg.host);
	memcpy(m->ring_nonce, c->peers[c->rank].ring_nonce, FRAME_NONCE_LEN);
	auth_nonce(m->nonce);
	return 0;
}

/* Sends the registration m, sealed over rank 0's challenge. */
static int member_register(struct slotcomm *c, uint8_t *buf, size_t cap,
			   const struct frame_register *m, const uint8_t *challenge, int64_t deadline)
{
	long n;
	int r;

	n = frame_register_encode(m, buf + FRAME_HDR_LEN, cap - FRAME_HDR_LEN);
	frame_seal(buf + FRAME_HDR_LEN, (size_t)n, c->cfg.secret, LABEL_REGISTER, challenge, m->nonce);
	frame_encode_hdr(buf, FRAME_REGISTER, 0, (uint64_t)n);
	r = sock_send_all(c->ctl[0], buf, FRAME_HDR_LEN + (size_t)n, deadline);
	if (r < 0)
		return comm_init_io_err(c, r, 0, "during the rendezvous");
	return 0;
}

/* Receives the table of every rank into c->peers; its seal over our nonce
 * and the challenge proves it comes from rank 0 of this job. */
static int member_table(struct slotcomm *c, uint8_t *buf, size_t cap, const uint8_t *nonce,
			const uint8_t *challenge, int64_t deadline, const char *where)
{
	uint8_t mac[FRAME_MAC_LEN];
	struct frame_hdr h;
	const char *why;
	int r;

	r = member_recv(c, c->ctl[0], buf, cap - FRAME_HDR_LEN, &h, deadline,
			"the table from rank 0 (it is still waiting for other ranks)");
	if (r < 0)
		return r;
	if (h.type != FRAME_TABLE)
		return comm_init_err(c, -EPROTO, "rank 0 sent a %s message during the rendezvous",
				     frame_type_name(h.type));
	r = frame_table_decode(buf, h.len, (uint32_t)c->size, c->peers, mac, &why);
	if (r < 0)
		return comm_init_err(c, r, "rank 0 sent a malformed table: %s", why);
	if (!frame_sealed(buf, h.len, c->cfg.secret, LABEL_TABLE, nonce, challenge))
		return comm_init_err(c, -EACCES, "the table from %s does not prove the job secret: "
				     "MASTER_ADDR:MASTER_PORT is not rank 0 of this job", where);
	return r;
}

/* A member: connects to rank 0, answers its challenge with a sealed
 * registration, and receives the sealed table of every rank. */
static int member_rendezvous(struct slotcomm *c, const struct sockaddr_storage *master,
			     socklen_t mlen, int64_t deadline, const char *my_addr, int dport)
{
	struct frame_register m = { 0 };
	uint8_t *buf, challenge[FRAME_NONCE_LEN];
	size_t cap = FRAME_HDR_LEN + FRAME_TABLE_MAX(c->size) + FRAME_REGISTER_MAX;
	char where[128];
	int r;

	r = member_connect(c, master, mlen, deadline, where, sizeof(where));
	if (r < 0)
		return r;
	buf = malloc(cap);
	if (!buf)
		return comm_init_err(c, -ENOMEM, "out of memory");
	r = member_challenge(c, buf, deadline, where, challenge);
	if (r == 0)
		r = member_fill(c, my_addr, dport, &m);
	if (r == 0)
		r = member_register(c, buf, cap, &m, challenge, deadline);
	if (r == 0)
		r = member_table(c, buf, cap, m.nonce, challenge, deadline, where);
	free(buf);
	return r;
}

int rdv_run(struct slotcomm *c, const struct sockaddr_storage *master, socklen_t mlen,
	    const char *my_addr, int dport, int64_t deadline)
{
	if (c->rank != 0)
		return member_rendezvous(c, master, mlen, deadline, my_addr, dport);
	snprintf(c->peers[0].host, sizeof(c->peers[0].host), "%s", c->cfg.host);
	if (my_addr[0])
		snprintf(c->peers[0].addr, sizeof(c->peers[0].addr), "%s", my_addr);
	else
		(void)sock_addr_host((const struct sockaddr *)master, c->peers[0].addr,
				     sizeof(c->peers[0].addr));
	c->peers[0].port = (uint16_t)dport;
	return chief_rendezvous(c, master, mlen, deadline);
}
