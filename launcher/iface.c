// SPDX-License-Identifier: MIT
#include "iface.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sock.h"

static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
	return false;
}

/* Name of the interface that holds addr, copied into buf. */
static int owner(const struct sockaddr *addr, char *buf, size_t len)
{
	struct ifaddrs *ifs, *i;
	int r = -ENOENT;

	if (getifaddrs(&ifs) < 0)
		return -errno;
	for (i = ifs; i; i = i->ifa_next) {
		if (i->ifa_addr && same_addr(i->ifa_addr, addr)) {
			snprintf(buf, len, "%s", i->ifa_name);
			r = 0;
			break;
		}
	}
	freeifaddrs(ifs);
	return r;
}

int iface_for_peer(const char *host, int64_t deadline_ns, void (*waiting)(void *arg, int gai),
		   void *arg, char *buf, size_t len, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM };
	struct addrinfo *res, *a;
	int g, r = sock_resolve(host, "9", &hints, deadline_ns, waiting, arg, &res, &g);

	if (r < 0) {
		snprintf(err, errlen, "cannot resolve the chief's address '%s': %s", host,
			 g == EAI_SYSTEM ? strerror(-r) : gai_strerror(g));
		return -EHOSTUNREACH;
	}
	r = -ENETUNREACH;
	for (a = res; a; a = a->ai_next) {
		struct sockaddr_storage local;
		socklen_t sl = sizeof(local);
		int fd;

		if (owner(a->ai_addr, buf, len) == 0) {
			r = 0;
			break;
		}
		/* connect() on UDP sends nothing: it only asks for a route. */
		fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
		    getsockname(fd, (struct sockaddr *)&local, &sl) == 0 &&
		    owner((struct sockaddr *)&local, buf, len) == 0) {
			close(fd);
			r = 0;
			break;
		}
		close(fd);
	}
	freeaddrinfo(res);
	if (r < 0)
		snprintf(err, errlen, "no local interface routes to the chief '%s': give one with --iface or SLOTRUN_IFACE",
			 host);
	return r;
}

int iface_exists(const char *name)
{
	return if_nametoindex(name) ? 0 : -ENODEV;
}

int iface_me_load(struct iface_me *m)
{
	struct addrinfo hints = { .ai_flags = AI_CANONNAME }, *res;
	struct ifaddrs *ifs, *i;
	int n = 0;

	memset(m, 0, sizeof(*m));
	if (getifaddrs(&ifs) < 0)
		return -errno;
	for (i = ifs; i; i = i->ifa_next)
		n += i->ifa_addr && (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6);
	m->addrs = calloc((size_t)n + 1, sizeof(*m->addrs));
	if (!m->addrs) {
		freeifaddrs(ifs);
		return -ENOMEM;
	}
	for (i = ifs; i; i = i->ifa_next) {
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : AF_UNSPEC;

		if (fam == AF_INET || fam == AF_INET6)
			memcpy(&m->addrs[m->me.naddrs++], i->ifa_addr,
			       fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	}
	freeifaddrs(ifs);
	m->me.addrs = m->addrs;
	if (gethostname(m->host, sizeof(m->host) - 1) == 0 && m->host[0]) {
		m->names[m->me.nnames++] = m->host;
		/* the name as the resolver spells it in full (n1.cluster.local) */
		if (getaddrinfo(m->host, NULL, &hints, &res) == 0) {
			if (res->ai_canonname && strcasecmp(res->ai_canonname, m->host) != 0) {
				snprintf(m->canon, sizeof(m->canon), "%s", res->ai_canonname);
				m->names[m->me.nnames++] = m->canon;
			}
			freeaddrinfo(res);
		}
	}
	m->me.names = m->names;
	return 0;
}

void iface_me_free(struct iface_me *m)
{
	free(m->addrs);
	memset(m, 0, sizeof(*m));
}

/* ci_lookup's lookup: getaddrinfo(3), asked once. */
static int lookup(void *ctx, const char *host, struct sockaddr_storage *out, int max, int *gai)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *a;
	int n = 0;

	(void)ctx;
	*gai = getaddrinfo(host, NULL, &hints, &res);
	if (*gai != 0)
		return -1;
	for (a = res; a && n < max; a = a->ai_next) {
		if (a->ai_addrlen > sizeof(*out))
			continue;
		memset(&out[n], 0, sizeof(*out));
		memcpy(&out[n++], a->ai_addr, a->ai_addrlen);
	}
	freeaddrinfo(res);
	return n;
}

int iface_find_self(const struct iface_me *m, char *const *list, int n, const char *what,
		    int64_t deadline_ns, void (*waiting)(void *arg, const char *entry, int gai),
		    void *arg, struct ci_self *out, char *err, size_t errlen)
{
	static const struct ci_lookup lk = { .lookup = lookup };
	int64_t pause_ns = 50 * 1000000;
	/* a deadline already past asks once, with nothing to wait for */
	bool said = deadline_ns <= sock_now_ns();
	int r;

	while ((r = ci_self_find(list, n, what, &m->me, &lk, out, err, errlen)) == -EAGAIN) {
		int64_t now = sock_now_ns();
		struct timespec ts;

		if (waiting && !said)
			waiting(arg, out->pending, out->gai);
		said = true;
		if (now >= deadline_ns)
			return -ETIMEDOUT;
		if (pause_ns > deadline_ns - now)
			pause_ns = deadline_ns - now;
		ts = (struct timespec){ .tv_sec = pause_ns / 1000000000, .tv_nsec = pause_ns % 1000000000 };
		nanosleep(&ts, NULL);
		if (pause_ns < 1000000000)
			pause_ns *= 2;
	}
	return r;
}
