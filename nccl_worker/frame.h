// SPDX-License-Identifier: MIT
/* Wire format of the rendezvous and control messages: pure encoding and
 * validation, no I/O, so that every malformed input can be unit-tested.
 *
 * Every message is a 24-byte header followed by `len` payload bytes, all
 * integers little-endian:
 *
 *   0  u32 magic    FRAME_MAGIC ("SLRN")
 *   4  u16 version  FRAME_VERSION
 *   6  u8  type     enum frame_type
 *   7  u8  coll     enum frame_coll: the collective the frame belongs to
 *   8  u64 seq      collective sequence number (0 during the rendezvous)
 *  16  u64 len      payload length, bounded by what the receiver expects
 *
 * Strings in payloads are a u16 length and that many bytes, without NUL;
 * a string that does not fit the receiver's buffer, or holds a NUL or any
 * other control character, is malformed, so that what a peer sends can be
 * printed in a one-line diagnostic.  Decoders return 0 or -EPROTO, and then
 * set *why to a short static phrase ("bad magic", "truncated payload", ...).
 *
 * The secret never crosses the wire.  REGISTER, TABLE and HELLO end in a
 * FRAME_MAC_LEN-byte HMAC over the payload bytes before it, keyed by the
 * job secret and bound to nonces the receiver chose (rendezvous.c says
 * which); the codec only carries those bytes. */
#ifndef SLOTRUN_FRAME_H
#define SLOTRUN_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"

#define FRAME_MAGIC 0x4e524c53u  /* "SLRN" read little-endian */
#define FRAME_VERSION 3  /* 2: nonces and MACs instead of the secret; 3: BUSY, the
                            * table sealed over its digest, the node in the table */
#define FRAME_HDR_LEN 24

#define FRAME_HOST_MAX 256    /* buffer sizes, NUL included */
#define FRAME_ADDR_MAX 64
#define FRAME_NONCE_LEN AUTH_NONCE_LEN
#define FRAME_MAC_LEN AUTH_MAC_LEN
#define FRAME_REASON_MAX 512

enum frame_type {
	FRAME_REGISTER = 1,  /* rank -> chief: who I am, where my data plane listens */
	FRAME_TABLE,         /* chief -> rank: every rank's host and address */
	FRAME_REJECT,        /* chief -> rank: refused, with the reason */
	FRAME_HELLO,         /* ring neighbour -> ring neighbour on the data plane */
	FRAME_GATHER,        /* rank -> chief: one rank's part of gather/allgather */
	FRAME_BCAST,         /* chief -> rank: broadcast payload */
	FRAME_ALLREDUCE,     /* ring neighbour: the all-reduce each rank is in */
	FRAME_ABORT,         /* any direction: the job is failing, and why */
	FRAME_BYE,           /* control plane: this rank is done (slotcomm_destroy) */
	FRAME_CHALLENGE,     /* chief -> rank, first: the chief's nonce for this connection */
	FRAME_BUSY,          /* chief -> rank: no room yet, connect again (no payload) */
	FRAME_TYPE_END
};

/* What kind of collective a frame belongs to, so that a rank that meets a
 * peer's frame of another collective can say what the peer is in. */
enum frame_coll {
	FRAME_COLL_NONE,       /* rendezvous, abort, bye */
	FRAME_COLL_ALLREDUCE,
	FRAME_COLL_GATHER,
	FRAME_COLL_BROADCAST,
	FRAME_COLL_ALLGATHER,
	FRAME_COLL_BARRIER,
	FRAME_COLL_PREEMPT,    /* slotcomm_should_preempt */
	FRAME_COLL_END
};

struct frame_hdr {
	uint16_t type;
	uint8_t coll;
	uint64_t seq;
	uint64_t len;
};

const char *frame_type_name(unsigned type);

/* "all-reduce", "barrier", ...; "unknown" out of range. */
const char *frame_coll_name(unsigned coll);

/* A header outside any collective (coll FRAME_COLL_NONE) ... */
void frame_encode_hdr(uint8_t out[FRAME_HDR_LEN], unsigned type, uint64_t seq, uint64_t len);

/* ... and one of collective coll. */
void frame_encode_coll_hdr(uint8_t out[FRAME_HDR_LEN], unsigned type, unsigned coll, uint64_t seq,
			   uint64_t len);

/* Checks magic, version, type and coll, and len <= max_len. */
int frame_decode_hdr(const uint8_t in[FRAME_HDR_LEN], uint64_t max_len, struct frame_hdr *h,
		     const char **why);

/* Payload writer: every put is bounds-checked; the first overflow makes err
 * -ENOSPC and later puts do nothing. */
struct frame_wr {
	uint8_t *p;
	size_t cap, pos;
	int err;
};

void frame_put_u8(struct frame_wr *w, uint8_t v);
void frame_put_u16(struct frame_wr *w, uint16_t v);
void frame_put_u32(struct frame_wr *w, uint32_t v);
void frame_put_str(struct frame_wr *w, const char *s);
void frame_put_bytes(struct frame_wr *w, const uint8_t *p, size_t n);  /* fixed length */

/* Payload reader: the first problem makes err -EPROTO and sets why; later
 * gets return 0 / "". frame_get_end() fails on trailing bytes. */
struct frame_rd {
	const uint8_t *p;
	size_t len, pos;
	int err;
	const char *why;
};

uint8_t frame_get_u8(struct frame_rd *r);
uint16_t frame_get_u16(struct frame_rd *r);
uint32_t frame_get_u32(struct frame_rd *r);
uint64_t frame_get_u64(struct frame_rd *r);
void frame_get_str(struct frame_rd *r, char *out, size_t outlen);
void frame_get_bytes(struct frame_rd *r, uint8_t *out, size_t n);
int frame_get_end(struct frame_rd *r, const char **why);

/* --- messages ------------------------------------------------------------ */

/* What a rank says about its node in the rendezvous, for the transport
 * choice (comm.c, shm.h), so that no allgather is needed for it: the
 * SLOTRUN_TRANSPORT it was given ('a'uto, 't'cp or 's'hm), its node (a
 * digest of the boot id and network namespace; zeros: unknown), the
 * abstract socket its node's segment may be fetched from (random bytes
 * that name it; zeros: none) and the token that proves it to its node's
 * leader. */
#define FRAME_NODE_ID_LEN 16
struct frame_node {
	uint8_t transport;
	uint8_t id[FRAME_NODE_ID_LEN];
	uint8_t sock[FRAME_NODE_ID_LEN];
	uint8_t token[FRAME_NODE_ID_LEN];
};

#define FRAME_NODE_LEN (1 + 3 * FRAME_NODE_ID_LEN)

struct frame_register {
	uint32_t rank, size, local_rank, local_size;
	char host[FRAME_HOST_MAX];
	char addr[FRAME_ADDR_MAX];
	uint16_t port;
	uint8_t ring_nonce[FRAME_NONCE_LEN];  /* this rank's data plane's, for HELLOs to it */
	struct frame_node node;
	uint8_t nonce[FRAME_NONCE_LEN];       /* this rank's, for the TABLE's MAC */
	uint8_t mac[FRAME_MAC_LEN];
};

/* A rank's entry in the table.  Its host name lives in the table's string
 * buffer (every host's, NUL-terminated, one after the other), at offset
 * host: every rank keeps the table, and an inline FRAME_HOST_MAX buffer per
 * rank would be most of its memory. */
struct frame_peer {
	uint32_t host;
	char addr[FRAME_ADDR_MAX];
	uint16_t port;
	uint8_t ring_nonce[FRAME_NONCE_LEN];
	struct frame_node node;
};

struct frame_hello {
	uint32_t rank;
	uint8_t nonce[FRAME_NONCE_LEN];
	uint8_t mac[FRAME_MAC_LEN];
};

#define FRAME_ABORT_TIMEOUT 1  /* a suspicion (timed out waiting), not a fact */

struct frame_abort {
	int32_t origin;   /* rank that sent it first */
	int32_t culprit;  /* rank it blames, or -1 */
	uint8_t flags;    /* FRAME_ABORT_* */
	char reason[FRAME_REASON_MAX];
};

struct frame_allreduce {
	uint64_t count;
	uint8_t dtype, op;
};

/* Largest payloads a receiver should accept (for frame_decode_hdr). */
#define FRAME_REGISTER_MAX (4 * 4 + 2 + FRAME_HOST_MAX + 2 + FRAME_ADDR_MAX + 2 + \
			    2 * FRAME_NONCE_LEN + FRAME_NODE_LEN + FRAME_MAC_LEN)
#define FRAME_PEER_MAX (2 + FRAME_HOST_MAX + 2 + FRAME_ADDR_MAX + 2 + FRAME_NONCE_LEN + \
			FRAME_NODE_LEN)
#define FRAME_TABLE_MAX(n) (4 + (size_t)(n) * FRAME_PEER_MAX + FRAME_MAC_LEN)
#define FRAME_HELLO_LEN (4 + FRAME_NONCE_LEN + FRAME_MAC_LEN)
#define FRAME_CHALLENGE_LEN FRAME_NONCE_LEN
#define FRAME_REJECT_MAX (2 + FRAME_REASON_MAX)
#define FRAME_ABORT_MAX (4 + 4 + 1 + 2 + FRAME_REASON_MAX)
#define FRAME_ALLREDUCE_LEN 10

/* Encoders write into buf (cap bytes) and return the payload length, or
 * -ENOSPC.  Decoders parse exactly len bytes. */
long frame_register_encode(const struct frame_register *m, uint8_t *buf, size_t cap);
int frame_register_decode(const uint8_t *buf, size_t len, struct frame_register *m,
			  const char **why);

/* The table is a u32 count, count peers and the MAC.  strs holds the host
 * names the peers' offsets point at; decoding writes them into strs
 * (strcap bytes: the payload's length is always enough). */
long frame_table_encode(const struct frame_peer *peers, const char *strs, uint32_t n,
			const uint8_t mac[FRAME_MAC_LEN], uint8_t *buf, size_t cap);
int frame_table_decode(const uint8_t *buf, size_t len, uint32_t n, struct frame_peer *peers,
		       char *strs, size_t strcap, uint8_t mac[FRAME_MAC_LEN], const char **why);

long frame_hello_encode(const struct frame_hello *m, uint8_t *buf, size_t cap);
int frame_hello_decode(const uint8_t *buf, size_t len, struct frame_hello *m, const char **why);

/* The challenge is the chief's nonce, nothing else. */
int frame_challenge_decode(const uint8_t *buf, size_t len, uint8_t nonce[FRAME_NONCE_LEN],
			   const char **why);

long frame_reason_encode(const char *reason, uint8_t *buf, size_t cap);
int frame_reason_decode(const uint8_t *buf, size_t len, char *reason, size_t rlen,
			const char **why);

long frame_abort_encode(const struct frame_abort *m, uint8_t *buf, size_t cap);
int frame_abort_decode(const uint8_t *buf, size_t len, struct frame_abort *m, const char **why);

/* A sealed payload ends in a FRAME_MAC_LEN-byte MAC, keyed by the job
 * secret, over label, the two nonces (FRAME_NONCE_LEN bytes each) and the
 * payload bytes before it: what the rendezvous and the ring HELLO carry.
 * frame_seal writes it (len is the whole payload's length, MAC included,
 * at least FRAME_MAC_LEN); frame_sealed checks it in constant time (false
 * for a payload too short to hold one). */
void frame_seal(uint8_t *payload, size_t len, const char *secret, const char *label,
		const uint8_t *first, const uint8_t *second);
bool frame_sealed(const uint8_t *payload, size_t len, const char *secret, const char *label,
		  const uint8_t *first, const uint8_t *second);

/* The same seal over the SHA-256 of those payload bytes instead of the
 * bytes themselves: the TABLE's, which rank 0 sends to every rank, each
 * sealed over its own nonces.  Rank 0 hashes the O(N) table once
 * (frame_digest, over the len bytes before the MAC) and seals it for each
 * rank in O(1) (frame_seal_digest writes the MAC); a rank checks it with
 * frame_sealed_digest. */
#define FRAME_DIGEST_LEN AUTH_DIGEST_LEN
void frame_digest(const uint8_t *payload, size_t len, uint8_t digest[FRAME_DIGEST_LEN]);
void frame_seal_digest(uint8_t mac[FRAME_MAC_LEN], const uint8_t digest[FRAME_DIGEST_LEN],
		       const char *secret, const char *label, const uint8_t *first,
		       const uint8_t *second);
bool frame_sealed_digest(const uint8_t *payload, size_t len, const char *secret, const char *label,
			 const uint8_t *first, const uint8_t *second);

void frame_allreduce_encode(const struct frame_allreduce *m, uint8_t out[FRAME_ALLREDUCE_LEN]);
int frame_allreduce_decode(const uint8_t *buf, size_t len, struct frame_allreduce *m,
			   const char **why);

#endif
