// SPDX-License-Identifier: MIT
/* TCP socket helpers with deadlines.  A deadline is an absolute time on
 * CLOCK_MONOTONIC in nanoseconds (sock_now_ns() + timeout), or SOCK_NO_DEADLINE.
 *
 * All functions return 0 (or a count) or a negative errno and never log.
 * The socket versions of read/write finish partial transfers, retry EINTR,
 * never raise SIGPIPE (MSG_NOSIGNAL), and report:
 *   -ETIMEDOUT   the deadline passed first
 *   SOCK_EOF     the peer closed the connection (orderly EOF) before all came
 *   -EPIPE / -ECONNRESET   the peer went away while we wrote / read
 * Every descriptor they create is CLOEXEC. */
#ifndef SLOTRUN_SOCK_H
#define SLOTRUN_SOCK_H

#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define SOCK_NO_DEADLINE INT64_MAX
/* EOF where more data was due: "the peer closed the connection". */
#define SOCK_EOF (-ESHUTDOWN)

int64_t sock_now_ns(void);

/* Deadline `seconds` from now (saturating). */
int64_t sock_deadline_in(double seconds);

/* Milliseconds left until the deadline, rounded up, for poll(2): -1 for
 * SOCK_NO_DEADLINE, 0 when it has passed. */
int sock_poll_ms(int64_t deadline_ns);

int sock_set_nonblock(int fd, int on);

/* TCP_NODELAY, and SO_SNDBUF/SO_RCVBUF of bufbytes when bufbytes > 0 (the
 * kernel caps them at wmem_max/rmem_max; a refusal there is not an error). */
int sock_tune(int fd, int bufbytes);

/* Writes all of buf.  Works on blocking and non-blocking sockets alike (it
 * sends with MSG_DONTWAIT and polls). */
int sock_send_all(int fd, const void *buf, size_t len, int64_t deadline_ns);

/* Reads exactly len bytes; SOCK_EOF when the stream ends first. */
int sock_recv_all(int fd, void *buf, size_t len, int64_t deadline_ns);

/* Sleeps pause_ns, but not past the deadline: false when it had passed. */
bool sock_pause_until(int64_t pause_ns, int64_t deadline_ns);

/* The pause before the next try of something that failed: the current
 * pause (*pause_ns, at most max_ns) with "equal jitter" -- between half and
 * all of it, picked by rnd -- so that processes started together do not
 * come back together; *pause_ns doubles for the try after (up to max_ns).
 * Pure. */
int64_t sock_backoff(int64_t *pause_ns, int64_t max_ns, uint64_t rnd);

/* 64 random bits for sock_backoff (getrandom, or the clock and the pid). */
uint64_t sock_random(void);

/* Connects to sa, retrying refused/unreachable attempts (the listener may
 * not be up yet) with a growing, jittered pause (sock_backoff, 5 ms up to
 * 200 ms) until the deadline.  On success *fd is
 * a connected, blocking, CLOEXEC socket, tuned with sock_tune(bufbytes)
 * before connecting (buffer sizes set later do not widen the TCP window). */
int sock_connect(const struct sockaddr *sa, socklen_t salen, int bufbytes, int64_t deadline_ns,
		 int *fd);

/* Whether a failed getaddrinfo(3) answer may change on a later try: the
 * name is not known yet (EAI_NONAME, EAI_NODATA) or the resolver could not
 * answer (EAI_AGAIN, EAI_FAIL).  A container's name is in its network's DNS
 * only once the container runs, so its peers may ask before that. */
int sock_gai_may_mend(int gai);

/* getaddrinfo(host, port, hints), asked again after a short, growing pause
 * while the answer is one sock_gai_may_mend accepts, until the deadline
 * (one try at least).  An address (or AI_NUMERICHOST) is asked once.
 * waiting(arg, gai), when not NULL, is called once, after the first failed
 * try that may mend, so the caller can say what it waits for (not when the
 * deadline had passed at the call: that is one try).
 * Returns 0 with *res (freeaddrinfo it), or with *gai the resolver's last
 * answer (for gai_strerror): -ETIMEDOUT the deadline passed while the name
 * did not resolve, -EINVAL an answer no retry mends (a bad service, family
 * or flags), -ENOMEM, or the errno of EAI_SYSTEM. */
int sock_resolve(const char *host, const char *port, const struct addrinfo *hints,
		 int64_t deadline_ns, void (*waiting)(void *arg, int gai), void *arg,
		 struct addrinfo **res, int *gai);

/* A listening, CLOEXEC, non-blocking TCP socket on sa (SO_REUSEADDR; an
 * IPv6 one takes IPv4 too), tuned with sock_tune(bufbytes) so that accepted
 * sockets inherit it.  Port 0 lets
 * the kernel choose; sock_local_port() tells which. */
int sock_listen(const struct sockaddr *sa, socklen_t salen, int backlog, int bufbytes, int *fd);

/* Waits for and accepts one connection until the deadline; the accepted fd
 * is blocking and CLOEXEC. */
int sock_accept(int lfd, int64_t deadline_ns, int *fd);

/* 1 when a connected socket's two ends are on this machine (loopback, or
 * the same address at both ends), 0 when not, or a negative errno. */
int sock_is_local(int fd);

/* The local port of a bound socket, or a negative errno. */
int sock_local_port(int fd);

/* "1.2.3.4:5" or "[::1]:5"; NUL-terminated, truncated to len. */
void sock_addr_str(const struct sockaddr *sa, char *buf, size_t len);

/* Numeric host part only ("1.2.3.4", "::1"). 0 or -EAFNOSUPPORT/-ENOSPC. */
int sock_addr_host(const struct sockaddr *sa, char *buf, size_t len);

/* The wildcard address of family (AF_INET or AF_INET6) with port; returns
 * its length. */
socklen_t sock_addr_any(int family, int port, struct sockaddr_storage *ss);

/* Sets the port of an AF_INET or AF_INET6 address. */
void sock_addr_set_port(struct sockaddr_storage *ss, int port);

#endif
