// SPDX-License-Identifier: MIT
#include "ci_self.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sock.h"

/* An IPv4 address written as IPv6 (::ffff:a.b.c.d) is the IPv4 one. */
static void unmap(const struct sockaddr_storage *in, struct sockaddr_storage *out)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)in;

	*out = *in;
	if (in->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)out;

		memset(out, 0, sizeof(*out));
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
	}
}

static bool same_addr(const struct sockaddr_storage *x, const struct sockaddr_storage *y)
{
	struct sockaddr_storage a, b;

	unmap(x, &a);
	unmap(y, &b);
	if (a.ss_family != b.ss_family)
		return false;
	if (a.ss_family == AF_INET)
		return ((struct sockaddr_in *)&a)->sin_addr.s_addr == ((struct sockaddr_in *)&b)->sin_addr.s_addr;
	if (a.ss_family == AF_INET6)
		return memcmp(&((struct sockaddr_in6 *)&a)->sin6_addr, &((struct sockaddr_in6 *)&b)->sin6_addr,
			      sizeof(struct in6_addr)) == 0;
	return false;
}

static bool is_loopback(const struct sockaddr_storage *x)
{
	struct sockaddr_storage a;

	unmap(x, &a);
	if (a.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&a)->sin_addr.s_addr) >> 24) == 127;
	return a.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&a)->sin6_addr);
}

static bool is_my_name(const char *entry, const struct ci_me *me)
{
	for (int i = 0; i < me->nnames; i++)
		if (me->names[i] && me->names[i][0] && strcasecmp(entry, me->names[i]) == 0)
			return true;
	return false;
}

/* 1: entry is this node, 0: it is not, -EAGAIN: it does not resolve yet. */
static int match_entry(const char *entry, const struct ci_me *me, const struct ci_lookup *lk,
		       struct ci_self *out)
{
	struct sockaddr_storage found[CI_SELF_MAX_ADDRS];
	int n, gai = 0;

	if (is_my_name(entry, me))
		return 1;
	n = lk->lookup(lk->ctx, entry, found, CI_SELF_MAX_ADDRS, &gai);
	if (n < 0) {
		if (!sock_gai_may_mend(gai))
			return 0;
		out->pending = entry;
		out->gai = gai;
		return -EAGAIN;
	}
	for (int k = 0; k < n; k++) {
		/* 127.0.0.2 is on no interface's list, yet is this machine */
		if (is_loopback(&found[k])) {
			out->loopback = true;
			return 1;
		}
		for (int m = 0; m < me->naddrs; m++)
			if (same_addr(&found[k], &me->addrs[m]))
				return 1;
	}
	return 0;
}

void ci_me_describe(const struct ci_me *me, char *buf, size_t len)
{
	size_t o;

	snprintf(buf, len, "host %s, address%s ", me->nnames > 0 && me->names[0] ? me->names[0] : "?",
		 me->naddrs == 1 ? "" : "es");
	o = strlen(buf);
	if (me->naddrs == 0)
		snprintf(buf + o, len - o, "none");
	for (int i = 0; i < me->naddrs && o + 1 < len; i++) {
		char host[64] = "?";

		(void)sock_addr_host((const struct sockaddr *)&me->addrs[i], host, sizeof(host));
		snprintf(buf + o, len - o, "%s%s", i ? ", " : "", host);
		o += strlen(buf + o);
	}
}

int ci_self_find(char *const *list, int n, const char *what, const struct ci_me *me,
		 const struct ci_lookup *lk, struct ci_self *out, char *err, size_t errlen)
{
	int first = -1, second = -1;
	char mine[512];

	*out = (struct ci_self){ .rank = -1 };
	for (int i = 0; i < n; i++) {
		int r = match_entry(list[i], me, lk, out);

		if (r == -EAGAIN) {
			snprintf(err, errlen, "cannot resolve '%s' (an entry of %s): %s", list[i], what,
				 gai_strerror(out->gai));
			return -EAGAIN;
		}
		if (r == 1 && first < 0)
			first = i;
		else if (r == 1 && second < 0)
			second = i;
	}
	ci_me_describe(me, mine, sizeof(mine));
	if (first < 0) {
		snprintf(err, errlen, "this node is not in %s (it is %s): list it there, or give its "
			 "place with --node-rank", what, mine);
		return -ENOENT;
	}
	if (second >= 0) {
		snprintf(err, errlen, "%s names this node more than once, as entries %d '%s' and %d '%s' "
			 "(it is %s): give its place with --node-rank", what, first, list[first], second,
			 list[second], mine);
		return -EEXIST;
	}
	out->rank = first;
	return 0;
}
