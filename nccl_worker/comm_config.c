// SPDX-License-Identifier: MIT
/* The comm library's names (types, ops) and its configuration: the worker
 * environment read into struct slotcomm_config, with a one-line error naming
 * the variable for anything malformed (slotcomm.h, Environment), and the
 * check of a configuration filled by hand, naming the field.  Pure but for
 * gethostname and getenv. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_internal.h"
#include "io.h"
#include "quote.h"

/* --- names --------------------------------------------------------------- */

static const char *const dtype_names[SLOTCOMM_DTYPE_COUNT] = {
	"float32", "float64", "int32", "int64", "bf16", "fp16",
};
static const size_t dtype_sizes[SLOTCOMM_DTYPE_COUNT] = { 4, 8, 4, 8, 2, 2 };
static const char *const op_names[SLOTCOMM_OP_COUNT] = { "sum", "prod", "min", "max", "avg" };

size_t slotcomm_dtype_size(enum slotcomm_dtype t)
{
	return (unsigned)t < SLOTCOMM_DTYPE_COUNT ? dtype_sizes[t] : 0;
}

const char *slotcomm_dtype_name(enum slotcomm_dtype t)
{
	return (unsigned)t < SLOTCOMM_DTYPE_COUNT ? dtype_names[t] : "?";
}

const char *slotcomm_op_name(enum slotcomm_op op)
{
	return (unsigned)op < SLOTCOMM_OP_COUNT ? op_names[op] : "?";
}

int slotcomm_dtype_parse(const char *s)
{
	static const struct { const char *name; enum slotcomm_dtype t; } alias[] = {
		{ "float32", SLOTCOMM_FLOAT32 }, { "float", SLOTCOMM_FLOAT32 }, { "f32", SLOTCOMM_FLOAT32 },
		{ "float64", SLOTCOMM_FLOAT64 }, { "double", SLOTCOMM_FLOAT64 }, { "f64", SLOTCOMM_FLOAT64 },
		{ "int32", SLOTCOMM_INT32 }, { "int", SLOTCOMM_INT32 }, { "i32", SLOTCOMM_INT32 },
		{ "int64", SLOTCOMM_INT64 }, { "i64", SLOTCOMM_INT64 },
		{ "bf16", SLOTCOMM_BF16 }, { "bfloat16", SLOTCOMM_BF16 },
		{ "fp16", SLOTCOMM_FP16 }, { "half", SLOTCOMM_FP16 }, { "float16", SLOTCOMM_FP16 },
	};

	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (strcmp(s, alias[i].name) == 0)
			return alias[i].t;
	return -EINVAL;
}

int slotcomm_op_parse(const char *s)
{
	for (int i = 0; i < SLOTCOMM_OP_COUNT; i++)
		if (strcmp(s, op_names[i]) == 0)
			return i;
	return -EINVAL;
}

const char *slotcomm_version(void)
{
	return SLOTCOMM_VERSION_STRING;
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

/* The environment getter, as slotcomm_config_parse takes it. */
typedef const char *(*env_get)(const char *);

/* WORLD_SIZE, RANK, LOCAL_WORLD_SIZE and LOCAL_RANK (the last two default
 * to one node's worth when LOCAL_WORLD_SIZE is WORLD_SIZE). */
static int parse_ranks(struct slotcomm_config *cfg, env_get get, char *err, size_t errlen)
{
	long size, rank, lrank, lsize;
	int r;

	if ((r = env_long(get, "WORLD_SIZE", 1, SLOTCOMM_MAX_RANKS, LONG_MIN, &size, err, errlen)) < 0 ||
	    (r = env_long(get, "RANK", 0, SLOTCOMM_MAX_RANKS, LONG_MIN, &rank, err, errlen)) < 0)
		return r;
	if (rank >= size)
		return cfg_err(err, errlen, "RANK=%ld is not below WORLD_SIZE=%ld", rank, size);
	if ((r = env_long(get, "LOCAL_WORLD_SIZE", 1, SLOTCOMM_MAX_RANKS, size, &lsize, err, errlen)) < 0 ||
	    (r = env_long(get, "LOCAL_RANK", 0, SLOTCOMM_MAX_RANKS, lsize == size ? rank : LONG_MIN,
			  &lrank, err, errlen)) < 0)
		return r;
	if (lrank >= lsize)
		return cfg_err(err, errlen, "LOCAL_RANK=%ld is not below LOCAL_WORLD_SIZE=%ld", lrank,
			       lsize);
	cfg->size = (int)size;
	cfg->rank = (int)rank;
	cfg->local_size = (int)lsize;
	cfg->local_rank = (int)lrank;
	return 0;
}

/* MASTER_ADDR and MASTER_PORT, required only when there are other ranks. */
static int parse_master(struct slotcomm_config *cfg, env_get get, char *err, size_t errlen)
{
	const char *s = get("MASTER_ADDR");
	long port = 0;
	int r;

	if (s && *s) {
		if (strlen(s) >= sizeof(cfg->master_addr))
			return cfg_err(err, errlen, "MASTER_ADDR is longer than %zu bytes",
				       sizeof(cfg->master_addr) - 1);
		strcpy(cfg->master_addr, s);
	} else if (cfg->size > 1) {
		return cfg_err(err, errlen, "MASTER_ADDR is not set (needed when WORLD_SIZE > 1)");
	}
	if ((r = env_long(get, "MASTER_PORT", 1, 65535, cfg->size > 1 ? LONG_MIN : 0, &port, err,
			  errlen)) < 0)
		return r;
	cfg->master_port = (int)port;
	return 0;
}

static int parse_timeout(struct slotcomm_config *cfg, env_get get, char *err, size_t errlen)
{
	const char *s = get("SLOTRUN_TIMEOUT");
	char b[80];

	cfg->timeout_s = SLOTCOMM_DEFAULT_TIMEOUT_S;
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
	return 0;
}

static int parse_transport(struct slotcomm_config *cfg, env_get get, char *err, size_t errlen)
{
	const char *s = get("SLOTRUN_TRANSPORT");
	char b[80];

	if (!s || !*s || strcmp(s, "auto") == 0)
		cfg->transport = SLOTCOMM_TRANSPORT_AUTO;
	else if (strcmp(s, "tcp") == 0)
		cfg->transport = SLOTCOMM_TRANSPORT_TCP;
	else if (strcmp(s, "shm") == 0)
		cfg->transport = SLOTCOMM_TRANSPORT_SHM;
	else
		return cfg_err(err, errlen, "SLOTRUN_TRANSPORT=%s: expected auto, tcp or shm",
			       comm_shown(s, b, sizeof(b)));
	return 0;
}

/* SLOTRUN_JOB_SECRET and NCCL_SOCKET_IFNAME, copied as they are. */
static int parse_secret_ifname(struct slotcomm_config *cfg, env_get get, char *err,
			       size_t errlen)
{
	const char *s = get("SLOTRUN_JOB_SECRET");

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
	return 0;
}

int slotcomm_config_parse(struct slotcomm_config *cfg, const char *(*get)(const char *), char *err,
		      size_t errlen)
{
	int r;

	memset(cfg, 0, sizeof(*cfg));
	if ((r = parse_ranks(cfg, get, err, errlen)) < 0 ||
	    (r = parse_master(cfg, get, err, errlen)) < 0 ||
	    (r = parse_timeout(cfg, get, err, errlen)) < 0 ||
	    (r = parse_transport(cfg, get, err, errlen)) < 0 ||
	    (r = parse_secret_ifname(cfg, get, err, errlen)) < 0)
		return r;
	comm_own_host(cfg->host, sizeof(cfg->host));
	return 0;
}

void comm_own_host(char *host, size_t len)
{
	if (gethostname(host, len) < 0 || !host[0])
		snprintf(host, len, "localhost");
	host[len - 1] = '\0';
	for (char *p = host; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static const char *real_getenv(const char *name)
{
	return getenv(name);
}

int slotcomm_config_from_env(struct slotcomm_config *cfg, char *err, size_t errlen)
{
	return slotcomm_config_parse(cfg, real_getenv, err, errlen);
}

/* --- a configuration filled by hand ------------------------------------- */

void slotcomm_config_init(struct slotcomm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = 1;
	cfg->local_size = 1;
	cfg->timeout_s = SLOTCOMM_DEFAULT_TIMEOUT_S;
	cfg->transport = SLOTCOMM_TRANSPORT_AUTO;
}

/* A string field must end within its array and hold no control character
 * (it goes into one-line messages and onto the wire). */
static int check_string(const char *field, const char *s, size_t size, char *err,
			size_t errlen)
{
	const char *end = memchr(s, '\0', size);

	if (!end)
		return cfg_err(err, errlen, "slotcomm_config.%s is not terminated within its %zu bytes "
			       "(keep it shorter than that)", field, size);
	for (const char *p = s; p < end; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return cfg_err(err, errlen, "slotcomm_config.%s holds a control character "
				       "(remove it)", field);
	return 0;
}

int slotcomm_config_check(const struct slotcomm_config *cfg, char *err, size_t errlen)
{
	int r;

	if (cfg->size < 1 || cfg->size > SLOTCOMM_MAX_RANKS)
		return cfg_err(err, errlen, "slotcomm_config.size=%d is out of range (set it to the "
			       "number of ranks, 1 to %d)", cfg->size, SLOTCOMM_MAX_RANKS);
	if (cfg->rank < 0 || cfg->rank >= cfg->size)
		return cfg_err(err, errlen, "slotcomm_config.rank=%d is not below .size=%d (set it "
			       "to this process's rank, 0 to size - 1)", cfg->rank, cfg->size);
	if (cfg->local_size < 1 || cfg->local_size > SLOTCOMM_MAX_RANKS)
		return cfg_err(err, errlen, "slotcomm_config.local_size=%d is out of range (set it "
			       "to the ranks on this node, 1 to %d)", cfg->local_size,
			       SLOTCOMM_MAX_RANKS);
	if (cfg->local_rank < 0 || cfg->local_rank >= cfg->local_size)
		return cfg_err(err, errlen, "slotcomm_config.local_rank=%d is not below "
			       ".local_size=%d (set it to the rank within this node)",
			       cfg->local_rank, cfg->local_size);
	if ((r = check_string("master_addr", cfg->master_addr, sizeof(cfg->master_addr), err,
			      errlen)) < 0 ||
	    (r = check_string("ifname", cfg->ifname, sizeof(cfg->ifname), err, errlen)) < 0 ||
	    (r = check_string("host", cfg->host, sizeof(cfg->host), err, errlen)) < 0)
		return r;
	if (!memchr(cfg->secret, '\0', sizeof(cfg->secret)))
		return cfg_err(err, errlen, "slotcomm_config.secret is not terminated within its %zu "
			       "bytes (keep it shorter than that)", sizeof(cfg->secret));
	if (cfg->size > 1 && !cfg->master_addr[0])
		return cfg_err(err, errlen, "slotcomm_config.master_addr is empty (set it to rank "
			       "0's address: needed when size > 1)");
	if (cfg->size > 1 && (cfg->master_port < 1 || cfg->master_port > 65535))
		return cfg_err(err, errlen, "slotcomm_config.master_port=%d is out of range (set it "
			       "to rank 0's port, 1 to 65535: needed when size > 1)",
			       cfg->master_port);
	if (!(cfg->timeout_s > 0) || !isfinite(cfg->timeout_s) || cfg->timeout_s > 1e7)
		return cfg_err(err, errlen, "slotcomm_config.timeout_s=%g is out of range (set it to "
			       "seconds above 0, e.g. %g)", cfg->timeout_s,
			       SLOTCOMM_DEFAULT_TIMEOUT_S);
	if ((unsigned)cfg->transport > SLOTCOMM_TRANSPORT_SHM)
		return cfg_err(err, errlen, "slotcomm_config.transport=%d is not a transport (set it "
			       "to SLOTCOMM_TRANSPORT_AUTO, _TCP or _SHM)", (int)cfg->transport);
	return 0;
}
