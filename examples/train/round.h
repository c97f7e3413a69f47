// SPDX-License-Identifier: MIT
/* What `slotcomm_train` needs to run as one round of an elastic job, whose
 * world size may change from one round to the next: how a checkpoint of
 * any world size is taken in, the batch split's warning, when a periodic
 * checkpoint is due, and whether the ranks agree on where they are.  All
 * pure: values in, values out, no I/O.
 *
 * A run at another world size than its checkpoint's takes it in this way:
 *  - the global batch stays; the per-slot batch is this run's split
 *    (global // world, the rest dropped, with the same warning);
 *  - the run goes on from the checkpoint's step, with its parameters;
 *  - gradients pending in it (a preemption between two exchanges) are
 *    folded: every rank's accumulator starts as the mean of the
 *    checkpoint's accumulators (ckpt_acc_mean), with its count of steps.
 *    The next exchange's mean over the ranks of accumulator / K is then,
 *    as in an uninterrupted run, the mean over its K steps of each step's
 *    mean gradient over the ranks: the pending steps keep their data and
 *    their weight, whatever the world size was.
 * At the same world size each rank takes back its own accumulator, and the
 * run ends bit for bit where an uninterrupted one does.  At another world
 * size no run can (every rank draws its own samples, model.h), but every
 * run from the same checkpoint at the same world size ends alike. */
#ifndef SLOTCOMM_TRAIN_ROUND_H
#define SLOTCOMM_TRAIN_ROUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt.h"

/* How the ranks of this run get the checkpoint's accumulators. */
enum round_accs {
	ROUND_ACCS_NONE,  /* none pending: the parameters alone */
	ROUND_ACCS_EACH,  /* the same world size: rank i takes accumulator i */
	ROUND_ACCS_FOLD,  /* another world size: every rank takes their mean */
};

struct round_resume {
	uint64_t step;                  /* the run goes on after this step */
	uint32_t acc_count;             /* steps pending in the accumulators */
	enum round_accs accs;
	uint32_t old_world, new_world;  /* the checkpoint's and this run's */
	uint64_t old_per_slot, new_per_slot;
};

/* How a run of configuration want, ending after step `steps`, takes in a
 * checkpoint in state have (ckpt_decode accepted it): 0 with *out filled;
 * or -EINVAL with one line in err when a binding field differs
 * (ckpt_config_diff), when the checkpoint is past `steps`, or when this
 * run's world size cannot split the global batch. */
int round_resume_plan(const struct ckpt_state *have, const struct ckpt_config *want,
		      uint64_t steps, struct round_resume *out, char *err, size_t errlen);

/* The line rank 0 prints once it resumed from path, e.g.
 * "resumed at step 40 from d/train.ckpt (world size 6 -> 4, per-slot batch
 * 10 -> 16), 0 steps accumulated"; the parenthesis only when the world
 * size changed. */
void round_resume_line(const struct round_resume *r, const char *path, char *buf, size_t len);

/* The warning when the global batch does not divide over world slots
 * ("global batch 100 does not divide over 3 slots: 1 sample of every step
 * dropped"): true with it in buf; false (buf untouched) when it divides or
 * cannot be split. */
bool round_split_warning(uint64_t global, uint64_t world, char *buf, size_t len);

/* Whether a --checkpoint-every `every` checkpoint is due after the exchange
 * that ended step `step` and applied the `exchanged` steps before it: when
 * those steps hold a multiple of every.  So with K = 1, or every a multiple
 * of K, it falls on the multiples of every; otherwise on the first exchange
 * after each.  Exchanges are the only points where no gradients are
 * pending, so a periodic checkpoint is small and resumes at any world
 * size.  False when every is 0 (off). */
bool round_checkpoint_due(uint64_t step, uint32_t exchanged, uint64_t every);

/* Where a rank is: what the ranks compare at resume and at the end. */
struct round_mark {
	uint64_t step;
	uint64_t checksum;  /* model_checksum of its parameters */
};

/* Compares every rank's mark (all[0..n), in rank order) with rank 0's: 0
 * when all agree; else the number of ranks that differ, with one line in
 * err naming them and the first one's mark beside rank 0's. */
uint32_t round_agree(const struct round_mark *all, uint32_t n, char *err, size_t errlen);

#endif
