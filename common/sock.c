// SPDX-License-Identifier: MIT
#include "sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int64_t sock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t sock_deadline_in(double seconds)
{
	int64_t now = sock_now_ns();
	double ns = seconds * 1e9;

	if (!(ns < (double)(SOCK_NO_DEADLINE - now)))
		return SOCK_NO_DEADLINE;
	return now + (int64_t)ns;
}

int sock_poll_ms(int64_t deadline_ns)
{
	int64_t left;

	if (deadline_ns == SOCK_NO_DEADLINE)
		return -1;
	left = deadline_ns - sock_now_ns();
	if (left <= 0)
		return 0;
	if (left / 1000000 >= 1000000000)
		return 1000000000;
	return (int)((left + 999999) / 1000000);
}

int sock_set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	if (fcntl(fd, F_SETFL, fl) < 0)
		return -errno;
	return 0;
}

int sock_tune(int fd, int bufbytes)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return -errno;
	if (bufbytes > 0) {
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufbytes, sizeof(bufbytes));
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufbytes, sizeof(bufbytes));
	}
	return 0;
}

static int wait_fd(int fd, short events, int64_t deadline_ns)
{
	struct pollfd pfd = { .fd = fd, .events = events };

	for (;;) {
		int ms = sock_poll_ms(deadline_ns);
		int r;

		if (ms == 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, ms);
		if (r > 0)
			return 0;  /* ready, or an error that the next call reports */
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

int sock_send_all(int fd, const void *buf, size_t len, int64_t deadline_ns)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			int r;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			r = wait_fd(fd, POLLOUT, deadline_ns);
			if (r < 0)
				return r;
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int sock_recv_all(int fd, void *buf, size_t len, int64_t deadline_ns)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);

		if (n == 0)
			return SOCK_EOF;
		if (n < 0) {
			int r;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			r = wait_fd(fd, POLLIN, deadline_ns);
			if (r < 0)
				return r;
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

bool sock_pause_until(int64_t pause_ns, int64_t deadline_ns)
{
	int64_t now = sock_now_ns(), until = now + pause_ns;
	struct timespec ts;

	if (now >= deadline_ns)
		return false;
	if (until > deadline_ns)
		until = deadline_ns;
	ts.tv_sec = (until - now) / 1000000000;
	ts.tv_nsec = (until - now) % 1000000000;
	nanosleep(&ts, NULL);
	return true;
}

int64_t sock_backoff(int64_t *pause_ns, int64_t max_ns, uint64_t rnd)
{
	int64_t p = *pause_ns < max_ns ? *pause_ns : max_ns, half = p / 2;

	*pause_ns = p > max_ns / 2 ? max_ns : 2 * p;
	return half + (int64_t)(rnd % (uint64_t)(p - half + 1));
}

uint64_t sock_random(void)
{
	uint64_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint64_t)sock_now_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	return r;
}

int sock_connect(const struct sockaddr *sa, socklen_t salen, int bufbytes, int64_t deadline_ns,
		 int *fdp)
{
	int64_t pause_ns = 5 * 1000000;

	for (;;) {
		int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		int r, err = 0;
		socklen_t elen = sizeof(err);

		if (fd < 0)
			return -errno;
		r = sock_tune(fd, bufbytes);
		if (r < 0) {
			close(fd);
			return r;
		}
		r = connect(fd, sa, salen);
		if (r < 0 && errno == EINPROGRESS) {
			r = wait_fd(fd, POLLOUT, deadline_ns);
			if (r < 0) {
				close(fd);
				return r;
			}
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
				err = errno;
			r = err ? -1 : 0;
			errno = err;
		}
		if (r == 0) {
			r = sock_set_nonblock(fd, 0);
			if (r < 0) {
				close(fd);
				return r;
			}
			*fdp = fd;
			return 0;
		}
		err = errno;
		close(fd);
		if (err != ECONNREFUSED && err != ENETUNREACH && err != EHOSTUNREACH &&
		    err != ETIMEDOUT && err != EINTR && err != ECONNRESET && err != EAGAIN)
			return -err;
		/* Not listening yet: pause (bounded by the deadline) and retry. */
		if (!sock_pause_until(sock_backoff(&pause_ns, 200 * 1000000, sock_random()), deadline_ns))
			return -ETIMEDOUT;
	}
}

int sock_gai_may_mend(int gai)
{
	return gai == EAI_NONAME || gai == EAI_AGAIN || gai == EAI_FAIL
#ifdef EAI_NODATA
	       || gai == EAI_NODATA
#endif
		;
}

/* An address needs no resolver: its failed answer (a bad service, say)
 * is the same on every try. */
static bool is_numeric(const char *host, const struct addrinfo *hints)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return (hints && (hints->ai_flags & AI_NUMERICHOST)) || !host ||
	       inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

int sock_resolve(const char *host, const char *port, const struct addrinfo *hints,
		 int64_t deadline_ns, void (*waiting)(void *arg, int gai), void *arg,
		 struct addrinfo **res, int *gai)
{
	int64_t pause_ns = 50 * 1000000;
	/* a deadline already past asks once, with nothing to wait for */
	bool said = deadline_ns <= sock_now_ns();

	*res = NULL;
	for (;;) {
		int g = getaddrinfo(host, port, hints, res);

		*gai = g;
		if (g == 0)
			return 0;
		*res = NULL;
		if (g == EAI_SYSTEM)
			return errno ? -errno : -EIO;
		if (g == EAI_MEMORY)
			return -ENOMEM;
		if (!sock_gai_may_mend(g) || is_numeric(host, hints))
			return -EINVAL;
		if (waiting && !said)
			waiting(arg, g);
		said = true;
		if (!sock_pause_until(pause_ns, deadline_ns))
			return -ETIMEDOUT;
		if (pause_ns < 1000000000)
			pause_ns *= 2;
	}
}

int sock_listen(const struct sockaddr *sa, socklen_t salen, int backlog, int bufbytes, int *fdp)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1, r;

	if (fd < 0)
		return -errno;
	/* an IPv6 wildcard takes IPv4 too, whatever net.ipv6.bindv6only says */
	if (sa->sa_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &(int){ 0 }, sizeof(int)) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    sock_tune(fd, bufbytes) < 0 || bind(fd, sa, salen) < 0 || listen(fd, backlog) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*fdp = fd;
	return 0;
}

int sock_accept(int lfd, int64_t deadline_ns, int *fdp)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), r;

		if (fd >= 0) {
			*fdp = fd;
			return 0;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno != EAGAIN)
			return -errno;
		r = wait_fd(lfd, POLLIN, deadline_ns);
		if (r < 0)
			return r;
	}
}

static int is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

int sock_is_local(int fd)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);

	if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
		return -errno;
	if (is_loopback(&peer))
		return 1;
	if (me.ss_family != peer.ss_family)
		return 0;
	if (me.ss_family == AF_INET)
		return ((struct sockaddr_in *)&me)->sin_addr.s_addr ==
		       ((struct sockaddr_in *)&peer)->sin_addr.s_addr;
	if (me.ss_family == AF_INET6)
		return memcmp(&((struct sockaddr_in6 *)&me)->sin6_addr,
			      &((struct sockaddr_in6 *)&peer)->sin6_addr, sizeof(struct in6_addr)) == 0;
	return 0;
}

int sock_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return -EAFNOSUPPORT;
}

int sock_addr_host(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a;

	if (sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	else
		return -EAFNOSUPPORT;
	if (!inet_ntop(sa->sa_family, a, buf, (socklen_t)len))
		return -ENOSPC;
	return 0;
}

void sock_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	int port;

	if (sock_addr_host(sa, host, sizeof(host)) < 0) {
		snprintf(buf, len, "(unknown address family %d)", sa->sa_family);
		return;
	}
	if (sa->sa_family == AF_INET) {
		port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
		snprintf(buf, len, "%s:%d", host, port);
	} else {
		port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
		snprintf(buf, len, "[%s]:%d", host, port);
	}
}

void sock_addr_set_port(struct sockaddr_storage *ss, int port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

socklen_t sock_addr_any(int family, int port, struct sockaddr_storage *ss)
{
	socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);

	memset(ss, 0, sizeof(*ss));
	ss->ss_family = (sa_family_t)family;
	if (family == AF_INET)
		((struct sockaddr_in *)ss)->sin_addr.s_addr = htonl(INADDR_ANY);
	else
		((struct sockaddr_in6 *)ss)->sin6_addr = in6addr_any;
	sock_addr_set_port(ss, port);
	return len;
}
