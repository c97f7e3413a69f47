// SPDX-License-Identifier: MIT
/* What the comm modules share: the communicator and its error path.
 * Not part of the public API. */
#ifndef SLOTRUN_COMM_INTERNAL_H
#define SLOTRUN_COMM_INTERNAL_H

#include <poll.h>
#include <stdint.h>

#include <slotcomm/slotcomm.h>
#include "frame.h"

/* Socket buffers of a ring connection to another machine, and to a rank
 * on this one.  Over loopback, small buffers are faster: the kernel's
 * packets stay in cache between the sender's copy in and the receiver's
 * copy out (bench/allreduce_sweep shows it).  Between machines the window
 * must cover the bandwidth-delay product. */
#define COMM_RING_SOCKBUF (4 << 20)
#define COMM_RING_SOCKBUF_LOCAL (128 << 10)

/* Except for all-reduces of up to COMM_RING_MID_BYTES per rank, where
 * whole segments fitting in the socket buffers over loopback saves a
 * wake-up per piece; larger buffers did not help larger all-reduces
 * (bench/allreduce_sweep shows both). */
#define COMM_RING_SOCKBUF_MID (1 << 20)
#define COMM_RING_MID_BYTES (1 << 20)

/* After a ring neighbour vanishes, how long to wait for the chief's abort
 * message, which names the rank that failed first (ms, capped by the
 * deadline). */
#define COMM_ABORT_GRACE_MS 1000

/* With shared memory, a control collective looks at the node's peers at
 * least this often (ms): a peer in an all-reduce meanwhile says so only
 * there. */
#define COMM_SHM_LOOK_MS 20

/* What counts as progress for the SLOTRUN_TIMEOUT deadline: any bytes
 * received, but at least this many sent.  A stopped (SIGSTOP) receiver's
 * kernel keeps taking a trickle of bytes as it compacts its receive queue
 * and answers window probes; that must not keep its sender waiting
 * forever. */
#define COMM_SEND_PROGRESS (256 << 10)

/* A TCP ring through some of the ranks (all of them, or the node leaders of
 * the hierarchical transport): this rank's place in it and its two
 * connections.  n == 0: this rank is in no ring. */
struct ring {
	int pos, n;                  /* place in the ring, ranks in it */
	int left, right;             /* the neighbours' ranks (in the communicator) */
	int send_fd, recv_fd;        /* to right, from left; -1 when none */
	int send_local, recv_local;  /* the neighbour is on this machine */
	int buf;                     /* the socket buffer size set on local sockets */
	unsigned char *stage;        /* receive staging buffer (ring_cpu.c) */
	size_t stage_len;
};

struct transport;
struct shm;

/* Where a rank is in the sequence of collectives: the one it is in (kind,
 * sequence number and, for an all-reduce, its shape), or that it has left
 * the job (slotcomm_destroy) after collective #seq. */
struct comm_pos {
	uint8_t kind;      /* enum frame_coll */
	uint8_t ended;
	uint8_t shaped;    /* count, dtype and op are known */
	uint8_t dtype, op;
	uint64_t seq;
	uint64_t count;
};

struct slotcomm {
	struct slotcomm_config cfg;
	int rank, size;
	int64_t timeout_ns;
	struct frame_peer *peers;  /* the table, indexed by rank */
	char *hosts;               /* its host names (frame_peer.host); "" at 0 */
	size_t hosts_len, hosts_cap;
	char (*peer_addr)[FRAME_ADDR_MAX + 16];  /* "addr:port", "" until asked (comm.c) */
	int nhosts;

	/* Control connections (the rendezvous sockets, kept): on rank 0, ctl[r]
	 * for every r >= 1; elsewhere ctl[0] is the chief.  -1 when none.
	 * ctl_mid[r] is set while a frame to r is partly written: then no abort
	 * frame may follow on that stream. */
	int *ctl;
	unsigned char *ctl_mid;

	/* How all-reduces move (transport.h), and what it said about its
	 * choice ("" or e.g. why auto fell back to TCP). */
	const struct transport *tp;
	char tp_note[256];
	struct ring ring;
	struct shm *shm;           /* this node's segment (shm.c), or NULL */
	int shm_lfd;               /* the abstract socket of shm_info_fill, or -1 */
	int nnodes;                /* nodes: groups of ranks that could share memory */

	uint64_t seq;   /* collectives so far; frames carry it */
	struct comm_pos cur;  /* the collective this rank is in (or was in last) */
	int broken;
	char err[SLOTCOMM_ERR_MAX];

	int *watch;            /* control peers being watched (comm_watch_*) */
	int nwatch;
	unsigned char *ahead;  /* per rank: seen in a later collective (collectives.c) */
	unsigned char *reading;  /* per rank: a control transfer reads from it (collectives.c) */
	struct pollfd *pfd;    /* room for 2 * size + 2 entries: a collective's
				* transfers and what it watches */
};

/* Rank's host name, from the table. */
static inline const char *comm_host(const struct slotcomm *c, int rank)
{
	return c->hosts + c->peers[rank].host;
}

/* Sets rank's host name in the table (rank 0, as the ranks register).
 * 0 or -ENOMEM. */
int comm_set_host(struct slotcomm *c, int rank, const char *host);

/* Rank's data-plane address as "addr:port" ("-" when it has none). */
const char *comm_peer_addr(const struct slotcomm *c, int rank);

/* Connects ring g (pos, n, left and right set): to the right neighbour's
 * data plane, and accepts the left one's connection on the listener dlfd
 * (ring_connect.c).  Within the deadline; on failure c->err says why
 * (comm_init_err). */
int comm_ring_connect(struct slotcomm *c, struct ring *g, int dlfd, int64_t deadline);

/* Closes ring g's connections and frees its staging buffer. */
void comm_ring_close(struct ring *g);

/* During slotcomm_init: records the error (the first one wins) and returns rc;
 * nobody is told (slotcomm_init's failure is the caller's to report). */
int comm_init_err(struct slotcomm *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The same for an I/O failure rc with peer rank peer: "peer rank P closed
 * the connection while/during ..." (comm_io_phrase), where names the step. */
int comm_init_io_err(struct slotcomm *c, int rc, int peer, const char *where);

/* Records the error (the first one wins), marks the communicator broken,
 * tells the others (a non-chief tells the chief, the chief tells everyone),
 * and returns rc.  culprit: the rank at fault, or -1. */
int comm_fail(struct slotcomm *c, int rc, int culprit, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The same for a timeout while waiting on `suspect` (-1: several): a
 * suspicion, since the rank we wait on may itself be waiting on a stuck
 * one.  Rank 0 listens briefly to all ranks and blames the ones that went
 * silent; the others report to rank 0 and take its verdict (or, without one,
 * keep their own view).  Returns -ETIMEDOUT or the verdict's error. */
int comm_fail_timeout(struct slotcomm *c, int suspect, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The same for an abort frame received from the chief or a peer: relays it
 * (chief) and fails with its reason. */
int comm_fail_abort(struct slotcomm *c, int from, const struct frame_abort *a, const char *what);

/* Reads the payload of an abort frame whose header h was just consumed
 * from peer's control connection and fails with it; on rank 0 a timeout
 * report starts the verdict (see comm_fail_timeout). */
int comm_take_abort(struct slotcomm *c, int peer, const struct frame_hdr *h, const char *what);

/* Tells the control peers this rank is done, so that one still finishing
 * the last collective does not take our closing for a failure.  Best
 * effort, never blocks; nothing when broken (they got an abort instead). */
void comm_say_bye(struct slotcomm *c);

/* A value as it may appear in a one-line message: control characters
 * escaped, cut at COMM_SHOWN_MAX bytes. */
#define COMM_SHOWN_MAX 60
const char *comm_shown(const char *s, char *buf, size_t len);

/* This machine's name (gethostname, "localhost" when it has none) as the
 * table shows it: control characters become '?'. */
void comm_own_host(char *host, size_t len);

/* -ENOTCONN when broken (the error message is kept). */
int comm_usable(struct slotcomm *c);

/* "closed the connection", "reset the connection", "did not answer within
 * 3s", ... for an I/O result from sock_* or the ring. */
void comm_io_phrase(const struct slotcomm *c, int rc, char *buf, size_t len);

/* Control-connection watching while a collective waits on something else:
 * a watched peer that closes its control connection, or sends an abort
 * frame, fails the collective at once, as does one that sends a frame of
 * another collective of this or an earlier number, or a BYE from before
 * this collective (comm_peer_frame).  A peer in a later collective, or done
 * after this one, is ahead of us and is simply no longer watched.
 * comm_watch_init watches every control peer; comm_watch_fill writes their
 * pollfds into pfd (room for slotcomm_size entries) and returns how many;
 * comm_watch_check handles the revents and returns 0 or the failure. */
void comm_watch_init(struct slotcomm *c);
int comm_watch_fill(const struct slotcomm *c, struct pollfd *pfd);
int comm_watch_check(struct slotcomm *c, const struct pollfd *pfd, int npfd, const char *what);

/* After a data-plane peer vanished: waits up to ms (capped by the timeout)
 * for what explains it on the watched control connections -- an abort
 * frame, or a control connection closing (that rank died) -- and returns
 * that failure, else 0. */
int comm_watch_grace(struct slotcomm *c, int ms, const char *what);

/* --- divergence (comm_diverge.c) ----------------------------------------- */

/* Fails the communicator because peer is at `theirs` while this rank is at
 * c->cur: "rank 0 is at all-reduce #6, rank 1 ended after #5" (one line,
 * this rank first), blaming the peer.  Returns -EPROTO. */
int comm_diverged(struct slotcomm *c, int peer, const struct comm_pos *theirs);

/* A frame header from peer met while this rank is in collective c->cur and
 * not expecting it (a watched control connection, a ring neighbour's
 * stream during a control collective): 1 when it is consistent with the
 * peer being ahead of this rank (a later collective, or finished after
 * this one), else the divergence (comm_diverged).  m: the all-reduce's
 * shape when h is an ALLREDUCE header and it is known, else NULL. */
int comm_peer_frame(struct slotcomm *c, int peer, const struct frame_hdr *h,
		    const struct frame_allreduce *m);

/* While this rank is in a control collective: looks, without consuming
 * anything, at what the left ring neighbour has sent on the data plane.
 * Nothing arrives there between all-reduces unless that neighbour is in
 * one (or has finished), so what does arrive tells where it is.  Sets
 * *done when there is nothing more to learn there (the neighbour is
 * ahead).  0, or the divergence. */
int comm_ring_peek(struct slotcomm *c, struct ring *g, int *done);

#endif
