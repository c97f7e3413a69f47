// SPDX-License-Identifier: MIT
/* The worker environment: defaults, and a one-line error naming the
 * variable for everything malformed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "comm.h"
#include "leak_check.h"

static const char *const *vars;

static const char *lookup(const char *name)
{
	for (const char *const *v = vars; *v; v += 2)
		if (strcmp(v[0], name) == 0)
			return v[1];
	return NULL;
}

static int parse(const char *const *table, struct comm_config *cfg, char *err)
{
	vars = table;
	err[0] = '\0';
	return comm_config_parse(cfg, lookup, err, COMM_ERR_MAX);
}

LEAK_TEST(comm_config, full_environment)
{
	static const char *const env[] = {
		"RANK", "3", "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2",
		"MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "29500", "SLOTRUN_JOB_SECRET", "abc",
		"SLOTRUN_TIMEOUT", "2.5", "SLOTRUN_TRANSPORT", "tcp", "NCCL_SOCKET_IFNAME", "eth", NULL,
	};
	struct comm_config c;
	char err[COMM_ERR_MAX];

	cr_assert_eq(parse(env, &c, err), 0, "%s", err);
	cr_assert(c.rank == 3 && c.size == 8 && c.local_rank == 1 && c.local_size == 2);
	cr_assert_str_eq(c.master_addr, "10.0.0.1");
	cr_assert_eq(c.master_port, 29500);
	cr_assert_str_eq(c.secret, "abc");
	cr_assert_float_eq(c.timeout_s, 2.5, 1e-12);
	cr_assert_eq(c.transport, COMM_TRANSPORT_TCP);
	cr_assert_str_eq(c.ifname, "eth");
	cr_assert_neq(c.host[0], '\0');
}

LEAK_TEST(comm_config, defaults)
{
	static const char *const env[] = { "RANK", "0", "WORLD_SIZE", "1", NULL };
	static const char *const env2[] = { "RANK", "2", "WORLD_SIZE", "4", "MASTER_ADDR", "h",
					    "MASTER_PORT", "1", NULL };
	struct comm_config c;
	char err[COMM_ERR_MAX];

	cr_assert_eq(parse(env, &c, err), 0, "%s", err);
	cr_assert_float_eq(c.timeout_s, COMM_DEFAULT_TIMEOUT_S, 1e-12);
	cr_assert_eq(c.transport, COMM_TRANSPORT_AUTO);
	cr_assert_str_eq(c.secret, "");
	cr_assert_eq(parse(env2, &c, err), 0, "%s", err);
	cr_assert(c.local_rank == 2 && c.local_size == 4, "LOCAL_* default to RANK/WORLD_SIZE");
}

struct bad {
	const char *env[20];
	const char *says;
};

LEAK_TEST(comm_config, malformed_values_name_the_variable)
{
	static const struct bad bad[] = {
		{ { "WORLD_SIZE", "2", NULL }, "RANK is not set" },
		{ { "RANK", "0", NULL }, "WORLD_SIZE is not set" },
		{ { "RANK", "x", "WORLD_SIZE", "2", NULL }, "RANK=x: expected a whole number" },
		{ { "RANK", "-1", "WORLD_SIZE", "2", NULL }, "RANK=-1" },
		{ { "RANK", "2", "WORLD_SIZE", "2", NULL }, "RANK=2 is not below WORLD_SIZE=2" },
		{ { "RANK", "0", "WORLD_SIZE", "0", NULL }, "WORLD_SIZE=0" },
		{ { "RANK", "0", "WORLD_SIZE", "2", NULL }, "MASTER_ADDR is not set" },
		{ { "RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h", NULL }, "MASTER_PORT is not set" },
		{ { "RANK", "0", "WORLD_SIZE", "2", "MASTER_ADDR", "h", "MASTER_PORT", "70000", NULL },
		  "MASTER_PORT=70000" },
		{ { "RANK", "0", "WORLD_SIZE", "1", "SLOTRUN_TIMEOUT", "0", NULL }, "SLOTRUN_TIMEOUT=0" },
		{ { "RANK", "0", "WORLD_SIZE", "1", "SLOTRUN_TIMEOUT", "-3", NULL }, "SLOTRUN_TIMEOUT=-3" },
		{ { "RANK", "0", "WORLD_SIZE", "1", "SLOTRUN_TIMEOUT", "3s", NULL }, "SLOTRUN_TIMEOUT=3s" },
		{ { "RANK", "0", "WORLD_SIZE", "1", "SLOTRUN_TIMEOUT", "nan", NULL }, "SLOTRUN_TIMEOUT=nan" },
		{ { "RANK", "0", "WORLD_SIZE", "1", "SLOTRUN_TRANSPORT", "udp", NULL },
		  "SLOTRUN_TRANSPORT=udp: expected auto, tcp or shm" },
		{ { "RANK", "0", "WORLD_SIZE", "1", "SLOTRUN_TRANSPORT", "SHM", NULL },
		  "SLOTRUN_TRANSPORT=SHM: expected auto, tcp or shm" },
		{ { "RANK", "1", "WORLD_SIZE", "4", "LOCAL_WORLD_SIZE", "2", "MASTER_ADDR", "h",
		    "MASTER_PORT", "1", NULL }, "LOCAL_RANK is not set" },
		{ { "RANK", "1", "WORLD_SIZE", "4", "LOCAL_WORLD_SIZE", "2", "LOCAL_RANK", "2",
		    "MASTER_ADDR", "h", "MASTER_PORT", "1", NULL }, "LOCAL_RANK=2 is not below" },
		{ { "RANK", "0\n1", "WORLD_SIZE", "2", NULL }, "RANK=0\\x0a1" },
	};
	struct comm_config c;
	char err[COMM_ERR_MAX];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(parse(bad[i].env, &c, err), -EINVAL, "case %zu", i);
		cr_assert(strstr(err, bad[i].says), "case %zu: '%s' lacks '%s'", i, err, bad[i].says);
		cr_assert_null(strchr(err, '\n'), "case %zu: not one line", i);
	}
}

LEAK_TEST(comm_config, every_transport_parses)
{
	static const struct {
		const char *value;
		enum comm_transport t;
	} ok[] = { { "", COMM_TRANSPORT_AUTO }, { "auto", COMM_TRANSPORT_AUTO },
		   { "tcp", COMM_TRANSPORT_TCP }, { "shm", COMM_TRANSPORT_SHM } };
	struct comm_config c;
	char err[COMM_ERR_MAX];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		const char *env[] = { "RANK", "0", "WORLD_SIZE", "1", "SLOTRUN_TRANSPORT", ok[i].value,
				      NULL };

		cr_assert_eq(parse(env, &c, err), 0, "%s: %s", ok[i].value, err);
		cr_assert_eq(c.transport, ok[i].t, "%s", ok[i].value);
	}
}

LEAK_TEST(comm_config, names_parse_both_spellings)
{
	cr_assert_eq(comm_dtype_parse("float"), COMM_FLOAT32);
	cr_assert_eq(comm_dtype_parse("double"), COMM_FLOAT64);
	cr_assert_eq(comm_dtype_parse("half"), COMM_FP16);
	cr_assert_eq(comm_dtype_parse("bfloat16"), COMM_BF16);
	cr_assert_eq(comm_dtype_parse("int"), COMM_INT32);
	cr_assert_eq(comm_dtype_parse("int64"), COMM_INT64);
	cr_assert_eq(comm_dtype_parse("int8"), -EINVAL);
	cr_assert_eq(comm_op_parse("avg"), COMM_AVG);
	cr_assert_eq(comm_op_parse("mean"), -EINVAL);
	for (int t = 0; t < COMM_DTYPE_COUNT; t++)
		cr_assert_eq(comm_dtype_parse(comm_dtype_name((enum comm_dtype)t)), t);
	for (int o = 0; o < COMM_OP_COUNT; o++)
		cr_assert_eq(comm_op_parse(comm_op_name((enum comm_op)o)), o);
	cr_assert_eq(comm_dtype_size(COMM_BF16), 2);
	cr_assert_eq(comm_dtype_size(COMM_INT64), 8);
}
