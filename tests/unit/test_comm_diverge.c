// SPDX-License-Identifier: MIT
/* Naming a divergence (comm_diverge.c): which frames met out of turn mean a
 * peer ahead of this rank and which a divergence, the line that names both
 * positions, and the ring peek driven over a socketpair with a fake left
 * neighbour. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm_internal.h"
#include "leak_check.h"

#define TAIL \
	": every rank must call the same collectives in the same order with the same arguments"

/* Rank `rank` of 3 with no connections (an abort goes nowhere), in
 * all-reduce #6 of 4096 float32 sum. */
static struct slotcomm *comm_at(int rank)
{
	struct slotcomm *c = calloc(1, sizeof(*c));

	cr_assert(c);
	c->rank = rank;
	c->size = 3;
	c->ctl = malloc(3 * sizeof(*c->ctl));
	c->ctl_mid = calloc(3, 1);
	cr_assert(c->ctl && c->ctl_mid);
	for (int i = 0; i < 3; i++)
		c->ctl[i] = -1;
	c->ring.send_fd = c->ring.recv_fd = -1;
	c->seq = 6;
	c->cur = (struct comm_pos){ .kind = FRAME_COLL_ALLREDUCE, .seq = 6, .shaped = 1,
				    .count = 4096, .dtype = SLOTCOMM_FLOAT32, .op = SLOTCOMM_SUM };
	return c;
}

static void comm_free(struct slotcomm *c)
{
	free(c->ctl);
	free(c->ctl_mid);
	free(c);
}

static struct frame_hdr hdr(unsigned type, unsigned coll, uint64_t seq)
{
	return (struct frame_hdr){ .type = (uint16_t)type, .coll = (uint8_t)coll, .seq = seq };
}

LEAK_TEST(comm_diverge, a_peer_ahead_is_fine)
{
	struct slotcomm *c = comm_at(1);
	struct frame_hdr later = hdr(FRAME_GATHER, FRAME_COLL_BARRIER, 7);
	struct frame_hdr bye = hdr(FRAME_BYE, FRAME_COLL_NONE, 6);
	struct frame_hdr same = hdr(FRAME_ALLREDUCE, FRAME_COLL_ALLREDUCE, 6);
	struct frame_allreduce m = { .count = 4096, .dtype = SLOTCOMM_FLOAT32, .op = SLOTCOMM_SUM };

	cr_assert_eq(comm_peer_frame(c, 0, &later, NULL), 1);
	cr_assert_eq(comm_peer_frame(c, 0, &bye, NULL), 1);     /* finished this one too */
	cr_assert_eq(comm_peer_frame(c, 0, &same, &m), 1);
	cr_assert_not(c->broken);
	comm_free(c);
}

LEAK_TEST(comm_diverge, another_collective_of_the_same_number)
{
	struct slotcomm *c = comm_at(1);
	struct frame_hdr h = hdr(FRAME_GATHER, FRAME_COLL_ALLGATHER, 6);

	cr_assert_eq(comm_peer_frame(c, 0, &h, NULL), -EPROTO);
	cr_assert(c->broken);
	cr_assert_str_eq(c->err, "rank 1 is at all-reduce #6, rank 0 at allgather #6" TAIL);
	comm_free(c);
}

LEAK_TEST(comm_diverge, an_earlier_bye_names_where_the_peer_ended)
{
	struct slotcomm *c = comm_at(0);
	struct frame_hdr h = hdr(FRAME_BYE, FRAME_COLL_NONE, 5);

	cr_assert_eq(comm_peer_frame(c, 2, &h, NULL), -EPROTO);
	cr_assert_str_eq(c->err, "rank 0 is at all-reduce #6, rank 2 ended after #5" TAIL);
	comm_free(c);
}

LEAK_TEST(comm_diverge, another_shape_names_both_shapes)
{
	struct slotcomm *c = comm_at(1);
	struct frame_hdr h = hdr(FRAME_ALLREDUCE, FRAME_COLL_ALLREDUCE, 6);
	struct frame_allreduce m = { .count = 2048, .dtype = SLOTCOMM_FLOAT32, .op = SLOTCOMM_SUM };

	cr_assert_eq(comm_peer_frame(c, 0, &h, &m), -EPROTO);
	cr_assert_str_eq(c->err, "rank 1 is at all-reduce #6 of 4096 float32 sum, "
			 "rank 0 at all-reduce #6 of 2048 float32 sum" TAIL);
	comm_free(c);
}

LEAK_TEST(comm_diverge, an_all_reduce_behind_us_is_named)
{
	struct slotcomm *c = comm_at(2);
	struct frame_hdr h = hdr(FRAME_ALLREDUCE, FRAME_COLL_ALLREDUCE, 5);
	struct frame_allreduce m = { .count = 4096, .dtype = SLOTCOMM_FLOAT32, .op = SLOTCOMM_SUM };

	cr_assert_eq(comm_peer_frame(c, 1, &h, &m), -EPROTO);
	cr_assert_str_eq(c->err, "rank 2 is at all-reduce #6 of 4096 float32 sum, "
			 "rank 1 at all-reduce #5 of 4096 float32 sum" TAIL);
	comm_free(c);
}

/* The left neighbour's stream during a control collective: fd[0] is ours,
 * fd[1] the fake neighbour's. */
static struct slotcomm *in_barrier(int fd[2])
{
	struct slotcomm *c = comm_at(1);

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd), 0);
	c->cur = (struct comm_pos){ .kind = FRAME_COLL_BARRIER, .seq = 6 };
	c->ring = (struct ring){ .n = 3, .left = 0, .right = 2, .recv_fd = fd[0], .send_fd = -1 };
	return c;
}

/* Bytes [from, to) of an ALLREDUCE header #seq of 1024 float32 sum. */
static void send_allreduce(int fd, uint64_t seq, size_t from, size_t to)
{
	uint8_t b[FRAME_HDR_LEN + FRAME_ALLREDUCE_LEN];
	struct frame_allreduce m = { .count = 1024, .dtype = SLOTCOMM_FLOAT32, .op = SLOTCOMM_SUM };

	frame_encode_coll_hdr(b, FRAME_ALLREDUCE, FRAME_COLL_ALLREDUCE, seq, FRAME_ALLREDUCE_LEN);
	frame_allreduce_encode(&m, b + FRAME_HDR_LEN);
	cr_assert_eq(write(fd, b + from, to - from), (ssize_t)(to - from));
}

LEAK_TEST(comm_diverge, ring_peek_finds_a_neighbour_in_an_all_reduce)
{
	int fd[2], done = -1;
	struct slotcomm *c = in_barrier(fd);
	uint8_t b[64];

	cr_assert_eq(comm_ring_peek(c, &c->ring, &done), 0);  /* nothing yet */
	cr_assert_eq(done, 0);
	send_allreduce(fd[1], 6, 0, FRAME_HDR_LEN + 3);         /* part of it */
	cr_assert_eq(comm_ring_peek(c, &c->ring, &done), 0);
	cr_assert_eq(done, 0);
	cr_assert_not(c->broken);
	send_allreduce(fd[1], 6, FRAME_HDR_LEN + 3, FRAME_HDR_LEN + FRAME_ALLREDUCE_LEN);
	cr_assert_eq(comm_ring_peek(c, &c->ring, &done), -EPROTO);
	cr_assert_str_eq(c->err, "rank 1 is at barrier #6, rank 0 at all-reduce #6 of 1024 float32 sum"
			 TAIL);
	/* a peek: the bytes are still there for whoever reads them */
	cr_assert_eq(recv(fd[0], b, sizeof(b), MSG_DONTWAIT), FRAME_HDR_LEN + FRAME_ALLREDUCE_LEN);
	close(fd[0]);
	close(fd[1]);
	comm_free(c);
}

LEAK_TEST(comm_diverge, ring_peek_lets_a_neighbour_ahead_go)
{
	int fd[2], done = 0;
	struct slotcomm *c = in_barrier(fd);

	send_allreduce(fd[1], 7, 0, FRAME_HDR_LEN + FRAME_ALLREDUCE_LEN);
	cr_assert_eq(comm_ring_peek(c, &c->ring, &done), 0);
	cr_assert_eq(done, 1);
	cr_assert_not(c->broken);
	close(fd[0]);
	close(fd[1]);
	comm_free(c);
}

LEAK_TEST(comm_diverge, ring_peek_reads_a_bye)
{
	int fd[2], done = 0;
	struct slotcomm *c = in_barrier(fd);
	uint8_t b[FRAME_HDR_LEN];

	frame_encode_hdr(b, FRAME_BYE, 5, 0);
	cr_assert_eq(write(fd[1], b, sizeof(b)), (ssize_t)sizeof(b));
	cr_assert_eq(comm_ring_peek(c, &c->ring, &done), -EPROTO);
	cr_assert_str_eq(c->err, "rank 1 is at barrier #6, rank 0 ended after #5" TAIL);
	close(fd[0]);
	close(fd[1]);
	comm_free(c);
}
