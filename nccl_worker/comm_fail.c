// SPDX-License-Identifier: MIT
/* The failure path every collective and transport shares: recording the
 * first error, telling the other ranks (abort frames on the control
 * connections), the chief's verdict after a timeout, and watching the
 * control connections while a collective waits on something else.
 *
 * Failure propagation: the rank that sees a failure first sends an ABORT
 * naming the culprit to rank 0 (or, on rank 0, to everyone); rank 0 relays
 * any ABORT it reads to all.  Ranks blocked elsewhere (a ring transfer, a
 * shared-memory flag) watch their control connection, so they fail with the
 * first rank's reason -- which names the rank that died -- rather than
 * blaming the neighbour that merely went away after it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm_internal.h"
#include "comm_report.h"
#include "sock.h"
#include "transport.h"

/* --- errors -------------------------------------------------------------- */

void comm_io_phrase(const struct slotcomm *c, int rc, char *buf, size_t len)
{
	if (rc == SOCK_EOF || rc == -EPIPE)
		snprintf(buf, len, "closed the connection");
	else if (rc == -ECONNRESET)
		snprintf(buf, len, "reset the connection");
	else if (rc == -ETIMEDOUT)
		snprintf(buf, len, "did not answer within %gs (SLOTRUN_TIMEOUT)", c->cfg.timeout_s);
	else
		snprintf(buf, len, "failed: %s", strerror(-rc));
}

/* Marks the communicator broken, once, leaves the failure report for the
 * launcher (comm_report.h) and lets the transport tell the peers that wait
 * on it rather than on a socket (transport.h, broken).  a is the failure as
 * the others should hear it; NULL: this rank's c->err, blaming nobody.
 * culprit: the rank at fault, which the report names, or -1. */
static void mark_broken(struct slotcomm *c, const struct frame_abort *a, int culprit)
{
	struct frame_abort own = { .origin = c->rank, .culprit = -1 };

	if (c->broken)
		return;
	c->broken = 1;
	if (c->tp && c->tp->broken) {
		if (!a) {
			snprintf(own.reason, sizeof(own.reason), "%s", c->err);
			a = &own;
		}
		c->tp->broken(c, a);
	}
	/* after the peers were told: a slow file system delays nobody else */
	(void)comm_report_write(c->err, culprit >= 0 && culprit < c->size && culprit != c->rank ?
				culprit : -1);
}

/* Marks the communicator broken with this message (cut to fit), without
 * telling anyone over the control plane; a and culprit as for mark_broken. */
static void set_err(struct slotcomm *c, const struct frame_abort *a, int culprit, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set_err(struct slotcomm *c, const struct frame_abort *a, int culprit, const char *fmt, ...)
{
	va_list ap;

	if (c->broken)
		return;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	mark_broken(c, a, culprit);
}

int comm_usable(struct slotcomm *c)
{
	return c->broken ? -ENOTCONN : 0;
}

/* One best-effort write of a whole abort frame on control stream `peer`;
 * never blocks, never interleaves with a frame already half written. */
static void send_abort(struct slotcomm *c, int peer, const struct frame_abort *a)
{
	uint8_t buf[FRAME_HDR_LEN + FRAME_ABORT_MAX];
	long n;
	ssize_t k;

	if (c->ctl[peer] < 0 || c->ctl_mid[peer])
		return;
	n = frame_abort_encode(a, buf + FRAME_HDR_LEN, sizeof(buf) - FRAME_HDR_LEN);
	if (n < 0)
		return;
	frame_encode_hdr(buf, FRAME_ABORT, c->seq, (uint64_t)n);
	k = send(c->ctl[peer], buf, FRAME_HDR_LEN + (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (k > 0 && (size_t)k < FRAME_HDR_LEN + (size_t)n)
		c->ctl_mid[peer] = 1;
}

static void broadcast_abort(struct slotcomm *c, const struct frame_abort *a, int skip)
{
	if (c->rank != 0) {
		send_abort(c, 0, a);
		return;
	}
	for (int r = 1; r < c->size; r++)
		if (r != skip && r != a->origin)
			send_abort(c, r, a);
}

int comm_init_err(struct slotcomm *c, int rc, const char *fmt, ...)
{
	va_list ap;

	if (c->err[0])
		return rc;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return rc;
}

int comm_init_io_err(struct slotcomm *c, int rc, int peer, const char *where)
{
	char phrase[96];

	comm_io_phrase(c, rc, phrase, sizeof(phrase));
	return comm_init_err(c, rc, "peer rank %d %s %s", peer, phrase, where);
}

int comm_fail(struct slotcomm *c, int rc, int culprit, const char *fmt, ...)
{
	struct frame_abort a = { .origin = c->rank, .culprit = culprit };
	va_list ap;

	if (c->broken)
		return rc;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	snprintf(a.reason, sizeof(a.reason), "%s", c->err);
	mark_broken(c, &a, culprit);
	broadcast_abort(c, &a, -1);
	return rc;
}

int comm_fail_abort(struct slotcomm *c, int from, const struct frame_abort *a, const char *what)
{
	if (c->broken)
		return -ECONNABORTED;
	set_err(c, a, a->culprit, "%s aborted: rank %d reports: %s", what, a->origin, a->reason);
	if (c->rank == 0)
		broadcast_abort(c, a, from);
	return -ECONNABORTED;
}

/* Reads the payload of an abort frame whose header h was consumed. */
static int read_abort(struct slotcomm *c, int peer, const struct frame_hdr *h, struct frame_abort *a,
		      const char *what)
{
	uint8_t buf[FRAME_ABORT_MAX];
	const char *why;
	int r;

	if (h->len > sizeof(buf))
		return comm_fail(c, -EPROTO, peer, "peer rank %d sent an oversized abort message",
				 peer);
	r = sock_recv_all(c->ctl[peer], buf, h->len, sock_now_ns() + c->timeout_ns);
	if (r < 0) {
		char phrase[96];

		comm_io_phrase(c, r, phrase, sizeof(phrase));
		return comm_fail(c, r, peer, "peer rank %d %s during %s", peer, phrase, what);
	}
	if (frame_abort_decode(buf, h->len, a, &why) < 0)
		return comm_fail(c, -EPROTO, peer, "peer rank %d sent a malformed abort message: %s",
				 peer, why);
	return 0;
}

static int64_t grace_ns(const struct slotcomm *c)
{
	int64_t g = (int64_t)COMM_ABORT_GRACE_MS * 1000000;

	return g < c->timeout_ns ? g : c->timeout_ns;
}

enum peer_sign { PEER_UNKNOWN, PEER_REPORTED, PEER_ALIVE };

/* Fills c->watch and c->pfd with the control connections of the peers not
 * heard from yet; returns how many. */
static int watch_silent(struct slotcomm *c, const unsigned char *st)
{
	int np = 0;

	for (int p = 1; p < c->size; p++)
		if (st[p] == PEER_UNKNOWN && c->ctl[p] >= 0) {
			c->watch[np] = p;
			c->pfd[np++] = (struct pollfd){ .fd = c->ctl[p], .events = POLLIN };
		}
	return np;
}

/* Peer p's control connection is readable: a timeout report marks it
 * REPORTED (the first one kept in *first), anything else but an abort
 * ALIVE, left unread.  Returns 0, or the failure to end with after a hard
 * fact (a closed connection, a real failure reported). */
static int hear_peer(struct slotcomm *c, int p, unsigned char *st, struct frame_abort *first,
		     const char *what)
{
	uint8_t hdr[FRAME_HDR_LEN];
	struct frame_hdr h;
	struct frame_abort a;
	const char *why;
	ssize_t k;
	int r;

	k = recv(c->ctl[p], hdr, sizeof(hdr), MSG_PEEK | MSG_DONTWAIT);
	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (k <= 0) {
		char phrase[96];
		int rc = k == 0 ? SOCK_EOF : -errno;

		comm_io_phrase(c, rc, phrase, sizeof(phrase));
		return comm_fail(c, rc, p, "peer rank %d %s during %s", p, phrase, what);
	}
	if (k < FRAME_HDR_LEN || frame_decode_hdr(hdr, UINT64_MAX, &h, &why) < 0 ||
	    h.type != FRAME_ABORT) {
		st[p] = PEER_ALIVE;
		return 0;
	}
	(void)recv(c->ctl[p], hdr, sizeof(hdr), MSG_DONTWAIT);
	r = read_abort(c, p, &h, &a, what);
	if (r < 0)
		return r;
	if (!(a.flags & FRAME_ABORT_TIMEOUT))
		return comm_fail_abort(c, p, &a, what);
	st[p] = PEER_REPORTED;
	if (first->origin < 0)
		*first = a;
	return 0;
}

/* Listens to the silent peers until each has shown a sign or the grace
 * period is over.  Returns 0, or the failure hear_peer ended with. */
static int listen_for_signs(struct slotcomm *c, unsigned char *st, struct frame_abort *first,
			    const char *what)
{
	int64_t deadline = sock_now_ns() + grace_ns(c);

	for (;;) {
		int np = watch_silent(c, st), ms = sock_poll_ms(deadline);

		if (np == 0 || ms == 0)
			return 0;
		if (poll(c->pfd, (nfds_t)np, ms) <= 0)
			continue;
		for (int i = 0; i < np; i++) {
			int r;

			if (!c->pfd[i].revents)
				continue;
			r = hear_peer(c, c->watch[i], st, first, what);
			if (r < 0)
				return r;
		}
	}
}

/* Lists the peers that showed no sign in list; v->culprit is the one
 * such peer, -1 when there are several.  Returns how many. */
static int list_silent(const struct slotcomm *c, const unsigned char *st, struct frame_abort *v,
		       char *list, size_t size)
{
	int nsus = 0;

	for (int p = 1; p < c->size; p++) {
		if (st[p] != PEER_UNKNOWN)
			continue;
		if (nsus++ == 0)
			v->culprit = p;
		else
			v->culprit = -1;
		if (strlen(list) < size - 16)
			snprintf(list + strlen(list), size - strlen(list), "%s%d",
				 nsus > 1 ? ", " : "", p);
	}
	return nsus;
}

/* Rank 0 decides who is at fault after a timeout (its own, or one a peer
 * reported).  A stuck rank cannot say anything, while every live rank that
 * waits on it times out too and reports: so rank 0 listens to every control
 * connection for a moment, and the ranks that neither reported, nor showed
 * any other sign of life, are the culprits.  A hard fact heard meanwhile (a
 * closed connection, a real failure) wins.  The verdict goes to everyone. */
static int chief_verdict(struct slotcomm *c, const struct frame_abort *report, int from,
			 const char *own, int own_suspect, const char *what)
{
	unsigned char *st = calloc((size_t)c->size, 1);
	struct frame_abort first = { .origin = -1 }, v = { .origin = 0, .culprit = -1 };
	char list[200] = "";
	int nsus, r;

	if (!st)
		return comm_fail(c, -ENOMEM, -1, "out of memory");
	st[0] = PEER_ALIVE;
	if (report) {
		st[from] = PEER_REPORTED;
		first = *report;
	}
	r = listen_for_signs(c, st, &first, what);
	if (r < 0) {
		free(st);
		return r;
	}
	nsus = list_silent(c, st, &v, list, sizeof(list));
	free(st);
	if (nsus)
		snprintf(v.reason, sizeof(v.reason),
			 "peer rank%s %s did not answer within %gs (SLOTRUN_TIMEOUT) while the other "
			 "ranks waited (stuck?) during %s", nsus > 1 ? "s" : "", list, c->cfg.timeout_s,
			 what);
	else if (own)
		snprintf(v.reason, sizeof(v.reason), "%s", own), v.culprit = own_suspect;
	else
		return comm_fail_abort(c, from, &first, what);
	set_err(c, &v, v.culprit, "%s", v.reason);
	broadcast_abort(c, &v, -1);
	return -ETIMEDOUT;
}

int comm_take_abort(struct slotcomm *c, int peer, const struct frame_hdr *h, const char *what)
{
	struct frame_abort a;
	int r = read_abort(c, peer, h, &a, what);

	if (r < 0)
		return r;
	if (c->rank == 0 && (a.flags & FRAME_ABORT_TIMEOUT))
		return chief_verdict(c, &a, peer, NULL, -1, what);
	return comm_fail_abort(c, peer, &a, what);
}

int comm_fail_timeout(struct slotcomm *c, int suspect, const char *what, const char *fmt, ...)
{
	struct frame_abort a = { .origin = c->rank, .culprit = suspect,
				 .flags = FRAME_ABORT_TIMEOUT };
	int64_t deadline;
	va_list ap;

	if (c->broken)
		return -ETIMEDOUT;
	va_start(ap, fmt);
	vsnprintf(a.reason, sizeof(a.reason), fmt, ap);
	va_end(ap);
	if (c->rank == 0)
		return chief_verdict(c, NULL, -1, a.reason, suspect, what);

	/* Report to rank 0 and wait a moment for its verdict. */
	send_abort(c, 0, &a);
	deadline = sock_now_ns() + grace_ns(c) + grace_ns(c) / 2;
	while (c->ctl[0] >= 0) {
		struct pollfd pfd = { .fd = c->ctl[0], .events = POLLIN };
		uint8_t hdr[FRAME_HDR_LEN];
		struct frame_hdr h;
		const char *why;
		ssize_t k;
		int ms = sock_poll_ms(deadline);

		if (ms == 0) {
			/* Rank 0 neither answered nor sent anything: it is the one
			 * not taking part (stuck, or busy outside the library). */
			set_err(c, NULL, 0, "peer rank 0 did not answer this rank's timeout report either "
				"(stuck?); the timeout: %s", a.reason);
			return -ETIMEDOUT;
		}
		if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
			break;
		if (!pfd.revents)
			continue;
		k = recv(c->ctl[0], hdr, sizeof(hdr), MSG_PEEK | MSG_DONTWAIT);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k <= 0) {
			char phrase[96];
			int rc = k == 0 ? SOCK_EOF : -errno;

			comm_io_phrase(c, rc, phrase, sizeof(phrase));
			set_err(c, NULL, 0, "peer rank 0 %s during %s", phrase, what);
			return rc;
		}
		if (k < FRAME_HDR_LEN || frame_decode_hdr(hdr, UINT64_MAX, &h, &why) < 0 ||
		    h.type != FRAME_ABORT)
			break;  /* busy with something else: no verdict coming */
		(void)recv(c->ctl[0], hdr, sizeof(hdr), MSG_DONTWAIT);
		return comm_take_abort(c, 0, &h, what);
	}
	/* only a suspicion: the rank we waited on may wait on another */
	set_err(c, NULL, -1, "%s", a.reason);
	return -ETIMEDOUT;
}

void comm_say_bye(struct slotcomm *c)
{
	uint8_t hdr[FRAME_HDR_LEN];

	if (c->broken)
		return;
	frame_encode_hdr(hdr, FRAME_BYE, c->seq, 0);
	for (int r = 0; r < c->size; r++)
		if (c->ctl[r] >= 0 && !c->ctl_mid[r])
			(void)send(c->ctl[r], hdr, sizeof(hdr), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* --- watching control connections ---------------------------------------- */

void comm_watch_init(struct slotcomm *c)
{
	c->nwatch = 0;
	if (c->rank != 0) {
		if (c->ctl[0] >= 0)
			c->watch[c->nwatch++] = 0;
		return;
	}
	for (int r = 1; r < c->size; r++)
		if (c->ctl[r] >= 0)
			c->watch[c->nwatch++] = r;
}

int comm_watch_fill(const struct slotcomm *c, struct pollfd *pfd)
{
	for (int i = 0; i < c->nwatch; i++)
		pfd[i] = (struct pollfd){ .fd = c->ctl[c->watch[i]], .events = POLLIN };
	return c->nwatch;
}

static void unwatch(struct slotcomm *c, int i)
{
	c->watch[i] = c->watch[--c->nwatch];
}

/* abort_only (the grace wait after a failure we saw ourselves): a closed
 * connection still counts -- it is a rank that died, likely the first --
 * but a malformed frame is left for the failure at hand to explain. */
static int watch_check(struct slotcomm *c, const struct pollfd *pfd, int npfd, const char *what,
		       int abort_only)
{
	for (int i = npfd - 1; i >= 0; i--) {
		int peer = c->watch[i], fd = c->ctl[peer];
		uint8_t hdr[FRAME_HDR_LEN];
		struct frame_hdr h;
		const char *why;
		ssize_t k;

		if (!pfd[i].revents)
			continue;
		k = recv(fd, hdr, sizeof(hdr), MSG_PEEK | MSG_DONTWAIT);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k <= 0) {
			int rc = k == 0 ? SOCK_EOF : -errno;
			char phrase[96];

			comm_io_phrase(c, rc, phrase, sizeof(phrase));
			return comm_fail(c, rc, peer, "peer rank %d %s during %s", peer, phrase, what);
		}
		if (k < FRAME_HDR_LEN) {
			unwatch(c, i);  /* a frame on its way: the peer is alive */
			continue;
		}
		if (frame_decode_hdr(hdr, UINT64_MAX, &h, &why) < 0) {
			if (abort_only) {
				unwatch(c, i);
				continue;
			}
			return comm_fail(c, -EPROTO, peer,
					 "peer rank %d sent a malformed message during %s: %s", peer,
					 what, why);
		}
		if (h.type != FRAME_ABORT) {
			/* Ahead of us in a later collective, or done after this
			 * one: alive and not our problem now.  Anything else is
			 * a divergence (comm_peer_frame). */
			int r = comm_peer_frame(c, peer, &h, NULL);

			if (r < 0)
				return r;
			unwatch(c, i);
			continue;
		}
		(void)recv(fd, hdr, sizeof(hdr), MSG_DONTWAIT);  /* consume the peeked header */
		return comm_take_abort(c, peer, &h, what);
	}
	return 0;
}

int comm_watch_check(struct slotcomm *c, const struct pollfd *pfd, int npfd, const char *what)
{
	return watch_check(c, pfd, npfd, what, 0);
}

int comm_watch_grace(struct slotcomm *c, int ms, const char *what)
{
	int64_t grace = (int64_t)ms * 1000000;
	int64_t deadline = sock_now_ns() + (grace < c->timeout_ns ? grace : c->timeout_ns);

	for (;;) {
		int n = comm_watch_fill(c, c->pfd), left, r;

		if (n == 0)
			return 0;
		left = sock_poll_ms(deadline);
		if (left == 0)
			return 0;
		r = poll(c->pfd, (nfds_t)n, left);
		if (r < 0 && errno != EINTR)
			return 0;
		if (r > 0) {
			/* The caller's failure is not recorded yet: an abort
			 * frame or a closed control connection found here
			 * becomes the error. */
			r = watch_check(c, c->pfd, n, what, 1);
			if (r < 0)
				return r;
		}
	}
}
