// SPDX-License-Identifier: MIT
/* The segment's handover (nccl_worker/shm_setup.c) as the leader of a
 * node of three ranks, its members played by child processes that speak
 * the hello by hand: a member that sends its hello only after several
 * seconds (a machine so loaded it is not scheduled) is still admitted,
 * and silent strangers on the leader's socket, more of them than it
 * holds, and a hello with the wrong token do not keep the members out
 * until the deadline.  Every connection is made by the test process
 * before the leader starts, so the order in which the leader finds them
 * in its backlog is the order written here. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "folder.h"
#include "leak_check.h"
#include "shm_internal.h"
#include "sock.h"

#define M 3          /* ranks on the node: the leader, ranks 1 and 2 */
#define DEADLINE_S 20
#define HELLO_LEN (4 + SHM_TOKEN_LEN)

/* "At once": what the leader does for a connection is an accept and a
 * read, but this machine may be loaded.  Before the fix every silent
 * connection ahead of a member cost it 5 s, one after the other; this is
 * well under one of them. */
#define PROMPT_MS 2000

/* Longer than the 5 s a silent connection was given before the fix. */
#define SLOW_MS 6500

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static long ms_since(int64_t t0)
{
	return (long)((sock_now_ns() - t0) / 1000000);
}

/* Open fds of this process (the directory's own fd not counted). */
static int open_fds(void)
{
	return folder_entries("/proc/self/fd") - 1;
}

/* The leader (rank 0) with its listening socket, and every rank's info
 * as the rendezvous would carry it: one node key, a token each. */
struct rig {
	struct slotcomm *c;
	struct shm_info all[M];
	pid_t kids[8];
	int nkids;
	int fds;  /* open before the rig */
};

static void rig_init(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	r->fds = open_fds();
	r->c = calloc(1, sizeof(*r->c));
	cr_assert(r->c);
	r->c->rank = 0;
	r->c->size = M;
	r->c->cfg.transport = SLOTCOMM_TRANSPORT_SHM;
	r->c->cfg.timeout_s = DEADLINE_S;
	r->c->shm_lfd = -1;
	shm_info_fill(r->c, &r->all[0]);
	cr_assert(r->all[0].key[0] && r->all[0].sock[0] && r->c->shm_lfd >= 0,
		  "no node key or no socket here");
	for (int i = 1; i < M; i++) {
		memcpy(r->all[i].key, r->all[0].key, SHM_KEY_MAX);
		r->all[i].transport = 's';
		for (int k = 0; k < SHM_TOKEN_LEN; k++)
			r->all[i].token[k] = (uint8_t)(31 * i + 7 * k + 1);
	}
}

/* A connection to the leader's abstract socket; -1 when it fails. */
static int dial(const struct rig *r)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t n = strlen(r->all[0].sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memcpy(sun.sun_path + 1, r->all[0].sock, n);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sun,
			       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* What one child says, and what it expects. */
struct part {
	uint32_t rank;        /* the rank its hello claims */
	uint8_t token[SHM_TOKEN_LEN];
	size_t split;         /* bytes of the hello sent before the pause */
	long pause;           /* ms */
	long max_wait;        /* a member: most ms from its hello to the segment; 0: any */
	bool impostor;        /* expects to be dropped at once, not to be let in */
};

static void say_hello(int fd, const struct part *p)
{
	uint8_t hello[HELLO_LEN];

	memcpy(hello, &p->rank, 4);
	memcpy(hello + 4, p->token, SHM_TOKEN_LEN);
	if (p->split && sock_send_all(fd, hello, p->split, sock_deadline_in(DEADLINE_S)) < 0)
		_exit(3);
	pause_ms(p->pause);
	if (sock_send_all(fd, hello + p->split, HELLO_LEN - p->split,
			  sock_deadline_in(DEADLINE_S)) < 0)
		_exit(3);
}

/* An impostor: its connection must end within PROMPT_MS of its hello,
 * while the members are still coming.  Exits 0, or 7. */
static void impostor(int fd, const struct part *p)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char b;

	say_hello(fd, p);
	if (poll(&pfd, 1, PROMPT_MS) != 1 || recv(fd, &b, 1, MSG_DONTWAIT) > 0)
		_exit(7);
	_exit(0);
}

/* What a member does (shm_setup.c's follow, by hand), in a child: says
 * its hello (rank, then token; split bytes of it, then the rest after
 * pause ms), takes the segment and the cookie, writes the cookie into its
 * control line and answers 'A'; then holds on until the leader closes.
 * Exits 0, 8 when the segment came later than max_wait after its hello,
 * or a code for the step that failed. */
static void member(int fd, const struct part *p)
{
	char cbuf[CMSG_SPACE(sizeof(int))], end;
	uint64_t cookie;
	struct iovec iov = { .iov_base = &cookie, .iov_len = sizeof(cookie) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct cmsghdr *cm;
	struct shm_layout lay;
	int64_t t0;
	int mfd = -1;
	uint8_t *base;
	bool late;

	say_hello(fd, p);
	t0 = sock_now_ns();
	if (poll(&pfd, 1, DEADLINE_S * 1000) != 1 ||
	    recvmsg(fd, &msg, MSG_DONTWAIT) != (ssize_t)sizeof(cookie))
		_exit(4);
	late = p->max_wait && ms_since(t0) > p->max_wait;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&mfd, CMSG_DATA(cm), sizeof(int));
	shm_layout_make(&lay, M, SHM_DEPTH, SHM_SLOT_BYTES);
	base = mfd < 0 ? MAP_FAILED : mmap(NULL, lay.total, PROT_READ | PROT_WRITE, MAP_SHARED,
					  mfd, 0);
	if (base == MAP_FAILED)
		_exit(5);
	__atomic_store_n((uint64_t *)(base + lay.ctl_off + (size_t)p->rank * SHM_LINE +
				      offsetof(struct shm_ctl, probe)), cookie, __ATOMIC_RELEASE);
	if (sock_send_all(fd, "A", 1, sock_deadline_in(DEADLINE_S)) < 0)
		_exit(6);
	(void)sock_recv_all(fd, &end, 1, sock_deadline_in(DEADLINE_S + 10));
	_exit(late ? 8 : 0);
}

/* Connects (here, so that the leader finds the connections in the order
 * of the calls) and forks the child that speaks on it. */
static void start(struct rig *r, const struct part *p)
{
	int fd = dial(r);
	pid_t pid;

	cr_assert_geq(fd, 0);
	cr_assert_lt(r->nkids, (int)(sizeof(r->kids) / sizeof(r->kids[0])));
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(r->c->shm_lfd);
		if (p->impostor)
			impostor(fd, p);
		member(fd, p);
	}
	close(fd);
	r->kids[r->nkids++] = pid;
}

static struct part genuine(const struct rig *r, int rank)
{
	struct part p = { .rank = (uint32_t)rank };

	memcpy(p.token, r->all[rank].token, SHM_TOKEN_LEN);
	return p;
}

/* The leader hands the segment over; every child must have done what it
 * expected.  Returns how long the handover took, in ms. */
static long lead_and_finish(struct rig *r)
{
	char why[SLOTCOMM_ERR_MAX];
	int64_t t0 = sock_now_ns();
	int rc = shm_attach(r->c, r->all, sock_deadline_in(DEADLINE_S), why, sizeof(why));
	long ms = ms_since(t0);

	cr_expect_eq(rc, 0, "shm_attach after %ld ms: %s", ms, why);
	shm_free(r->c, 0);
	for (int i = 0; i < r->nkids; i++) {
		int st = -1;

		cr_expect_eq(waitpid(r->kids[i], &st, 0), r->kids[i]);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d ended with %#x", i, st);
	}
	r->nkids = 0;
	free(r->c);
	return ms;
}

static void rig_done(struct rig *r)
{
	cr_expect_eq(open_fds(), r->fds, "every fd of the handover is closed");
}

LEAK_TEST_OPTS(shm_setup, a_member_slow_to_say_hello_is_admitted, .timeout = 60)
{
	struct rig r;
	struct part slow, fast;

	rig_init(&r);
	/* Rank 2 first: 3 bytes of its hello, then the rest after SLOW_MS.
	 * Rank 1, behind it, must not wait for it. */
	slow = genuine(&r, 2);
	slow.split = 3;
	slow.pause = SLOW_MS;
	start(&r, &slow);
	fast = genuine(&r, 1);
	fast.max_wait = PROMPT_MS;
	start(&r, &fast);
	lead_and_finish(&r);
	rig_done(&r);
}

LEAK_TEST_OPTS(shm_setup, silent_strangers_more_than_the_leader_holds_do_not_keep_members_out,
	       .timeout = 60)
{
	/* The leader holds the missing members' connections and
	 * SHM_PENDING_MAX more: one past that, and an impostor. */
	enum { SILENT = SHM_PENDING_MAX + (M - 1) + 1 };
	struct rig r;
	int held[SILENT + 1];
	struct part p;
	uint8_t hello[HELLO_LEN] = { 2, 0, 0, 0 };
	long ms;

	rig_init(&r);
	/* Each silent for good: before the fix, each one cost 5 s in turn,
	 * 55 s against a deadline of 20. */
	for (int i = 0; i < SILENT; i++) {
		held[i] = dial(&r);
		cr_assert_geq(held[i], 0);
	}
	/* rank 2's hello with a token of zeros: dropped, and rank 2 still comes */
	held[SILENT] = dial(&r);
	cr_assert_geq(held[SILENT], 0);
	cr_assert_eq(sock_send_all(held[SILENT], hello, sizeof(hello), sock_deadline_in(5)), 0);
	p = genuine(&r, 1);
	start(&r, &p);
	p = genuine(&r, 2);
	start(&r, &p);
	ms = lead_and_finish(&r);
	cr_log_info("%d silent connections and an impostor ahead: members in after %ld ms", SILENT,
		    ms);
	cr_expect_lt(ms, PROMPT_MS, "%d silent connections kept the members out for %ld ms", SILENT,
		     ms);
	for (int i = 0; i <= SILENT; i++)
		close(held[i]);
	rig_done(&r);
}

LEAK_TEST_OPTS(shm_setup, a_wrong_hello_is_dropped_at_once, .timeout = 60)
{
	struct rig r;
	struct part wrong, nobody, p;

	rig_init(&r);
	/* rank 2 with one byte of its token wrong, and a rank of no member;
	 * each must see its connection end while rank 2 is still to come */
	wrong = genuine(&r, 2);
	wrong.token[5] ^= 0x40;
	wrong.impostor = true;
	start(&r, &wrong);
	nobody = genuine(&r, 1);
	nobody.rank = 0xffffffffu;
	nobody.impostor = true;
	start(&r, &nobody);
	p = genuine(&r, 1);
	start(&r, &p);
	p = genuine(&r, 2);
	p.pause = 2 * PROMPT_MS;
	start(&r, &p);
	lead_and_finish(&r);
	rig_done(&r);
}
