// SPDX-License-Identifier: MIT
/* A round of an elastic job in slotcomm_train: how a checkpoint of any
 * world size is taken in (the binding fields, the accumulators' rule, the
 * resume line), the split warning recomputed for the new world size, when
 * a periodic checkpoint is due, and the ranks' agreement. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ckpt.h"
#include "model.h"
#include "round.h"
#include "leak_check.h"

/* A checkpoint written by 6 ranks at step 40, with a global batch of 100. */
static const struct ckpt_state six = {
	.cfg = { .seed = 7, .grad_bytes = 64, .global_batch = 100, .world_size = 6, .agg_freq = 4,
		 .fp16 = false },
	.step = 40, .acc_count = 0,
};

static struct ckpt_config with_world(uint32_t world)
{
	struct ckpt_config c = six.cfg;

	c.world_size = world;
	return c;
}

LEAK_TEST(round, same_world_size_takes_each_rank_its_accumulator)
{
	struct ckpt_config want = with_world(6);
	struct ckpt_state have = six;
	struct round_resume r;
	char err[256] = "";

	cr_assert_eq(round_resume_plan(&have, &want, 50, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.accs, ROUND_ACCS_NONE);
	cr_assert_eq(r.step, 40);
	cr_assert_eq(r.old_world, 6);
	cr_assert_eq(r.new_world, 6);
	cr_assert_eq(r.old_per_slot, 16);
	cr_assert_eq(r.new_per_slot, 16);
	have.acc_count = 2;
	have.step = 42;
	cr_assert_eq(round_resume_plan(&have, &want, 50, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.accs, ROUND_ACCS_EACH);
	cr_assert_eq(r.acc_count, 2);
	cr_assert_eq(r.step, 42);
}

LEAK_TEST(round, another_world_size_resumes_and_recomputes_the_per_slot_batch)
{
	struct ckpt_config want = with_world(4);
	struct ckpt_state have = six;
	struct round_resume r;
	char err[256] = "";

	cr_assert_eq(round_resume_plan(&have, &want, 40, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.accs, ROUND_ACCS_NONE, "no accumulators: nothing to fold");
	cr_assert_eq(r.old_per_slot, 16);
	cr_assert_eq(r.new_per_slot, 25);
	want = with_world(9);
	cr_assert_eq(round_resume_plan(&have, &want, 40, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.new_per_slot, 11);
	/* pending gradients at another world size are folded */
	have.acc_count = 3;
	have.step = 43;
	cr_assert_eq(round_resume_plan(&have, &want, 50, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.accs, ROUND_ACCS_FOLD);
	cr_assert_eq(r.acc_count, 3);
}

/* Every binding field is still refused at another world size, naming the
 * field; so is a checkpoint past --steps. */
LEAK_TEST(round, binding_fields_are_refused_at_any_world_size)
{
	static const struct {
		int field;
		const char *says;
	} cases[] = {
		{ 0, "written with --global-batch-size 100, this run has 101" },
		{ 1, "written with --seed 7, this run has 8" },
		{ 2, "written with --grad-bytes 64, this run has 68" },
		{ 3, "written with --aggregation-frequency 4, this run has 5" },
		{ 4, "written without --fp16-compress, this run has it" },
		{ 5, "it is at step 40, past --steps 39" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (uint32_t world = 4; world <= 6; world += 2) {
			struct ckpt_config want = with_world(world);
			struct round_resume r;
			uint64_t steps = 50;
			char err[256] = "";

			switch (cases[i].field) {
			case 0: want.global_batch++; break;
			case 1: want.seed++; break;
			case 2: want.grad_bytes += 4; break;
			case 3: want.agg_freq++; break;
			case 4: want.fp16 = true; break;
			default: steps = 39; break;
			}
			cr_assert_eq(round_resume_plan(&six, &want, steps, &r, err, sizeof(err)), -EINVAL,
				     "case %zu world %u", i, world);
			cr_assert(strstr(err, cases[i].says), "'%s' lacks '%s'", err, cases[i].says);
			cr_assert(!strchr(err, '\n'));
		}
	}
}

LEAK_TEST(round, resume_lines)
{
	struct round_resume r = { .step = 40, .acc_count = 0, .accs = ROUND_ACCS_NONE,
				  .old_world = 6, .new_world = 4, .old_per_slot = 16,
				  .new_per_slot = 25 };
	char line[512];

	round_resume_line(&r, "d/train.ckpt", line, sizeof(line));
	cr_assert_str_eq(line, "resumed at step 40 from d/train.ckpt (world size 6 -> 4, per-slot "
			 "batch 16 -> 25), 0 steps accumulated");
	r.acc_count = 1;
	r.step = 41;
	r.accs = ROUND_ACCS_FOLD;
	round_resume_line(&r, "d/train.ckpt", line, sizeof(line));
	cr_assert_str_eq(line, "resumed at step 41 from d/train.ckpt (world size 6 -> 4, per-slot "
			 "batch 16 -> 25), 1 step accumulated (the mean of 6 ranks' accumulators "
			 "on each of 4)");
	r = (struct round_resume){ .step = 6, .acc_count = 2, .accs = ROUND_ACCS_EACH,
				   .old_world = 3, .new_world = 3, .old_per_slot = 33,
				   .new_per_slot = 33 };
	round_resume_line(&r, "d/train.ckpt", line, sizeof(line));
	cr_assert_str_eq(line, "resumed at step 6 from d/train.ckpt, 2 steps accumulated");
}

/* The text in the struct itself: Criterion may run the test in a fresh
 * image of the program, where a pointer into this one means nothing. */
struct warn_case {
	uint64_t global, world;
	char says[96];  /* "": no warning */
};

ParameterizedTestParameters(round, split_warning)
{
	static struct warn_case cases[] = {
		{ 100, 3, "global batch 100 does not divide over 3 slots: 1 sample of every step "
			  "dropped" },
		{ 99, 3, "" },
		/* a 6-slot round, then a 4-slot one, of the same global batch */
		{ 100, 6, "global batch 100 does not divide over 6 slots: 4 samples of every step "
			  "dropped" },
		{ 100, 4, "" },
		{ 99, 6, "global batch 99 does not divide over 6 slots: 3 samples of every step "
			 "dropped" },
		{ 99, 4, "global batch 99 does not divide over 4 slots: 3 samples of every step "
			 "dropped" },
		{ 2, 3, "" },   /* cannot split at all: refused elsewhere */
		{ 5, 0, "" },
	};
	return cr_make_param_array(struct warn_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct warn_case *c, round, split_warning)
{
	char buf[256] = "untouched";
	bool got = round_split_warning(c->global, c->world, buf, sizeof(buf));

	cr_assert_eq(got, c->says[0] != 0, "%llu over %llu", (unsigned long long)c->global,
		     (unsigned long long)c->world);
	cr_assert_str_eq(buf, c->says[0] ? c->says : "untouched");
}

/* Steps after whose exchange a periodic checkpoint is written, over 1..30,
 * with exchanges every k steps starting from `first` (a resume with
 * pending steps shifts them). */
static void due_steps(uint32_t k, uint64_t first, uint64_t every, char *out, size_t len)
{
	out[0] = 0;
	for (uint64_t s = first; s <= 30; s += k) {
		if (round_checkpoint_due(s, k, every)) {
			size_t used = strlen(out);

			snprintf(out + used, len - used, "%s%llu", used ? " " : "", (unsigned long long)s);
		}
	}
}

LEAK_TEST(round, periodic_checkpoints_fall_on_exchanges)
{
	char got[256];

	due_steps(1, 1, 4, got, sizeof(got));
	cr_assert_str_eq(got, "4 8 12 16 20 24 28");
	due_steps(4, 4, 8, got, sizeof(got));
	cr_assert_str_eq(got, "8 16 24", "K divides N: on the multiples");
	due_steps(3, 3, 4, got, sizeof(got));
	cr_assert_str_eq(got, "6 9 12 18 21 24 30", "the first exchange at or after each multiple");
	due_steps(2, 2, 3, got, sizeof(got));
	cr_assert_str_eq(got, "4 6 10 12 16 18 22 24 28 30");
	due_steps(10, 10, 4, got, sizeof(got));
	cr_assert_str_eq(got, "10 20 30", "K above N: every exchange");
	due_steps(4, 5, 8, got, sizeof(got));
	cr_assert_str_eq(got, "9 17 25", "exchanges shifted by a resume");
	due_steps(1, 1, 0, got, sizeof(got));
	cr_assert_str_eq(got, "", "0 is off");
	cr_assert(!round_checkpoint_due(2, 3, 1), "more steps exchanged than run");
	cr_assert(!round_checkpoint_due(4, 0, 4));
	cr_assert(round_checkpoint_due(MODEL_MAX_STEPS, 1, MODEL_MAX_STEPS));
}

LEAK_TEST(round, agreement_names_the_ranks_that_differ)
{
	struct round_mark all[12];
	char err[512] = "";

	for (int i = 0; i < 12; i++)
		all[i] = (struct round_mark){ .step = 10, .checksum = 0xabcdef0123456789ull };
	cr_assert_eq(round_agree(all, 12, err, sizeof(err)), 0);
	cr_assert_eq(round_agree(all, 1, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "", "nothing said when they agree");
	all[2].checksum ^= 1;
	cr_assert_eq(round_agree(all, 4, err, sizeof(err)), 1);
	cr_assert_str_eq(err, "rank 2 of 4 differs from rank 0: rank 2 holds step 10 checksum "
			 "abcdef0123456788, rank 0 step 10 checksum abcdef0123456789");
	all[3].step = 9;
	cr_assert_eq(round_agree(all, 4, err, sizeof(err)), 2);
	cr_assert(strstr(err, "ranks 2, 3 of 4 differ from rank 0: rank 2 holds"), "%s", err);
	/* rank 0 is the odd one: every other rank is named */
	all[2] = all[1];
	all[3] = all[1];
	all[0].step = 11;
	cr_assert_eq(round_agree(all, 12, err, sizeof(err)), 11);
	cr_assert(strstr(err, "ranks 1, 2, 3, 4, 5, 6, 7, 8 and 3 more of 12 differ from rank 0: "
			  "rank 1 holds step 10"), "%s", err);
	cr_assert(strstr(err, "rank 0 step 11 checksum"), "%s", err);
	cr_assert(!strchr(err, '\n'));
}
