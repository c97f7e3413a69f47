/* The rendezvous through rank 0, and the ring connections.
 *
 * Rendezvous (DESIGN.md "nccl_worker"): rank 0 listens on MASTER_PORT;
 * each other rank connects and sends REGISTER (rank, sizes, host, the
 * address and port its data plane listens on, the job secret).  Rank 0
 * refuses a wrong secret and goes on waiting for the genuine rank; a
 * registration with the right secret but a different WORLD_SIZE, a rank out
 * of range or a rank that came twice fails the whole job (it is a
 * configuration error, not a stranger).  When all have come, rank 0 sends
 * every rank the TABLE; on timeout it sends the registered ranks a REJECT
 * naming the ranks that never came.  The rendezvous connections stay open
 * as the control plane (collectives.c).
 *
 * Then each rank connects to its right neighbour's data plane, says HELLO
 * (rank and secret), and accepts its left neighbour's connection.  Every
 * rank connects before it accepts, and a connection completes in the
 * listener's backlog without accept(), so this cannot deadlock. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <math.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_internal.h"
#include "io.h"
#include "sock.h"

#define COMM_MAX_RANKS 4096
#define PENDING_MAX 64

/* --- helpers ------------------------------------------------------------- */

static int init_err(struct comm *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int init_err(struct comm *c, int rc, const char *fmt, ...)
{
	va_list ap;

	if (c->err[0])
		return rc;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return rc;
}

/* Constant-time comparison of two NUL-terminated secrets. */
static int secret_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), n = la > lb ? la : lb;
	unsigned diff = (unsigned)(la ^ lb);

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(i < la ? a[i] : 0) ^ (unsigned char)(i < lb ? b[i] : 0);
	return diff == 0;
}

static int resolve(const char *host, int port, int numeric, struct sockaddr_storage *ss,
		   socklen_t *len)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char sport[16];
	int r;

	if (numeric)
		hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	snprintf(sport, sizeof(sport), "%d", port);
	r = getaddrinfo(host, sport, &hints, &res);
	if (r != 0)
		return r == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void set_port(struct sockaddr_storage *ss, int port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

static socklen_t wildcard(int family, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = (sa_family_t)family;
	if (family == AF_INET) {
		((struct sockaddr_in *)ss)->sin_addr.s_addr = htonl(INADDR_ANY);
		return sizeof(struct sockaddr_in);
	}
	((struct sockaddr_in6 *)ss)->sin6_addr = in6addr_any;
	return sizeof(struct sockaddr_in6);
}

/* NCCL_SOCKET_IFNAME: a comma list of interface name prefixes ("=" before
 * the list: exact names).  A "^" (exclusion) list is not supported and
 * leaves the choice to the default.  0 and the address, 1 when the variable
 * does not pick anything, or -ENODEV. */
static int iface_addr(const char *spec, int family, struct sockaddr_storage *ss, socklen_t *len)
{
	struct ifaddrs *ifa, *i;
	int exact = 0, found = -ENODEV;
	char list[256];

	if (!spec[0] || spec[0] == '^')
		return 1;
	if (spec[0] == '=') {
		exact = 1;
		spec++;
	}
	if (getifaddrs(&ifa) < 0)
		return -errno;
	snprintf(list, sizeof(list), "%s", spec);
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && found < 0;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != family ||
			    !(i->ifa_flags & IFF_UP))
				continue;
			if (exact ? strcmp(i->ifa_name, tok) != 0
				  : strncmp(i->ifa_name, tok, strlen(tok)) != 0)
				continue;
			*len = family == AF_INET ? sizeof(struct sockaddr_in)
						 : sizeof(struct sockaddr_in6);
			memcpy(ss, i->ifa_addr, *len);
			set_port(ss, 0);
			found = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	return found;
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
	if (!secret_equal(m.secret, c->cfg.secret)) {
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
		return init_err(c, -EINVAL, "rendezvous failed: %s", reason);
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
		r = init_err(c, -ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < c->size; i++)
		reg[i] = -1;
	sock_addr_str((struct sockaddr *)master, where, sizeof(where));
	r = sock_listen((struct sockaddr *)&ss, sslen, 128, 0, &lfd);
	if (r == -EADDRNOTAVAIL) {
		/* MASTER_ADDR is not an address of this machine (NAT, a
		 * service address): listen on every address instead. */
		sslen = wildcard(master->ss_family, &ss);
		set_port(&ss, c->cfg.master_port);
		r = sock_listen((struct sockaddr *)&ss, sslen, 128, 0, &lfd);
	}
	if (r < 0) {
		r = init_err(c, r, "cannot listen on MASTER_ADDR:MASTER_PORT (%s): %s", where,
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
			r = init_err(c, -ETIMEDOUT, "rendezvous timed out after %gs: rank%s %s never came%s%s%s",
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
			r = init_err(c, -errno, "poll: %s", strerror(errno));
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
			r = init_err(c, -ENOMEM, "out of memory");
			goto out;
		}
		n = frame_table_encode(c->peers, (uint32_t)c->size, buf + FRAME_HDR_LEN, cap);
		frame_encode_hdr(buf, FRAME_TABLE, 0, (uint64_t)n);
		for (int i = 1; i < c->size && r == 0; i++) {
			r = sock_send_all(reg[i], buf, FRAME_HDR_LEN + (size_t)n, deadline);
			if (r < 0) {
				char why[96];

				comm_io_phrase(c, r, why, sizeof(why));
				r = init_err(c, r, "peer rank %d %s during the rendezvous", i, why);
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
		return init_err(c, r, "cannot reach rank 0 at MASTER_ADDR:MASTER_PORT (%s) within %gs",
				where, c->cfg.timeout_s);
	if (r < 0)
		return init_err(c, r, "cannot connect to rank 0 at %s: %s", where, strerror(-r));
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
			return init_err(c, -errno, "getsockname: %s", strerror(errno));
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
		return init_err(c, -ENOMEM, "out of memory");
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
		r = init_err(c, r, "rank 0 sent a malformed message: %s", why);
		goto out;
	}
	r = sock_recv_all(fd, buf, h.len, deadline + 1000000000);
	if (r < 0)
		goto io_fail;
	if (h.type == FRAME_REJECT) {
		char reason[FRAME_REASON_MAX];

		if (frame_reason_decode(buf, h.len, reason, sizeof(reason), &why) < 0)
			snprintf(reason, sizeof(reason), "(unreadable reason: %s)", why);
		r = init_err(c, -ECONNREFUSED, "rank 0 refused this rank: %s", reason);
		goto out;
	}
	if (h.type != FRAME_TABLE) {
		r = init_err(c, -EPROTO, "rank 0 sent a %s message during the rendezvous",
			     frame_type_name(h.type));
		goto out;
	}
	r = frame_table_decode(buf, h.len, (uint32_t)c->size, c->peers, &why);
	if (r < 0)
		r = init_err(c, r, "rank 0 sent a malformed table: %s", why);
	goto out;

io_fail:
	if (r == -ETIMEDOUT)
		r = init_err(c, r, "timed out after %gs waiting for the table from rank 0 "
			     "(it is still waiting for other ranks)", c->cfg.timeout_s);
	else {
		comm_io_phrase(c, r, phrase, sizeof(phrase));
		r = init_err(c, r, "peer rank 0 %s during the rendezvous", phrase);
	}
out:
	free(buf);
	return r;
}

/* --- ring ---------------------------------------------------------------- */

static void ring_tune(struct comm *c, int fd)
{
	int local = sock_is_local(fd) == 1;

	(void)sock_tune(fd, local ? COMM_RING_SOCKBUF_LOCAL : COMM_RING_SOCKBUF);
	c->ring_buf = COMM_RING_SOCKBUF_LOCAL;
	if (fd == c->ring_send)
		c->send_local = local;
	else
		c->recv_local = local;
}

static int ring_connect(struct comm *c, int dlfd, int64_t deadline)
{
	int right = (c->rank + 1) % c->size, left = (c->rank + c->size - 1) % c->size;
	struct sockaddr_storage ss;
	socklen_t len = 0;
	uint8_t buf[FRAME_HDR_LEN + FRAME_HELLO_MAX];
	struct frame_hello hello = { .rank = (uint32_t)c->rank };
	char phrase[96];
	long n;
	int r;

	r = resolve(c->peers[right].addr, c->peers[right].port, 1, &ss, &len);
	if (r < 0)
		return init_err(c, r, "rank %d's data address %s is not numeric", right,
				c->peer_addr[right]);
	r = sock_connect((struct sockaddr *)&ss, len, 0, deadline, &c->ring_send);
	if (r < 0)
		return init_err(c, r, "cannot connect to ring neighbour rank %d at %s: %s", right,
				c->peer_addr[right], r == -ETIMEDOUT ? "timed out" : strerror(-r));
	ring_tune(c, c->ring_send);
	memcpy(hello.secret, c->cfg.secret, sizeof(hello.secret));
	n = frame_hello_encode(&hello, buf + FRAME_HDR_LEN, sizeof(buf) - FRAME_HDR_LEN);
	frame_encode_hdr(buf, FRAME_HELLO, 0, (uint64_t)n);
	r = sock_send_all(c->ring_send, buf, FRAME_HDR_LEN + (size_t)n, deadline);
	if (r < 0) {
		comm_io_phrase(c, r, phrase, sizeof(phrase));
		return init_err(c, r, "peer rank %d %s while connecting the ring", right, phrase);
	}

	while (c->ring_recv < 0) {
		struct frame_hdr h;
		struct frame_hello got;
		const char *why;
		int fd;
		int64_t dl;

		r = sock_accept(dlfd, deadline, &fd);
		if (r == -ETIMEDOUT)
			return init_err(c, r, "timed out after %gs waiting for ring neighbour peer rank %d "
					"to connect", c->cfg.timeout_s, left);
		if (r < 0)
			return init_err(c, r, "accept: %s", strerror(-r));
		/* A stranger that says nothing costs at most 5 s. */
		dl = sock_now_ns() + 5000000000LL;
		if (dl > deadline)
			dl = deadline;
		if (sock_recv_all(fd, buf, FRAME_HDR_LEN, dl) == 0 &&
		    frame_decode_hdr(buf, FRAME_HELLO_MAX, &h, &why) == 0 && h.type == FRAME_HELLO &&
		    sock_recv_all(fd, buf, h.len, dl) == 0 &&
		    frame_hello_decode(buf, h.len, &got, &why) == 0 && got.rank == (uint32_t)left &&
		    secret_equal(got.secret, c->cfg.secret)) {
			c->ring_recv = fd;
			ring_tune(c, fd);
		} else {
			close(fd);
		}
	}
	return 0;
}

/* --- init / destroy ------------------------------------------------------ */

static void count_hosts(struct comm *c)
{
	c->nhosts = 0;
	for (int i = 0; i < c->size; i++) {
		int seen = 0;

		for (int j = 0; j < i && !seen; j++)
			seen = strcmp(c->peers[i].host, c->peers[j].host) == 0;
		c->nhosts += !seen;
	}
}

static void format_addrs(struct comm *c)
{
	for (int i = 0; i < c->size; i++) {
		const struct frame_peer *p = &c->peers[i];

		if (!p->port)
			snprintf(c->peer_addr[i], sizeof(c->peer_addr[i]), "-");
		else if (strchr(p->addr, ':'))
			snprintf(c->peer_addr[i], sizeof(c->peer_addr[i]), "[%s]:%u", p->addr, p->port);
		else
			snprintf(c->peer_addr[i], sizeof(c->peer_addr[i]), "%s:%u", p->addr, p->port);
	}
}

static int do_init(struct comm *c, int64_t deadline)
{
	struct sockaddr_storage master, data;
	socklen_t mlen = 0, dlen = 0;
	char my_addr[FRAME_ADDR_MAX] = "", b[80];
	int dlfd = -1, dport, r;

	r = resolve(c->cfg.master_addr, c->cfg.master_port, 0, &master, &mlen);
	if (r < 0)
		return init_err(c, -EINVAL, "cannot resolve MASTER_ADDR=%s",
				comm_shown(c->cfg.master_addr, b, sizeof(b)));

	r = iface_addr(c->cfg.ifname, master.ss_family, &data, &dlen);
	if (r < 0)
		return init_err(c, -EINVAL, "NCCL_SOCKET_IFNAME=%s: no interface by that name is up "
				"with an %s address", comm_shown(c->cfg.ifname, b, sizeof(b)),
				master.ss_family == AF_INET ? "IPv4" : "IPv6");
	if (r == 0)
		(void)sock_addr_host((struct sockaddr *)&data, my_addr, sizeof(my_addr));
	else
		dlen = wildcard(master.ss_family, &data);
	/* No buffer sizes yet: the kernel then offers its largest window
	 * scale, and ring_tune picks the sizes once the peer is known. */
	r = sock_listen((struct sockaddr *)&data, dlen, 16, 0, &dlfd);
	if (r < 0)
		return init_err(c, r, "cannot listen for ring connections: %s", strerror(-r));
	dport = sock_local_port(dlfd);

	if (c->rank == 0) {
		snprintf(c->peers[0].host, sizeof(c->peers[0].host), "%s", c->cfg.host);
		if (my_addr[0])
			snprintf(c->peers[0].addr, sizeof(c->peers[0].addr), "%s", my_addr);
		else
			(void)sock_addr_host((struct sockaddr *)&master, c->peers[0].addr,
					     sizeof(c->peers[0].addr));
		c->peers[0].port = (uint16_t)dport;
		r = chief_rendezvous(c, &master, mlen, deadline);
	} else {
		r = member_rendezvous(c, &master, mlen, deadline, my_addr, dport);
	}
	if (r == 0) {
		format_addrs(c);
		r = ring_connect(c, dlfd, deadline);
	}
	close(dlfd);
	return r;
}

int comm_init(struct comm **out, const struct comm_config *cfg, char *err, size_t errlen)
{
	struct comm *c = calloc(1, sizeof(*c));
	size_t n = (size_t)cfg->size;
	int r;

	*out = NULL;
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->cfg = *cfg;
	c->rank = cfg->rank;
	c->size = cfg->size;
	c->timeout_ns = cfg->timeout_s * 1e9 < 9e18 ? (int64_t)(cfg->timeout_s * 1e9) : INT64_MAX / 2;
	c->ring_send = c->ring_recv = -1;
	c->peers = calloc(n, sizeof(*c->peers));
	c->peer_addr = calloc(n, sizeof(*c->peer_addr));
	c->ctl = malloc(n * sizeof(*c->ctl));
	c->ctl_mid = calloc(n, 1);
	c->watch = calloc(n, sizeof(*c->watch));
	c->pfd = calloc(n + 2, sizeof(*c->pfd));
	if (!c->peers || !c->peer_addr || !c->ctl || !c->ctl_mid || !c->watch || !c->pfd) {
		comm_destroy(c);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		c->ctl[i] = -1;

	if (c->size == 1) {
		snprintf(c->peers[0].host, sizeof(c->peers[0].host), "%s", cfg->host);
		r = 0;
	} else {
		r = do_init(c, sock_deadline_in(cfg->timeout_s));
	}
	format_addrs(c);
	count_hosts(c);
	if (r < 0) {
		snprintf(err, errlen, "%s", c->err);
		comm_destroy(c);
		return r;
	}
	*out = c;
	return 0;
}

void comm_destroy(struct comm *c)
{
	if (!c)
		return;
	if (c->ctl && c->ctl_mid)
		comm_say_bye(c);
	for (int i = 0; c->ctl && i < c->size; i++)
		if (c->ctl[i] >= 0)
			close(c->ctl[i]);
	if (c->ring_send >= 0)
		close(c->ring_send);
	if (c->ring_recv >= 0)
		close(c->ring_recv);
	free(c->peers);
	free(c->peer_addr);
	free(c->ctl);
	free(c->ctl_mid);
	free(c->watch);
	free(c->pfd);
	free(c->stage);
	free(c);
}

int comm_rank(const struct comm *c) { return c->rank; }
int comm_size(const struct comm *c) { return c->size; }
int comm_local_rank(const struct comm *c) { return c->cfg.local_rank; }
int comm_local_size(const struct comm *c) { return c->cfg.local_size; }
int comm_nhosts(const struct comm *c) { return c->nhosts; }
double comm_timeout_s(const struct comm *c) { return c->cfg.timeout_s; }
const char *comm_error(const struct comm *c) { return c->err; }

const char *comm_peer_host(const struct comm *c, int rank)
{
	return rank >= 0 && rank < c->size ? c->peers[rank].host : "?";
}

const char *comm_peer_addr(const struct comm *c, int rank)
{
	return rank >= 0 && rank < c->size ? c->peer_addr[rank] : "?";
}

const char *comm_transport_name(const struct comm *c)
{
	(void)c;
	return "tcp";  /* auto picks tcp until the shared-memory transport exists */
}
