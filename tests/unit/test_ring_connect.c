// SPDX-License-Identifier: MIT
/* comm_ring_connect (nccl_worker/ring_connect.c) as rank 1 of two, its
 * left and right neighbour rank 0 played by a child process: a neighbour
 * that sends its HELLO only after several seconds (a machine so loaded it
 * is not scheduled) is still taken, not dropped for a stranger; a wrong
 * HELLO and a silent connection do not keep the genuine neighbour out. */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "comm_internal.h"
#include "sock.h"

#define SECRET "ring-secret"

static struct slotcomm *comm(int peer_port)
{
	struct slotcomm *c = calloc(1, sizeof(*c));

	cr_assert(c);
	c->rank = 1;
	c->size = 2;
	c->cfg.timeout_s = 30;
	c->timeout_ns = 30000000000LL;
	snprintf(c->cfg.secret, sizeof(c->cfg.secret), SECRET);
	c->peers = calloc(2, sizeof(*c->peers));
	c->peer_addr = calloc(2, sizeof(*c->peer_addr));
	cr_assert(c->peers && c->peer_addr);
	snprintf(c->peers[0].addr, sizeof(c->peers[0].addr), "127.0.0.1");
	c->peers[0].port = (uint16_t)peer_port;
	cr_assert_eq(auth_init(), 0);
	auth_nonce(c->peers[1].ring_nonce);
	return c;
}

static void comm_free(struct slotcomm *c)
{
	free(c->peers);
	free(c->peer_addr);
	free(c);
}

static int listen_here(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd;

	cr_assert_eq(sock_listen((struct sockaddr *)&a, sizeof(a), 8, 0, &fd), 0);
	*port = sock_local_port(fd);
	return fd;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* A connection to rank 1's data plane, from the child. */
static int dial(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd;

	if (sock_connect((struct sockaddr *)&a, sizeof(a), 0, sock_deadline_in(10), &fd) < 0)
		_exit(3);
	return fd;
}

/* Rank 0's HELLO to rank 1, sealed over rank 1's ring nonce (or with the
 * wrong secret), then one byte that shows which connection was taken. */
static void hello(int fd, const uint8_t *nonce, const char *secret, char mark)
{
	uint8_t buf[FRAME_HDR_LEN + FRAME_HELLO_LEN + 1];
	struct frame_hello h = { .rank = 0 };
	long n;

	auth_nonce(h.nonce);
	n = frame_hello_encode(&h, buf + FRAME_HDR_LEN, FRAME_HELLO_LEN);
	frame_seal(buf + FRAME_HDR_LEN, (size_t)n, secret, "slotrun-ring-hello", nonce, h.nonce);
	frame_encode_hdr(buf, FRAME_HELLO, 0, (uint64_t)n);
	buf[FRAME_HDR_LEN + n] = (uint8_t)mark;
	if (sock_send_all(fd, buf, FRAME_HDR_LEN + (size_t)n + 1, sock_deadline_in(10)) < 0)
		_exit(4);
}

/* Takes rank 1's connection on its listener and keeps it until told. */
static int take_rank_1(int lfd)
{
	int fd;

	if (sock_accept(lfd, sock_deadline_in(20), &fd) < 0)
		_exit(2);
	return fd;
}

static void wait_done(int fd)
{
	char b;

	(void)sock_recv_all(fd, &b, 1, sock_deadline_in(30));
	_exit(0);
}

/* Rank 1 and its fake neighbour: rank 0's listener (lfd), rank 1's data
 * plane (dlfd, on dport), rank 1's communicator and ring, and the child
 * that plays rank 0. */
struct rig {
	int lfd, dlfd, dport;
	struct slotcomm *c;
	struct ring g;
	pid_t pid;
};

/* Sets the rig up and forks: 0 in the child, which plays rank 0 and
 * _exits; the child's pid in the test. */
static pid_t rig_fork(struct rig *r)
{
	int port;

	memset(r, 0, sizeof(*r));
	r->lfd = listen_here(&port);
	r->dlfd = listen_here(&r->dport);
	r->c = comm(port);
	r->pid = fork();
	cr_assert_geq(r->pid, 0);
	return r->pid;
}

/* Rank 1 connects its ring; returns the byte after the HELLO of the
 * connection it took as its left neighbour's. */
static char connect_rank_1(struct rig *r)
{
	struct ring *g = &r->g;
	char mark = 0;

	g->left = g->right = 0;
	g->n = 2;
	g->pos = 1;
	g->send_fd = g->recv_fd = -1;
	cr_assert_eq(comm_ring_connect(r->c, g, r->dlfd, sock_deadline_in(25)), 0, "%s", r->c->err);
	cr_assert_geq(g->recv_fd, 0);
	cr_assert_eq(sock_recv_all(g->recv_fd, &mark, 1, sock_deadline_in(10)), 0);
	return mark;
}

static void finish(struct rig *r)
{
	int st;

	/* tells the child it may go: rank 1 closes its connection */
	comm_ring_close(&r->g);
	cr_assert_eq(waitpid(r->pid, &st, 0), r->pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the fake neighbour ended with %d", st);
	close(r->lfd);
	close(r->dlfd);
	comm_free(r->c);
}

Test(ring_connect, a_neighbour_slow_to_say_hello_is_taken, .timeout = 60)
{
	struct rig r;

	if (rig_fork(&r) == 0) {
		int in = take_rank_1(r.lfd), out = dial(r.dport);

		pause_ms(6500);  /* longer than a stranger may stay silent */
		hello(out, r.c->peers[1].ring_nonce, SECRET, 'S');
		wait_done(in);
	}
	cr_assert_eq(connect_rank_1(&r), 'S');
	finish(&r);
}

Test(ring_connect, a_wrong_hello_and_a_silent_stranger_do_not_keep_the_neighbour_out,
     .timeout = 60)
{
	struct rig r;

	if (rig_fork(&r) == 0) {
		int in = take_rank_1(r.lfd), silent = dial(r.dport), wrong = dial(r.dport), out;

		hello(wrong, r.c->peers[1].ring_nonce, "not-the-secret", 'W');
		pause_ms(200);
		out = dial(r.dport);
		hello(out, r.c->peers[1].ring_nonce, SECRET, 'G');
		wait_done(in);
		(void)silent;
	}
	cr_assert_eq(connect_rank_1(&r), 'G');
	finish(&r);
}
