// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster_info.h"
#include "leak_check.h"
#include "tmp_dir.h"

#define CI_TEST(suite, name) LEAK_TEST(suite, name)

/* ---- a fake world: environment and files as values ---- */

#define INFO "/info"    /* SLOTRUN_DET_INFO_DIR in every test */

struct fake_file {
	const char *path;
	const char *text;
	int err;            /* read_file fails with this errno */
};

struct fake {
	const char *env[64][2];
	int nenv;
	struct fake_file files[8];
	int nfiles;
	int reads;
};

static struct fake F;
static struct ci_flags FL;
static struct cluster_info CI;
static char ERR[1024];

/* printf into a buffer that lives until the test ends */
static char pool[128][1024];
static int npool;

static const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt(const char *f, ...)
{
	va_list ap;
	char *b;

	cr_assert(npool < 128);
	b = pool[npool++];
	va_start(ap, f);
	vsnprintf(b, sizeof(pool[0]), f, ap);
	va_end(ap);
	return b;
}

static const char *fake_getenv(void *ctx, const char *name)
{
	struct fake *f = ctx;

	for (int i = f->nenv - 1; i >= 0; i--)
		if (!strcmp(f->env[i][0], name))
			return f->env[i][1];
	return NULL;
}

static char *fake_read(void *ctx, const char *path)
{
	struct fake *f = ctx;

	f->reads++;
	for (int i = 0; i < f->nfiles; i++) {
		if (strcmp(f->files[i].path, path))
			continue;
		if (f->files[i].err) {
			errno = f->files[i].err;
			return NULL;
		}
		return strdup(f->files[i].text);
	}
	errno = ENOENT;
	return NULL;
}

static void env(const char *name, const char *value)
{
	cr_assert(F.nenv < 64);
	F.env[F.nenv][0] = name;
	F.env[F.nenv][1] = value;
	F.nenv++;
}

static void file(const char *name, const char *text)
{
	cr_assert(F.nfiles < 8);
	F.files[F.nfiles].path = fmt("%s/%s", INFO, name);
	F.files[F.nfiles].text = text;
	F.nfiles++;
}

static void file_err(const char *name, int err)
{
	file(name, NULL);
	F.files[F.nfiles - 1].err = err;
}

static void reset(void)
{
	ci_free(&CI);
	memset(&F, 0, sizeof(F));
	memset(&FL, 0, sizeof(FL));
	memset(ERR, 0, sizeof(ERR));
	env("SLOTRUN_DET_INFO_DIR", INFO);
}

static void setup(void)
{
	npool = 0;
	reset();
}

static void teardown(void)
{
	ci_free(&CI);
}

static int load(int visible_gpus)
{
	struct ci_env e = { .getenv = fake_getenv, .read_file = fake_read, .ctx = &F };

	ci_free(&CI);
	return ci_load(&FL, &e, visible_gpus, &CI, ERR, sizeof(ERR));
}

static void load_ok(int visible_gpus)
{
	int r = load(visible_gpus);

	cr_assert_eq(r, 0, "ci_load failed (%d): %s", r, ERR);
	cr_assert_not_null(CI.addrs);
	cr_assert_not_null(CI.slot_counts);
}

/* Fails unless ci_load says -EINVAL with one line holding every string in
 * want (NULL-terminated), and leaves ci empty. */
static void load_fails(int visible_gpus, const char *const *want)
{
	static const struct cluster_info zero;
	int r = load(visible_gpus);

	cr_assert_eq(r, -EINVAL, "expected -EINVAL, got %d (err '%s')", r, ERR);
	cr_assert(ERR[0], "no message");
	cr_assert_null(strchr(ERR, '\n'), "message is not one line: '%s'", ERR);
	for (; *want; want++)
		cr_assert_not_null(strstr(ERR, *want), "message '%s' lacks '%s'", ERR, *want);
	cr_assert(!memcmp(&CI, &zero, sizeof(zero)), "ci not left empty on error");
}

#define FAILS(...) load_fails(0, (const char *const[]){ __VA_ARGS__, NULL })

TestSuite(ci, .init = setup, .fini = teardown);

/* ---- each source alone ---- */

CI_TEST(ci, default_single_node_with_gpus)
{
	load_ok(4);
	cr_assert_eq(CI.nnodes, 1);
	cr_assert_eq(CI.node_rank, 0);
	cr_assert_str_eq(CI.addrs[0], "127.0.0.1");
	cr_assert_eq(CI.slots, 4);
	cr_assert_eq(CI.slot_counts[0], 4);
	cr_assert_eq(CI.rank_base, 0);
	cr_assert_eq(CI.world_size, 4);
	cr_assert_null(CI.gpus, "the planner numbers the topology's GPUs");
	cr_assert_eq(CI.ngpus, 0);
	cr_assert_eq(CI.gpus_none, 0);
	cr_assert_eq(CI.master_port, CI_DEFAULT_MASTER_PORT);
	cr_assert_null(CI.iface);
	cr_assert_eq(CI.src_nnodes, CI_SRC_DEFAULT);
	cr_assert_eq(CI.src_node_rank, CI_SRC_DEFAULT);
	cr_assert_eq(CI.src_addrs, CI_SRC_DEFAULT);
	cr_assert_eq(CI.src_slots, CI_SRC_DEFAULT);
	cr_assert_eq(CI.src_master_port, CI_SRC_DEFAULT);
	cr_assert_eq(CI.src_iface, CI_SRC_DEFAULT);
	cr_assert_eq(CI.src_gpus, CI_SRC_DEFAULT);
}

CI_TEST(ci, default_without_gpus_is_one_slot)
{
	load_ok(0);
	cr_assert_eq(CI.slots, 1);
	cr_assert_eq(CI.world_size, 1);
	load_ok(-3);
	cr_assert_eq(CI.slots, 1);
}

CI_TEST(ci, default_reads_the_default_info_dir)
{
	struct ci_env e = { .getenv = fake_getenv, .read_file = fake_read, .ctx = &F };

	memset(&F, 0, sizeof(F));
	F.files[0].path = CI_DEFAULT_DET_INFO_DIR "/rendezvous.json";
	F.files[0].text = "{\"container_rank\": 0}";
	F.nfiles = 1;
	cr_assert_eq(ci_load(NULL, &e, 0, &CI, ERR, sizeof(ERR)), 0, "%s", ERR);
	cr_assert_eq(CI.src_node_rank, CI_SRC_DETERMINED);
}

CI_TEST(ci, flags_alone)
{
	FL = (struct ci_flags){ .nnodes = "2", .node_rank = "1", .addrs = "a.example, 10.0.0.2",
		.slots = "4", .master_port = "1234", .iface = "eth0" };
	load_ok(8);
	cr_assert_eq(CI.nnodes, 2);
	cr_assert_eq(CI.node_rank, 1);
	cr_assert_str_eq(CI.addrs[0], "a.example");
	cr_assert_str_eq(CI.addrs[1], "10.0.0.2");
	cr_assert_eq(CI.slots, 4);
	cr_assert_eq(CI.rank_base, 4);
	cr_assert_eq(CI.world_size, 8);
	cr_assert_eq(CI.master_port, 1234);
	cr_assert_str_eq(CI.iface, "eth0");
	cr_assert_eq(CI.src_nnodes, CI_SRC_FLAG);
	cr_assert_eq(CI.src_node_rank, CI_SRC_FLAG);
	cr_assert_eq(CI.src_addrs, CI_SRC_FLAG);
	cr_assert_eq(CI.src_slots, CI_SRC_FLAG);
	cr_assert_eq(CI.src_master_port, CI_SRC_FLAG);
	cr_assert_eq(CI.src_iface, CI_SRC_FLAG);
	cr_assert_eq(CI.src_gpus, CI_SRC_DEFAULT);
}

CI_TEST(ci, addrs_alone_imply_node_count)
{
	FL.addrs = "h0,h1,h2";
	FL.node_rank = "2";
	load_ok(0);
	cr_assert_eq(CI.nnodes, 3);
	cr_assert_eq(CI.src_nnodes, CI_SRC_FLAG);
	cr_assert_eq(CI.world_size, 3);
}

CI_TEST(ci, determined_alone)
{
	file("rendezvous.json", "{\"container_addrs\": [\"10.0.0.1\", \"10.0.0.2\"],"
	     " \"container_rank\": 1, \"container_slot_counts\": [2, 2], \"extra\": {}}");
	file("cluster.json", "{\"master_url\": \"http://m:8080\", \"slot_ids\": [3, 5],"
	     " \"gpu_uuids\": [\"GPU-a\", \"GPU-b\"], \"trial_info\": null}");
	env("DET_INTER_NODE_NETWORK_INTERFACE", "ib0");
	env("C10D_PORT", "29500");
	load_ok(8);
	cr_assert_eq(CI.nnodes, 2);
	cr_assert_eq(CI.node_rank, 1);
	cr_assert_str_eq(CI.addrs[0], "10.0.0.1");
	cr_assert_str_eq(CI.addrs[1], "10.0.0.2");
	cr_assert_eq(CI.slots, 2);
	cr_assert_eq(CI.rank_base, 2);
	cr_assert_eq(CI.world_size, 4);
	cr_assert_eq(CI.ngpus, 2);
	cr_assert_str_eq(CI.gpus[0], "3");
	cr_assert_str_eq(CI.gpus[1], "5");
	cr_assert_eq(CI.master_port, 29500);
	cr_assert_str_eq(CI.iface, "ib0");
	cr_assert_eq(CI.src_nnodes, CI_SRC_DETERMINED);
	cr_assert_eq(CI.src_node_rank, CI_SRC_DETERMINED);
	cr_assert_eq(CI.src_addrs, CI_SRC_DETERMINED);
	cr_assert_eq(CI.src_slots, CI_SRC_DETERMINED);
	cr_assert_eq(CI.src_gpus, CI_SRC_DETERMINED);
	cr_assert_eq(CI.src_master_port, CI_SRC_DETERMINED);
	cr_assert_eq(CI.src_iface, CI_SRC_DETERMINED);
}

CI_TEST(ci, determined_slot_ids_env_beats_cluster_json_and_sets_slots)
{
	file("cluster.json", "{\"slot_ids\": [0, 1, 2, 3]}");
	env("DET_SLOT_IDS", " [ 6 ,7 ] ");
	load_ok(8);
	cr_assert_eq(CI.ngpus, 2);
	cr_assert_str_eq(CI.gpus[0], "6");
	cr_assert_str_eq(CI.gpus[1], "7");
	cr_assert_eq(CI.slots, 2, "slots follow the GPU list");
	cr_assert_eq(CI.src_slots, CI_SRC_DETERMINED);
}

CI_TEST(ci, determined_cluster_json_slot_ids)
{
	file("cluster.json", "{\"slot_ids\": [0, 1, 2]}");
	load_ok(8);
	cr_assert_eq(CI.ngpus, 3);
	cr_assert_eq(CI.slots, 3);
}

CI_TEST(ci, determined_nulls_and_empty_lists_are_absent)
{
	/* Go writes nil slices as null */
	file("rendezvous.json", "{\"container_addrs\": null, \"container_rank\": null,"
	     " \"container_slot_counts\": []}");
	file("cluster.json", "{\"slot_ids\": null}");
	env("DET_INTER_NODE_NETWORK_INTERFACE", "");
	load_ok(2);
	cr_assert_eq(CI.nnodes, 1);
	cr_assert_eq(CI.slots, 2);
	cr_assert_null(CI.iface);
	cr_assert_eq(CI.src_nnodes, CI_SRC_DEFAULT);
	cr_assert_eq(CI.src_gpus, CI_SRC_DEFAULT);
}

CI_TEST(ci, determined_empty_container_addrs_is_an_error)
{
	file("rendezvous.json", "{\"container_addrs\": [], \"container_rank\": 0}");
	FAILS("rendezvous.json: container_addrs is empty: expected the address of every container of the "
	      "trial, this one's included");
}

CI_TEST(ci, determined_parts_alone)
{
	file("rendezvous.json", "{\"container_slot_counts\": [3, 5]}");
	FL.node_rank = "1";
	FL.addrs = "a,b";
	load_ok(0);
	cr_assert_eq(CI.slots, 5);
	cr_assert_eq(CI.rank_base, 3);
	cr_assert_eq(CI.world_size, 8);
	cr_assert_eq(CI.src_slots, CI_SRC_DETERMINED);
}

CI_TEST(ci, determined_cpu_container_has_no_gpus)
{
	env("DET_SLOT_IDS", "[]");
	load_ok(4);
	cr_assert_eq(CI.gpus_none, 1);
	cr_assert_null(CI.gpus);
	cr_assert_eq(CI.slots, 1, "the topology's GPUs are not ours");
	cr_assert_eq(CI.src_gpus, CI_SRC_DETERMINED);
}

CI_TEST(ci, slurm_alone)
{
	env("SLURM_JOB_NODELIST", "gpu[01-02],cpu-a1");
	env("SLURM_NODEID", "2");
	env("SLURM_NNODES", "3");
	env("SLURM_STEP_GPUS", "2,3");
	env("SLURM_JOB_GPUS", "0,1,2,3");
	load_ok(8);
	cr_assert_eq(CI.nnodes, 3);
	cr_assert_eq(CI.node_rank, 2);
	cr_assert_str_eq(CI.addrs[0], "gpu01");
	cr_assert_str_eq(CI.addrs[2], "cpu-a1");
	cr_assert_eq(CI.ngpus, 2);
	cr_assert_str_eq(CI.gpus[0], "2");
	cr_assert_eq(CI.slots, 2);
	cr_assert_eq(CI.rank_base, 4);
	cr_assert_eq(CI.world_size, 6);
	cr_assert_eq(CI.src_nnodes, CI_SRC_SLURM);
	cr_assert_eq(CI.src_node_rank, CI_SRC_SLURM);
	cr_assert_eq(CI.src_addrs, CI_SRC_SLURM);
	cr_assert_eq(CI.src_gpus, CI_SRC_SLURM);
	cr_assert_eq(CI.src_slots, CI_SRC_SLURM);
	cr_assert_eq(CI.src_master_port, CI_SRC_DEFAULT);
}

CI_TEST(ci, slurm_job_gpus_when_no_step_gpus)
{
	env("SLURM_NODEID", "0");
	env("SLURM_STEP_GPUS", "");
	env("SLURM_JOB_GPUS", "4,5,6");
	env("CUDA_VISIBLE_DEVICES", "0,1,2");
	load_ok(8);
	cr_assert_eq(CI.ngpus, 3);
	cr_assert_str_eq(CI.gpus[0], "4");
	cr_assert_eq(CI.src_gpus, CI_SRC_SLURM);
}

CI_TEST(ci, slurm_noise_without_nodelist_or_nodeid_is_ignored)
{
	env("SLURM_NNODES", "4");
	env("SLURM_STEP_GPUS", "0,1");
	env("SLURM_JOB_GPUS", "x");
	env("SLURM_CONF", "/etc/slurm/slurm.conf");
	load_ok(0);
	cr_assert_eq(CI.nnodes, 1);
	cr_assert_null(CI.gpus);
	cr_assert_eq(CI.src_nnodes, CI_SRC_DEFAULT);
}

CI_TEST(ci, slurm_nodeid_alone_is_a_source)
{
	env("SLURM_NODEID", "0");
	env("SLURM_JOB_GPUS", "1");
	load_ok(4);
	cr_assert_eq(CI.src_node_rank, CI_SRC_SLURM);
	cr_assert_eq(CI.ngpus, 1);
}

CI_TEST(ci, slotrun_env_alone)
{
	env("SLOTRUN_NNODES", "3");
	env("SLOTRUN_NODE_RANK", "1");
	env("SLOTRUN_ADDRS", "n0,n1,n2");
	env("SLOTRUN_SLOTS", "2");
	env("SLOTRUN_MASTER_PORT", "4000");
	env("SLOTRUN_IFACE", "enp1s0f0");
	load_ok(0);
	cr_assert_eq(CI.nnodes, 3);
	cr_assert_eq(CI.node_rank, 1);
	cr_assert_str_eq(CI.addrs[2], "n2");
	cr_assert_eq(CI.slots, 2);
	cr_assert_eq(CI.rank_base, 2);
	cr_assert_eq(CI.world_size, 6);
	cr_assert_eq(CI.master_port, 4000);
	cr_assert_str_eq(CI.iface, "enp1s0f0");
	cr_assert_eq(CI.src_nnodes, CI_SRC_SLOTRUN_ENV);
	cr_assert_eq(CI.src_node_rank, CI_SRC_SLOTRUN_ENV);
	cr_assert_eq(CI.src_addrs, CI_SRC_SLOTRUN_ENV);
	cr_assert_eq(CI.src_slots, CI_SRC_SLOTRUN_ENV);
	cr_assert_eq(CI.src_master_port, CI_SRC_SLOTRUN_ENV);
	cr_assert_eq(CI.src_iface, CI_SRC_SLOTRUN_ENV);
}

CI_TEST(ci, cuda_visible_devices_alone_keeps_uuids)
{
	env("CUDA_VISIBLE_DEVICES", "GPU-8a1b2c3d-0000-1111-2222-333344445555, MIG-5e6f,3");
	load_ok(8);
	cr_assert_eq(CI.ngpus, 3);
	cr_assert_str_eq(CI.gpus[0], "GPU-8a1b2c3d-0000-1111-2222-333344445555");
	cr_assert_str_eq(CI.gpus[1], "MIG-5e6f");
	cr_assert_str_eq(CI.gpus[2], "3");
	cr_assert_eq(CI.slots, 3);
	cr_assert_eq(CI.src_gpus, CI_SRC_SLOTRUN_ENV);
	cr_assert_eq(CI.src_slots, CI_SRC_SLOTRUN_ENV);
}

CI_TEST(ci, cuda_visible_devices_hiding_every_gpu)
{
	const char *hide[] = { "", "-1", "NoDevFiles" };

	for (size_t i = 0; i < sizeof(hide) / sizeof(hide[0]); i++) {
		reset();
		env("CUDA_VISIBLE_DEVICES", hide[i]);
		load_ok(4);
		cr_assert_eq(CI.gpus_none, 1, "'%s'", hide[i]);
		cr_assert_null(CI.gpus);
		cr_assert_eq(CI.slots, 1);
		/* CPU slots: any explicit count is fine */
		FL.slots = "3";
		load_ok(4);
		cr_assert_eq(CI.slots, 3);
	}
}

CI_TEST(ci, null_flags_are_no_flags)
{
	struct ci_env e = { .getenv = fake_getenv, .read_file = fake_read, .ctx = &F };

	env("SLOTRUN_SLOTS", "2");
	cr_assert_eq(ci_load(NULL, &e, 0, &CI, ERR, sizeof(ERR)), 0, "%s", ERR);
	cr_assert_eq(CI.slots, 2);
}

/* ---- precedence: every pair of sources, every field ---- */

enum field { F_NODES, F_RANK, F_SLOTS, F_PORT, F_IFACE, F_GPUS, NFIELDS };

static const char *const field_name[] = { "nnodes/addrs", "node_rank", "slots", "master_port",
					  "iface", "gpus" };

/* Which sources can name a field: Slurm names no slot count, no port and
 * no interface; torchrun's PET_* no interface and no GPUs; an Indexed Job
 * only the rank. */
static bool supplies(enum ci_source s, enum field f)
{
	if (s == CI_SRC_SLURM)
		return f == F_NODES || f == F_RANK || f == F_GPUS;
	if (s == CI_SRC_TORCHRUN)
		return f != F_IFACE && f != F_GPUS;
	if (s == CI_SRC_INDEXED_JOB)
		return f == F_RANK;
	if (f == F_GPUS)
		return s != CI_SRC_FLAG;
	return true;
}

static void slurm_on(void)
{
	if (!fake_getenv(&F, "SLURM_NODEID"))
		env("SLURM_NODEID", "0");
}

/* Gives field f from source s: variant 0 the "winner" values, 1 the "loser"
 * ones; values also differ by source, so a check knows who won. */
static void give(enum ci_source s, enum field f, int v)
{
	int k = (int)s * 10 + v;
	int n = 2 + v, i;              /* node counts: 2 for winners, 3 for losers */
	char list[256] = "";

	switch (f) {
	case F_NODES:
		for (i = 0; i < n; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%sh%d-%d",
				 i ? "," : "", k, i);
		switch (s) {
		case CI_SRC_FLAG:
			FL.nnodes = fmt("%d", n);
			FL.addrs = fmt("%s", list);
			FL.node_rank = fmt("%d", n - 1);
			break;
		case CI_SRC_DETERMINED: {
			char js[256] = "";
			for (i = 0; i < n; i++)
				snprintf(js + strlen(js), sizeof(js) - strlen(js), "%s\"h%d-%d\"",
					 i ? "," : "", k, i);
			file("rendezvous.json", fmt("{\"container_addrs\":[%s],\"container_rank\":%d}",
						    js, n - 1));
			break;
		}
		case CI_SRC_SLURM:
			env("SLURM_JOB_NODELIST", fmt("h%d-[0-%d]", k, n - 1));
			env("SLURM_NNODES", fmt("%d", n));
			env("SLURM_NODEID", fmt("%d", n - 1));
			break;
		case CI_SRC_TORCHRUN:    /* the chief's address alone */
			env("PET_NNODES", fmt("%d", n));
			env("PET_MASTER_ADDR", fmt("h%d-0", k));
			env("PET_NODE_RANK", fmt("%d", n - 1));
			break;
		case CI_SRC_SLOTRUN_ENV:
			env("SLOTRUN_NNODES", fmt("%d", n));
			env("SLOTRUN_ADDRS", fmt("%s", list));
			env("SLOTRUN_NODE_RANK", fmt("%d", n - 1));
			break;
		default:
			cr_assert_fail();
		}
		break;
	case F_RANK:
		/* the winner names only a rank (1); the loser a whole 4-node job
		 * with rank 2 */
		if (v == 1) {
			switch (s) {
			case CI_SRC_DETERMINED:
				file("rendezvous.json", fmt("{\"container_addrs\":[\"a\",\"b\",\"c\","
							    "\"d\"],\"container_rank\":2}"));
				break;
			case CI_SRC_SLURM:
				env("SLURM_JOB_NODELIST", "d[1-4]");
				env("SLURM_NODEID", "2");
				break;
			case CI_SRC_TORCHRUN:
				env("PET_NNODES", "4");
				env("PET_MASTER_ADDR", "a");
				env("PET_NODE_RANK", "2");
				break;
			case CI_SRC_INDEXED_JOB:
				/* the index names no nodes: SLOTRUN_ADDRS does */
				env("JOB_COMPLETION_INDEX", "2");
				env("SLOTRUN_ADDRS", "a,b,c,d");
				break;
			case CI_SRC_SLOTRUN_ENV:
				env("SLOTRUN_ADDRS", "a,b,c,d");
				env("SLOTRUN_NODE_RANK", "2");
				break;
			default:
				cr_assert_fail();
			}
			break;
		}
		switch (s) {
		case CI_SRC_FLAG: FL.node_rank = "1"; break;
		case CI_SRC_DETERMINED: file("rendezvous.json", "{\"container_rank\":1}"); break;
		case CI_SRC_SLURM: env("SLURM_NODEID", "1"); break;
		case CI_SRC_TORCHRUN: env("PET_NODE_RANK", "1"); break;
		case CI_SRC_INDEXED_JOB: env("JOB_COMPLETION_INDEX", "1"); break;
		case CI_SRC_SLOTRUN_ENV: env("SLOTRUN_NODE_RANK", "1"); break;
		default: cr_assert_fail();
		}
		break;
	case F_SLOTS:
		switch (s) {
		case CI_SRC_FLAG: FL.slots = fmt("%d", 2 + k); break;
		case CI_SRC_DETERMINED:
			file("rendezvous.json", fmt("{\"container_slot_counts\":[%d]}", 2 + k));
			break;
		case CI_SRC_TORCHRUN: env("PET_NPROC_PER_NODE", fmt("%d", 2 + k)); break;
		case CI_SRC_SLOTRUN_ENV: env("SLOTRUN_SLOTS", fmt("%d", 2 + k)); break;
		default: cr_assert_fail();
		}
		break;
	case F_PORT:
		switch (s) {
		case CI_SRC_FLAG: FL.master_port = fmt("%d", 20000 + k); break;
		case CI_SRC_DETERMINED: env("C10D_PORT", fmt("%d", 20000 + k)); break;
		case CI_SRC_TORCHRUN: env("PET_MASTER_PORT", fmt("%d", 20000 + k)); break;
		case CI_SRC_SLOTRUN_ENV: env("SLOTRUN_MASTER_PORT", fmt("%d", 20000 + k)); break;
		default: cr_assert_fail();
		}
		break;
	case F_IFACE:
		switch (s) {
		case CI_SRC_FLAG: FL.iface = fmt("if%d", k); break;
		case CI_SRC_DETERMINED: env("DET_INTER_NODE_NETWORK_INTERFACE", fmt("if%d", k)); break;
		case CI_SRC_SLOTRUN_ENV: env("SLOTRUN_IFACE", fmt("if%d", k)); break;
		default: cr_assert_fail();
		}
		break;
	case F_GPUS:
		switch (s) {
		case CI_SRC_DETERMINED: env("DET_SLOT_IDS", fmt("[%d,%d]", k, k + 100)); break;
		case CI_SRC_SLURM:
			slurm_on();
			env("SLURM_STEP_GPUS", fmt("%d,%d", k, k + 100));
			break;
		case CI_SRC_SLOTRUN_ENV: env("CUDA_VISIBLE_DEVICES", fmt("%d,%d", k, k + 100)); break;
		default: cr_assert_fail();
		}
		break;
	default:
		cr_assert_fail();
	}
}

/* Checks that field f holds source s's variant-v values. */
static void check(enum ci_source s, enum field f, int v, const char *ctx)
{
	int k = (int)s * 10 + v, n = 2 + v;

	switch (f) {
	case F_NODES:
		cr_assert_eq(CI.nnodes, n, "%s", ctx);
		cr_assert_eq(CI.node_rank, n - 1, "%s", ctx);
		cr_assert_str_eq(CI.addrs[0], fmt("h%d-0", k), "%s", ctx);
		cr_assert_str_eq(CI.addrs[n - 1], s == CI_SRC_TORCHRUN ? CI_ADDR_UNKNOWN :
				 fmt("h%d-%d", k, n - 1), "%s", ctx);
		cr_assert_eq(CI.src_nnodes, s, "%s", ctx);
		cr_assert_eq(CI.src_addrs, s, "%s", ctx);
		cr_assert_eq(CI.src_node_rank, s, "%s", ctx);
		break;
	case F_RANK:
		cr_assert_eq(CI.node_rank, v ? 2 : 1, "%s", ctx);
		cr_assert_eq(CI.src_node_rank, s, "%s", ctx);
		break;
	case F_SLOTS:
		cr_assert_eq(CI.slots, 2 + k, "%s", ctx);
		cr_assert_eq(CI.src_slots, s, "%s", ctx);
		break;
	case F_PORT:
		cr_assert_eq(CI.master_port, 20000 + k, "%s", ctx);
		cr_assert_eq(CI.src_master_port, s, "%s", ctx);
		break;
	case F_IFACE:
		cr_assert_str_eq(CI.iface, fmt("if%d", k), "%s", ctx);
		cr_assert_eq(CI.src_iface, s, "%s", ctx);
		break;
	case F_GPUS:
		cr_assert_eq(CI.ngpus, 2, "%s", ctx);
		cr_assert_str_eq(CI.gpus[0], fmt("%d", k), "%s", ctx);
		cr_assert_str_eq(CI.gpus[1], fmt("%d", k + 100), "%s", ctx);
		cr_assert_eq(CI.src_gpus, s, "%s", ctx);
		cr_assert_eq(CI.slots, 2, "%s", ctx);
		break;
	default:
		cr_assert_fail();
	}
}

static const enum ci_source by_precedence[] = { CI_SRC_FLAG, CI_SRC_DETERMINED, CI_SRC_SLURM,
						CI_SRC_TORCHRUN, CI_SRC_INDEXED_JOB,
						CI_SRC_SLOTRUN_ENV };
#define NSRC ((int)(sizeof(by_precedence) / sizeof(by_precedence[0])))

CI_TEST(ci, each_source_alone_for_every_field)
{
	for (int f = 0; f < NFIELDS; f++)
		for (int i = 0; i < NSRC; i++) {
			enum ci_source s = by_precedence[i];
			const char *ctx;
			if (!supplies(s, (enum field)f))
				continue;
			reset();
			npool = 0;
			ctx = fmt("%s from %s alone", field_name[f], ci_source_name(s));
			if (f == F_RANK && s == CI_SRC_FLAG)
				continue;    /* a rank needs nodes: covered by the pairs */
			give(s, (enum field)f, 1);
			cr_assert_eq(load(0), 0, "%s: %s", ctx, ERR);
			check(s, (enum field)f, 1, ctx);
		}
}

CI_TEST(ci, every_pair_higher_source_wins_every_field)
{
	int pairs = 0;

	for (int f = 0; f < NFIELDS; f++)
		for (int hi = 0; hi < NSRC; hi++)
			for (int lo = hi + 1; lo < NSRC; lo++) {
				enum ci_source h = by_precedence[hi], l = by_precedence[lo];
				const char *ctx;
				if (!supplies(h, (enum field)f) || !supplies(l, (enum field)f))
					continue;
				/* a count with the chief alone over a lower list of
				 * another length disagrees: chief_over_a_lower_list */
				if (f == F_NODES && h == CI_SRC_TORCHRUN)
					continue;
				reset();
				npool = 0;
				ctx = fmt("%s: %s over %s", field_name[f], ci_source_name(h),
					  ci_source_name(l));
				give(h, (enum field)f, 0);
				give(l, (enum field)f, 1);
				cr_assert_eq(load(0), 0, "%s: %s", ctx, ERR);
				check(h, (enum field)f, 0, ctx);
				if (f == F_RANK) {
					/* the loser still named the nodes */
					cr_assert_eq(CI.nnodes, 4, "%s", ctx);
					cr_assert_eq(CI.src_nnodes, l == CI_SRC_INDEXED_JOB ?
						     CI_SRC_SLOTRUN_ENV : l, "%s", ctx);
				}
				pairs++;
			}
	/* nodes 10 - 1 + rank 15 + slots 6 + port 6 + iface 3 + gpus 3 */
	cr_assert_eq(pairs, 42);
}

CI_TEST(ci, gpu_list_sets_slots_only_when_no_explicit_count)
{
	env("CUDA_VISIBLE_DEVICES", "0,1,2");
	load_ok(8);
	cr_assert_eq(CI.slots, 3);
	cr_assert_eq(CI.src_slots, CI_SRC_SLOTRUN_ENV);
	env("SLOTRUN_SLOTS", "3");
	load_ok(8);
	cr_assert_eq(CI.slots, 3, "agreeing explicit count");
	cr_assert_eq(CI.src_slots, CI_SRC_SLOTRUN_ENV);
}

CI_TEST(ci, explicit_slots_without_gpu_list_leave_gpus_to_the_planner)
{
	FL.slots = "2";
	load_ok(8);
	cr_assert_eq(CI.slots, 2);
	cr_assert_null(CI.gpus);
	cr_assert_eq(CI.gpus_none, 0);
}

/* ---- heterogeneous and uniform slot counts ---- */

CI_TEST(ci, heterogeneous_counts_from_determined)
{
	file("rendezvous.json", "{\"container_addrs\":[\"a\",\"b\",\"c\"],\"container_rank\":2,"
	     "\"container_slot_counts\":[8,4,2]}");
	load_ok(2);
	cr_assert_eq(CI.slots, 2);
	cr_assert_eq(CI.rank_base, 12);
	cr_assert_eq(CI.world_size, 14);
	cr_assert_eq(CI.slot_counts[0], 8);
	cr_assert_eq(CI.slot_counts[1], 4);
	cr_assert_eq(CI.slot_counts[2], 2);
}

CI_TEST(ci, heterogeneous_counts_from_flag_list)
{
	FL.slots = "2, 3";
	FL.node_rank = "1";
	FL.addrs = "a,b";
	load_ok(0);
	cr_assert_eq(CI.slots, 3);
	cr_assert_eq(CI.rank_base, 2);
	cr_assert_eq(CI.world_size, 5);
	cr_assert_eq(CI.nnodes, 2);
}

CI_TEST(ci, slot_list_alone_implies_node_count)
{
	env("SLOTRUN_SLOTS", "1,2,3");
	env("SLOTRUN_NODE_RANK", "0");
	env("SLOTRUN_ADDRS", "a,b,c");
	load_ok(0);
	cr_assert_eq(CI.nnodes, 3);
	cr_assert_eq(CI.world_size, 6);
}

CI_TEST(ci, uniform_count_is_assumed_for_every_node)
{
	FL.slots = "4";
	FL.addrs = "a,b,c";
	FL.node_rank = "2";
	load_ok(0);
	cr_assert_eq(CI.rank_base, 8);
	cr_assert_eq(CI.world_size, 12);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(CI.slot_counts[i], 4);
}

CI_TEST(ci, gpu_derived_count_is_assumed_for_every_node)
{
	env("SLURM_JOB_NODELIST", "n[1-4]");
	env("SLURM_NODEID", "3");
	env("SLURM_STEP_GPUS", "0,1");
	load_ok(8);
	cr_assert_eq(CI.rank_base, 6);
	cr_assert_eq(CI.world_size, 8);
}

/* ---- errors: Determined ---- */

CI_TEST(ci, rendezvous_bad_json)
{
	file("rendezvous.json", "{\"container_rank\": 1,");
	FAILS(INFO "/rendezvous.json", "invalid JSON", "line 1");
	reset();
	file("rendezvous.json", "");
	FAILS("rendezvous.json", "invalid JSON");
	reset();
	file("rendezvous.json", "{\"container_rank\": 1} trailing");
	FAILS("rendezvous.json", "invalid JSON");
	reset();
	file("rendezvous.json", "{\"container_rank\": 1, \"container_rank\": 0}");
	FAILS("rendezvous.json", "invalid JSON", "duplicate");
}

CI_TEST(ci, rendezvous_not_an_object)
{
	file("rendezvous.json", "[1, 2]");
	FAILS("rendezvous.json", "expected a JSON object, got array");
}

CI_TEST(ci, rendezvous_wrong_types)
{
	file("rendezvous.json", "{\"container_rank\": \"1\"}");
	FAILS("rendezvous.json: container_rank must be an integer, got string");
	reset();
	file("rendezvous.json", "{\"container_rank\": 1.5}");
	FAILS("rendezvous.json: container_rank must be an integer, got number with a fraction");
	reset();
	file("rendezvous.json", "{\"container_rank\": true}");
	FAILS("container_rank must be an integer, got boolean");
	reset();
	file("rendezvous.json", "{\"container_addrs\": \"10.0.0.1\"}");
	FAILS("rendezvous.json: container_addrs must be a list, got string");
	reset();
	file("rendezvous.json", "{\"container_addrs\": [\"10.0.0.1\", 7]}");
	FAILS("rendezvous.json: container_addrs entry 1 must be a string, got integer");
	reset();
	file("rendezvous.json", "{\"container_addrs\": [\"10.0.0.1\", \"bad host\"]}");
	FAILS("rendezvous.json: container_addrs entry 1 'bad host' is not a host name");
	reset();
	file("rendezvous.json", "{\"container_addrs\": [\"\"]}");
	FAILS("container_addrs entry 0", "is not a host name");
	reset();
	file("rendezvous.json", "{\"container_slot_counts\": {\"a\": 1}}");
	FAILS("rendezvous.json: container_slot_counts must be a list, got object");
	reset();
	file("rendezvous.json", "{\"container_slot_counts\": [8, \"8\"]}");
	FAILS("rendezvous.json container_slot_counts: entry 1 must be an integer, got string");
}

CI_TEST(ci, rendezvous_values_out_of_range)
{
	file("rendezvous.json", "{\"container_rank\": -1}");
	FAILS("rendezvous.json: container_rank -1 is out of range: expected 0..65535");
	reset();
	file("rendezvous.json", "{\"container_rank\": 99999999999999999}");
	FAILS("container_rank", "out of range");
	reset();
	file("rendezvous.json", "{\"container_slot_counts\": [8, 0]}");
	FAILS("container_slot_counts", "entry 1 (0) is out of range: expected 1..1024");
	reset();
	file("rendezvous.json", "{\"container_slot_counts\": [1025]}");
	FAILS("container_slot_counts", "out of range");
}

CI_TEST(ci, rendezvous_parts_disagree)
{
	file("rendezvous.json", "{\"container_addrs\": [\"a\", \"b\"],"
	     " \"container_slot_counts\": [8, 8, 8]}");
	FAILS("rendezvous.json container_slot_counts has 3 entries",
	      "rendezvous.json container_addrs", "2 nodes");
	reset();
	file("rendezvous.json", "{\"container_addrs\": [\"a\", \"b\"], \"container_rank\": 2}");
	FAILS("rendezvous.json container_rank 2 is out of range",
	      "rendezvous.json container_addrs names 2 nodes (0..1)");
	reset();
	file("rendezvous.json", "{\"container_slot_counts\": [4], \"container_rank\": 1}");
	FAILS("container_rank 1 is out of range", "container_slot_counts names 1 nodes (0..0)");
}

CI_TEST(ci, info_files_unreadable)
{
	file_err("rendezvous.json", EACCES);
	FAILS(INFO "/rendezvous.json: cannot read: Permission denied");
	reset();
	file_err("cluster.json", EIO);
	FAILS(INFO "/cluster.json: cannot read: Input/output error");
	reset();
	file_err("cluster.json", EFBIG);
	FAILS(INFO "/cluster.json: cannot read: larger than 1048576 bytes");
	reset();
	file_err("rendezvous.json", EISDIR);
	FAILS("rendezvous.json: cannot read: Is a directory");
	reset();
	file_err("rendezvous.json", EINVAL);
	FAILS("rendezvous.json: cannot read: not a regular file");
}

CI_TEST(ci, info_dir_is_where_files_are_read)
{
	memset(&F, 0, sizeof(F));
	env("SLOTRUN_DET_INFO_DIR", "/elsewhere");
	F.files[0].path = "/elsewhere/rendezvous.json";
	F.files[0].text = "{\"container_rank\": \"x\"}";
	F.nfiles = 1;
	FAILS("container_rank must be an integer");
	reset();
	F.env[0][1] = "";
	FAILS("SLOTRUN_DET_INFO_DIR ''", "expected a directory");
}

CI_TEST(ci, cluster_json_errors)
{
	file("cluster.json", "{\"slot_ids\": [0, 1]");
	FAILS("cluster.json", "invalid JSON");
	reset();
	file("cluster.json", "\"slot_ids\"");
	FAILS("cluster.json", "invalid JSON");
	reset();
	file("cluster.json", "{\"slot_ids\": \"0,1\"}");
	FAILS("cluster.json: slot_ids must be a list of integers, got string");
	reset();
	file("cluster.json", "{\"slot_ids\": [0, \"1\"]}");
	FAILS("cluster.json slot_ids: entry 1 must be an integer, got string");
	reset();
	file("cluster.json", "{\"slot_ids\": [0, -2]}");
	FAILS("cluster.json slot_ids: entry 1 (-2) is out of range");
	reset();
	file("cluster.json", "{\"slot_ids\": [1, 1]}");
	FAILS("cluster.json slot_ids", "GPU '1' is listed twice");
}

CI_TEST(ci, det_slot_ids_errors)
{
	const char *bad[] = { "[0,x]", "0,1", "", "{\"a\": 1}", "[0,1", "7", "[[0]]", "[0.5]",
			      "[\"0\"]", "[0,-1]", "[0] junk" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		reset();
		env("DET_SLOT_IDS", bad[i]);
		load_fails(0, (const char *const[]){ fmt("DET_SLOT_IDS '%s'", bad[i]), NULL });
	}
	reset();
	env("DET_SLOT_IDS", "[0,x]");
	FAILS("DET_SLOT_IDS '[0,x]': expected a JSON list of integers");
	reset();
	env("DET_SLOT_IDS", "[0,0]");
	FAILS("DET_SLOT_IDS '[0,0]': GPU '0' is listed twice");
}

CI_TEST(ci, det_iface_and_port_errors)
{
	env("DET_INTER_NODE_NETWORK_INTERFACE", "eth 0");
	FAILS("DET_INTER_NODE_NETWORK_INTERFACE 'eth 0'", "network interface name");
	reset();
	env("C10D_PORT", "0");
	FAILS("C10D_PORT '0' is out of range: expected 1..65535");
	reset();
	env("C10D_PORT", "65536");
	FAILS("C10D_PORT '65536' is out of range");
	reset();
	env("C10D_PORT", "29500x");
	FAILS("C10D_PORT '29500x': expected an integer in 1..65535");
	reset();
	env("C10D_PORT", "");
	FAILS("C10D_PORT ''", "expected an integer");
}

/* ---- errors: Slurm ---- */

CI_TEST(ci, slurm_nodeid_out_of_range)
{
	env("SLURM_JOB_NODELIST", "n[1-4]");
	env("SLURM_NODEID", "7");
	FAILS("SLURM_NODEID '7' is out of range: SLURM_JOB_NODELIST 'n[1-4]' names 4 nodes (0..3)");
	reset();
	env("SLURM_NODEID", "3");
	env("SLURM_NNODES", "2");
	FAILS("SLURM_NODEID '3' is out of range", "SLURM_NNODES '2' names 2 nodes (0..1)");
	reset();
	env("SLURM_NODEID", "-1");
	FAILS("SLURM_NODEID '-1' is out of range");
	reset();
	env("SLURM_NODEID", "one");
	FAILS("SLURM_NODEID 'one': expected an integer");
}

CI_TEST(ci, slurm_nnodes_must_agree_with_the_list)
{
	env("SLURM_JOB_NODELIST", "n[1-4]");
	env("SLURM_NNODES", "3");
	env("SLURM_NODEID", "0");
	FAILS("SLURM_JOB_NODELIST 'n[1-4]' (4 addresses) disagrees with SLURM_NNODES '3' (3 nodes)");
	reset();
	env("SLURM_JOB_NODELIST", "n1");
	env("SLURM_NNODES", "0");
	FAILS("SLURM_NNODES '0' is out of range: expected 1..65536");
	reset();
	env("SLURM_JOB_NODELIST", "n1");
	env("SLURM_NNODES", "65537");
	FAILS("SLURM_NNODES '65537' is out of range");
}

CI_TEST(ci, slurm_bad_nodelist)
{
	env("SLURM_JOB_NODELIST", "gpu[01-");
	FAILS("SLURM_JOB_NODELIST 'gpu[01-': unclosed '['");
	reset();
	env("SLURM_NODEID", "0");
	env("SLURM_JOB_NODELIST", "n[0-70000]");
	FAILS("SLURM_JOB_NODELIST 'n[0-70000]': expands to more than 65536 hosts");
}

CI_TEST(ci, slurm_bad_gpu_lists)
{
	env("SLURM_NODEID", "0");
	env("SLURM_STEP_GPUS", "0,x");
	FAILS("SLURM_STEP_GPUS '0,x': entry 'x': expected a comma list of GPU indices");
	reset();
	env("SLURM_NODEID", "0");
	env("SLURM_STEP_GPUS", "0,1");
	env("SLURM_JOB_GPUS", "0,,1");
	FAILS("SLURM_JOB_GPUS '0,,1'", "entry 1 is empty");
	reset();
	env("SLURM_NODEID", "0");
	env("SLURM_JOB_GPUS", "2,2");
	FAILS("SLURM_JOB_GPUS '2,2': GPU '2' is listed twice");
	reset();
	env("SLURM_NODEID", "0");
	env("SLURM_STEP_GPUS", "-1");
	FAILS("SLURM_STEP_GPUS '-1'", "GPU indices");
}

/* ---- errors: flags and SLOTRUN_* ---- */

struct bad_value {
	const char *flag_or_var;
	const char *value;
	const char *want;
};

static void set_value(const char *name, const char *value)
{
	if (!strcmp(name, "--nnodes")) FL.nnodes = value;
	else if (!strcmp(name, "--node-rank")) FL.node_rank = value;
	else if (!strcmp(name, "--addrs")) FL.addrs = value;
	else if (!strcmp(name, "--slots")) FL.slots = value;
	else if (!strcmp(name, "--master-port")) FL.master_port = value;
	else if (!strcmp(name, "--iface")) FL.iface = value;
	else if (!strcmp(name, "--master-addr")) FL.master_addr = value;
	else env(name, value);
}

CI_TEST(ci, malformed_flags_and_variables)
{
	static const char *const names[][2] = {
		{ "--nnodes", "SLOTRUN_NNODES" }, { "--node-rank", "SLOTRUN_NODE_RANK" },
		{ "--addrs", "SLOTRUN_ADDRS" }, { "--slots", "SLOTRUN_SLOTS" },
		{ "--master-port", "SLOTRUN_MASTER_PORT" }, { "--iface", "SLOTRUN_IFACE" },
		{ "--master-addr", "SLOTRUN_MASTER_ADDR" },
	};
	/* value, expected words; index into names */
	static const struct { int name; const char *value, *want; } cases[] = {
		{ 0, "0", "is out of range: expected 1..65536" },
		{ 0, "65537", "is out of range: expected 1..65536" },
		{ 0, "-2", "is out of range" },
		{ 0, "2x", "expected an integer in 1..65536" },
		{ 0, "", "expected an integer" },
		{ 0, " 2", "expected an integer" },
		{ 0, "+2", "expected an integer" },
		{ 0, "two", "expected an integer" },
		{ 0, "99999999999999999999999", "is out of range" },
		{ 1, "-1", "is out of range: expected 0..65535" },
		{ 1, "65536", "is out of range" },
		{ 1, "1.0", "expected an integer" },
		{ 2, "", "entry 0 is empty" },
		{ 2, "a,,b", "entry 1 is empty" },
		{ 2, "a,", "entry 1 is empty" },
		{ 2, "a,b c", "entry 'b c' is not a host name or address" },
		{ 2, "-oProxyCommand=x", "is not a host name" },
		{ 3, "0", "entry '0' is out of range: expected a slot count in 1..1024" },
		{ 3, "1025", "is out of range" },
		{ 3, "x", "entry 'x' is not a number" },
		{ 3, "4,", "entry 1 is empty" },
		{ 3, "4,0", "entry '0' is out of range" },
		{ 3, "", "is empty" },
		{ 4, "0", "is out of range: expected 1..65535" },
		{ 4, "70000", "is out of range" },
		{ 4, "http", "expected an integer" },
		{ 5, "", "expected a network interface name" },
		{ 5, "a/b", "network interface name" },
		{ 5, "eth0:1", "network interface name" },
		{ 5, "eth0 ", "network interface name" },
		{ 5, "abcdefghijklmnop", "1..15 characters" },
		{ 5, "..", "network interface name" },
		{ 6, "", "expected the chief's host name or address" },
		{ 6, "a,b", "expected the chief's host name" },
		{ 6, "a b", "expected the chief's host name" },
		{ 6, "?", "expected the chief's host name" },
		{ 6, "-x", "expected the chief's host name" },
		{ 0, "3:1", "the elastic range's MIN is above its MAX" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int which = 0; which < 2; which++) {
			const char *name = names[cases[i].name][which];
			reset();
			set_value(name, cases[i].value);
			load_fails(0, (const char *const[]){ fmt("%s '%s'", name, cases[i].value),
							     cases[i].want, NULL });
		}
}

CI_TEST(ci, values_are_quoted_on_one_line)
{
	env("SLOTRUN_NNODES", "1\n2");
	FAILS("SLOTRUN_NNODES '1\\x0a2'");
	reset();
	char long_value[400];
	memset(long_value, 'a', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	long_value[300] = ' ';
	env("SLOTRUN_ADDRS", long_value);
	FAILS("SLOTRUN_ADDRS 'aaaa", "...'");
	cr_assert_lt(strlen(ERR), 300);
}

CI_TEST(ci, overridden_sources_are_still_checked)
{
	FL.master_port = "1000";
	env("C10D_PORT", "abc");
	FAILS("C10D_PORT 'abc'");
	reset();
	FL.nnodes = "1";
	FL.node_rank = "0";
	FL.addrs = "localhost";
	env("SLOTRUN_NODE_RANK", "x");
	FAILS("SLOTRUN_NODE_RANK 'x'");
}

CI_TEST(ci, cuda_visible_devices_errors)
{
	env("CUDA_VISIBLE_DEVICES", "0,foo");
	FAILS("CUDA_VISIBLE_DEVICES '0,foo': entry 'foo' is neither a device index nor a GPU-/MIG- UUID");
	reset();
	env("CUDA_VISIBLE_DEVICES", "1,1");
	FAILS("CUDA_VISIBLE_DEVICES '1,1': GPU '1' is listed twice");
	reset();
	env("CUDA_VISIBLE_DEVICES", "0,-1");
	FAILS("CUDA_VISIBLE_DEVICES", "entry '-1'");
}

CI_TEST(ci, lists_too_long)
{
	/* 65537 entries each: one more than CI_MAX_NODES */
	static char addrs[65537 * 2], json[65537 * 2 + 64], slots[1025 * 5 + 64];
	size_t o = 0;

	for (int i = 0; i < 65537; i++)
		o += (size_t)sprintf(addrs + o, "%sa", i ? "," : "");
	env("SLOTRUN_ADDRS", addrs);
	FAILS("SLOTRUN_ADDRS 'a,a,a", "more than 65536 entries");

	reset();
	o = (size_t)sprintf(json, "{\"container_slot_counts\": [");
	for (int i = 0; i < 65537; i++)
		o += (size_t)sprintf(json + o, "%s1", i ? "," : "");
	sprintf(json + o, "]}");
	file("rendezvous.json", json);
	FAILS("rendezvous.json: container_slot_counts has 65537 entries: at most 65536");

	reset();
	o = (size_t)sprintf(slots, "{\"slot_ids\": [");
	for (int i = 0; i < 1025; i++)
		o += (size_t)sprintf(slots + o, "%s%d", i ? "," : "", i);
	sprintf(slots + o, "]}");
	file("cluster.json", slots);
	FAILS("cluster.json: slot_ids has 1025 entries: at most 1024");
}

CI_TEST(ci, blanks_around_list_entries_are_forgiven)
{
	FL.addrs = " a ,\tb ";
	FL.node_rank = "0";
	FL.slots = "1 , 2";
	load_ok(0);
	cr_assert_str_eq(CI.addrs[0], "a");
	cr_assert_str_eq(CI.addrs[1], "b");
	cr_assert_eq(CI.world_size, 3);
}

CI_TEST(ci, null_list_entries)
{
	file("rendezvous.json", "{\"container_addrs\": [null]}");
	FAILS("rendezvous.json: container_addrs entry 0 must be a string, got null");
	reset();
	file("rendezvous.json", "{\"container_slot_counts\": [null]}");
	FAILS("container_slot_counts: entry 0 must be an integer, got null");
}

CI_TEST(ci, default_slots_are_capped)
{
	load_ok(CI_MAX_SLOTS + 5);
	cr_assert_eq(CI.slots, CI_MAX_SLOTS);
}

CI_TEST(ci, free_is_safe_on_null_and_empty)
{
	struct cluster_info empty = { 0 };

	ci_free(NULL);
	ci_free(&empty);
	cr_assert_str_eq(ci_source_name((enum ci_source)42), "unknown");
}

/* ---- errors: sources that disagree ---- */

CI_TEST(ci, flag_counts_disagree)
{
	FL.nnodes = "3";
	FL.addrs = "a,b";
	FAILS("--addrs 'a,b' (2 addresses) disagrees with --nnodes '3' (3 nodes)");
	reset();
	FL.nnodes = "3";
	FL.slots = "4,4";
	FL.addrs = "a,b,c";
	FL.node_rank = "0";
	FAILS("--slots '4,4' has 2 entries, but --nnodes '3' gives 3 nodes");
}

CI_TEST(ci, node_rank_out_of_range_across_sources)
{
	FL.node_rank = "5";
	env("SLOTRUN_ADDRS", "a,b");
	FAILS("--node-rank '5' is out of range", "2 nodes (0..1)", "SLOTRUN_ADDRS");
	reset();
	FL.node_rank = "5";
	FL.nnodes = "2";
	FL.addrs = "a,b";
	FAILS("--node-rank '5' is out of range: --nnodes '2' names 2 nodes (0..1)");
	reset();
	FL.node_rank = "1";
	FAILS("--node-rank '1' is out of range", "the default", "1 nodes (0..0)");
}

CI_TEST(ci, flag_node_count_against_lower_address_list)
{
	FL.nnodes = "1";
	env("SLURM_JOB_NODELIST", "n[1-4]");
	env("SLURM_NODEID", "0");
	FAILS("SLURM_JOB_NODELIST 'n[1-4]' (4 addresses) disagrees with --nnodes '1' (1 nodes)");
}

CI_TEST(ci, many_nodes_need_addresses)
{
	FL.nnodes = "2";
	FL.node_rank = "0";
	FAILS("--nnodes '2' gives 2 nodes but no source names their addresses", "--addrs",
	      "SLOTRUN_ADDRS");
	reset();
	env("SLURM_NODEID", "1");
	env("SLURM_NNODES", "2");
	FAILS("SLURM_NNODES '2' gives 2 nodes but no source names their addresses");
}

CI_TEST(ci, many_nodes_need_a_rank)
{
	FL.addrs = "a,b";
	FAILS("--addrs 'a,b' gives 2 nodes but no source names this node's rank", "--node-rank",
	      "SLOTRUN_NODE_RANK");
}

CI_TEST(ci, slot_list_length_against_other_source)
{
	env("SLOTRUN_SLOTS", "4,4");
	env("SLURM_JOB_NODELIST", "n[1-3]");
	env("SLURM_NODEID", "0");
	FL.nnodes = "3";
	FL.node_rank = "0";
	FAILS("SLOTRUN_SLOTS '4,4' has 2 entries", "3 nodes");
}

CI_TEST(ci, explicit_slots_disagree_with_gpu_list)
{
	FL.slots = "4";
	env("DET_SLOT_IDS", "[0,1]");
	FAILS("--slots '4' gives this node 4 slots, but DET_SLOT_IDS '[0,1]' names 2 GPUs");
	reset();
	env("SLOTRUN_SLOTS", "2");
	env("CUDA_VISIBLE_DEVICES", "0,1,2,3");
	FAILS("SLOTRUN_SLOTS '2'", "CUDA_VISIBLE_DEVICES '0,1,2,3' names 4 GPUs");
	reset();
	file("rendezvous.json", "{\"container_slot_counts\": [8, 2], \"container_rank\": 1,"
	     " \"container_addrs\": [\"a\", \"b\"]}");
	env("DET_SLOT_IDS", "[0,1,2,3,4,5,6,7]");
	FAILS("rendezvous.json container_slot_counts gives this node 2 slots",
	      "DET_SLOT_IDS '[0,1,2,3,4,5,6,7]' names 8 GPUs");
	reset();
	FL.slots = "1,3";
	FL.addrs = "a,b";
	FL.node_rank = "1";
	env("SLURM_NODEID", "1");
	env("SLURM_STEP_GPUS", "0");
	FAILS("--slots '1,3' gives this node 3 slots", "SLURM_STEP_GPUS '0' names 1 GPUs");
}

/* ---- torchrun's PET_* (Kubeflow's PyTorchJob) ---- */

CI_TEST(ci, torchrun_env_alone_names_the_chief_only)
{
	/* what the training operator sets in the pod of worker 1 (node 2) */
	env("MASTER_ADDR", "train-master-0");
	env("MASTER_PORT", "23456");
	env("RANK", "2");
	env("WORLD_SIZE", "12");
	env("PET_NNODES", "3");
	env("PET_NODE_RANK", "2");
	env("PET_NPROC_PER_NODE", "4");
	env("PET_MASTER_ADDR", "train-master-0");
	env("PET_MASTER_PORT", "23456");
	load_ok(0);
	cr_assert_eq(CI.nnodes, 3);
	cr_assert_eq(CI.node_rank, 2);
	cr_assert_str_eq(CI.addrs[0], "train-master-0");
	cr_assert_str_eq(CI.addrs[1], CI_ADDR_UNKNOWN);
	cr_assert_str_eq(CI.addrs[2], CI_ADDR_UNKNOWN);
	cr_assert(!ci_addr_known(CI.addrs[2]) && ci_addr_known(CI.addrs[0]));
	cr_assert_eq(CI.slots, 4);
	cr_assert_eq(CI.rank_base, 8);
	cr_assert_eq(CI.world_size, 12);
	cr_assert_eq(CI.master_port, 23456);
	cr_assert_eq(CI.src_nnodes, CI_SRC_TORCHRUN);
	cr_assert_eq(CI.src_node_rank, CI_SRC_TORCHRUN);
	cr_assert_eq(CI.src_addrs, CI_SRC_TORCHRUN);
	cr_assert_eq(CI.src_slots, CI_SRC_TORCHRUN);
	cr_assert_eq(CI.src_master_port, CI_SRC_TORCHRUN);
}

CI_TEST(ci, torchrun_env_nproc_auto_and_gpu_are_the_default)
{
	const char *deflt[] = { "auto", "gpu" };

	for (size_t i = 0; i < sizeof(deflt) / sizeof(deflt[0]); i++) {
		reset();
		env("PET_NPROC_PER_NODE", deflt[i]);
		load_ok(4);
		cr_assert_eq(CI.slots, 4, "'%s': the visible GPUs", deflt[i]);
		cr_assert_eq(CI.src_slots, CI_SRC_DEFAULT);
		load_ok(0);
		cr_assert_eq(CI.slots, 1, "'%s' without GPUs", deflt[i]);
		/* a lower source's count is not hidden by "auto" */
		env("SLOTRUN_SLOTS", "3");
		load_ok(4);
		cr_assert_eq(CI.slots, 3);
		cr_assert_eq(CI.src_slots, CI_SRC_SLOTRUN_ENV);
	}
}

CI_TEST(ci, torchrun_env_equal_elastic_range_is_a_count)
{
	env("PET_NNODES", "2:2");
	env("PET_NODE_RANK", "1");
	env("PET_MASTER_ADDR", "10.0.0.1");
	load_ok(0);
	cr_assert_eq(CI.nnodes, 2);
	cr_assert_str_eq(CI.addrs[0], "10.0.0.1");
	cr_assert_str_eq(CI.addrs[1], CI_ADDR_UNKNOWN);
}

CI_TEST(ci, torchrun_env_errors)
{
	static const struct { const char *var, *value, *want; } bad[] = {
		{ "PET_NNODES", "4:1", "the elastic range's MIN is above its MAX" },
		{ "PET_NNODES", "0:0", "expected a node count in 1..65536" },
		{ "PET_NNODES", "2:", "expected a node count" },
		{ "PET_NNODES", ":2", "expected a node count" },
		{ "PET_NNODES", "2:2:2", "expected a node count" },
		{ "PET_NNODES", "0", "is out of range: expected 1..65536" },
		{ "PET_NNODES", "two", "expected an integer" },
		{ "PET_NNODES", "", "expected an integer" },
		{ "PET_NODE_RANK", "-1", "is out of range" },
		{ "PET_NODE_RANK", "x", "expected an integer" },
		{ "PET_NPROC_PER_NODE", "cpu", "does not start one worker per CPU: give a count" },
		{ "PET_NPROC_PER_NODE", "0", "is out of range: expected a slot count" },
		{ "PET_NPROC_PER_NODE", "AUTO", "is not a number" },
		{ "PET_NPROC_PER_NODE", "", "is empty" },
		{ "PET_MASTER_ADDR", "", "expected the chief's host name or address" },
		{ "PET_MASTER_ADDR", "a b", "expected the chief's host name" },
		{ "PET_MASTER_ADDR", "?", "expected the chief's host name" },
		{ "PET_MASTER_ADDR", "-oProxyCommand=x", "expected the chief's host name" },
		{ "PET_MASTER_PORT", "0", "is out of range: expected 1..65535" },
		{ "PET_MASTER_PORT", "23456x", "expected an integer" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		reset();
		env(bad[i].var, bad[i].value);
		load_fails(0, (const char *const[]){ fmt("%s '%s'", bad[i].var, bad[i].value),
						     bad[i].want, NULL });
	}
	reset();
	env("PET_NNODES", "2");
	env("PET_NODE_RANK", "2");
	env("PET_MASTER_ADDR", "m");
	FAILS("PET_NODE_RANK '2' is out of range: PET_NNODES '2' names 2 nodes (0..1)");
	reset();
	env("PET_NNODES", "2");
	env("PET_NODE_RANK", "1");
	FAILS("PET_NNODES '2' gives 2 nodes but no source names their addresses", "--master-addr");
}

/* ---- the chief's address alone ---- */

CI_TEST(ci, master_addr_flag_with_a_count)
{
	FL.nnodes = "3";
	FL.node_rank = "1";
	FL.master_addr = "chief.example";
	load_ok(0);
	cr_assert_str_eq(CI.addrs[0], "chief.example");
	cr_assert_str_eq(CI.addrs[1], CI_ADDR_UNKNOWN);
	cr_assert_str_eq(CI.addrs[2], CI_ADDR_UNKNOWN);
	cr_assert_eq(CI.src_addrs, CI_SRC_FLAG);
	reset();
	env("SLOTRUN_NNODES", "2");
	env("SLOTRUN_NODE_RANK", "0");
	env("SLOTRUN_MASTER_ADDR", "10.1.1.1");
	load_ok(0);
	cr_assert_str_eq(CI.addrs[0], "10.1.1.1");
	cr_assert_eq(CI.src_addrs, CI_SRC_SLOTRUN_ENV);
}

CI_TEST(ci, master_addr_alone_on_one_node_is_the_master_address)
{
	FL.master_addr = "localhost";
	load_ok(0);
	cr_assert_eq(CI.nnodes, 1);
	cr_assert_str_eq(CI.addrs[0], "localhost");
}

CI_TEST(ci, master_addr_and_list_of_one_source_must_agree)
{
	FL.addrs = "a,b";
	FL.node_rank = "1";
	FL.master_addr = "a";
	load_ok(0);
	cr_assert_str_eq(CI.addrs[0], "a");
	cr_assert_str_eq(CI.addrs[1], "b");
	FL.master_addr = "b";
	FAILS("--master-addr 'b' disagrees with --addrs 'a,b', whose first entry 'a' is the chief");
	reset();
	env("SLOTRUN_ADDRS", "a,b");
	env("SLOTRUN_NODE_RANK", "0");
	env("SLOTRUN_MASTER_ADDR", "c");
	FAILS("SLOTRUN_MASTER_ADDR 'c' disagrees with SLOTRUN_ADDRS 'a,b'");
}

CI_TEST(ci, chief_over_a_lower_list)
{
	/* the chief's name from a higher source, the others from Slurm */
	FL.master_addr = "n1-ib";
	env("SLURM_JOB_NODELIST", "n[1-3]");
	env("SLURM_NODEID", "2");
	load_ok(0);
	cr_assert_eq(CI.nnodes, 3);
	cr_assert_str_eq(CI.addrs[0], "n1-ib");
	cr_assert_str_eq(CI.addrs[1], "n2");
	cr_assert_str_eq(CI.addrs[2], "n3");
	cr_assert_eq(CI.src_addrs, CI_SRC_SLURM);
	/* PET_* over SLOTRUN_ADDRS of the same length */
	reset();
	env("PET_NNODES", "2");
	env("PET_NODE_RANK", "1");
	env("PET_MASTER_ADDR", "m");
	env("SLOTRUN_ADDRS", "x,y");
	load_ok(0);
	cr_assert_str_eq(CI.addrs[0], "m");
	cr_assert_str_eq(CI.addrs[1], "y");
	/* ... and of another length */
	env("SLOTRUN_ADDRS", "x,y,z");
	FAILS("SLOTRUN_ADDRS 'x,y,z' (3 addresses) disagrees with PET_NNODES '2' (2 nodes)");
}

CI_TEST(ci, chief_under_a_higher_list_is_overridden)
{
	env("SLURM_JOB_NODELIST", "n[1-2]");
	env("SLURM_NODEID", "1");
	env("PET_MASTER_ADDR", "elsewhere");
	load_ok(0);
	cr_assert_str_eq(CI.addrs[0], "n1");
	cr_assert_eq(CI.src_addrs, CI_SRC_SLURM);
	reset();
	FL.addrs = "a,b";
	FL.node_rank = "0";
	env("SLOTRUN_MASTER_ADDR", "z");
	load_ok(0);
	cr_assert_str_eq(CI.addrs[0], "a");
}

/* ---- hostlists in --addrs and SLOTRUN_ADDRS ---- */

CI_TEST(ci, addrs_take_a_hostlist)
{
	FL.addrs = "train-[0-3].train";
	FL.node_rank = "3";
	load_ok(0);
	cr_assert_eq(CI.nnodes, 4);
	cr_assert_str_eq(CI.addrs[0], "train-0.train");
	cr_assert_str_eq(CI.addrs[3], "train-3.train");
	reset();
	env("SLOTRUN_ADDRS", "gpu[01-02],cpu1");
	env("SLOTRUN_NODE_RANK", "2");
	load_ok(0);
	cr_assert_eq(CI.nnodes, 3);
	cr_assert_str_eq(CI.addrs[1], "gpu02");
	cr_assert_str_eq(CI.addrs[2], "cpu1");
}

CI_TEST(ci, addrs_hostlist_errors)
{
	FL.addrs = "n[1-";
	FAILS("--addrs 'n[1-': unclosed '['");
	reset();
	env("SLOTRUN_ADDRS", "n[3-1]");
	FAILS("SLOTRUN_ADDRS 'n[3-1]'", "reversed range");
	reset();
	FL.addrs = "-[1-2]";
	FAILS("--addrs '-[1-2]': entry '-1' is not a host name or address");
	reset();
	FL.addrs = "n?[1-2]";
	FAILS("--addrs 'n?[1-2]': entry 'n?1' is not a host name or address");
	reset();
	FL.addrs = "a,?";
	FAILS("--addrs 'a,?': entry '?' is not a host name or address");
}

/* ---- a Kubernetes Indexed Job ---- */

CI_TEST(ci, indexed_job_index_is_the_node_rank)
{
	env("JOB_COMPLETION_INDEX", "2");
	env("SLOTRUN_ADDRS", "w-[0-3].w");
	env("SLOTRUN_SLOTS", "2");
	load_ok(0);
	cr_assert_eq(CI.nnodes, 4);
	cr_assert_eq(CI.node_rank, 2);
	cr_assert_eq(CI.rank_base, 4);
	cr_assert_str_eq(CI.addrs[2], "w-2.w");
	cr_assert_eq(CI.src_node_rank, CI_SRC_INDEXED_JOB);
	/* over SLOTRUN_NODE_RANK, under --node-rank */
	env("SLOTRUN_NODE_RANK", "1");
	load_ok(0);
	cr_assert_eq(CI.node_rank, 2);
	FL.node_rank = "3";
	load_ok(0);
	cr_assert_eq(CI.node_rank, 3);
	cr_assert_eq(CI.src_node_rank, CI_SRC_FLAG);
}

CI_TEST(ci, indexed_job_with_the_chief_alone)
{
	env("JOB_COMPLETION_INDEX", "1");
	FL.nnodes = "3";
	FL.master_addr = "w-0.w";
	load_ok(0);
	cr_assert_eq(CI.node_rank, 1);
	cr_assert_str_eq(CI.addrs[0], "w-0.w");
	cr_assert_str_eq(CI.addrs[1], CI_ADDR_UNKNOWN);
}

CI_TEST(ci, indexed_job_index_of_a_one_node_pod_is_no_rank)
{
	env("JOB_COMPLETION_INDEX", "5");
	load_ok(0);
	cr_assert_eq(CI.nnodes, 1);
	cr_assert_eq(CI.node_rank, 0);
	cr_assert_eq(CI.src_node_rank, CI_SRC_DEFAULT);
	/* but with several nodes it must fit */
	env("SLOTRUN_ADDRS", "a,b");
	FAILS("JOB_COMPLETION_INDEX '5' is out of range: SLOTRUN_ADDRS 'a,b' names 2 nodes (0..1)");
}

CI_TEST(ci, indexed_job_errors)
{
	env("JOB_COMPLETION_INDEX", "x");
	FAILS("JOB_COMPLETION_INDEX 'x': expected an integer");
	reset();
	env("JOB_COMPLETION_INDEX", "-1");
	FAILS("JOB_COMPLETION_INDEX '-1' is out of range");
	reset();
	env("JOB_COMPLETION_INDEX", "");
	FAILS("JOB_COMPLETION_INDEX ''", "expected an integer");
}

/* ---- Slurm: one slotrun per node ---- */

CI_TEST(ci, slurm_step_of_one_task_per_node)
{
	env("SLURM_JOB_NODELIST", "n[1-2]");
	env("SLURM_NODEID", "1");
	env("SLURM_STEP_NUM_TASKS", "2");
	env("SLURM_STEP_NUM_NODES", "2");
	env("SLURM_LOCALID", "0");
	load_ok(0);
	cr_assert_eq(CI.node_rank, 1);
}

CI_TEST(ci, slurm_step_with_more_tasks_than_nodes_is_refused)
{
	env("SLURM_JOB_NODELIST", "n[1-2]");
	env("SLURM_NODEID", "0");
	env("SLURM_STEP_NUM_TASKS", "8");
	env("SLURM_STEP_NUM_NODES", "2");
	env("SLURM_LOCALID", "0");
	FAILS("Slurm started 8 tasks on 2 nodes (SLURM_STEP_NUM_TASKS '8', SLURM_STEP_NUM_NODES '2')",
	      "srun --ntasks-per-node=1");
	/* flags do not hide it: two jobs would still run */
	FL.nnodes = "1";
	FAILS("Slurm started 8 tasks");
	reset();
	env("SLURM_NODEID", "0");
	env("SLURM_STEP_NUM_TASKS", "2");
	env("SLURM_STEP_NUM_NODES", "1");
	FAILS("Slurm started 2 tasks on 1 node (");
	reset();
	env("SLURM_NODEID", "0");
	env("SLURM_LOCALID", "1");
	FAILS("SLURM_LOCALID '1': this is not the first Slurm task on this node",
	      "srun --ntasks-per-node=1");
}

CI_TEST(ci, slurm_task_counts_malformed_or_outside_a_job)
{
	env("SLURM_NODEID", "0");
	env("SLURM_STEP_NUM_TASKS", "many");
	FAILS("SLURM_STEP_NUM_TASKS 'many': expected an integer");
	reset();
	env("SLURM_NODEID", "0");
	env("SLURM_STEP_NUM_NODES", "0");
	FAILS("SLURM_STEP_NUM_NODES '0' is out of range");
	reset();
	env("SLURM_NODEID", "0");
	env("SLURM_LOCALID", "-1");
	FAILS("SLURM_LOCALID '-1' is out of range");
	/* without SLURM_NODEID or SLURM_JOB_NODELIST, Slurm is no source */
	reset();
	env("SLURM_STEP_NUM_TASKS", "8");
	env("SLURM_STEP_NUM_NODES", "1");
	env("SLURM_LOCALID", "3");
	load_ok(0);
	cr_assert_eq(CI.src_node_rank, CI_SRC_DEFAULT);
}

/* ---- torchrun's spellings of the flags ---- */

CI_TEST(ci, torchrun_flag_spellings)
{
	FL.slots = "auto";
	FL.slots_flag = "--nproc-per-node";
	load_ok(2);
	cr_assert_eq(CI.slots, 2);
	cr_assert_eq(CI.src_slots, CI_SRC_DEFAULT);
	FL.slots = "gpu";
	load_ok(0);
	cr_assert_eq(CI.slots, 1);
	FL.slots = "3";
	FL.slots_flag = "--nproc_per_node";
	load_ok(0);
	cr_assert_eq(CI.slots, 3);
	cr_assert_eq(CI.src_slots, CI_SRC_FLAG);
	FL.slots = "cpu";
	FAILS("--nproc_per_node 'cpu'", "give a count");
	FL.slots = "auto";
	FL.slots_flag = NULL;
	FAILS("--slots 'auto'", "is not a number", "expected a slot count");
	reset();
	FL.nnodes = "2:2";
	FL.node_rank = "x";
	FL.node_rank_flag = "--node_rank";
	FAILS("--node_rank 'x': expected an integer");
	FL.node_rank = "1";
	FL.master_addr = "a b";
	FL.master_addr_flag = "--master_addr";
	FAILS("--master_addr 'a b': expected the chief's host name or address");
	FL.master_addr = "10.0.0.1";
	FL.master_port = "0";
	FL.master_port_flag = "--master_port";
	FAILS("--master_port '0' is out of range");
	FL.master_port = "29555";
	load_ok(0);
	cr_assert_eq(CI.nnodes, 2);
	cr_assert_eq(CI.master_port, 29555);
	cr_assert_str_eq(CI.addrs[0], "10.0.0.1");
	FL.nnodes = "1:4";
	load_ok(0);
	cr_assert_eq(CI.nnodes, 4);
	cr_assert_eq(CI.nnodes_min, 1);
	FL.nnodes = "4:1";
	FAILS("--nnodes '4:1': the elastic range's MIN is above its MAX", "'1:4'");
}

CI_TEST(ci, an_elastic_range_needs_only_the_chief)
{
	FL.nnodes = "2:3";
	FL.master_addr = "10.0.0.1";
	load_ok(0);
	cr_assert_eq(CI.nnodes, 3);
	cr_assert_eq(CI.nnodes_min, 2);
	cr_assert(!CI.rank_given, "no source named a rank: the chief assigns it");
	cr_assert_eq(CI.node_rank, 0);
	cr_assert_str_eq(CI.addrs[0], "10.0.0.1");
	cr_assert_str_eq(CI.addrs[2], CI_ADDR_UNKNOWN);
	cr_assert_eq(CI.slot_counts[2], CI.slots);
	/* a rank given is a preference, within MAX */
	FL.node_rank = "2";
	load_ok(0);
	cr_assert(CI.rank_given);
	cr_assert_eq(CI.node_rank, 2);
	FL.node_rank = "3";
	FAILS("--node-rank '3' is out of range: --nnodes '2:3' allows at most 3 nodes (0..2)");
	/* a fixed count still needs a rank, and says so */
	reset();
	FL.nnodes = "3:3";
	FL.master_addr = "10.0.0.1";
	FAILS("no source names this node's rank");
}

CI_TEST(ci, an_elastic_range_takes_a_list_of_up_to_max_nodes)
{
	env("SLOTRUN_NNODES", "1:4");
	env("SLOTRUN_ADDRS", "n[0-1]");
	load_ok(0);
	cr_assert_eq(CI.nnodes, 4);
	cr_assert_eq(CI.nnodes_min, 1);
	cr_assert_str_eq(CI.addrs[0], "n0");
	cr_assert_str_eq(CI.addrs[1], "n1");
	cr_assert_str_eq(CI.addrs[3], CI_ADDR_UNKNOWN);
	cr_assert_eq(CI.src_addrs, CI_SRC_SLOTRUN_ENV);
	env("SLOTRUN_ADDRS", "n[0-4]");
	FAILS("SLOTRUN_ADDRS 'n[0-4]' (5 addresses) names more nodes than SLOTRUN_NNODES '1:4' allows (at most 4)");
	reset();
	FL.nnodes = "1:4";
	env("SLOTRUN_ADDRS", "n[0-4]");
	FAILS("SLOTRUN_ADDRS 'n[0-4]' (5 addresses) names more nodes than --nnodes '1:4' allows (at most 4)");
}

CI_TEST(ci, an_elastic_range_refuses_what_it_cannot_place)
{
	FL.nnodes = "2:4";
	FAILS("--nnodes '2:4' is an elastic job, but no source names the chief's address", "--master-addr");
	FL.master_addr = "10.0.0.1";
	FL.slots = "2,2,2,2";
	FAILS("--slots '2,2,2,2' gives one count per node, which needs a fixed node count, not --nnodes '2:4'",
	      "e.g. --slots 2");
	reset();
	env("SLOTRUN_NNODES", "1:3");
	env("SLOTRUN_SLOTS", "4,2");
	env("SLOTRUN_MASTER_ADDR", "h0");
	FAILS("SLOTRUN_SLOTS '4,2' gives one count per node", "not SLOTRUN_NNODES '1:3'", "--slots 4");
}

CI_TEST(ci, torchrun_env_elastic_range)
{
	env("PET_NNODES", "1:4");
	env("PET_MASTER_ADDR", "10.0.0.1");
	env("PET_NPROC_PER_NODE", "2");
	load_ok(0);
	cr_assert_eq(CI.nnodes, 4);
	cr_assert_eq(CI.nnodes_min, 1);
	cr_assert_eq(CI.src_nnodes, CI_SRC_TORCHRUN);
	cr_assert(!CI.rank_given);
	cr_assert_eq(CI.slots, 2);
}

/* ---- source names ---- */

CI_TEST(ci, source_names)
{
	cr_assert_str_eq(ci_source_name(CI_SRC_FLAG), "flag");
	cr_assert_str_eq(ci_source_name(CI_SRC_DETERMINED), "determined");
	cr_assert_str_eq(ci_source_name(CI_SRC_SLURM), "slurm");
	cr_assert_str_eq(ci_source_name(CI_SRC_TORCHRUN), "torchrun");
	cr_assert_str_eq(ci_source_name(CI_SRC_INDEXED_JOB), "indexed-job");
	cr_assert_str_eq(ci_source_name(CI_SRC_SLOTRUN_ENV), "env");
	cr_assert_str_eq(ci_source_name(CI_SRC_DEFAULT), "default");
}

/* ---- the real environment and files ---- */

static void real_setup(void)
{
	static const char *const vars[] = { "SLURM_JOB_NODELIST", "SLURM_NODEID", "SLURM_NNODES",
		"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES", "DET_SLOT_IDS",
		"DET_INTER_NODE_NETWORK_INTERFACE", "C10D_PORT", "SLOTRUN_NNODES",
		"SLOTRUN_NODE_RANK", "SLOTRUN_ADDRS", "SLOTRUN_SLOTS", "SLOTRUN_MASTER_PORT",
		"SLOTRUN_IFACE", "SLOTRUN_MASTER_ADDR", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NUM_NODES",
		"SLURM_LOCALID", "PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_MASTER_ADDR",
		"PET_MASTER_PORT", "JOB_COMPLETION_INDEX" };

	/* the test may itself run under Slurm or on a GPU box */
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	tmp_dir_setup();
	setenv("SLOTRUN_DET_INFO_DIR", tmpdir, 1);
}

TestSuite(process_env, .init = real_setup, .fini = tmp_dir_teardown, .timeout = 20);

CI_TEST(process_env, reads_files_and_environment)
{
	const char *rv = "{\"container_addrs\":[\"10.1.0.1\",\"10.1.0.2\"],\"container_rank\":1}";
	struct cluster_info ci;
	char err[256];

	tmp_write("rendezvous.json", rv, strlen(rv));
	setenv("SLOTRUN_SLOTS", "3", 1);
	cr_assert_eq(ci_load(NULL, &ci_process_env, 0, &ci, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ci.nnodes, 2);
	cr_assert_eq(ci.node_rank, 1);
	cr_assert_str_eq(ci.addrs[1], "10.1.0.2");
	cr_assert_eq(ci.slots, 3);
	cr_assert_eq(ci.rank_base, 3);
	ci_free(&ci);
	ci_free(&ci);    /* harmless twice */
}

/* How the file is read (size limit, FIFOs, errno) is tested with
 * io_read_file in test_io.c. */

CI_TEST(process_env, a_large_rendezvous_file_is_an_error)
{
	static char big[CI_MAX_FILE_SIZE + 10];
	struct cluster_info ci;
	char err[256];

	memset(big, ' ', sizeof(big));
	big[0] = '{';
	big[sizeof(big) - 1] = '}';
	tmp_write("rendezvous.json", big, sizeof(big));
	cr_assert_eq(ci_load(NULL, &ci_process_env, 0, &ci, err, sizeof(err)), -EINVAL);
	cr_assert_not_null(strstr(err, "rendezvous.json: cannot read: larger than"), "%s", err);
}
