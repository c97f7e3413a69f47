// SPDX-License-Identifier: MIT
#include "ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "model.h"

#define CKPT_FLAG_FP16 1u

uint32_t ckpt_crc32c(uint32_t crc, const void *buf, size_t len)
{
	static uint32_t table[256];
	const uint8_t *p = buf;

	if (!table[1]) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1u ? (c >> 1) ^ 0x82f63b78u : c >> 1;
			table[i] = c;
		}
	}
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xffu] ^ (crc >> 8);
	return ~crc;
}

/* Accumulators stored in a checkpoint of s. */
static uint64_t naccs(const struct ckpt_state *s)
{
	return s->acc_count ? s->cfg.world_size : 0;
}

size_t ckpt_size(const struct ckpt_state *s)
{
	uint64_t blocks = 1 + naccs(s);

	if (s->cfg.grad_bytes > (SIZE_MAX - CKPT_HDR_LEN - 4) / blocks)
		return 0;
	return CKPT_HDR_LEN + (size_t)(blocks * s->cfg.grad_bytes) + 4;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put_floats(uint8_t *p, const float *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, &v[i], sizeof(u));
		put32(p + 4 * i, u);
	}
}

static void get_floats(float *v, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u = get32(p + 4 * i);

		memcpy(&v[i], &u, sizeof(u));
	}
}

/* The ranges of every field and their consistency. */
static int check_state(const struct ckpt_state *s, char *err, size_t errlen)
{
	const struct ckpt_config *c = &s->cfg;

	if (c->grad_bytes < 4 || c->grad_bytes % 4 || c->grad_bytes > MODEL_MAX_GRAD_BYTES)
		snprintf(err, errlen, "grad_bytes %llu is not a multiple of 4 from 4 to %llu",
			 (unsigned long long)c->grad_bytes, (unsigned long long)MODEL_MAX_GRAD_BYTES);
	else if (c->global_batch < 1 || c->global_batch > MODEL_MAX_BATCH)
		snprintf(err, errlen, "global batch %llu is not from 1 to %u",
			 (unsigned long long)c->global_batch, MODEL_MAX_BATCH);
	else if (c->world_size < 1 || c->world_size > MODEL_MAX_WORLD)
		snprintf(err, errlen, "world size %u is not from 1 to %u", c->world_size,
			 MODEL_MAX_WORLD);
	else if (c->global_batch < c->world_size)
		snprintf(err, errlen, "global batch %llu is smaller than the world size %u",
			 (unsigned long long)c->global_batch, c->world_size);
	else if (c->agg_freq < 1 || c->agg_freq > MODEL_MAX_AGG)
		snprintf(err, errlen, "aggregation frequency %u is not from 1 to %u", c->agg_freq,
			 MODEL_MAX_AGG);
	else if (s->step > MODEL_MAX_STEPS)
		snprintf(err, errlen, "step %llu is over %u", (unsigned long long)s->step,
			 MODEL_MAX_STEPS);
	else if (s->acc_count >= c->agg_freq)
		snprintf(err, errlen, "%u accumulated steps, not below the aggregation frequency %u",
			 s->acc_count, c->agg_freq);
	else if (s->acc_count > s->step)
		snprintf(err, errlen, "%u accumulated steps after only %llu steps", s->acc_count,
			 (unsigned long long)s->step);
	else
		return 0;
	return -EINVAL;
}

int ckpt_encode(const struct ckpt_state *s, const float *params, const float *accs, uint8_t *buf,
		size_t len, char *err, size_t errlen)
{
	const struct ckpt_config *c = &s->cfg;
	size_t n = (size_t)(c->grad_bytes / 4);

	if (check_state(s, err, errlen) < 0)
		return -EINVAL;
	if (len != ckpt_size(s)) {
		snprintf(err, errlen, "buffer of %zu bytes for a checkpoint of %zu", len,
			 ckpt_size(s));
		return -EINVAL;
	}
	memcpy(buf, CKPT_MAGIC, 8);
	put32(buf + 8, CKPT_VERSION);
	put32(buf + 12, CKPT_HDR_LEN);
	put64(buf + 16, c->seed);
	put64(buf + 24, c->grad_bytes);
	put64(buf + 32, c->global_batch);
	put32(buf + 40, c->world_size);
	put32(buf + 44, c->agg_freq);
	put32(buf + 48, c->fp16 ? CKPT_FLAG_FP16 : 0);
	put32(buf + 52, s->acc_count);
	put64(buf + 56, s->step);
	put_floats(buf + CKPT_HDR_LEN, params, n);
	if (naccs(s))
		put_floats(buf + CKPT_HDR_LEN + 4 * n, accs, n * (size_t)naccs(s));
	put32(buf + len - 4, ckpt_crc32c(0, buf, len - 4));
	return 0;
}

int ckpt_decode(const uint8_t *buf, size_t len, struct ckpt_state *s, char *err, size_t errlen)
{
	uint32_t version, hdr_len, flags, crc, want_crc;
	size_t want;

	if (len < CKPT_HDR_LEN + 4) {
		snprintf(err, errlen, "truncated: %zu bytes, a checkpoint has at least %u", len,
			 CKPT_HDR_LEN + 4);
		return -EBADMSG;
	}
	if (memcmp(buf, CKPT_MAGIC, 8) != 0) {
		snprintf(err, errlen, "not a checkpoint of slotcomm_train (no \"%s\" magic)",
			 CKPT_MAGIC);
		return -EBADMSG;
	}
	version = get32(buf + 8);
	hdr_len = get32(buf + 12);
	if (version != CKPT_VERSION) {
		snprintf(err, errlen, "version %u, this slotcomm_train reads version %u", version,
			 CKPT_VERSION);
		return -EBADMSG;
	}
	if (hdr_len != CKPT_HDR_LEN) {
		snprintf(err, errlen, "header length %u, expected %u", hdr_len, CKPT_HDR_LEN);
		return -EBADMSG;
	}
	s->cfg.seed = get64(buf + 16);
	s->cfg.grad_bytes = get64(buf + 24);
	s->cfg.global_batch = get64(buf + 32);
	s->cfg.world_size = get32(buf + 40);
	s->cfg.agg_freq = get32(buf + 44);
	flags = get32(buf + 48);
	s->cfg.fp16 = flags & CKPT_FLAG_FP16;
	s->acc_count = get32(buf + 52);
	s->step = get64(buf + 56);
	want = ckpt_size(s);
	if (len != want) {
		snprintf(err, errlen, "%zu bytes where the header makes %zu (grad_bytes %llu, %llu "
			 "accumulators): truncated or damaged", len, want,
			 (unsigned long long)s->cfg.grad_bytes, (unsigned long long)naccs(s));
		return -EBADMSG;
	}
	crc = get32(buf + len - 4);
	want_crc = ckpt_crc32c(0, buf, len - 4);
	if (crc != want_crc) {
		snprintf(err, errlen, "checksum mismatch (stored %08x, computed %08x): the file is "
			 "damaged", crc, want_crc);
		return -EBADMSG;
	}
	if (flags & ~CKPT_FLAG_FP16) {
		snprintf(err, errlen, "unknown flags %#x", flags & ~CKPT_FLAG_FP16);
		return -EBADMSG;
	}
	if (check_state(s, err, errlen) < 0)
		return -EBADMSG;
	return 0;
}

void ckpt_params(const uint8_t *buf, const struct ckpt_state *s, float *params)
{
	get_floats(params, buf + CKPT_HDR_LEN, (size_t)(s->cfg.grad_bytes / 4));
}

void ckpt_acc(const uint8_t *buf, const struct ckpt_state *s, uint32_t rank, float *acc)
{
	size_t n = (size_t)(s->cfg.grad_bytes / 4);

	if (!naccs(s))
		memset(acc, 0, n * sizeof(*acc));
	else
		get_floats(acc, buf + CKPT_HDR_LEN + 4 * n * (1 + (size_t)rank), n);
}

size_t ckpt_max_size(const struct ckpt_config *c)
{
	struct ckpt_state s = { .cfg = *c, .acc_count = 1 };
	size_t len;

	s.cfg.world_size = MODEL_MAX_WORLD;
	len = ckpt_size(&s);
	return len ? len : SIZE_MAX;
}

void ckpt_acc_mean(const uint8_t *buf, const struct ckpt_state *s, float *scratch, float *out)
{
	size_t n = (size_t)(s->cfg.grad_bytes / 4);

	memset(out, 0, n * sizeof(*out));
	if (!naccs(s))
		return;
	for (uint32_t r = 0; r < s->cfg.world_size; r++) {
		ckpt_acc(buf, s, r, scratch);
		for (size_t i = 0; i < n; i++)
			out[i] += scratch[i];
	}
	model_mean(out, out, n, s->cfg.world_size);
}

int ckpt_config_diff(const struct ckpt_config *have, const struct ckpt_config *want, char *err,
		     size_t errlen)
{
	static const char pre[] = "the checkpoint was written";

	if (have->grad_bytes != want->grad_bytes)
		snprintf(err, errlen, "%s with --grad-bytes %llu, this run has %llu", pre,
			 (unsigned long long)have->grad_bytes, (unsigned long long)want->grad_bytes);
	else if (have->global_batch != want->global_batch)
		snprintf(err, errlen, "%s with --global-batch-size %llu, this run has %llu", pre,
			 (unsigned long long)have->global_batch,
			 (unsigned long long)want->global_batch);
	else if (have->agg_freq != want->agg_freq)
		snprintf(err, errlen, "%s with --aggregation-frequency %u, this run has %u", pre,
			 have->agg_freq, want->agg_freq);
	else if (have->fp16 != want->fp16)
		snprintf(err, errlen, "%s %s --fp16-compress, this run %s", pre,
			 have->fp16 ? "with" : "without", want->fp16 ? "has it" : "has not");
	else if (have->seed != want->seed)
		snprintf(err, errlen, "%s with --seed %llu, this run has %llu", pre,
			 (unsigned long long)have->seed, (unsigned long long)want->seed);
	else
		return 0;
	return 1;
}

/* Says which operation on which file failed; returns -e. */
static int io_fail(int e, const char *what, const char *dir, const char *name, char *err,
		   size_t errlen)
{
	snprintf(err, errlen, "cannot %s %s%s%s: %s", what, dir, name ? "/" : "", name ? name : "",
		 strerror(e));
	return -e;
}

int ckpt_write_file(const char *dir, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	char path[4096];
	int r;

	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return io_fail(errno, "create", dir, NULL, err, errlen);
	if (snprintf(path, sizeof(path), "%s/" CKPT_FILE, dir) >= (int)sizeof(path))
		return io_fail(ENAMETOOLONG, "write", dir, CKPT_FILE, err, errlen);
	/* what a write killed midway left (this rank is the file's one writer) */
	(void)io_remove_stale_temps(path);
	r = io_replace_file(path, buf, len, 0644);
	if (r < 0)
		return io_fail(-r, "write", dir, CKPT_FILE, err, errlen);
	return 0;
}

int ckpt_read_file(const char *dir, size_t max, uint8_t **buf, size_t *len, char *err,
		   size_t errlen)
{
	size_t got = 0;
	struct stat st;
	uint8_t *b;
	int dfd, fd, e;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fd = -1;
		e = errno;
	} else {
		fd = openat(dfd, CKPT_FILE, O_RDONLY | O_CLOEXEC);
		e = errno;
		close(dfd);
	}
	if (fd < 0) {
		if (e == ENOENT)
			snprintf(err, errlen, "no checkpoint %s/%s to resume from", dir, CKPT_FILE);
		return e == ENOENT ? -ENOENT
				   : io_fail(e, "open", dir, dfd < 0 ? NULL : CKPT_FILE, err, errlen);
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		close(fd);
		return io_fail(e, "stat", dir, CKPT_FILE, err, errlen);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "%s/%s is not a regular file", dir, CKPT_FILE);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		snprintf(err, errlen, "%s/%s has %lld bytes, more than a checkpoint of this run "
			 "can (%zu): from a larger run, or damaged", dir, CKPT_FILE,
			 (long long)st.st_size, max);
		return -EFBIG;
	}
	b = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!b) {
		close(fd);
		return io_fail(ENOMEM, "read", dir, CKPT_FILE, err, errlen);
	}
	while (got < (size_t)st.st_size) {
		ssize_t k = io_read(fd, b + got, (size_t)st.st_size - got);

		if (k <= 0) {
			e = k < 0 ? (int)-k : EIO;
			free(b);
			close(fd);
			return io_fail(e, "read", dir, CKPT_FILE, err, errlen);
		}
		got += (size_t)k;
	}
	close(fd);
	*buf = b;
	*len = got;
	return 0;
}
