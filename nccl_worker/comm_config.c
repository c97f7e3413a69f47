// SPDX-License-Identifier: MIT
/* The comm library's names (types, ops) and its configuration: the worker
 * environment read into struct comm_config, with a one-line error naming
 * the variable for anything malformed (README "nccl_worker", Environment).
 * Pure but for gethostname and getenv. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_internal.h"
#include "io.h"
#include "quote.h"

/* --- names --------------------------------------------------------------- */

static const char *const dtype_names[COMM_DTYPE_COUNT] = {
	"float32", "float64", "int32", "int64", "bf16", "fp16",
};
static const size_t dtype_sizes[COMM_DTYPE_COUNT] = { 4, 8, 4, 8, 2, 2 };
static const char *const op_names[COMM_OP_COUNT] = { "sum", "prod", "min", "max", "avg" };

size_t comm_dtype_size(enum comm_dtype t)
{
	return (unsigned)t < COMM_DTYPE_COUNT ? dtype_sizes[t] : 0;
}

const char *comm_dtype_name(enum comm_dtype t)
{
	return (unsigned)t < COMM_DTYPE_COUNT ? dtype_names[t] : "?";
}

const char *comm_op_name(enum comm_op op)
{
	return (unsigned)op < COMM_OP_COUNT ? op_names[op] : "?";
}

int comm_dtype_parse(const char *s)
{
	static const struct { const char *name; enum comm_dtype t; } alias[] = {
		{ "float32", COMM_FLOAT32 }, { "float", COMM_FLOAT32 }, { "f32", COMM_FLOAT32 },
		{ "float64", COMM_FLOAT64 }, { "double", COMM_FLOAT64 }, { "f64", COMM_FLOAT64 },
		{ "int32", COMM_INT32 }, { "int", COMM_INT32 }, { "i32", COMM_INT32 },
		{ "int64", COMM_INT64 }, { "i64", COMM_INT64 },
		{ "bf16", COMM_BF16 }, { "bfloat16", COMM_BF16 },
		{ "fp16", COMM_FP16 }, { "half", COMM_FP16 }, { "float16", COMM_FP16 },
	};

	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (strcmp(s, alias[i].name) == 0)
			return alias[i].t;
	return -EINVAL;
}

int comm_op_parse(const char *s)
{
	for (int i = 0; i < COMM_OP_COUNT; i++)
		if (strcmp(s, op_names[i]) == 0)
			return i;
	return -EINVAL;
}

/* --- environment --------------------------------------------------------- */

const char *comm_shown(const char *s, char *buf, size_t len)
{
	return quote_ctl(buf, len, s, COMM_SHOWN_MAX);
}

static int cfg_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int cfg_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int env_long(const char *(*get)(const char *), const char *name, long min, long max,
		    long dflt, long *out, char *err, size_t errlen)
{
	const char *s = get(name);
	char b[80];

	if (!s || !*s) {
		if (dflt == LONG_MIN)
			return cfg_err(err, errlen, "%s is not set", name);
		*out = dflt;
		return 0;
	}
	if (io_parse_long(s, min, max, out) < 0)
		return cfg_err(err, errlen, "%s=%s: expected a whole number from %ld to %ld", name,
			       comm_shown(s, b, sizeof(b)), min, max);
	return 0;
}

int comm_config_parse(struct comm_config *cfg, const char *(*get)(const char *), char *err,
		      size_t errlen)
{
	long size, rank, lrank, lsize, port = 0;
	const char *s;
	char b[80];
	int r;

	memset(cfg, 0, sizeof(*cfg));
	if ((r = env_long(get, "WORLD_SIZE", 1, COMM_MAX_RANKS, LONG_MIN, &size, err, errlen)) < 0 ||
	    (r = env_long(get, "RANK", 0, COMM_MAX_RANKS, LONG_MIN, &rank, err, errlen)) < 0)
		return r;
	if (rank >= size)
		return cfg_err(err, errlen, "RANK=%ld is not below WORLD_SIZE=%ld", rank, size);
	if ((r = env_long(get, "LOCAL_WORLD_SIZE", 1, COMM_MAX_RANKS, size, &lsize, err, errlen)) < 0 ||
	    (r = env_long(get, "LOCAL_RANK", 0, COMM_MAX_RANKS, lsize == size ? rank : LONG_MIN,
			  &lrank, err, errlen)) < 0)
		return r;
	if (lrank >= lsize)
		return cfg_err(err, errlen, "LOCAL_RANK=%ld is not below LOCAL_WORLD_SIZE=%ld", lrank,
			       lsize);
	cfg->size = (int)size;
	cfg->rank = (int)rank;
	cfg->local_size = (int)lsize;
	cfg->local_rank = (int)lrank;

	s = get("MASTER_ADDR");
	if (s && *s) {
		if (strlen(s) >= sizeof(cfg->master_addr))
			return cfg_err(err, errlen, "MASTER_ADDR is longer than %zu bytes",
				       sizeof(cfg->master_addr) - 1);
		strcpy(cfg->master_addr, s);
	} else if (size > 1) {
		return cfg_err(err, errlen, "MASTER_ADDR is not set (needed when WORLD_SIZE > 1)");
	}
	if ((r = env_long(get, "MASTER_PORT", 1, 65535, size > 1 ? LONG_MIN : 0, &port, err,
			  errlen)) < 0)
		return r;
	cfg->master_port = (int)port;

	cfg->timeout_s = COMM_DEFAULT_TIMEOUT_S;
	s = get("SLOTRUN_TIMEOUT");
	if (s && *s) {
		char *end;
		double t;

		errno = 0;
		t = strtod(s, &end);
		if (*end || errno || !isdigit((unsigned char)*s) || !(t > 0) || t > 1e7)
			return cfg_err(err, errlen,
				       "SLOTRUN_TIMEOUT=%s: expected seconds, a number above 0 "
				       "(e.g. 300 or 2.5)", comm_shown(s, b, sizeof(b)));
		cfg->timeout_s = t;
	}

	s = get("SLOTRUN_TRANSPORT");
	if (!s || !*s || strcmp(s, "auto") == 0)
		cfg->transport = COMM_TRANSPORT_AUTO;
	else if (strcmp(s, "tcp") == 0)
		cfg->transport = COMM_TRANSPORT_TCP;
	else if (strcmp(s, "shm") == 0)
		cfg->transport = COMM_TRANSPORT_SHM;
	else
		return cfg_err(err, errlen, "SLOTRUN_TRANSPORT=%s: expected auto, tcp or shm",
			       comm_shown(s, b, sizeof(b)));

	s = get("SLOTRUN_JOB_SECRET");
	if (s) {
		if (strlen(s) >= sizeof(cfg->secret))
			return cfg_err(err, errlen, "SLOTRUN_JOB_SECRET is longer than %zu bytes",
				       sizeof(cfg->secret) - 1);
		strcpy(cfg->secret, s);
	}
	s = get("NCCL_SOCKET_IFNAME");
	if (s) {
		if (strlen(s) >= sizeof(cfg->ifname))
			return cfg_err(err, errlen, "NCCL_SOCKET_IFNAME is too long");
		strcpy(cfg->ifname, s);
	}
	if (gethostname(cfg->host, sizeof(cfg->host)) < 0 || !cfg->host[0])
		strcpy(cfg->host, "localhost");
	cfg->host[sizeof(cfg->host) - 1] = '\0';
	for (char *p = cfg->host; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return 0;
}

static const char *real_getenv(const char *name)
{
	return getenv(name);
}

int comm_config_from_env(struct comm_config *cfg, char *err, size_t errlen)
{
	return comm_config_parse(cfg, real_getenv, err, errlen);
}
