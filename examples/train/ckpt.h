// SPDX-License-Identifier: MIT
/* The checkpoint of `slotcomm_train`: what the chief writes when the
 * job is preempted, every --checkpoint-every steps and at the end, and what
 * --resume (or --resume-if-present) reads back.
 *
 * Layout, all integers little-endian:
 *
 *   0  magic "SLTRAIN\0"      8 bytes
 *   8  version (1)            u32
 *  12  header length (64)     u32
 *  16  seed                   u64
 *  24  grad_bytes             u64   parameter bytes, a multiple of 4
 *  32  global batch           u64
 *  40  world size             u32   the ranks that wrote it
 *  44  aggregation frequency  u32
 *  48  flags                  u32   bit 0: fp16 compression; no others
 *  52  accumulated steps      u32   steps in the gradient accumulators
 *  56  step                   u64   steps completed
 *  64  parameters             grad_bytes   float32
 *      accumulators           world size x grad_bytes   float32, rank 0's first:
 *                             each rank's sum of its gradients since the last
 *                             exchange; present only when accumulated steps > 0
 *  end CRC-32C of all of the above   u32
 *
 * Each rank's accumulator holds its own gradients, so all are kept: a run
 * preempted between two exchanges resumes exactly where it stopped.  A
 * checkpoint taken right after an exchange (every periodic one, every one
 * with K = 1, and the final one) has none.
 *
 * Five of the fields after the header length are the run's configuration:
 * a resume that differs in any of them is refused, since it would be
 * another run.  The world size is not binding: a run at another world size
 * takes the checkpoint in (round.h says how), keeping the global batch.
 * --steps is not among them either: a run may be resumed with more steps.
 *
 * Encoding and decoding are pure; the file functions at the end do the
 * I/O.  All return 0 or a negative errno and, where they take err, leave one
 * line there: the pure ones without the file's name (the caller adds it),
 * the file ones with it. */
#ifndef SLOTRUN_CKPT_H
#define SLOTRUN_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CKPT_FILE "train.ckpt"
#define CKPT_VERSION 1u
#define CKPT_HDR_LEN 64u
#define CKPT_MAGIC "SLTRAIN"  /* and its terminating NUL: 8 bytes */

struct ckpt_config {
	uint64_t seed;
	uint64_t grad_bytes;
	uint64_t global_batch;
	uint32_t world_size;
	uint32_t agg_freq;
	bool fp16;
};

struct ckpt_state {
	struct ckpt_config cfg;
	uint64_t step;       /* steps completed */
	uint32_t acc_count;  /* steps summed in the accumulators, < agg_freq */
};

/* CRC-32C (Castagnoli), continuing from crc (0 to start). */
uint32_t ckpt_crc32c(uint32_t crc, const void *buf, size_t len);

/* Bytes of the checkpoint of s (0 when that would not fit in a size_t). */
size_t ckpt_size(const struct ckpt_state *s);

/* Validates s (as ckpt_decode would) and writes the checkpoint into buf,
 * which has len == ckpt_size(s) bytes; accs holds world_size accumulators
 * of grad_bytes / 4 floats back to back (NULL when acc_count is 0): 0, or
 * -EINVAL with err saying which field is out of range. */
int ckpt_encode(const struct ckpt_state *s, const float *params, const float *accs, uint8_t *buf,
		size_t len, char *err, size_t errlen);

/* Checks buf as a checkpoint: magic, version, length, CRC, then every
 * field's range and their consistency (global batch >= world size,
 * accumulated steps < aggregation frequency and <= step).  0 with *s
 * filled, or -EBADMSG. */
int ckpt_decode(const uint8_t *buf, size_t len, struct ckpt_state *s, char *err, size_t errlen);

/* Copies the parameters (grad_bytes / 4 floats) out of a buffer that
 * ckpt_decode accepted as s. */
void ckpt_params(const uint8_t *buf, const struct ckpt_state *s, float *params);

/* Copies rank's accumulator out of it (zeros when acc_count is 0). */
void ckpt_acc(const uint8_t *buf, const struct ckpt_state *s, uint32_t rank, float *acc);

/* The largest checkpoint a run of configuration c may have to read: one
 * with accumulators, written by the most ranks slotcomm_train runs
 * (SIZE_MAX when that does not fit in a size_t). */
size_t ckpt_max_size(const struct ckpt_config *c);

/* The mean of every rank's accumulator in a buffer that ckpt_decode
 * accepted as s: summed in rank order in float32 into out, then divided by
 * the world size (zeros when acc_count is 0).  scratch and out hold
 * grad_bytes / 4 floats each.  A run at another world size gives every
 * rank this accumulator (round.h). */
void ckpt_acc_mean(const uint8_t *buf, const struct ckpt_state *s, float *scratch, float *out);

/* 0 when have (the checkpoint's) equals want (this run's) in every binding
 * field (all but the world size), else 1 with one line naming the first
 * field that differs, both values and the flag. */
int ckpt_config_diff(const struct ckpt_config *have, const struct ckpt_config *want, char *err,
		     size_t errlen);

/* Writes buf as DIR/train.ckpt, atomically and durably: creates DIR when
 * missing (one level), then io_replace_file: a temporary file in DIR,
 * fsync'ed, renamed over DIR/train.ckpt, DIR fsync'ed.  A crash at any
 * point leaves the old checkpoint or the new one, never a torn one. */
int ckpt_write_file(const char *dir, const uint8_t *buf, size_t len, char *err, size_t errlen);

/* Reads DIR/train.ckpt into a malloc'd *buf: -ENOENT when there is none
 * (or no DIR), -EFBIG when it is larger than max bytes. */
int ckpt_read_file(const char *dir, size_t max, uint8_t **buf, size_t *len, char *err,
		   size_t errlen);

#endif
