// SPDX-License-Identifier: MIT
#include "iface.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

int iface_for_peer(const char *host, char *buf, size_t len, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM };
	struct addrinfo *res, *a;
	int g = getaddrinfo(host, "9", &hints, &res), r = -ENETUNREACH;

	if (g != 0) {
		snprintf(err, errlen, "cannot resolve the chief's address '%s': %s", host, gai_strerror(g));
		return -EHOSTUNREACH;
	}
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
