// SPDX-License-Identifier: MIT
/* The rendezvous through rank 0 (docs/comm.md), and the members' side of
 * it (rdv_chief.c is rank 0's).
 *
 * Rank 0 listens on MASTER_PORT and greets each connection with a
 * CHALLENGE, a fresh nonce.  The rank answers with REGISTER (rank, sizes,
 * host, the address and port its data plane listens on, its data plane's
 * nonce, a nonce of its own) sealed with an HMAC over the challenge, its
 * nonce and those bytes (common/auth.c).  The secret never crosses the
 * wire, and a recorded registration fails on any other connection, where
 * the challenge differs.  When all have come, rank 0 sends every rank the
 * TABLE, sealed over that rank's nonce, so that a rank knows the table
 * comes from a holder of the secret; or a REJECT saying why not.  A rank
 * that rank 0 had no room for yet is sent BUSY, and connects again after a
 * jittered pause (sock_backoff), as it does while rank 0 is not listening
 * yet.  The rendezvous connections stay open as the control plane
 * (collectives.c, comm_fail.c). */
#include "rendezvous.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "sock.h"

/* A rank sent away BUSY comes back after a pause from this, doubling up
 * to RDV_RETRY_MAX_MS, with jitter. */
#define RDV_RETRY_MS 20
#define RDV_RETRY_MAX_MS 500

/* A member's buffer for what it sends and receives, grown to fit: the
 * table is O(N), and sized by its header rather than by the largest table
 * WORLD_SIZE allows. */
struct rbuf {
	uint8_t *p;
	size_t cap;
};

/* Reads one message from rank 0 into b (at most max bytes of payload): its
 * header into *h.  Rank 0 says why when the rendezvous fails; its word gets
 * a moment past our own deadline to arrive.  -EAGAIN (c->err untouched)
 * when it says it is busy: connect again. */
static int member_recv(struct slotcomm *c, int fd, struct rbuf *b, size_t max, struct frame_hdr *h,
		       int64_t deadline, const char *waiting_for)
{
	uint8_t hdr[FRAME_HDR_LEN];
	const char *why;
	int r;

	r = sock_recv_all(fd, hdr, sizeof(hdr), deadline + 1000000000);
	if (r == 0) {
		r = frame_decode_hdr(hdr, max > FRAME_REJECT_MAX ? max : FRAME_REJECT_MAX, h, &why);
		if (r == 0 && h->type != FRAME_REJECT && h->len > max) {
			why = "payload longer than allowed";
			r = -EPROTO;
		}
		if (r < 0)
			return comm_init_err(c, r, "rank 0 sent a malformed message: %s", why);
		if (h->len > b->cap) {
			uint8_t *p = realloc(b->p, h->len);

			if (!p)
				return comm_init_err(c, -ENOMEM, "out of memory");
			b->p = p;
			b->cap = h->len;
		}
		r = sock_recv_all(fd, b->p, h->len, deadline + 1000000000);
	}
	if (r == -ETIMEDOUT)
		return comm_init_err(c, r, "timed out after %gs waiting for %s", c->cfg.timeout_s,
				     waiting_for);
	if (r < 0)
		return comm_init_io_err(c, r, 0, "during the rendezvous");
	if (h->type == FRAME_BUSY)
		return -EAGAIN;
	if (h->type == FRAME_REJECT) {
		char reason[FRAME_REASON_MAX];

		if (frame_reason_decode(b->p, h->len, reason, sizeof(reason), &why) < 0)
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
static int member_challenge(struct slotcomm *c, struct rbuf *b, int64_t deadline,
			    const char *where, uint8_t *challenge)
{
	struct frame_hdr h;
	const char *why;
	int r;

	r = member_recv(c, c->ctl[0], b, FRAME_CHALLENGE_LEN, &h, deadline,
			"the challenge from rank 0 (is MASTER_PORT some other service?)");
	if (r < 0)
		return r;
	if (h.type != FRAME_CHALLENGE ||
	    frame_challenge_decode(b->p, h.len, challenge, &why) < 0)
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
	m->node = c->peers[c->rank].node;
	auth_nonce(m->nonce);
	return 0;
}

/* Sends the registration m, sealed over rank 0's challenge. */
static int member_register(struct slotcomm *c, const struct frame_register *m,
			   const uint8_t *challenge, int64_t deadline)
{
	uint8_t buf[FRAME_HDR_LEN + FRAME_REGISTER_MAX];
	long n;
	int r;

	n = frame_register_encode(m, buf + FRAME_HDR_LEN, sizeof(buf) - FRAME_HDR_LEN);
	frame_seal(buf + FRAME_HDR_LEN, (size_t)n, c->cfg.secret, RDV_LABEL_REGISTER, challenge, m->nonce);
	frame_encode_hdr(buf, FRAME_REGISTER, 0, (uint64_t)n);
	r = sock_send_all(c->ctl[0], buf, FRAME_HDR_LEN + (size_t)n, deadline);
	if (r < 0)
		return comm_init_io_err(c, r, 0, "during the rendezvous");
	return 0;
}

/* Receives the table of every rank into c->peers (and its host names into
 * c->hosts); its seal over our nonce and the challenge proves it comes
 * from rank 0 of this job. */
static int member_table(struct slotcomm *c, struct rbuf *b, const uint8_t *nonce,
			const uint8_t *challenge, int64_t deadline, const char *where)
{
	uint8_t mac[FRAME_MAC_LEN];
	struct frame_hdr h;
	const char *why;
	char *hosts;
	int r;

	r = member_recv(c, c->ctl[0], b, FRAME_TABLE_MAX(c->size), &h, deadline,
			"the table from rank 0 (it is still waiting for other ranks)");
	if (r < 0)
		return r;
	if (h.type != FRAME_TABLE)
		return comm_init_err(c, -EPROTO, "rank 0 sent a %s message during the rendezvous",
				     frame_type_name(h.type));
	if (!frame_sealed_digest(b->p, h.len, c->cfg.secret, RDV_LABEL_TABLE, nonce, challenge))
		return comm_init_err(c, -EACCES, "the table from %s does not prove the job secret: "
				     "MASTER_ADDR:MASTER_PORT is not rank 0 of this job", where);
	hosts = malloc(h.len);
	if (!hosts)
		return comm_init_err(c, -ENOMEM, "out of memory");
	r = frame_table_decode(b->p, h.len, (uint32_t)c->size, c->peers, hosts, h.len, mac, &why);
	if (r < 0) {
		free(hosts);
		return comm_init_err(c, r, "rank 0 sent a malformed table: %s", why);
	}
	free(c->hosts);
	c->hosts = hosts;
	c->hosts_len = c->hosts_cap = h.len;
	return 0;
}

/* One try: connects to rank 0, answers its challenge with a sealed
 * registration, and receives the sealed table of every rank.  -EAGAIN
 * when rank 0 sent this rank away busy. */
static int member_try(struct slotcomm *c, const struct sockaddr_storage *master, socklen_t mlen,
		      int64_t deadline, const char *my_addr, int dport, struct rbuf *b)
{
	struct frame_register m = { 0 };
	uint8_t challenge[FRAME_NONCE_LEN];
	char where[128];
	int r;

	r = member_connect(c, master, mlen, deadline, where, sizeof(where));
	if (r == 0)
		r = member_challenge(c, b, deadline, where, challenge);
	if (r == 0)
		r = member_fill(c, my_addr, dport, &m);
	if (r == 0)
		r = member_register(c, &m, challenge, deadline);
	if (r == 0)
		r = member_table(c, b, m.nonce, challenge, deadline, where);
	return r;
}

/* A member: tries until rank 0 takes it, or the deadline. */
static int member_rendezvous(struct slotcomm *c, const struct sockaddr_storage *master,
			     socklen_t mlen, int64_t deadline, const char *my_addr, int dport)
{
	struct rbuf b = { 0 };
	int64_t pause = (int64_t)RDV_RETRY_MS * 1000000;
	int r;

	while ((r = member_try(c, master, mlen, deadline, my_addr, dport, &b)) == -EAGAIN) {
		close(c->ctl[0]);
		c->ctl[0] = -1;
		if (!sock_pause_until(sock_backoff(&pause, (int64_t)RDV_RETRY_MAX_MS * 1000000,
						   sock_random()), deadline)) {
			r = comm_init_err(c, -ETIMEDOUT, "timed out after %gs: rank 0 was too busy "
					  "to take this rank", c->cfg.timeout_s);
			break;
		}
	}
	free(b.p);
	return r;
}

int rdv_run(struct slotcomm *c, const struct sockaddr_storage *master, socklen_t mlen,
	    const char *my_addr, int dport, int64_t deadline)
{
	if (c->rank != 0)
		return member_rendezvous(c, master, mlen, deadline, my_addr, dport);
	if (comm_set_host(c, 0, c->cfg.host) < 0)
		return comm_init_err(c, -ENOMEM, "out of memory");
	if (my_addr[0])
		snprintf(c->peers[0].addr, sizeof(c->peers[0].addr), "%s", my_addr);
	else
		(void)sock_addr_host((const struct sockaddr *)master, c->peers[0].addr,
				     sizeof(c->peers[0].addr));
	c->peers[0].port = (uint16_t)dport;
	return rdv_chief(c, master, mlen, deadline);
}
