// SPDX-License-Identifier: MIT
/* The shared-memory transport's setup (shm.h): which ranks are on one node,
 * the segment the leader makes, its handover to the members over an
 * abstract Unix socket, the probe that proves it is shared, and its end. */
#include "shm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "auth.h"
#include "io.h"
#include "sock.h"

/* --- node identity ------------------------------------------------------- */

void shm_node_key(char *buf, size_t len)
{
	char *boot = io_read_file("/proc/sys/kernel/random/boot_id", 128);
	struct stat st;

	buf[0] = '\0';
	if (boot && stat("/proc/self/ns/net", &st) == 0) {
		boot[strcspn(boot, "\n")] = '\0';
		if (boot[0])
			snprintf(buf, len, "%s/%llu:%llu", boot, (unsigned long long)st.st_dev,
				 (unsigned long long)st.st_ino);
	}
	free(boot);
}

static void hex(char *out, const uint8_t *in, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* An abstract Unix socket address (Linux: a leading NUL, no file). */
static socklen_t abstract_addr(const char *name, struct sockaddr_un *sun)
{
	size_t n = strlen(name);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path + 1, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int unhex(const char *in, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(in + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

void shm_info_to_node(const struct shm_info *in, struct frame_node *out)
{
	memset(out, 0, sizeof(*out));
	out->transport = (uint8_t)in->transport;
	if (in->key[0])
		(void)unhex(in->key, out->id, sizeof(out->id));
	if (in->sock[0])
		(void)unhex(in->sock + 8, out->sock, sizeof(out->sock));
	memcpy(out->token, in->token, sizeof(out->token));
}

void shm_info_from_node(const struct frame_node *in, struct shm_info *out)
{
	memset(out, 0, sizeof(*out));
	out->transport = (char)in->transport;
	if (!all_zero(in->id, sizeof(in->id)))
		hex(out->key, in->id, sizeof(in->id));
	if (!all_zero(in->sock, sizeof(in->sock))) {
		memcpy(out->sock, "slotrun-", 8);
		hex(out->sock + 8, in->sock, sizeof(in->sock));
	}
	memcpy(out->token, in->token, sizeof(out->token));
}

void shm_info_fill(struct slotcomm *c, struct shm_info *mine)
{
	uint8_t rnd[16], id[AUTH_DIGEST_LEN];
	char key[SHM_KEY_MAX];
	struct sockaddr_un sun;
	int fd;

	memset(mine, 0, sizeof(*mine));
	mine->transport = c->cfg.transport == SLOTCOMM_TRANSPORT_TCP ? 't' :
			  c->cfg.transport == SLOTCOMM_TRANSPORT_SHM ? 's' : 'a';
	shm_node_key(key, sizeof(key));
	if (key[0]) {
		auth_digest(id, key, strlen(key));
		id[0] |= 1;  /* never all zeros, which says "unknown" */
		hex(mine->key, id, FRAME_NODE_ID_LEN);
	}
	if (getrandom(mine->token, sizeof(mine->token), 0) != (ssize_t)sizeof(mine->token))
		mine->key[0] = '\0';  /* no token, no sharing */
	if (mine->transport == 't' || !mine->key[0])
		return;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd) || all_zero(rnd, sizeof(rnd)))
		return;
	memcpy(mine->sock, "slotrun-", 8);
	hex(mine->sock + 8, rnd, sizeof(rnd));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, abstract_addr(mine->sock, &sun)) < 0 ||
	    listen(fd, 64) < 0) {
		if (fd >= 0)
			close(fd);
		mine->sock[0] = '\0';
		return;
	}
	c->shm_lfd = fd;
}

int shm_local_size(const struct slotcomm *c)
{
	return c->shm ? c->shm->m : 1;
}

/* --- setup --------------------------------------------------------------- */

struct hello {
	uint32_t rank;
	uint8_t token[SHM_TOKEN_LEN];
};

static int setup_err(char *why, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int setup_err(char *why, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return rc;
}

/* Waits for fd to be ready for events until the deadline. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int ms = sock_poll_ms(deadline), r;

		if (ms == 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, ms);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int send_fd(int sock, int fd, const void *data, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)(uintptr_t)data, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -EIO;
}

/* Receives len bytes and one descriptor (CLOEXEC) in one message. */
static int recv_fd(int sock, int *fd, void *data, size_t len, int64_t deadline)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = data, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	ssize_t n;
	int r;

	*fd = -1;
	r = wait_fd(sock, POLLIN, deadline);
	if (r < 0)
		return r;
	n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(cm), sizeof(int));
	if ((size_t)n != len || *fd < 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return n == 0 ? SOCK_EOF : -EPROTO;
	}
	return 0;
}

static int map_segment(struct shm *s, int fd)
{
	void *p = mmap(NULL, s->lay.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	s->base = p;
	s->hdr = (struct shm_hdr *)s->base;
	return 0;
}

/* Makes the segment, sized, sealed and mapped: returns its memfd, or the
 * error with why filled. */
static int make_segment(struct slotcomm *c, struct shm *s, char *why, size_t len)
{
	char name[64];
	int mfd, r;

	snprintf(name, sizeof(name), "slotrun-shm:%d", c->cfg.master_port);
	mfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return setup_err(why, len, -errno, "rank %d (node leader): memfd_create: %s", c->rank,
				 strerror(errno));
	if (ftruncate(mfd, (off_t)s->lay.total) < 0 ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		r = -errno;
		close(mfd);
		return setup_err(why, len, r, "rank %d (node leader): cannot size the segment "
				 "(%llu bytes): %s", c->rank, (unsigned long long)s->lay.total,
				 strerror(-r));
	}
	r = map_segment(s, mfd);
	if (r < 0) {
		close(mfd);
		return setup_err(why, len, r, "rank %d (node leader): mmap of %llu bytes: %s", c->rank,
				 (unsigned long long)s->lay.total, strerror(-r));
	}
	return mfd;
}

/* Writes the segment's header and the leader's probe; returns the cookie
 * each member must write back into its own control line. */
static uint64_t stamp_header(struct shm *s)
{
	uint64_t cookie;

	if (getrandom(&cookie, sizeof(cookie), 0) != (ssize_t)sizeof(cookie))
		cookie = (uint64_t)sock_now_ns() ^ ((uint64_t)getpid() << 32);
	cookie |= 1;  /* never 0, which a fresh segment reads */
	s->hdr->magic = SHM_MAGIC;
	s->hdr->version = SHM_VERSION;
	s->hdr->m = (uint32_t)s->m;
	s->hdr->size = s->lay.total;
	s->hdr->cookie = cookie;
	ctl_of(s, 0)->probe = cookie;
	return cookie;
}

/* Reads the hello of a connection just accepted: returns the index of the
 * member it proves to be (its rank and token match, and it has no
 * connection yet), or -1. */
static int admit(const struct shm *s, const struct shm_info *all, int fd, int64_t deadline)
{
	struct hello h;
	int k = -1;
	/* A stranger that says nothing costs at most 5 s. */
	int64_t dl = sock_now_ns() + 5000000000LL;

	if (dl > deadline)
		dl = deadline;
	if (sock_recv_all(fd, &h, sizeof(h), dl) == 0)
		for (int i = 1; i < s->m; i++)
			if (s->ranks[i] == (int)h.rank && s->fd[i] < 0 &&
			    memcmp(h.token, all[h.rank].token, SHM_TOKEN_LEN) == 0)
				k = i;
	return k;
}

/* Accepts connections until every member has the segment's fd (kept in
 * s->fd) or the deadline passes; returns how many members are missing. */
static int hand_over(struct slotcomm *c, struct shm *s, const struct shm_info *all, int mfd,
		     uint64_t cookie, int64_t deadline)
{
	int left = s->m - 1;

	while (left > 0) {
		int fd, k;

		if (wait_fd(c->shm_lfd, POLLIN, deadline) < 0)
			break;
		fd = accept4(c->shm_lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		k = admit(s, all, fd, deadline);
		if (k < 0 || send_fd(fd, mfd, &cookie, sizeof(cookie)) < 0) {
			close(fd);
			continue;
		}
		s->fd[k] = fd;
		left--;
	}
	return left;
}

/* Each member answers one byte once it mapped the segment and wrote the
 * cookie into its control line ('A'), or gave up ('N'); the cookie must
 * then show in the leader's own mapping. */
static int check_probes(struct slotcomm *c, struct shm *s, uint64_t cookie, int64_t deadline,
			char *why, size_t len)
{
	for (int i = 1; i < s->m; i++) {
		char a = 0;
		int r = sock_recv_all(s->fd[i], &a, 1, deadline);

		if (r < 0 || a != 'A')
			return setup_err(why, len, r < 0 ? r : -EPROTO, "rank %d could not map this "
					 "node's shared memory%s", s->ranks[i],
					 r == -ETIMEDOUT ? " in time" : "");
		if (__atomic_load_n(&ctl_of(s, i)->probe, __ATOMIC_ACQUIRE) != cookie)
			return setup_err(why, len, -EXDEV, "rank %d's writes do not show in rank %d's "
					 "mapping: the segment is not shared", s->ranks[i], c->rank);
	}
	return 0;
}

/* The leader: makes the segment, hands it to every member that proves its
 * token, and checks that each one's probe shows in its own mapping. */
static int lead(struct slotcomm *c, struct shm *s, const struct shm_info *all, int64_t deadline,
		char *why, size_t len)
{
	uint64_t cookie;
	int mfd, left;

	mfd = make_segment(c, s, why, len);
	if (mfd < 0)
		return mfd;
	cookie = stamp_header(s);
	left = hand_over(c, s, all, mfd, cookie, deadline);
	close(mfd);
	if (left > 0) {
		for (int i = 1; i < s->m; i++)
			if (s->fd[i] < 0)
				return setup_err(why, len, -ETIMEDOUT, "rank %d did not come for this "
						 "node's shared memory within %gs", s->ranks[i],
						 c->cfg.timeout_s);
	}
	return check_probes(c, s, cookie, deadline, why, len);
}

/* A member: connects to the leader, maps what it hands over, and checks
 * the probe. */
static int follow(struct slotcomm *c, struct shm *s, const struct shm_info *all, int64_t deadline,
		  char *why, size_t len)
{
	const struct shm_info *lead_info = &all[s->ranks[0]];
	struct hello h = { .rank = (uint32_t)c->rank };
	struct sockaddr_un sun;
	socklen_t sl = abstract_addr(lead_info->sock, &sun);
	uint64_t cookie = 0;
	struct stat st;
	int fd, mfd, r, seals;
	char answer = 'N';

	if (!lead_info->sock[0])
		return setup_err(why, len, -ENOTSUP, "rank %d (node leader) has no socket to hand "
				 "the segment over", s->ranks[0]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return setup_err(why, len, -errno, "rank %d: socket: %s", c->rank, strerror(errno));
	s->fd[0] = fd;
	if (connect(fd, (struct sockaddr *)&sun, sl) < 0)
		return setup_err(why, len, -errno, "rank %d cannot reach node leader rank %d's "
				 "socket: %s", c->rank, s->ranks[0], strerror(errno));
	memcpy(h.token, all[c->rank].token, SHM_TOKEN_LEN);
	r = sock_send_all(fd, &h, sizeof(h), deadline);
	if (r == 0)
		r = recv_fd(fd, &mfd, &cookie, sizeof(cookie), deadline);
	if (r < 0)
		return setup_err(why, len, r, "rank %d got no segment from node leader rank %d: %s",
				 c->rank, s->ranks[0], r == -ETIMEDOUT ? "timed out" :
				 r == SOCK_EOF ? "it closed the connection" : strerror(-r));
	seals = fcntl(mfd, F_GET_SEALS);
	if (fstat(mfd, &st) < 0 || (uint64_t)st.st_size != s->lay.total || seals < 0 ||
	    !(seals & F_SEAL_SHRINK)) {
		close(mfd);
		r = setup_err(why, len, -EPROTO, "rank %d: the segment from rank %d is not the "
			      "expected sealed %llu bytes", c->rank, s->ranks[0],
			      (unsigned long long)s->lay.total);
		goto answer;
	}
	r = map_segment(s, mfd);
	close(mfd);
	if (r < 0) {
		setup_err(why, len, r, "rank %d: mmap of %llu bytes: %s", c->rank,
			  (unsigned long long)s->lay.total, strerror(-r));
		goto answer;
	}
	if (s->hdr->magic != SHM_MAGIC || s->hdr->version != SHM_VERSION ||
	    s->hdr->m != (uint32_t)s->m || s->hdr->size != s->lay.total ||
	    s->hdr->cookie != cookie) {
		r = setup_err(why, len, -EXDEV, "rank %d does not see node leader rank %d's writes "
			      "in the segment: it is not shared", c->rank, s->ranks[0]);
		goto answer;
	}
	__atomic_store_n(&ctl_of(s, s->li)->probe, cookie, __ATOMIC_RELEASE);
	answer = 'A';
answer:
	if (sock_send_all(fd, &answer, 1, deadline) < 0 && r == 0)
		r = setup_err(why, len, -EPIPE, "node leader rank %d went away during the setup",
			      s->ranks[0]);
	return r;
}

int shm_attach(struct slotcomm *c, const struct shm_info *all, int64_t deadline, char *why,
	       size_t whylen)
{
	struct shm *s = calloc(1, sizeof(*s));
	char *keys = malloc((size_t)c->size * SHM_KEY_MAX);
	int r;

	why[0] = '\0';
	if (!s || !keys) {
		free(s);
		free(keys);
		return setup_err(why, whylen, -ENOMEM, "rank %d: out of memory", c->rank);
	}
	c->shm = s;
	for (int i = 0; i < c->size; i++)
		memcpy(keys + (size_t)i * SHM_KEY_MAX, all[i].key, SHM_KEY_MAX);
	s->ranks = malloc(sizeof(int) * (size_t)c->size);
	if (!s->ranks) {
		free(keys);
		return setup_err(why, whylen, -ENOMEM, "rank %d: out of memory", c->rank);
	}
	s->m = shm_node_members(keys, SHM_KEY_MAX, c->size, c->rank, s->ranks);
	free(keys);
	if (s->m <= 1) {
		shm_free(c, 0);
		return 0;
	}
	for (int i = 0; i < s->m; i++)
		if (s->ranks[i] == c->rank)
			s->li = i;
	s->fd = malloc(sizeof(int) * (size_t)s->m);
	s->bye = calloc((size_t)s->m, 1);
	s->pfd = calloc((size_t)(s->m + c->size), sizeof(*s->pfd));
	s->src = calloc((size_t)s->m, sizeof(*s->src));
	if (!s->fd || !s->bye || !s->pfd || !s->src)
		return setup_err(why, whylen, -ENOMEM, "rank %d: out of memory", c->rank);
	for (int i = 0; i < s->m; i++)
		s->fd[i] = -1;
	shm_layout_make(&s->lay, s->m, SHM_DEPTH, SHM_SLOT_BYTES);
	r = s->li == 0 ? lead(c, s, all, deadline, why, whylen)
		       : follow(c, s, all, deadline, why, whylen);
	if (c->shm_lfd >= 0) {
		close(c->shm_lfd);
		c->shm_lfd = -1;
	}
	if (r < 0)
		return r;
	for (int i = 0; i < s->m; i++)
		if (s->fd[i] >= 0)
			(void)sock_set_nonblock(s->fd[i], 1);
	return 0;
}

void shm_free(struct slotcomm *c, int bye)
{
	struct shm *s = c->shm;

	if (c->shm_lfd >= 0) {
		close(c->shm_lfd);
		c->shm_lfd = -1;
	}
	if (!s)
		return;
	/* Before the goodbyes: whoever sees one reads where we ended. */
	if (bye && !c->broken && s->base)
		__atomic_store_n(&ctl_of(s, s->li)->ended, c->seq + 1, __ATOMIC_RELEASE);
	for (int i = 0; s->fd && i < s->m; i++) {
		if (s->fd[i] < 0)
			continue;
		if (bye && !c->broken)
			(void)send(s->fd[i], "B", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		close(s->fd[i]);
	}
	if (s->base)
		munmap(s->base, s->lay.total);
	free(s->ranks);
	free(s->fd);
	free(s->bye);
	free(s->pfd);
	free(s->src);
	free(s);
	c->shm = NULL;
}
