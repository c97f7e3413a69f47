// SPDX-License-Identifier: MIT
/* slotcomm: slotrun's worker communication library.  The rendezvous, the
 * Core API primitives (allgather, gather, broadcast, barrier,
 * should_preempt) and the in-place all-reduce (on the CPU: shared memory
 * within a node, TCP between nodes; on the GPU: <slotcomm/nccl.h>).
 *
 * A C trainer includes this header and links the library through
 * pkg-config (`cc train.c $(pkg-config --cflags --libs slotcomm)`):
 *
 *     struct slotcomm_config cfg;
 *     struct slotcomm *c;
 *     char err[SLOTCOMM_ERR_MAX];
 *     if (slotcomm_config_from_env(&cfg, err, sizeof(err)) < 0)  -> usage error
 *     if (slotcomm_init(&c, &cfg, err, sizeof(err)) < 0)         -> rendezvous failed
 *     slotcomm_allreduce(c, grads, n, SLOTCOMM_FLOAT32, SLOTCOMM_AVG);
 *     if (slotcomm_should_preempt(c, got_sigusr1, &stop) < 0) ... slotcomm_error(c)
 *     slotcomm_destroy(c);
 *
 * Every name the library defines starts with slotcomm_ or SLOTCOMM_.
 *
 * Environment (what slotrun gives every worker; slotrun(1)):
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
 * wire is an error, not undefined behaviour: every collective carries its
 * kind, sequence number and shape, so ranks that part are told within one
 * step, on every rank, with both positions ("rank 0 is at allgather #7,
 * rank 1 at all-reduce #7 of 1024 float32 sum"; "... rank 1 ended after
 * #8" for one that called slotcomm_destroy first).  NCCL all-reduces are
 * numbered but their data is not checked (slotcomm(3)).
 *
 * Errors: every function returns 0 or a negative errno.  After an error the
 * communicator is broken: slotcomm_error() holds one line that names the
 * peer rank at fault where there is one (e.g. "peer rank 1 closed the
 * connection during all-reduce (step 3)"), the other ranks are told (best
 * effort), and every later call fails at once with -ENOTCONN.  The library
 * never prints; the caller prefixes the line with its program name and rank.
 *
 * Not thread-safe: one thread per communicator. */
#ifndef SLOTCOMM_SLOTCOMM_H
#define SLOTCOMM_SLOTCOMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <slotcomm/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLOTCOMM_ERR_MAX 512
#define SLOTCOMM_DEFAULT_TIMEOUT_S 300.0
/* The largest size (WORLD_SIZE) a communicator may have. */
#define SLOTCOMM_MAX_RANKS 4096

enum slotcomm_dtype {
	SLOTCOMM_FLOAT32,
	SLOTCOMM_FLOAT64,
	SLOTCOMM_INT32,
	SLOTCOMM_INT64,
	SLOTCOMM_BF16,
	SLOTCOMM_FP16,
	SLOTCOMM_DTYPE_COUNT
};

enum slotcomm_op {
	SLOTCOMM_SUM,
	SLOTCOMM_PROD,
	SLOTCOMM_MIN,
	SLOTCOMM_MAX,
	SLOTCOMM_AVG,  /* sum / size; integers round toward zero */
	SLOTCOMM_OP_COUNT
};

enum slotcomm_transport {
	SLOTCOMM_TRANSPORT_AUTO,
	SLOTCOMM_TRANSPORT_TCP,
	SLOTCOMM_TRANSPORT_SHM,
};

/* Filled by slotcomm_config_from_env, or by hand after
 * slotcomm_config_init; slotcomm_init checks every field. */
struct slotcomm_config {
	int rank, size;              /* 0 <= rank < size <= SLOTCOMM_MAX_RANKS */
	int local_rank, local_size;  /* the same within this node */
	char master_addr[256];       /* rank 0's address (needed when size > 1) */
	int master_port;             /* 1..65535 (needed when size > 1) */
	double timeout_s;            /* > 0 */
	enum slotcomm_transport transport;
	char secret[1025];           /* the job secret, the same on every rank */
	char ifname[256];            /* NCCL_SOCKET_IFNAME, "" when unset */
	char host[256];              /* this machine's name; "": gethostname */
};

struct slotcomm;

/* The version of the library linked in (SLOTCOMM_VERSION_STRING of the
 * headers it was built with), e.g. "0.1.0". */
const char *slotcomm_version(void);

/* The defaults for a configuration filled by hand: a single rank (rank 0
 * of 1), SLOTCOMM_DEFAULT_TIMEOUT_S, transport auto, no secret, host from
 * gethostname at slotcomm_init. */
void slotcomm_config_init(struct slotcomm_config *cfg);

/* Checks a configuration: 0, or -EINVAL with one line in err naming the
 * field and what it must be, e.g. "slotcomm_config.rank=3 is not below
 * .size=2 (set rank from 0 to size - 1)".  slotcomm_init calls it. */
int slotcomm_config_check(const struct slotcomm_config *cfg, char *err, size_t errlen);

/* Reads the worker environment (see above).  On a missing or malformed
 * variable returns -EINVAL with one line in err naming the variable and the
 * value, e.g. "RANK=3 is not below WORLD_SIZE=2". */
int slotcomm_config_from_env(struct slotcomm_config *cfg, char *err, size_t errlen);

/* The same, reading variables through get (instead of getenv). */
int slotcomm_config_parse(struct slotcomm_config *cfg, const char *(*get)(const char *name),
			  char *err, size_t errlen);

/* Rendezvous and transport.  Rank 0 listens on master_port; every other
 * rank connects (retrying until rank 0 is up), answers rank 0's challenge
 * with its rank, host and data-plane address, sealed with an HMAC of the
 * job secret (which never crosses the wire); rank 0 refuses a wrong MAC (and
 * keeps waiting for the genuine rank), and when all have come answers each
 * with the table, sealed the same way.  Then all ranks pick the transport
 * alike (transport), each node's ranks share their segment, and the TCP
 * rings needed are connected.  All of it within timeout_s: on expiry the
 * error names the ranks that never came.  Rank 0 needs a descriptor per
 * rank: it raises the process's soft RLIMIT_NOFILE to the hard limit when
 * size needs that, and fails naming the limit when even that is too few.
 * On failure *out is NULL and err holds one line (a configuration
 * slotcomm_config_check refuses, or SLOTRUN_TRANSPORT=shm across hosts,
 * are some). */
int slotcomm_init(struct slotcomm **out, const struct slotcomm_config *cfg, char *err,
		  size_t errlen);

/* Closes everything.  NULL is fine. */
void slotcomm_destroy(struct slotcomm *c);

int slotcomm_rank(const struct slotcomm *c);
int slotcomm_size(const struct slotcomm *c);
int slotcomm_local_rank(const struct slotcomm *c);
int slotcomm_local_size(const struct slotcomm *c);
/* Distinct host names in the table. */
int slotcomm_nhosts(const struct slotcomm *c);
/* Nodes: groups of ranks that run on one kernel in one network namespace,
 * which could share memory; with SLOTRUN_TRANSPORT tcp counted all the
 * same. */
int slotcomm_nnodes(const struct slotcomm *c);
/* Host name and data-plane address ("addr:port") of a rank. */
const char *slotcomm_peer_host(const struct slotcomm *c, int rank);
const char *slotcomm_peer_addr(const struct slotcomm *c, int rank);
/* "tcp", "shm" or "shm+tcp". */
const char *slotcomm_transport_name(const struct slotcomm *c);
/* One line on how all-reduces move: the transport, its algorithm, which
 * ranks share memory.  Written into buf (cut to len). */
void slotcomm_transport_describe(const struct slotcomm *c, char *buf, size_t len);
/* Why the transport is not the one asked for (SLOTRUN_TRANSPORT=auto fell
 * back to TCP, say), or "". */
const char *slotcomm_transport_note(const struct slotcomm *c);
double slotcomm_timeout_s(const struct slotcomm *c);

/* The error of the last failed call (one line, no program name, no rank
 * prefix), or "" if none. */
const char *slotcomm_error(const struct slotcomm *c);

/* Every rank passes len bytes; recv (size * len bytes, on every rank)
 * receives rank i's bytes at offset i * len. */
int slotcomm_allgather(struct slotcomm *c, const void *send, size_t len, void *recv);

/* As allgather, but only rank 0 receives; recv may be NULL elsewhere. */
int slotcomm_gather(struct slotcomm *c, const void *send, size_t len, void *recv);

/* Rank 0's len bytes of buf are copied into buf on every rank. */
int slotcomm_broadcast(struct slotcomm *c, void *buf, size_t len);

/* Returns once every rank has entered it. */
int slotcomm_barrier(struct slotcomm *c);

/* Synchronized preemption.  Every rank calls it at the same point with its
 * local view (e.g. "I got SIGUSR1", or the chief's "the master asked"); all
 * get the same *out: true when ANY rank passed true.  So a preemption signal
 * delivered to one rank, or only to the chief, stops every rank at the same
 * step. */
int slotcomm_should_preempt(struct slotcomm *c, bool local, bool *out);

/* In-place all-reduce of count elements of buf on the communicator's
 * transport (slotcomm_transport_name).  Any count, including 0 and counts
 * below size.  bf16 and fp16 are reduced in float and rounded to nearest
 * even at every step. */
int slotcomm_allreduce(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype,
		       enum slotcomm_op op);

/* Bytes per element, names ("float32", "sum") and their parsers (which also
 * take nccl-tests' names: float, double, int, half, bfloat16, ...).  The
 * parsers return the enum value or -EINVAL. */
size_t slotcomm_dtype_size(enum slotcomm_dtype t);
const char *slotcomm_dtype_name(enum slotcomm_dtype t);
const char *slotcomm_op_name(enum slotcomm_op op);
int slotcomm_dtype_parse(const char *s);
int slotcomm_op_parse(const char *s);

/* The conversions the all-reduce uses for SLOTCOMM_BF16 and SLOTCOMM_FP16
 * elements: exact to float, and round-to-nearest-even back (NaN stays NaN,
 * overflow becomes infinity, fp16 subnormals are kept). */
float slotcomm_bf16_to_float(uint16_t h);
uint16_t slotcomm_float_to_bf16(float f);
float slotcomm_fp16_to_float(uint16_t h);
uint16_t slotcomm_float_to_fp16(float f);

#ifdef __cplusplus
}
#endif

#endif
