// SPDX-License-Identifier: MIT
#include "round.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

/* Ranks named in a disagreement before "and N more". */
#define AGREE_NAMED 8

int round_resume_plan(const struct ckpt_state *have, const struct ckpt_config *want,
		      uint64_t steps, struct round_resume *out, char *err, size_t errlen)
{
	struct model_split old_split, new_split;

	if (ckpt_config_diff(&have->cfg, want, err, errlen))
		return -EINVAL;
	if (have->step > steps) {
		snprintf(err, errlen, "it is at step %llu, past --steps %llu",
			 (unsigned long long)have->step, (unsigned long long)steps);
		return -EINVAL;
	}
	if (model_split(have->cfg.global_batch, have->cfg.world_size, &old_split) < 0 ||
	    model_split(want->global_batch, want->world_size, &new_split) < 0) {
		snprintf(err, errlen, "global batch %llu does not split over %u ranks",
			 (unsigned long long)want->global_batch, want->world_size);
		return -EINVAL;
	}
	out->step = have->step;
	out->acc_count = have->acc_count;
	out->old_world = have->cfg.world_size;
	out->new_world = want->world_size;
	out->old_per_slot = old_split.per_slot;
	out->new_per_slot = new_split.per_slot;
	if (!have->acc_count)
		out->accs = ROUND_ACCS_NONE;
	else if (out->old_world == out->new_world)
		out->accs = ROUND_ACCS_EACH;
	else
		out->accs = ROUND_ACCS_FOLD;
	return 0;
}

void round_resume_line(const struct round_resume *r, const char *path, char *buf, size_t len)
{
	char world[128] = "", fold[96] = "";

	if (r->old_world != r->new_world)
		snprintf(world, sizeof(world), " (world size %u -> %u, per-slot batch %llu -> %llu)",
			 r->old_world, r->new_world, (unsigned long long)r->old_per_slot,
			 (unsigned long long)r->new_per_slot);
	if (r->accs == ROUND_ACCS_FOLD)
		snprintf(fold, sizeof(fold), " (the mean of %u ranks' accumulators on each of %u)",
			 r->old_world, r->new_world);
	snprintf(buf, len, "resumed at step %llu from %s%s, %u step%s accumulated%s",
		 (unsigned long long)r->step, path, world, r->acc_count,
		 r->acc_count == 1 ? "" : "s", fold);
}

bool round_split_warning(uint64_t global, uint64_t world, char *buf, size_t len)
{
	struct model_split s;

	if (model_split(global, world, &s) < 0 || !s.dropped)
		return false;
	snprintf(buf, len, "global batch %llu does not divide over %llu slots: %llu sample%s of "
		 "every step dropped", (unsigned long long)global, (unsigned long long)world,
		 (unsigned long long)s.dropped, s.dropped == 1 ? "" : "s");
	return true;
}

bool round_checkpoint_due(uint64_t step, uint32_t exchanged, uint64_t every)
{
	if (!every || !exchanged || exchanged > step)
		return false;
	return step / every > (step - exchanged) / every;
}

static bool same_mark(const struct round_mark *a, const struct round_mark *b)
{
	return a->step == b->step && a->checksum == b->checksum;
}

uint32_t round_agree(const struct round_mark *all, uint32_t n, char *err, size_t errlen)
{
	uint32_t differ = 0, first = 0;
	size_t used;
	char names[AGREE_NAMED * 12 + 32] = "";

	for (uint32_t i = 1; i < n; i++) {
		if (same_mark(&all[i], &all[0]))
			continue;
		if (!differ)
			first = i;
		if (differ < AGREE_NAMED) {
			used = strlen(names);
			snprintf(names + used, sizeof(names) - used, "%s%u", differ ? ", " : "", i);
		}
		differ++;
	}
	if (!differ)
		return 0;
	if (differ > AGREE_NAMED) {
		used = strlen(names);
		snprintf(names + used, sizeof(names) - used, " and %u more", differ - AGREE_NAMED);
	}
	snprintf(err, errlen, "rank%s %s of %u differ%s from rank 0: rank %u holds step %llu "
		 "checksum %016llx, rank 0 step %llu checksum %016llx", differ == 1 ? "" : "s",
		 names, n, differ == 1 ? "s" : "", first, (unsigned long long)all[first].step,
		 (unsigned long long)all[first].checksum, (unsigned long long)all[0].step,
		 (unsigned long long)all[0].checksum);
	return differ;
}
