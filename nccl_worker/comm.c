// SPDX-License-Identifier: MIT
/* The communicator's life cycle: slotcomm_init (the data-plane listener, the
 * rendezvous, the ring connections), slotcomm_destroy, and what a communicator
 * tells about itself.
 *
 * The ring connections are ring_connect.c's. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "comm_internal.h"
#include "rdv_plan.h"
#include "reduce.h"
#include "rendezvous.h"
#include "shm.h"
#include "shm_sched.h"
#include "sock.h"
#include "transport.h"

/* --- helpers ------------------------------------------------------------- */

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
			sock_addr_set_port(ss, 0);
			found = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	return found;
}

/* Formatted on first use: a job of thousands asks for a few (its ring
 * neighbours', a failure's), and the array's untouched pages cost
 * nothing. */
const char *comm_peer_addr(const struct slotcomm *c, int rank)
{
	const struct frame_peer *p = &c->peers[rank];
	char *s = c->peer_addr[rank];
	size_t len = sizeof(c->peer_addr[rank]);

	if (s[0])
		return s;
	if (!p->port)
		snprintf(s, len, "-");
	else if (strchr(p->addr, ':'))
		snprintf(s, len, "[%s]:%u", p->addr, p->port);
	else
		snprintf(s, len, "%s:%u", p->addr, p->port);
	return s;
}

/* The BYE on the data plane too: the right neighbour, if it is in an
 * all-reduce we never joined, reads it where it expects our header, and a
 * control collective of its own sees it there (comm_ring_peek).  Between
 * collectives the stream is empty, so it fits; best effort. */
static void ring_say_bye(struct slotcomm *c, struct ring *g)
{
	uint8_t hdr[FRAME_HDR_LEN];

	if (c->broken || g->n < 2 || g->send_fd < 0)
		return;
	frame_encode_hdr(hdr, FRAME_BYE, c->seq, 0);
	(void)send(g->send_fd, hdr, sizeof(hdr), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* --- init / destroy ------------------------------------------------------ */

int comm_set_host(struct slotcomm *c, int rank, const char *host)
{
	size_t n = strnlen(host, FRAME_HOST_MAX - 1);

	if (c->hosts_len + n + 1 > c->hosts_cap) {
		size_t cap = 2 * c->hosts_cap + n + 1;
		char *p = realloc(c->hosts, cap);

		if (!p)
			return -ENOMEM;
		c->hosts = p;
		c->hosts_cap = cap;
	}
	memcpy(c->hosts + c->hosts_len, host, n);
	c->hosts[c->hosts_len + n] = '\0';
	c->peers[rank].host = (uint32_t)c->hosts_len;
	c->hosts_len += n + 1;
	return 0;
}

/* Distinct host names in the table: O(size log size), not a comparison
 * of every pair (a thousand hosts would cost half a million). */
static void count_hosts(struct slotcomm *c)
{
	const char **names = malloc(sizeof(*names) * (size_t)c->size);
	int *scratch = malloc(sizeof(int) * (size_t)c->size);

	for (int i = 0; names && i < c->size; i++)
		names[i] = comm_host(c, i);
	c->nhosts = names && scratch ? rdv_count_distinct(names, c->size, scratch) : 0;
	free(names);
	free(scratch);
}

/* The ring through every rank, in rank order. */
static int connect_full_ring(struct slotcomm *c, int dlfd, int64_t deadline)
{
	c->ring.pos = c->rank;
	c->ring.n = c->size;
	c->ring.right = (c->rank + 1) % c->size;
	c->ring.left = (c->rank + c->size - 1) % c->size;
	return comm_ring_connect(c, &c->ring, dlfd, deadline);
}

static const char *asked(char t)
{
	return t == 't' ? "tcp" : t == 's' ? "shm" : "auto";
}

/* The ring through the node leaders (the hierarchical transport), for the
 * leaders; the other ranks are in no ring. */
static int connect_leader_ring(struct slotcomm *c, const int *leaders, int nnodes, int dlfd,
			       int64_t deadline)
{
	for (int k = 0; k < nnodes; k++) {
		if (leaders[k] != c->rank)
			continue;
		c->ring.pos = k;
		c->ring.n = nnodes;
		c->ring.right = leaders[(k + 1) % nnodes];
		c->ring.left = leaders[(k + nnodes - 1) % nnodes];
		return comm_ring_connect(c, &c->ring, dlfd, deadline);
	}
	return 0;
}

/* Whether every node could set up its shared memory, so that all ranks
 * take the same decision: rank 0 gathers the votes and broadcasts the
 * first failure (O(N) bytes in all, where an allgather would move O(N^2)).
 * Returns 1 (all could), 0 with the first failure's reason in why, or the
 * control plane's failure. */
static int agree(struct slotcomm *c, int ok, char *why, size_t len)
{
	struct vote {
		char ok;
		char why[231];
	} mine = { .ok = (char)ok }, *all = NULL;
	int r;

	if (c->rank == 0 && !(all = calloc((size_t)c->size, sizeof(*all))))
		return comm_init_err(c, -ENOMEM, "out of memory");
	snprintf(mine.why, sizeof(mine.why), "%s", why);
	r = slotcomm_gather(c, &mine, sizeof(mine), all);
	for (int i = 0; r == 0 && all && i < c->size; i++) {
		if (!all[i].ok) {
			mine = all[i];
			break;
		}
	}
	free(all);
	if (r == 0)
		r = slotcomm_broadcast(c, &mine, sizeof(mine));
	if (r < 0)
		return r;
	mine.why[sizeof(mine.why) - 1] = '\0';
	if (!mine.ok)
		snprintf(why, len, "%s", mine.why);
	return mine.ok != 0;
}

/* SLOTRUN_TRANSPORT (docs/comm.md, "Choosing the transport"): every rank
 * said in the rendezvous what it asked for, which node it is on and where
 * its node's segment can be fetched (the table's frame_node: no allgather
 * of it); all take the same decision from the same table.  tcp: the ring
 * through every rank.  auto: shared memory when two ranks share a node
 * (the shm transport on one node, the hierarchical one across several),
 * else, or when a node cannot set it up, the TCP ring.  shm: shared memory
 * or a one-line error. */
static int pick_transport(struct slotcomm *c, int dlfd, int64_t deadline)
{
	struct shm_info mine, *all = calloc((size_t)c->size, sizeof(*all));
	int *leaders = malloc(sizeof(int) * (size_t)c->size);
	char why[SLOTCOMM_ERR_MAX] = "";
	int nnodes, r;

	if (!all || !leaders) {
		free(all);
		free(leaders);
		return comm_init_err(c, -ENOMEM, "out of memory");
	}
	for (int i = 0; i < c->size; i++)
		shm_info_from_node(&c->peers[i].node, &all[i]);
	mine = all[c->rank];
	r = 0;
	for (int i = 0; i < c->size; i++) {
		if (all[i].transport != mine.transport) {
			r = comm_init_err(c, -EINVAL, "SLOTRUN_TRANSPORT differs: rank %d has %s, rank %d "
					  "%s", i, asked(all[i].transport), c->rank,
					  asked(mine.transport));
			goto out;
		}
	}
	nnodes = shm_node_leaders(all[0].key, sizeof(*all), c->size, leaders);
	c->nnodes = nnodes;
	if (mine.transport == 's' && nnodes > 1) {
		int other = leaders[1];

		r = comm_init_err(c, -EXDEV, "SLOTRUN_TRANSPORT=shm, but ranks 0 and %d are on "
				  "different hosts (%s, %s; a host is a kernel boot and a network "
				  "namespace): use auto or tcp", other, comm_host(c, 0),
				  comm_host(c, other));
		goto out;
	}
	if (mine.transport == 't' || nnodes == c->size) {
		shm_free(c, 0);
		c->tp = &transport_tcp;
		r = connect_full_ring(c, dlfd, deadline);
		goto out;
	}

	r = shm_attach(c, all, deadline, why, sizeof(why));
	r = agree(c, r == 0, why, sizeof(why));
	if (r < 0)
		goto out;
	if (r == 0) {
		shm_free(c, 0);
		if (mine.transport == 's') {
			r = comm_init_err(c, -EXDEV, "SLOTRUN_TRANSPORT=shm: no shared memory: %s", why);
			goto out;
		}
		snprintf(c->tp_note, sizeof(c->tp_note),
			 "transport auto: no shared memory (%s); using tcp", why);
		c->tp = &transport_tcp;
		r = connect_full_ring(c, dlfd, deadline);
		goto out;
	}
	c->tp = nnodes == 1 ? &transport_shm : &transport_hier;
	r = nnodes == 1 ? 0 : connect_leader_ring(c, leaders, nnodes, dlfd, deadline);
out:
	free(all);
	free(leaders);
	return r;
}

/* Descriptors open now (their count stands for the highest number in
 * use); 64 when /proc cannot tell. */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return 64;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A communicator of thousands needs as many descriptors on rank 0 (a
 * control connection per rank), more than the usual soft RLIMIT_NOFILE of
 * 1024: the soft limit is raised to the hard one then (rdv_plan.h), and
 * when even that is too few, init fails at once saying so, rather than
 * rank 0 running out in the middle of the rendezvous. */
static int fit_nofile(struct slotcomm *c)
{
	uint64_t need = (uint64_t)(open_fds() + rdv_fds_needed(c->rank, c->size, c->cfg.local_size,
				   c->cfg.transport != SLOTCOMM_TRANSPORT_TCP, RDV_PENDING_MAX));
	struct rlimit rl;
	uint64_t set;
	int r;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	r = rdv_nofile_plan(need, rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur,
			    rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : rl.rlim_max, &set);
	if (r < 0)
		return comm_init_err(c, -EMFILE, "WORLD_SIZE=%d needs about %llu file descriptors on "
				     "rank %d, but RLIMIT_NOFILE allows %llu (hard limit): raise it "
				     "(ulimit -Hn, systemd's LimitNOFILE=, docker's --ulimit nofile=)",
				     c->size, (unsigned long long)need, c->rank,
				     (unsigned long long)rl.rlim_max);
	if (r == 0)
		return 0;
	rl.rlim_cur = set == UINT64_MAX ? RLIM_INFINITY : (rlim_t)set;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return comm_init_err(c, -errno, "cannot raise RLIMIT_NOFILE to %llu for WORLD_SIZE=%d: "
				     "%s", (unsigned long long)set, c->size, strerror(errno));
	return 0;
}

static int do_init(struct slotcomm *c, int64_t deadline)
{
	struct sockaddr_storage master, data;
	struct shm_info mine;
	socklen_t mlen = 0, dlen = 0;
	char my_addr[FRAME_ADDR_MAX] = "", b[80];
	int dlfd = -1, dport, r;

	if (auth_init() < 0)
		return comm_init_err(c, -EIO, "libsodium cannot initialise (no entropy source?)");
	r = fit_nofile(c);
	if (r < 0)
		return r;
	auth_nonce(c->peers[c->rank].ring_nonce);
	r = rdv_resolve_master(c, deadline, &master, &mlen);
	if (r < 0)
		return r;

	r = iface_addr(c->cfg.ifname, master.ss_family, &data, &dlen);
	if (r < 0)
		return comm_init_err(c, -EINVAL, "NCCL_SOCKET_IFNAME=%s: no interface by that name is up "
				"with an %s address", comm_shown(c->cfg.ifname, b, sizeof(b)),
				master.ss_family == AF_INET ? "IPv4" : "IPv6");
	if (r == 0)
		(void)sock_addr_host((struct sockaddr *)&data, my_addr, sizeof(my_addr));
	else
		dlen = sock_addr_any(master.ss_family, 0, &data);
	/* No buffer sizes yet: the kernel then offers its largest window
	 * scale, and ring_tune picks the sizes once the peer is known. */
	r = sock_listen((struct sockaddr *)&data, dlen, 16, 0, &dlfd);
	if (r < 0)
		return comm_init_err(c, r, "cannot listen for ring connections: %s", strerror(-r));
	dport = sock_local_port(dlfd);

	shm_info_fill(c, &mine);
	shm_info_to_node(&mine, &c->peers[c->rank].node);
	r = rdv_run(c, &master, mlen, my_addr, dport, deadline);
	if (r == 0)
		r = pick_transport(c, dlfd, deadline);
	close(dlfd);
	return r;
}

int slotcomm_init(struct slotcomm **out, const struct slotcomm_config *cfg, char *err,
		  size_t errlen)
{
	struct slotcomm *c;
	size_t n;
	int r;

	*out = NULL;
	if ((r = slotcomm_config_check(cfg, err, errlen)) < 0)
		return r;
	n = (size_t)cfg->size;
	if (!(c = calloc(1, sizeof(*c)))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->cfg = *cfg;
	if (!c->cfg.host[0])
		comm_own_host(c->cfg.host, sizeof(c->cfg.host));
	c->rank = cfg->rank;
	c->size = cfg->size;
	c->timeout_ns = cfg->timeout_s * 1e9 < 9e18 ? (int64_t)(cfg->timeout_s * 1e9) : INT64_MAX / 2;
	c->ring.send_fd = c->ring.recv_fd = -1;
	c->shm_lfd = -1;
	c->nnodes = 1;
	c->tp = &transport_tcp;
	c->peers = calloc(n, sizeof(*c->peers));
	c->hosts = calloc(1, 64);
	c->hosts_len = 1;
	c->hosts_cap = 64;
	c->peer_addr = calloc(n, sizeof(*c->peer_addr));
	c->ctl = malloc(n * sizeof(*c->ctl));
	for (size_t i = 0; c->ctl && i < n; i++)    /* slotcomm_destroy closes what is >= 0 */
		c->ctl[i] = -1;
	c->ctl_mid = calloc(n, 1);
	c->watch = calloc(n, sizeof(*c->watch));
	c->ahead = calloc(n, 1);
	c->reading = calloc(n, 1);
	c->pfd = calloc(2 * n + 2, sizeof(*c->pfd));
	if (!c->peers || !c->hosts || !c->peer_addr || !c->ctl || !c->ctl_mid || !c->watch || !c->ahead ||
	    !c->reading || !c->pfd) {
		slotcomm_destroy(c);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}

	if (c->size == 1)
		r = comm_set_host(c, 0, c->cfg.host) < 0 ? comm_init_err(c, -ENOMEM, "out of memory") : 0;
	else
		r = do_init(c, sock_deadline_in(cfg->timeout_s));
	count_hosts(c);
	if (r < 0) {
		snprintf(err, errlen, "%s", c->err);
		slotcomm_destroy(c);
		return r;
	}
	*out = c;
	return 0;
}

void slotcomm_destroy(struct slotcomm *c)
{
	if (!c)
		return;
	if (c->ctl && c->ctl_mid)
		comm_say_bye(c);
	ring_say_bye(c, &c->ring);
	for (int i = 0; c->ctl && i < c->size; i++)
		if (c->ctl[i] >= 0)
			close(c->ctl[i]);
	if (c->tp && c->tp->destroy)
		c->tp->destroy(c);
	shm_free(c, 0);  /* what a failed slotcomm_init left */
	comm_ring_close(&c->ring);
	free(c->peers);
	free(c->hosts);
	free(c->peer_addr);
	free(c->ctl);
	free(c->ctl_mid);
	free(c->watch);
	free(c->ahead);
	free(c->reading);
	free(c->pfd);
	free(c);
}

int slotcomm_rank(const struct slotcomm *c) { return c->rank; }
int slotcomm_size(const struct slotcomm *c) { return c->size; }
int slotcomm_local_rank(const struct slotcomm *c) { return c->cfg.local_rank; }
int slotcomm_local_size(const struct slotcomm *c) { return c->cfg.local_size; }
int slotcomm_nhosts(const struct slotcomm *c) { return c->nhosts; }
int slotcomm_nnodes(const struct slotcomm *c) { return c->nnodes; }
double slotcomm_timeout_s(const struct slotcomm *c) { return c->cfg.timeout_s; }
const char *slotcomm_error(const struct slotcomm *c) { return c->err; }

const char *slotcomm_peer_host(const struct slotcomm *c, int rank)
{
	return rank >= 0 && rank < c->size ? comm_host(c, rank) : "?";
}

const char *slotcomm_peer_addr(const struct slotcomm *c, int rank)
{
	return rank >= 0 && rank < c->size ? comm_peer_addr(c, rank) : "?";
}

const char *slotcomm_transport_name(const struct slotcomm *c)
{
	return c->tp->name;
}

void slotcomm_transport_describe(const struct slotcomm *c, char *buf, size_t len)
{
	if (c->size == 1)
		snprintf(buf, len, "a single rank, nothing to exchange");
	else
		c->tp->describe(c, buf, len);
}

const char *slotcomm_transport_note(const struct slotcomm *c)
{
	return c->tp_note;
}

int slotcomm_allreduce(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype,
		   enum slotcomm_op op)
{
	int r = comm_usable(c);

	if (r < 0)
		return r;
	c->seq++;
	c->cur = (struct comm_pos){ .kind = FRAME_COLL_ALLREDUCE, .seq = c->seq, .shaped = 1,
				    .count = count, .dtype = (uint8_t)dtype, .op = (uint8_t)op };
	if (!reduce_get(dtype, op))
		return comm_fail(c, -EINVAL, -1, "all-reduce: unknown type %d or op %d", (int)dtype,
				 (int)op);
	if (count > SIZE_MAX / slotcomm_dtype_size(dtype))
		return comm_fail(c, -EOVERFLOW, -1, "all-reduce of %zu elements overflows", count);
	if (c->size == 1)
		return 0;  /* the sum, min, max, product and mean of one value */
	return c->tp->allreduce(c, buf, count, dtype, op);
}
