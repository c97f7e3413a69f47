// SPDX-License-Identifier: MIT
/* The worker environment: defaults, and a one-line error naming the
 * variable for everything malformed. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <slotcomm/slotcomm.h>
#include "leak_check.h"

static const char *const *vars;

static const char *lookup(const char *name)
{
	for (const char *const *v = vars; *v; v += 2)
		if (strcmp(v[0], name) == 0)
			return v[1];
	return NULL;
}

static int parse(const char *const *table, struct slotcomm_config *cfg, char *err)
{
	vars = table;
	err[0] = '\0';
	return slotcomm_config_parse(cfg, lookup, err, SLOTCOMM_ERR_MAX);
}

LEAK_TEST(comm_config, full_environment)
{
	static const char *const env[] = {
		"RANK", "3", "WORLD_SIZE", "8", "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2",
		"MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "29500", "SLOTRUN_JOB_SECRET", "abc",
		"SLOTRUN_TIMEOUT", "2.5", "SLOTRUN_TRANSPORT", "tcp", "NCCL_SOCKET_IFNAME", "eth", NULL,
	};
	struct slotcomm_config c;
	char err[SLOTCOMM_ERR_MAX];

	cr_assert_eq(parse(env, &c, err), 0, "%s", err);
	cr_assert(c.rank == 3 && c.size == 8 && c.local_rank == 1 && c.local_size == 2);
	cr_assert_str_eq(c.master_addr, "10.0.0.1");
	cr_assert_eq(c.master_port, 29500);
	cr_assert_str_eq(c.secret, "abc");
	cr_assert_float_eq(c.timeout_s, 2.5, 1e-12);
	cr_assert_eq(c.transport, SLOTCOMM_TRANSPORT_TCP);
	cr_assert_str_eq(c.ifname, "eth");
	cr_assert_neq(c.host[0], '\0');
}

LEAK_TEST(comm_config, defaults)
{
	static const char *const env[] = { "RANK", "0", "WORLD_SIZE", "1", NULL };
	static const char *const env2[] = { "RANK", "2", "WORLD_SIZE", "4", "MASTER_ADDR", "h",
					    "MASTER_PORT", "1", NULL };
	struct slotcomm_config c;
	char err[SLOTCOMM_ERR_MAX];

	cr_assert_eq(parse(env, &c, err), 0, "%s", err);
	cr_assert_float_eq(c.timeout_s, SLOTCOMM_DEFAULT_TIMEOUT_S, 1e-12);
	cr_assert_eq(c.transport, SLOTCOMM_TRANSPORT_AUTO);
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
	struct slotcomm_config c;
	char err[SLOTCOMM_ERR_MAX];

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
		enum slotcomm_transport t;
	} ok[] = { { "", SLOTCOMM_TRANSPORT_AUTO }, { "auto", SLOTCOMM_TRANSPORT_AUTO },
		   { "tcp", SLOTCOMM_TRANSPORT_TCP }, { "shm", SLOTCOMM_TRANSPORT_SHM } };
	struct slotcomm_config c;
	char err[SLOTCOMM_ERR_MAX];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		const char *env[] = { "RANK", "0", "WORLD_SIZE", "1", "SLOTRUN_TRANSPORT", ok[i].value,
				      NULL };

		cr_assert_eq(parse(env, &c, err), 0, "%s: %s", ok[i].value, err);
		cr_assert_eq(c.transport, ok[i].t, "%s", ok[i].value);
	}
}

LEAK_TEST(comm_config, names_parse_both_spellings)
{
	cr_assert_eq(slotcomm_dtype_parse("float"), SLOTCOMM_FLOAT32);
	cr_assert_eq(slotcomm_dtype_parse("double"), SLOTCOMM_FLOAT64);
	cr_assert_eq(slotcomm_dtype_parse("half"), SLOTCOMM_FP16);
	cr_assert_eq(slotcomm_dtype_parse("bfloat16"), SLOTCOMM_BF16);
	cr_assert_eq(slotcomm_dtype_parse("int"), SLOTCOMM_INT32);
	cr_assert_eq(slotcomm_dtype_parse("int64"), SLOTCOMM_INT64);
	cr_assert_eq(slotcomm_dtype_parse("int8"), -EINVAL);
	cr_assert_eq(slotcomm_op_parse("avg"), SLOTCOMM_AVG);
	cr_assert_eq(slotcomm_op_parse("mean"), -EINVAL);
	for (int t = 0; t < SLOTCOMM_DTYPE_COUNT; t++)
		cr_assert_eq(slotcomm_dtype_parse(slotcomm_dtype_name((enum slotcomm_dtype)t)), t);
	for (int o = 0; o < SLOTCOMM_OP_COUNT; o++)
		cr_assert_eq(slotcomm_op_parse(slotcomm_op_name((enum slotcomm_op)o)), o);
	cr_assert_eq(slotcomm_dtype_size(SLOTCOMM_BF16), 2);
	cr_assert_eq(slotcomm_dtype_size(SLOTCOMM_INT64), 8);
}

/* A configuration filled by hand: slotcomm_init refuses each bad field
 * with one line naming it (and never starts a rendezvous). */
LEAK_TEST(comm_config, hand_filled_fields_are_checked)
{
	/* the field each case of the switch below spoils */
	static const char *const bad[] = {
		"size", "rank", "local_size", "local_rank", "master_addr", "master_port",
		"timeout_s", "transport", "host", "secret",
	};
	struct slotcomm_config good, c;
	struct slotcomm *comm = (struct slotcomm *)&c;
	char err[SLOTCOMM_ERR_MAX];

	slotcomm_config_init(&good);
	cr_assert_eq(slotcomm_config_check(&good, err, sizeof(err)), 0, "%s", err);
	good.size = 4;
	good.rank = 3;
	good.local_size = 2;
	good.local_rank = 1;
	strcpy(good.master_addr, "127.0.0.1");
	good.master_port = 29500;
	cr_assert_eq(slotcomm_config_check(&good, err, sizeof(err)), 0, "%s", err);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = good;
		switch (i) {
		case 0: c.size = 0; break;
		case 1: c.rank = 4; break;
		case 2: c.local_size = 0; break;
		case 3: c.local_rank = -1; break;
		case 4: c.master_addr[0] = '\0'; break;
		case 5: c.master_port = 70000; break;
		case 6: c.timeout_s = 0; break;
		case 7: c.transport = (enum slotcomm_transport)7; break;
		case 8: strcpy(c.host, "a\nb"); break;
		case 9: memset(c.secret, 'x', sizeof(c.secret)); break;
		}
		err[0] = '\0';
		cr_assert_eq(slotcomm_init(&comm, &c, err, sizeof(err)), -EINVAL, "%s", bad[i]);
		cr_assert_null(comm);
		cr_assert(strstr(err, "slotcomm_config.") && strstr(err, bad[i]) &&
			  !strchr(err, '\n'), "%s: %s", bad[i], err);
	}
}

LEAK_TEST(comm_config, version_matches_the_headers)
{
	cr_assert_str_eq(slotcomm_version(), SLOTCOMM_VERSION_STRING);
	cr_assert_geq(SLOTCOMM_VERSION_NUMBER, SLOTCOMM_VERSION_AT(0, 1, 0));
}

/* The defaults alone make a working communicator of one rank, no
 * environment needed. */
LEAK_TEST_OPTS(comm_config, hand_filled_single_rank_communicates, .timeout = 30)
{
	struct slotcomm_config cfg;
	struct slotcomm *c;
	char err[SLOTCOMM_ERR_MAX] = "";
	int32_t v[3] = { 1, -2, 7 };

	slotcomm_config_init(&cfg);
	cr_assert_eq(slotcomm_init(&c, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(slotcomm_size(c), 1);
	cr_assert_eq(slotcomm_rank(c), 0);
	cr_assert_neq(slotcomm_peer_host(c, 0)[0], '\0');
	cr_assert_eq(slotcomm_allreduce(c, v, 3, SLOTCOMM_INT32, SLOTCOMM_SUM), 0, "%s",
		     slotcomm_error(c));
	cr_assert(v[0] == 1 && v[1] == -2 && v[2] == 7);
	cr_assert_eq(slotcomm_barrier(c), 0);
	slotcomm_destroy(c);
}
