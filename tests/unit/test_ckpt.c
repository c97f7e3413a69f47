// SPDX-License-Identifier: MIT
/* Checkpoints: a round trip, every bit flip and every truncation refused,
 * each field's validation, the configuration comparison, and the atomic
 * file write. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "model.h"
#include "folder.h"
#include "leak_check.h"

#define N 4    /* parameters */
#define W 3    /* ranks */

static const struct ckpt_state base = {
	.cfg = { .seed = 42, .grad_bytes = N * 4, .global_batch = 100, .world_size = W,
		 .agg_freq = 4, .fp16 = true },
	.step = 9, .acc_count = 1,
};
static const float params[N] = { 1.0f, -0.0f, 0.25f, 3e-9f };
static const float accs[W * N] = { 1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4 };

/* Encodes s into a malloc'd buffer of *len bytes. */
static uint8_t *encode(const struct ckpt_state *s, size_t *len)
{
	char err[256] = "";
	uint8_t *buf;

	*len = ckpt_size(s);
	buf = malloc(*len);
	cr_assert_eq(ckpt_encode(s, params, s->acc_count ? accs : NULL, buf, *len, err, sizeof(err)),
		     0, "%s", err);
	return buf;
}

/* Stores a new CRC after a field was changed on purpose. */
static void resign(uint8_t *buf, size_t len)
{
	uint32_t crc = ckpt_crc32c(0, buf, len - 4);

	for (int i = 0; i < 4; i++)
		buf[len - 4 + i] = (uint8_t)(crc >> (8 * i));
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

LEAK_TEST(ckpt, crc32c_check_value)
{
	cr_assert_eq(ckpt_crc32c(0, "123456789", 9), 0xe3069283u);
	cr_assert_eq(ckpt_crc32c(ckpt_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
	cr_assert_eq(ckpt_crc32c(0, "", 0), 0);
}

LEAK_TEST(ckpt, sizes)
{
	struct ckpt_state s = base;

	cr_assert_eq(ckpt_size(&s), 64 + (1 + W) * N * 4 + 4);
	s.acc_count = 0;
	cr_assert_eq(ckpt_size(&s), 64 + N * 4 + 4);
}

LEAK_TEST(ckpt, round_trip_with_and_without_accumulators)
{
	for (int with = 0; with < 2; with++) {
		struct ckpt_state s = base, got;
		float p[N], a[N];
		char err[256] = "";
		size_t len;
		uint8_t *buf;

		s.acc_count = with ? 3 : 0;
		buf = encode(&s, &len);
		cr_assert_eq(memcmp(buf, "SLTRAIN", 8), 0);
		cr_assert_eq(ckpt_decode(buf, len, &got, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(got.cfg.seed, 42);
		cr_assert_eq(got.cfg.grad_bytes, N * 4);
		cr_assert_eq(got.cfg.global_batch, 100);
		cr_assert_eq(got.cfg.world_size, W);
		cr_assert_eq(got.cfg.agg_freq, 4);
		cr_assert(got.cfg.fp16);
		cr_assert_eq(got.step, 9);
		cr_assert_eq(got.acc_count, s.acc_count);
		ckpt_params(buf, &got, p);
		cr_assert_eq(memcmp(p, params, sizeof(p)), 0, "bit for bit, -0.0 included");
		for (uint32_t r = 0; r < W; r++) {
			ckpt_acc(buf, &got, r, a);
			for (int i = 0; i < N; i++)
				cr_assert_eq(a[i], with ? accs[r * N + i] : 0.0f);
		}
		free(buf);
	}
}

LEAK_TEST(ckpt, every_bit_flip_is_refused)
{
	struct ckpt_state got;
	char err[256];
	size_t len;
	uint8_t *buf = encode(&base, &len);

	for (size_t i = 0; i < len; i++) {
		for (int b = 0; b < 8; b++) {
			buf[i] ^= (uint8_t)(1u << b);
			err[0] = 0;
			cr_assert_eq(ckpt_decode(buf, len, &got, err, sizeof(err)), -EBADMSG,
				     "byte %zu bit %d", i, b);
			cr_assert(err[0] && !strchr(err, '\n'), "one line: '%s'", err);
			buf[i] ^= (uint8_t)(1u << b);
		}
	}
	free(buf);
}

LEAK_TEST(ckpt, truncated_or_extended_is_refused)
{
	struct ckpt_state got;
	char err[256];
	size_t len;
	uint8_t *buf = encode(&base, &len), *longer = calloc(1, len + 1);

	for (size_t l = 0; l < len; l++)
		cr_assert_eq(ckpt_decode(buf, l, &got, err, sizeof(err)), -EBADMSG, "%zu bytes", l);
	memcpy(longer, buf, len);
	cr_assert_eq(ckpt_decode(longer, len + 1, &got, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "truncated or damaged"), "%s", err);
	free(longer);
	free(buf);
}

struct field_case {
	size_t off;
	uint32_t value;
	const char *says;
	bool no_accs;  /* on a checkpoint without accumulators (their size is the world's) */
};

/* A field set to a bad value under a valid CRC: the field's check speaks. */
LEAK_TEST(ckpt, every_field_is_validated)
{
	static const struct field_case cases[] = {
		{ 8, 2, "version 2", false },
		{ 12, 72, "header length 72", false },
		{ 32, 0, "global batch 0", false },
		{ 32, MODEL_MAX_BATCH + 1, "global batch", false },
		{ 32, 2, "smaller than the world size", false },
		{ 40, 0, "world size 0", true },
		{ 40, MODEL_MAX_WORLD + 1, "world size", true },
		{ 44, 0, "aggregation frequency 0", false },
		{ 48, 3, "unknown flags 0x2", false },
		{ 52, 4, "not below the aggregation frequency", false },
		{ 56, 0, "1 accumulated steps after only 0 steps", false },
		{ 60, 1, "over", false },  /* the step's high word */
	};
	struct ckpt_state got, plain = base;
	char err[256];
	size_t len, plain_len;
	uint8_t *buf = encode(&base, &len), *bad = malloc(len), *plain_buf;

	plain.acc_count = 0;
	plain_buf = encode(&plain, &plain_len);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].no_accs) {
			memcpy(bad, plain_buf, plain_len);
			put32(bad + cases[i].off, cases[i].value);
			resign(bad, plain_len);
			cr_assert_eq(ckpt_decode(bad, plain_len, &got, err, sizeof(err)), -EBADMSG);
			cr_assert(strstr(err, cases[i].says), "field at %zu: '%s'", cases[i].off, err);
			continue;
		}
		memcpy(bad, buf, len);
		put32(bad + cases[i].off, cases[i].value);
		resign(bad, len);
		err[0] = 0;
		cr_assert_eq(ckpt_decode(bad, len, &got, err, sizeof(err)), -EBADMSG, "field at %zu",
			     cases[i].off);
		cr_assert(strstr(err, cases[i].says), "field at %zu: '%s'", cases[i].off, err);
	}
	memcpy(bad, buf, len);
	bad[0] = 'X';
	resign(bad, len);
	cr_assert_eq(ckpt_decode(bad, len, &got, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "magic"), "%s", err);
	free(plain_buf);
	free(bad);
	free(buf);
}

LEAK_TEST(ckpt, grad_bytes_is_validated)
{
	struct ckpt_state s = base, got;
	char err[256];
	size_t len;
	uint8_t *buf;

	s.acc_count = 0;
	buf = encode(&s, &len);
	/* 15 bytes of parameters in a 15 + 68 byte file */
	buf = realloc(buf, 64 + 15 + 4);
	put32(buf + 24, 15);
	resign(buf, 64 + 15 + 4);
	cr_assert_eq(ckpt_decode(buf, 64 + 15 + 4, &got, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "grad_bytes 15 is not a multiple of 4"), "%s", err);
	free(buf);
}

LEAK_TEST(ckpt, encode_refuses_a_bad_state)
{
	struct ckpt_state s = base;
	uint8_t buf[512];
	char err[256] = "";

	s.acc_count = 4;
	cr_assert_eq(ckpt_encode(&s, params, accs, buf, ckpt_size(&s), err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "aggregation frequency"), "%s", err);
	s = base;
	cr_assert_eq(ckpt_encode(&s, params, accs, buf, ckpt_size(&s) - 1, err, sizeof(err)),
		     -EINVAL);
}

LEAK_TEST(ckpt, config_diff_names_the_flag)
{
	static const struct {
		size_t field;
		const char *says;
	} cases[] = {
		{ 0, "--seed 42, this run has 43" },
		{ 1, "--grad-bytes 16, this run has 17" },
		{ 2, "--global-batch-size 100, this run has 101" },
		{ 4, "--aggregation-frequency 4, this run has 5" },
		{ 5, "with --fp16-compress, this run has not" },
	};
	char err[256];

	cr_assert_eq(ckpt_config_diff(&base.cfg, &base.cfg, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ckpt_config want = base.cfg;

		switch (cases[i].field) {
		case 0: want.seed++; break;
		case 1: want.grad_bytes++; break;
		case 2: want.global_batch++; break;
		case 4: want.agg_freq++; break;
		default: want.fp16 = false; break;
		}
		err[0] = 0;
		cr_assert_eq(ckpt_config_diff(&base.cfg, &want, err, sizeof(err)), 1);
		cr_assert(strstr(err, cases[i].says), "'%s' lacks '%s'", err, cases[i].says);
	}
}

/* A run at another world size resumes: the world size binds nothing (it
 * did: "written by 3 ranks, this run has 4" refused it), but it does not
 * hide a binding field that differs too. */
LEAK_TEST(ckpt, config_diff_world_size_is_not_binding)
{
	struct ckpt_config want = base.cfg;
	char err[256] = "";

	want.world_size = 4;
	cr_assert_eq(ckpt_config_diff(&base.cfg, &want, err, sizeof(err)), 0, "%s", err);
	want.world_size = 1;
	cr_assert_eq(ckpt_config_diff(&base.cfg, &want, err, sizeof(err)), 0, "%s", err);
	want.global_batch = 64;
	cr_assert_eq(ckpt_config_diff(&base.cfg, &want, err, sizeof(err)), 1);
	cr_assert(strstr(err, "--global-batch-size 100, this run has 64"), "%s", err);
}

/* The accumulator every rank of another world size starts with: the
 * checkpoint's, summed in rank order in float32, over the world size. */
LEAK_TEST(ckpt, acc_mean_is_the_ranks_sum_in_rank_order_over_the_world)
{
	struct ckpt_state got, s = base;
	float mean[N], scratch[N];
	char err[256] = "";
	size_t len;
	uint8_t *buf = encode(&s, &len);

	cr_assert_eq(ckpt_decode(buf, len, &got, err, sizeof(err)), 0, "%s", err);
	ckpt_acc_mean(buf, &got, scratch, mean);
	for (int i = 0; i < N; i++) {
		float sum = 0;

		for (int r = 0; r < W; r++)
			sum += accs[r * N + i];
		cr_assert_eq(mean[i], sum / (float)W, "parameter %d: %g", i, mean[i]);
	}
	cr_assert_eq(mean[0], 5.0f / 3.0f);
	free(buf);
	s.acc_count = 0;
	buf = encode(&s, &len);
	cr_assert_eq(ckpt_decode(buf, len, &got, err, sizeof(err)), 0, "%s", err);
	mean[0] = 9;
	ckpt_acc_mean(buf, &got, scratch, mean);
	for (int i = 0; i < N; i++)
		cr_assert_eq(mean[i], 0.0f, "none pending: zeros");
	free(buf);
}

/* What a resume may read: a checkpoint of this configuration written by any
 * number of ranks, with accumulators. */
LEAK_TEST(ckpt, max_size_covers_every_world_size)
{
	struct ckpt_state s = base;

	cr_assert_eq(ckpt_max_size(&base.cfg), 64 + (1 + (size_t)MODEL_MAX_WORLD) * N * 4 + 4);
	s.cfg.world_size = MODEL_MAX_WORLD;
	cr_assert_eq(ckpt_max_size(&base.cfg), ckpt_size(&s));
	s.cfg.world_size = 1;
	s.acc_count = 0;
	cr_assert_lt(ckpt_size(&s), ckpt_max_size(&base.cfg));
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/test_ckpt.XXXXXX");

	cr_assert_not_null(mkdtemp(d));
	return d;
}

/* A write killed midway (the grace ran out during a checkpoint) leaves a
 * temporary file as large as the checkpoint: the next write removes it, and
 * nothing else. */
LEAK_TEST(ckpt, a_write_removes_what_a_killed_write_left)
{
	char *d = tmpdir(), sub[300], stale[400], other[400], err[512] = "";
	uint8_t *buf;
	size_t len;
	struct stat st;
	FILE *f;

	buf = encode(&base, &len);
	snprintf(sub, sizeof(sub), "%s/ck", d);
	cr_assert_eq(mkdir(sub, 0700), 0);
	snprintf(stale, sizeof(stale), "%s/." CKPT_FILE ".0123456789ab.tmp", sub);
	snprintf(other, sizeof(other), "%s/." CKPT_FILE ".notes", sub);
	cr_assert_not_null(f = fopen(stale, "w"));
	fclose(f);
	cr_assert_not_null(f = fopen(other, "w"));
	fclose(f);
	cr_assert_eq(ckpt_write_file(sub, buf, len, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(stat(stale, &st), -1, "the killed write's temporary file is still there");
	cr_expect_eq(stat(other, &st), 0, "a file that is not ours was removed");
	cr_expect_eq(folder_entries(sub), 2);
	unlink(stale);
	unlink(other);
	snprintf(stale, sizeof(stale), "%s/" CKPT_FILE, sub);
	unlink(stale);
	rmdir(sub);
	rmdir(d);
	free(d);
	free(buf);
}

LEAK_TEST(ckpt, file_write_is_atomic_and_reads_back)
{
	char *d = tmpdir(), sub[300], path[340], err[512] = "";
	uint8_t *buf, *got = NULL;
	size_t len, glen = 0;

	buf = encode(&base, &len);
	snprintf(sub, sizeof(sub), "%s/ck", d);
	cr_assert_eq(ckpt_read_file(sub, 1 << 20, &got, &glen, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "no checkpoint"), "%s", err);
	cr_assert_eq(ckpt_write_file(sub, buf, len, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(folder_entries(sub), 1, "no temporary file is left");
	cr_assert_eq(ckpt_read_file(sub, 1 << 20, &got, &glen, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(glen, len);
	cr_assert_eq(memcmp(got, buf, len), 0);
	free(got);
	/* a second write replaces the first */
	buf[len - 1] ^= 1;
	cr_assert_eq(ckpt_write_file(sub, buf, len, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ckpt_read_file(sub, 1 << 20, &got, &glen, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(memcmp(got, buf, len), 0);
	free(got);
	/* larger than the caller allows */
	cr_assert_eq(ckpt_read_file(sub, len - 1, &got, &glen, err, sizeof(err)), -EFBIG);
	snprintf(path, sizeof(path), "%s/" CKPT_FILE, sub);
	unlink(path);
	rmdir(sub);
	rmdir(d);
	free(d);
	free(buf);
}

LEAK_TEST(ckpt, file_write_failure_says_where)
{
	char *d = tmpdir(), file[300], err[512] = "";
	uint8_t b[4] = { 0 };
	int fd;

	snprintf(file, sizeof(file), "%s/plain", d);
	fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(ckpt_write_file(file, b, sizeof(b), err, sizeof(err)), -ENOTDIR);
	cr_assert(strstr(err, file) && strstr(err, "Not a directory"), "%s", err);
	unlink(file);
	rmdir(d);
	free(d);
}
