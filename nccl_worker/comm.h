// SPDX-License-Identifier: MIT
/* slotrun's worker communication library: the rendezvous, the Core API
 * primitives (allgather, gather, broadcast, barrier, should_preempt) and
 * the in-place all-reduce (on the CPU: shared memory within a node, TCP
 * between nodes; NCCL in ring_nccl.h).
 *
 * A C trainer includes this header and links libnccl_worker_core:
 *
 *     struct comm_config cfg;
 *     struct comm *c;
 *     char err[COMM_ERR_MAX];
 *     if (comm_config_from_env(&cfg, err, sizeof(err)) < 0)   -> usage error
 *     if (comm_init(&c, &cfg, err, sizeof(err)) < 0)          -> rendezvous failed
 *     comm_allreduce(c, grads, n, COMM_FLOAT32, COMM_AVG);
 *     if (comm_should_preempt(c, got_sigusr1, &stop) < 0) ... comm_error(c)
 *     comm_destroy(c);
 *
 * Environment (what slotrun gives every worker; see README "nccl_worker"):
 *   RANK, WORLD_SIZE          required
 *   LOCAL_RANK                default RANK;  LOCAL_WORLD_SIZE default WORLD_SIZE
 *   MASTER_ADDR, MASTER_PORT  the chief's rendezvous address (required when
 *                             WORLD_SIZE > 1)
 *   SLOTRUN_JOB_SECRET        the job secret; unset is the same as empty, and a
 *                             rank only joins ranks with the same secret
 *   SLOTRUN_TIMEOUT           seconds (decimal, > 0; default 300): the
 *                             rendezvous must complete within it, and any
 *                             wait on a peer that makes no progress for that
 *                             long fails
 *   SLOTRUN_TRANSPORT         auto | tcp | shm: how all-reduces move (shared
 *                             memory within a node and TCP between nodes;
 *                             only TCP; only shared memory), the same on
 *                             every rank
 *   NCCL_SOCKET_IFNAME        optional: the data plane binds to this
 *                             interface's address (comma list of name
 *                             prefixes, '=' for an exact name)
 *
 * Collectives must be called by every rank in the same order with the same
 * arguments (lengths, count, type, op); a mismatch that can be seen on the
 * wire is an error, not undefined behaviour.
 *
 * Errors: every function returns 0 or a negative errno.  After an error the
 * communicator is broken: comm_error() holds one line that names the peer
 * rank at fault where there is one (e.g. "peer rank 1 closed the connection
 * during all-reduce (step 3)"), the other ranks are told (best effort), and
 * every later call fails at once with -ENOTCONN.  The library never prints;
 * the caller prefixes the line with its program name and rank.
 *
 * Not thread-safe: one thread per communicator. */
#ifndef SLOTRUN_COMM_H
#define SLOTRUN_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COMM_ERR_MAX 512
#define COMM_DEFAULT_TIMEOUT_S 300.0

enum comm_dtype {
	COMM_FLOAT32,
	COMM_FLOAT64,
	COMM_INT32,
	COMM_INT64,
	COMM_BF16,
	COMM_FP16,
	COMM_DTYPE_COUNT
};

enum comm_op {
	COMM_SUM,
	COMM_PROD,
	COMM_MIN,
	COMM_MAX,
	COMM_AVG,  /* sum / WORLD_SIZE; integers round toward zero */
	COMM_OP_COUNT
};

enum comm_transport {
	COMM_TRANSPORT_AUTO,
	COMM_TRANSPORT_TCP,
	COMM_TRANSPORT_SHM,
};

struct comm_config {
	int rank, size, local_rank, local_size;
	char master_addr[256];
	int master_port;
	double timeout_s;
	enum comm_transport transport;
	char secret[1025];
	char ifname[256];  /* NCCL_SOCKET_IFNAME, "" when unset */
	char host[256];    /* this machine's name, for the table */
};

struct comm;

/* Reads the worker environment (see above).  On a missing or malformed
 * variable returns -EINVAL with one line in err naming the variable and the
 * value, e.g. "RANK=3 is not below WORLD_SIZE=2". */
int comm_config_from_env(struct comm_config *cfg, char *err, size_t errlen);

/* The same, reading variables through get (for tests). */
int comm_config_parse(struct comm_config *cfg, const char *(*get)(const char *name),
		      char *err, size_t errlen);

/* Rendezvous and transport.  Rank 0 listens on MASTER_PORT; every other
 * rank connects (retrying until rank 0 is up), answers rank 0's challenge
 * with its rank, host and data-plane address, sealed with an HMAC of the
 * job secret (which never crosses the wire); rank 0 refuses a wrong MAC (and
 * keeps waiting for the genuine rank), and when all have come answers each
 * with the table, sealed the same way.  Then all ranks pick the transport alike
 * (SLOTRUN_TRANSPORT), each node's ranks share their segment, and the TCP
 * rings needed are connected.  All of it within SLOTRUN_TIMEOUT: on expiry
 * the error names the ranks that never came.  On failure *out is NULL and
 * err holds one line (SLOTRUN_TRANSPORT=shm across hosts is one). */
int comm_init(struct comm **out, const struct comm_config *cfg, char *err, size_t errlen);

/* Closes everything.  NULL is fine. */
void comm_destroy(struct comm *c);

int comm_rank(const struct comm *c);
int comm_size(const struct comm *c);
int comm_local_rank(const struct comm *c);
int comm_local_size(const struct comm *c);
/* Distinct host names in the table. */
int comm_nhosts(const struct comm *c);
/* Nodes: groups of ranks that run on one kernel in one network namespace,
 * which could share memory (docs/comm.md, "same node"); with SLOTRUN_TRANSPORT
 * tcp counted all the same. */
int comm_nnodes(const struct comm *c);
/* Host name and data-plane address ("addr:port") of a rank. */
const char *comm_peer_host(const struct comm *c, int rank);
const char *comm_peer_addr(const struct comm *c, int rank);
/* "tcp", "shm" or "shm+tcp" (SLOTRUN_TRANSPORT; README "nccl_worker"). */
const char *comm_transport_name(const struct comm *c);
/* One line on how all-reduces move: the transport, its algorithm, which
 * ranks share memory.  Written into buf (cut to len). */
void comm_transport_describe(const struct comm *c, char *buf, size_t len);
/* Why the transport is not the one asked for (SLOTRUN_TRANSPORT=auto fell
 * back to TCP, say), or "". */
const char *comm_transport_note(const struct comm *c);
double comm_timeout_s(const struct comm *c);

/* The error of the last failed call (one line, no program name, no rank
 * prefix), or "" if none. */
const char *comm_error(const struct comm *c);

/* Every rank passes len bytes; recv (size * len bytes, on every rank)
 * receives rank i's bytes at offset i * len. */
int comm_allgather(struct comm *c, const void *send, size_t len, void *recv);

/* As allgather, but only rank 0 receives; recv may be NULL elsewhere. */
int comm_gather(struct comm *c, const void *send, size_t len, void *recv);

/* Rank 0's len bytes of buf are copied into buf on every rank. */
int comm_broadcast(struct comm *c, void *buf, size_t len);

/* Returns once every rank has entered it. */
int comm_barrier(struct comm *c);

/* Synchronized preemption.  Every rank calls it at the same point with its
 * local view (e.g. "I got SIGUSR1", or the chief's "the master asked"); all
 * get the same *out: true when ANY rank passed true.  So a preemption signal
 * delivered to one rank, or only to the chief, stops every rank at the same
 * step. */
int comm_should_preempt(struct comm *c, bool local, bool *out);

/* In-place all-reduce of count elements of buf on the communicator's
 * transport (comm_transport_name).  Any count,
 * including 0 and counts below WORLD_SIZE.  bf16 and fp16 are reduced in
 * float and rounded to nearest even at every step. */
int comm_allreduce(struct comm *c, void *buf, size_t count, enum comm_dtype dtype,
		   enum comm_op op);

/* Bytes per element, names ("float32", "sum") and their parsers (which also
 * take nccl-tests' names: float, double, int, half, bfloat16, ...).  The
 * parsers return the enum value or -EINVAL. */
size_t comm_dtype_size(enum comm_dtype t);
const char *comm_dtype_name(enum comm_dtype t);
const char *comm_op_name(enum comm_op op);
int comm_dtype_parse(const char *s);
int comm_op_parse(const char *s);

#endif
