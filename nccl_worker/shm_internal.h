// SPDX-License-Identifier: MIT
/* What the three files of the shared-memory transport share: the
 * segment's layout and the waiting primitives.  shm.c is the all-reduce,
 * shm_wait.c the counters and how a rank waits on them, shm_setup.c the
 * segment's creation and handover (shm.h).  Internal to the comm library. */
#ifndef SLOTRUN_SHM_INTERNAL_H
#define SLOTRUN_SHM_INTERNAL_H

#include <stdint.h>

#include "shm.h"
#include "shm_sched.h"

#define SHM_MAGIC 0x4d48534e524c53ull  /* "SLRNSHM" */
#define SHM_VERSION 3  /* 2: the alive tick; 3: the ended mark */

/* Each rank's slots: SHM_DEPTH of SHM_SLOT_BYTES.  The pipeline runs each
 * rank two steps behind its copy-in (copy in t, reduce t-1, copy out t-2),
 * so it needs at least 3 slots; 4 leave a step of slack. */
#define SHM_DEPTH 4
#define SHM_SLOT_BYTES (256u << 10)

/* All-reduces of up to this many bytes take the small path (shm_sched.h). */
#define SHM_SMALL_MAX (32u << 10)

/* A piece is reduced a block of this size at a time, which stays in cache
 * from the first kernel to the copy of the result into the slot: reducing
 * in place in the buffer, a block at a time, reads and writes each byte
 * once while it is hot, where folding into the slot with d = a + b and
 * copying back would stream the whole piece through memory twice. */
#define SHM_BLOCK (64u << 10)

/* Buffers of at least this many bytes are copied out of the slots with
 * streaming stores (reduce_copy_stream): they do not fit the caches anyway,
 * and the stores then skip reading every line of the destination first. */
#define SHM_STREAM_MIN (16u << 20)

/* Waiting: spin this long before sleeping; sleep at most this long before
 * looking around (docs/comm.md, "Waiting", says why). */
#define SHM_SPIN_NS 20000
#define SHM_PAUSE_NS 2000
#define SHM_SLICE_MS 20

/* While it hands the segment over, the leader holds the connections whose
 * hello has not come yet: those of the members still missing and at most
 * this many more (shm_setup.c's hand_over says why). */
#define SHM_PENDING_MAX 8

enum { CNT_IN, CNT_RED, CNT_OUT, CNT_N };

struct shm_hdr {
	uint64_t magic;
	uint32_t version, m;
	uint64_t size;
	uint64_t cookie;   /* the leader's random number: the probe */
	uint32_t abort;    /* 0, or 1 + the node index of the rank whose record tells why */
};

struct shm_desc {
	uint64_t seq, count;
	uint32_t dtype, op;
};

struct shm_ctl {
	uint32_t cnt[CNT_N];
	uint32_t alive;              /* ticks while this rank's TCP ring moves */
	uint64_t probe;              /* the leader's cookie, as this rank read it */
	struct shm_desc desc[2];     /* by collective sequence number parity */
	uint64_t ended;              /* 1 + its last collective's number, once it left */
};

_Static_assert(sizeof(struct shm_ctl) <= SHM_LINE, "a control line holds a rank's shm_ctl");

struct shm_waitl {
	uint32_t sleepers[CNT_N];
};

struct shm_abort {
	int32_t origin, culprit;
	char reason[FRAME_REASON_MAX];
};

struct shm {
	int m, li;          /* ranks on this node, this rank's index */
	int *ranks;         /* their ranks in the communicator; ranks[0] leads */
	int *fd;            /* leader: fd[i] to member i; member: fd[0] to the leader */
	unsigned char *bye; /* the peer at fd[i] said it is leaving on purpose */
	struct pollfd *pfd; /* m + size entries */
	const uint8_t **src; /* m entries: the slots the small path reduces */
	struct shm_layout lay;
	uint8_t *base;
	struct shm_hdr *hdr;
	uint32_t step;      /* steps done: the value of every counter between collectives */
};

/* --- the segment's parts ------------------------------------------------- */

static inline struct shm_ctl *ctl_of(const struct shm *s, int i)
{
	return (struct shm_ctl *)(s->base + s->lay.ctl_off + (size_t)i * SHM_LINE);
}

static inline struct shm_waitl *wait_of(const struct shm *s, int i)
{
	return (struct shm_waitl *)(s->base + s->lay.wait_off + (size_t)i * SHM_LINE);
}

static inline struct shm_abort *abort_of(const struct shm *s, int i)
{
	return (struct shm_abort *)(s->base + s->lay.abort_off + (size_t)i * SHM_ABORT_BYTES);
}

static inline uint8_t *slot_of(const struct shm *s, int i, uint32_t step)
{
	return s->base + shm_slot_off(&s->lay, i, step);
}

/* --- the counters (shm_wait.c) ------------------------------------------- */

/* Publishes this rank's counter `which` as v and wakes whoever sleeps on
 * it. */
void shm_post(struct shm *s, int which, uint32_t v);

/* Every counter of this rank to v (those not there yet). */
void shm_post_all(struct shm *s, uint32_t v);

/* Waits until counter `which` of the rank with index i reaches want,
 * spinning for spin_ns before sleeping.  0, or the failure (comm_fail:
 * the node's abort word, a node peer that died, a control connection, or
 * SLOTRUN_TIMEOUT without progress); what names the collective. */
int shm_wait_one(struct slotcomm *c, struct shm *s, int i, int which, uint32_t want,
		 int64_t spin_ns, const char *what);

/* The same for every other rank of the node, spinning SHM_SPIN_NS. */
int shm_wait_all(struct slotcomm *c, struct shm *s, int which, uint32_t want, const char *what);

#endif
