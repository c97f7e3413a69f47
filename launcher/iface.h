// SPDX-License-Identifier: MIT
/* Which local network interface reaches the chief. */
#ifndef SLOTRUN_IFACE_H
#define SLOTRUN_IFACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "ci_self.h"

/* The interface holding host's address when it is one of ours, else the
 * one the kernel routes to it through.  Loopback only when host itself is
 * a loopback address.  A name that does not resolve yet is asked again
 * until deadline_ns (sock.h; sock_resolve, which calls waiting once).
 * Returns 0 with the name in buf, or a negative errno with a one-line
 * reason in err: -EHOSTUNREACH the name did not resolve (err names it and
 * the resolver's last answer), -ENETUNREACH no interface routes to it. */
int iface_for_peer(const char *host, int64_t deadline_ns, void (*waiting)(void *arg, int gai),
		   void *arg, char *buf, size_t len, char *err, size_t errlen);

/* This node as ci_self_find sees it (ci_self.h): every address of its
 * interfaces, its host name and that name's canonical form.  0, or a
 * negative errno (getifaddrs failed, out of memory).  Free with
 * iface_me_free. */
struct iface_me {
	struct ci_me me;
	struct sockaddr_storage *addrs;
	const char *names[2];
	char host[256], canon[256];
};
int iface_me_load(struct iface_me *m);
void iface_me_free(struct iface_me *m);

/* This node's place in list: ci_self_find over m, its entries looked up
 * with getaddrinfo(3), asked again with a short, growing pause while an
 * entry does not resolve yet, until deadline_ns (sock.h's clock; one try at
 * least).  waiting(arg, entry, gai), when not NULL, is called once, at the
 * first entry that does not resolve yet (not when the deadline had passed
 * at the call: that is one try).  Returns as ci_self_find does, or
 * -ETIMEDOUT with out->pending, out->gai and err naming the entry and the
 * resolver's last answer. */
int iface_find_self(const struct iface_me *m, char *const *list, int n, const char *what,
		    int64_t deadline_ns, void (*waiting)(void *arg, const char *entry, int gai),
		    void *arg, struct ci_self *out, char *err, size_t errlen);

/* 0 when an interface of that name exists, else -ENODEV. */
int iface_exists(const char *name);

#endif
