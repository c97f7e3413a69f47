/* The rendezvous through rank 0 (DESIGN.md "nccl_worker").
 *
 * Rank 0 listens on MASTER_PORT; each other rank connects and sends
 * REGISTER (rank, sizes, host, the address and port its data plane listens
 * on, the job secret).  Rank 0 refuses a wrong secret and goes on waiting
 * for the genuine rank; a registration with the right secret but a
 * different WORLD_SIZE, a rank out of range or a rank that came twice fails
 * the whole job (it is a configuration error, not a stranger).  When all
 * have come, rank 0 sends every rank the TABLE; on timeout it sends the
 * registered ranks a REJECT naming the ranks that never came.  The
 * rendezvous connections stay open as the control plane (collectives.c,
 * comm_fail.c). */
#include "rendezvous.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sock.h"

#define PENDING_MAX 64

int rdv_secret_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), n = la > lb ? la : lb;
	unsigned diff = (unsigned)(la ^ lb);

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(i < la ? a[i] : 0) ^ (unsigned char)(i < lb ? b[i] : 0);
	return diff == 0;
}

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
	char from[80];
	uint8_t buf[FRAME_HDR_LEN + FRAME_REGISTER_MAX];
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
static int take_registration(struct comm *c, struct pending *p, int *reg, char *note,
			     size_t notelen, int *refused)
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
	if (!rdv_secret_equal(m.secret, c->cfg.secret)) {
		send_reason(p->fd, FRAME_REJECT, "wrong job secret (SLOTRUN_JOB_SECRET differs)");
		snprintf(note, notelen, "wrong job secret from %s claiming rank %u", p->from, m.rank);
		(*refused)++;
		return 0;
	}
	if (m.size != (uint32_t)c->size)
		snprintf(reason, sizeof(reason), "rank %u at %s has WORLD_SIZE=%u, rank 0 has %d",
			 m.rank, p->from, m.size, c->size);
	else if (m.rank == 0 || m.rank >= (uint32_t)c->size)
		snprintf(reason, sizeof(reason), "a process at %s registered as rank %u, outside 1..%d",
			 p->from, m.rank, c->size - 1);
	else if (reg[m.rank] >= 0)
		snprintf(reason, sizeof(reason), "rank %u registered twice (again from %s)", m.rank,
			 p->from);
	else
		reason[0] = '\0';
	if (reason[0]) {
		send_reason(p->fd, FRAME_REJECT, reason);
		return comm_init_err(c, -EINVAL, "rendezvous failed: %s", reason);
	}
	reg[m.rank] = p->fd;
	snprintf(c->peers[m.rank].host, sizeof(c->peers[m.rank].host), "%s", m.host);
	snprintf(c->peers[m.rank].addr, sizeof(c->peers[m.rank].addr), "%s", m.addr);
	c->peers[m.rank].port = m.port;
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

static int chief_rendezvous(struct comm *c, const struct sockaddr_storage *master,
			    socklen_t mlen, int64_t deadline)
{
	struct sockaddr_storage ss = *master;
	socklen_t sslen = mlen;
	struct pending *p = calloc(PENDING_MAX, sizeof(*p));
	struct pollfd *pfd = calloc(PENDING_MAX + 1, sizeof(*pfd));
	int *reg = malloc(sizeof(int) * (size_t)c->size);
	int lfd = -1, np = 0, left = c->size - 1, refused = 0, r = 0;
	char note[FRAME_REASON_MAX + 128] = "", where[128];

	if (!p || !pfd || !reg) {
		r = comm_init_err(c, -ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < c->size; i++)
		reg[i] = -1;
	sock_addr_str((struct sockaddr *)master, where, sizeof(where));
	r = sock_listen((struct sockaddr *)&ss, sslen, 128, 0, &lfd);
	if (r == -EADDRNOTAVAIL) {
		/* MASTER_ADDR is not an address of this machine (NAT, a
		 * service address): listen on every address instead. */
		sslen = sock_addr_any(master->ss_family, c->cfg.master_port, &ss);
		r = sock_listen((struct sockaddr *)&ss, sslen, 128, 0, &lfd);
	}
	if (r < 0) {
		r = comm_init_err(c, r, "cannot listen on MASTER_ADDR:MASTER_PORT (%s): %s", where,
			     strerror(-r));
		goto out;
	}

	while (left > 0) {
		int ms = sock_poll_ms(deadline), nready;

		if (ms == 0) {
			int missing[COMM_MAX_RANKS], nm = 0;
			char list[256];

			for (int i = 1; i < c->size; i++)
				if (reg[i] < 0)
					missing[nm++] = i;
			list_ranks(list, sizeof(list), missing, nm);
			r = comm_init_err(c, -ETIMEDOUT, "rendezvous timed out after %gs: rank%s %s never came%s%s%s",
				     c->cfg.timeout_s, nm > 1 ? "s" : "", list,
				     refused ? " (refused: " : "", refused ? note : "",
				     refused ? ")" : "");
			goto out;
		}
		pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (int i = 0; i < np; i++)
			pfd[i + 1] = (struct pollfd){ .fd = p[i].fd, .events = POLLIN };
		nready = poll(pfd, (nfds_t)np + 1, ms);
		if (nready < 0) {
			if (errno == EINTR)
				continue;
			r = comm_init_err(c, -errno, "poll: %s", strerror(errno));
			goto out;
		}
		/* Pending connections first (their pfd indexes are still valid). */
		for (int i = np - 1; i >= 0; i--) {
			int got;

			if (!pfd[i + 1].revents)
				continue;
			got = pending_read(&p[i], note, sizeof(note), &refused);
			if (got < 0) {
				drop_pending(p, &np, i);
			} else if (got > 0) {
				int t = take_registration(c, &p[i], reg, note, sizeof(note), &refused);

				if (t < 0) {
					r = t;
					goto out;
				}
				if (t == 1) {
					left--;
					p[i] = p[np - 1];
					np--;
				} else {
					drop_pending(p, &np, i);
				}
			}
		}
		if (pfd[0].revents) {
			for (;;) {
				struct sockaddr_storage from;
				socklen_t flen = sizeof(from);
				int fd = accept4(lfd, (struct sockaddr *)&from, &flen, SOCK_CLOEXEC);

				if (fd < 0)
					break;
				if (np == PENDING_MAX)
					drop_pending(p, &np, 0);  /* the oldest silent one */
				(void)sock_tune(fd, 0);
				p[np].fd = fd;
				p[np].got = 0;
				p[np].need = FRAME_HDR_LEN;
				sock_addr_str((struct sockaddr *)&from, p[np].from, sizeof(p[np].from));
				np++;
			}
		}
	}

	/* Everyone came: send the table. */
	{
		size_t cap = 4 + (size_t)c->size * FRAME_PEER_MAX;
		uint8_t *buf = malloc(FRAME_HDR_LEN + cap);
		long n;

		if (!buf) {
			r = comm_init_err(c, -ENOMEM, "out of memory");
			goto out;
		}
		n = frame_table_encode(c->peers, (uint32_t)c->size, buf + FRAME_HDR_LEN, cap);
		frame_encode_hdr(buf, FRAME_TABLE, 0, (uint64_t)n);
		for (int i = 1; i < c->size && r == 0; i++) {
			r = sock_send_all(reg[i], buf, FRAME_HDR_LEN + (size_t)n, deadline);
			if (r < 0) {
				char why[96];

				comm_io_phrase(c, r, why, sizeof(why));
				r = comm_init_err(c, r, "peer rank %d %s during the rendezvous", i, why);
			}
		}
		free(buf);
		if (r < 0)
			goto out;
	}
	for (int i = 1; i < c->size; i++) {
		c->ctl[i] = reg[i];
		reg[i] = -1;
	}

out:
	if (r < 0 && reg) {
		for (int i = 1; i < c->size; i++) {
			if (reg[i] >= 0) {
				send_reason(reg[i], FRAME_REJECT, c->err);
				close(reg[i]);
			}
		}
	}
	for (int i = 0; p && i < np; i++)
		close(p[i].fd);
	if (lfd >= 0)
		close(lfd);
	free(p);
	free(pfd);
	free(reg);
	return r;
}

/* --- other ranks --------------------------------------------------------- */

static int member_rendezvous(struct comm *c, const struct sockaddr_storage *master,
			     socklen_t mlen, int64_t deadline, const char *my_addr, int dport)
{
	struct frame_register m = { 0 };
	uint8_t hdr[FRAME_HDR_LEN];
	uint8_t *buf;
	size_t cap = FRAME_HDR_LEN + 4 + (size_t)c->size * FRAME_PEER_MAX + FRAME_REGISTER_MAX;
	struct frame_hdr h;
	const char *why;
	char where[128], phrase[96];
	long n;
	int fd, r;

	sock_addr_str((const struct sockaddr *)master, where, sizeof(where));
	r = sock_connect((const struct sockaddr *)master, mlen, 0, deadline, &fd);
	if (r == -ETIMEDOUT)
		return comm_init_err(c, r, "cannot reach rank 0 at MASTER_ADDR:MASTER_PORT (%s) within %gs",
				where, c->cfg.timeout_s);
	if (r < 0)
		return comm_init_err(c, r, "cannot connect to rank 0 at %s: %s", where, strerror(-r));
	c->ctl[0] = fd;

	if (my_addr[0]) {
		snprintf(m.addr, sizeof(m.addr), "%s", my_addr);
	} else {
		/* The address this connection leaves from reaches the chief,
		 * so it is the one to offer. */
		struct sockaddr_storage ls;
		socklen_t llen = sizeof(ls);

		if (getsockname(fd, (struct sockaddr *)&ls, &llen) < 0 ||
		    sock_addr_host((struct sockaddr *)&ls, m.addr, sizeof(m.addr)) < 0)
			return comm_init_err(c, -errno, "getsockname: %s", strerror(errno));
	}
	m.rank = (uint32_t)c->rank;
	m.size = (uint32_t)c->size;
	m.local_rank = (uint32_t)c->cfg.local_rank;
	m.local_size = (uint32_t)c->cfg.local_size;
	m.port = (uint16_t)dport;
	snprintf(m.host, sizeof(m.host), "%s", c->cfg.host);
	memcpy(m.secret, c->cfg.secret, sizeof(m.secret));

	buf = malloc(cap);
	if (!buf)
		return comm_init_err(c, -ENOMEM, "out of memory");
	n = frame_register_encode(&m, buf + FRAME_HDR_LEN, cap - FRAME_HDR_LEN);
	frame_encode_hdr(buf, FRAME_REGISTER, 0, (uint64_t)n);
	r = sock_send_all(fd, buf, FRAME_HDR_LEN + (size_t)n, deadline);
	if (r < 0)
		goto io_fail;

	/* Rank 0 says why when the rendezvous fails; give its word a moment
	 * past our own deadline to arrive. */
	r = sock_recv_all(fd, hdr, sizeof(hdr), deadline + 1000000000);
	if (r < 0)
		goto io_fail;
	r = frame_decode_hdr(hdr, cap - FRAME_HDR_LEN, &h, &why);
	if (r < 0) {
		r = comm_init_err(c, r, "rank 0 sent a malformed message: %s", why);
		goto out;
	}
	r = sock_recv_all(fd, buf, h.len, deadline + 1000000000);
	if (r < 0)
		goto io_fail;
	if (h.type == FRAME_REJECT) {
		char reason[FRAME_REASON_MAX];

		if (frame_reason_decode(buf, h.len, reason, sizeof(reason), &why) < 0)
			snprintf(reason, sizeof(reason), "(unreadable reason: %s)", why);
		r = comm_init_err(c, -ECONNREFUSED, "rank 0 refused this rank: %s", reason);
		goto out;
	}
	if (h.type != FRAME_TABLE) {
		r = comm_init_err(c, -EPROTO, "rank 0 sent a %s message during the rendezvous",
			     frame_type_name(h.type));
		goto out;
	}
	r = frame_table_decode(buf, h.len, (uint32_t)c->size, c->peers, &why);
	if (r < 0)
		r = comm_init_err(c, r, "rank 0 sent a malformed table: %s", why);
	goto out;

io_fail:
	if (r == -ETIMEDOUT)
		r = comm_init_err(c, r, "timed out after %gs waiting for the table from rank 0 "
			     "(it is still waiting for other ranks)", c->cfg.timeout_s);
	else {
		comm_io_phrase(c, r, phrase, sizeof(phrase));
		r = comm_init_err(c, r, "peer rank 0 %s during the rendezvous", phrase);
	}
out:
	free(buf);
	return r;
}

int rdv_run(struct comm *c, const struct sockaddr_storage *master, socklen_t mlen,
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
