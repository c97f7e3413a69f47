// SPDX-License-Identifier: MIT
/* `slotcomm_train`: a deterministic simulated training loop on the comm
 * library, run by every rank of the job described by the worker
 * environment (<slotcomm/slotcomm.h>), with Determined's semantics:
 *
 *  - the ranks compare their options once at start (one allgather) and,
 *    when any differs from rank 0's, all exit 2 with the same line naming
 *    the option, both values and both ranks;
 *  - the global batch is split over the ranks (global // world per slot,
 *    the remainder dropped, and said);
 *  - every step each rank adds the gradient of its per-slot batch (model.h)
 *    to an accumulator; every agg_freq steps, and at the last step, the
 *    mean of the accumulated gradients is all-reduced (averaged over the
 *    ranks), as float32 or compressed to fp16, and applied;
 *  - only rank 0 prints metrics, the mean of every rank's loss (a gather)
 *    unless average_metrics is off;
 *  - every step all ranks call slotcomm_should_preempt with "got SIGTERM or
 *    SIGUSR1"; when any rank got one, all stop after that same step, print
 *    "preempted at step S", rank 0 writes the checkpoint (ckpt.h) and all
 *    exit 0;
 *  - with checkpoint_every N, rank 0 also writes it after the exchange
 *    whose steps hold a multiple of N (round_checkpoint_due): no gradients
 *    are pending there, so it costs no collective, and a job that loses a
 *    node (no orderly preemption) resumes from it;
 *  - with resume, rank 0 reads the checkpoint and broadcasts it, or
 *    refuses one that is missing, damaged or from another configuration
 *    with one line and a non-zero status while the other ranks exit 0
 *    silently (so that the launcher names rank 0 as the cause); with
 *    TRAIN_RESUME_IF_PRESENT a missing one starts the run from step 0, so
 *    one command line serves every round of an elastic job.  A checkpoint
 *    of another world size is taken in as round.h says (the same global
 *    batch, this world's split);
 *  - after a resume and at the end, every rank compares its step and the
 *    checksum of its parameters with every other's (one allgather) and,
 *    when any differs, all exit 1 with the same line naming the ranks.
 *
 * Nothing depends on timing, so a run preempted at any step and resumed at
 * the same world size ends with the same parameters, bit for bit, as one
 * never interrupted: the aggregation state (the accumulators and their
 * step count) is part of the checkpoint, so a preemption need not fall on
 * an exchange. */
#ifndef SLOTCOMM_TRAIN_TRAIN_H
#define SLOTCOMM_TRAIN_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#define TRAIN_EXIT_USAGE 2  /* bad flags, environment, options differing between ranks, or a
			     * checkpoint of another run */

enum train_resume {
	TRAIN_FRESH,              /* start from step 0 */
	TRAIN_RESUME,             /* continue from ckpt_dir's checkpoint, which must exist */
	TRAIN_RESUME_IF_PRESENT,  /* from it when there is one, else from step 0 */
};

struct train_opts {
	uint64_t steps;         /* the run ends after this step (1-based) */
	uint64_t grad_bytes;    /* float32 parameters (and gradient) in bytes */
	uint64_t global_batch;
	uint32_t agg_freq;      /* steps per exchange */
	bool fp16;              /* all-reduce the gradient as fp16 */
	bool average_metrics;   /* the loss printed is the mean of the ranks' */
	enum train_resume resume;
	uint64_t checkpoint_every;  /* steps between periodic checkpoints; 0: none */
	uint64_t seed;
	const char *ckpt_dir;
	unsigned step_ms;       /* simulated compute time per step (a real step is not instant) */
};

/* Runs the loop; returns the exit status: 0 (finished or preempted), 1 (a
 * failure, or a damaged or missing checkpoint), 2 (TRAIN_EXIT_USAGE, also
 * for ranks given different options). */
int train_main(const struct train_opts *o);

#endif
