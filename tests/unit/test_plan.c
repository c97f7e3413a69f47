// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "plan.h"
#include "fake_env.h"
#include "leak_check.h"


static char *addrs[] = { "10.0.0.1", "10.0.0.2" };
static int counts[] = { 2, 3 };

static struct cluster_info two_nodes(void)
{
	return (struct cluster_info){
		.nnodes = 2, .node_rank = 1, .addrs = addrs, .slot_counts = counts, .slots = 3,
		.rank_base = 2, .world_size = 5, .master_port = 1234,
	};
}

/* A placement as topo_plan makes one: the plan takes it over and frees it. */
static struct topo_slot placed(const char *gpu, const char *cpus, const char *numa, int ncpus)
{
	struct topo_slot s = { .ncpus = ncpus, .gpu_index = -1 };

	s.gpu = gpu ? strdup(gpu) : NULL;
	s.cpus = strdup(cpus);
	s.numa = strdup(numa);
	cr_assert((s.gpu || !gpu) && s.cpus && s.numa);
	return s;
}

static const char *get(const struct plan_slot *s, const char *name)
{
	size_t n = strlen(name);

	for (char **e = s->env; *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

LEAK_TEST(plan, ranks_and_the_environment_contract)
{
	struct cluster_info ci = two_nodes();
	struct plan_opts po = { .secret = "s3cret", .iface = "eth1" };
	struct plan p;

	fake_env = NULL;
	cr_assert_eq(plan_build(&ci, NULL, &po, &FAKE_ENV, &p), 0);
	cr_assert_eq(p.nslots, 3);
	for (int i = 0; i < 3; i++) {
		const struct plan_slot *s = &p.slots[i];
		char want[16];

		cr_assert_eq(s->rank, 2 + i);
		snprintf(want, sizeof(want), "%d", 2 + i);
		cr_assert_str_eq(get(s, "RANK"), want);
		snprintf(want, sizeof(want), "%d", i);
		cr_assert_str_eq(get(s, "LOCAL_RANK"), want);
		cr_assert_str_eq(get(s, "WORLD_SIZE"), "5");
		cr_assert_str_eq(get(s, "LOCAL_WORLD_SIZE"), "3");
		cr_assert_str_eq(get(s, "LOCAL_SIZE"), "3");
		cr_assert_str_eq(get(s, "GROUP_RANK"), "1");
		cr_assert_str_eq(get(s, "NODE_RANK"), "1");
		cr_assert_str_eq(get(s, "CROSS_RANK"), "1");
		cr_assert_str_eq(get(s, "GROUP_WORLD_SIZE"), "2");
		cr_assert_str_eq(get(s, "CROSS_SIZE"), "2");
		cr_assert_str_eq(get(s, "MASTER_ADDR"), "10.0.0.1");
		cr_assert_str_eq(get(s, "DET_CHIEF_IP"), "10.0.0.1");
		cr_assert_str_eq(get(s, "MASTER_PORT"), "1234");
		cr_assert_str_eq(get(s, "NCCL_SOCKET_IFNAME"), "eth1");
		cr_assert_str_eq(get(s, "GLOO_SOCKET_IFNAME"), "eth1");
		cr_assert_str_eq(get(s, PLAN_SECRET_VAR), "s3cret");
		cr_assert_null(get(s, "CUDA_VISIBLE_DEVICES"), "no GPU, no CUDA_VISIBLE_DEVICES");
		cr_assert_null(get(s, "OMP_NUM_THREADS"), "unbound: no core count to give");
	}
	plan_free(&p);
}

LEAK_TEST(plan, gpu_cpus_and_what_the_user_set)
{
	struct cluster_info ci = two_nodes();
	struct plan_opts po = { .secret = "x", .iface = "eth1", .pci_order = true };
	struct topo_slot ts[3] = {
		placed("5", "0-3", "0", 4),
		placed("2", "4-7", "1", 4),
		placed(NULL, "8", "1", 1),
	};
	const char *e[] = { "GLOO_SOCKET_IFNAME=ib0", NULL };
	struct plan p;

	fake_env = e;
	cr_assert_eq(plan_build(&ci, ts, &po, &FAKE_ENV, &p), 0);
	cr_assert_str_eq(get(&p.slots[0], "CUDA_VISIBLE_DEVICES"), "5");
	cr_assert_str_eq(get(&p.slots[0], "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
	cr_assert_str_eq(get(&p.slots[1], "CUDA_VISIBLE_DEVICES"), "2");
	cr_assert_null(get(&p.slots[2], "CUDA_VISIBLE_DEVICES"));
	cr_assert_str_eq(get(&p.slots[0], "OMP_NUM_THREADS"), "4");
	cr_assert_str_eq(get(&p.slots[2], "OMP_NUM_THREADS"), "1");
	cr_assert_null(get(&p.slots[0], "GLOO_SOCKET_IFNAME"), "the user's GLOO_SOCKET_IFNAME stays");
	cr_assert_str_eq(get(&p.slots[0], "NCCL_SOCKET_IFNAME"), "eth1");
	plan_free(&p);

	const char *e2[] = { "OMP_NUM_THREADS=7", NULL };
	fake_env = e2;
	ts[0] = placed("5", "0-3", "0", 4);    /* the first plan took the others */
	cr_assert_eq(plan_build(&ci, ts, &po, &FAKE_ENV, &p), 0);
	cr_assert_null(get(&p.slots[0], "OMP_NUM_THREADS"), "the user's OMP_NUM_THREADS stays");
	plan_free(&p);
}

LEAK_TEST(plan, dry_run_row_is_json_with_the_secret_hidden)
{
	struct cluster_info ci = two_nodes();
	struct plan_opts po = { .secret = "topsecret" };
	struct topo_slot ts[3] = { placed("1", "0-1", "0", 2) };
	struct plan p;
	json_error_t je;
	char *row;
	json_t *o;

	fake_env = NULL;
	cr_assert_eq(plan_build(&ci, ts, &po, &FAKE_ENV, &p), 0);
	row = plan_slot_json(&p, 0, NULL);
	cr_assert_null(strstr(row, "topsecret"));
	cr_assert_null(strchr(row, '\n'), "one line");
	o = json_loads(row, 0, &je);
	cr_assert_not_null(o, "%s", je.text);
	cr_assert_eq(json_integer_value(json_object_get(o, "rank")), 2);
	cr_assert_eq(json_integer_value(json_object_get(o, "node_rank")), 1);
	cr_assert_str_eq(json_string_value(json_object_get(o, "gpu")), "1");
	cr_assert_str_eq(json_string_value(json_object_get(o, "cpus")), "0-1");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "env"), PLAN_SECRET_VAR)), "<secret>");
	cr_assert_null(json_object_get(o, "command"), "left out without a command");
	json_decref(o);
	free(row);
	row = plan_slot_json(&p, 1, (char *const[]){ "python3", "train.py", NULL });
	o = json_loads(row, 0, &je);
	cr_assert(json_is_null(json_object_get(o, "gpu")), "no GPU is null");
	cr_assert_eq(json_array_size(json_object_get(o, "command")), 2);
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(o, "command"), 1)), "train.py");
	json_decref(o);
	free(row);
	plan_free(&p);
}

LEAK_TEST(plan, envp_overrides_and_keeps_the_rest)
{
	struct cluster_info ci = two_nodes();
	struct plan_opts po = { .secret = "x" };
	char *base[] = { "PATH=/bin", "RANK=99", "RANKING=keep", "HOME=/root", NULL };
	struct plan p;
	char **envp;
	int n = 0, rank_seen = 0;

	fake_env = NULL;
	cr_assert_eq(plan_build(&ci, NULL, &po, &FAKE_ENV, &p), 0);
	envp = plan_envp(&p.slots[0], base, NULL);
	for (char **e = envp; *e; e++, n++) {
		if (strncmp(*e, "RANK=", 5) == 0) {
			rank_seen++;
			cr_assert_str_eq(*e, "RANK=2");
		}
	}
	cr_assert_eq(rank_seen, 1, "RANK set once, ours");
	int found = 0;
	for (char **e = envp; *e; e++)
		found += !strcmp(*e, "RANKING=keep") + !strcmp(*e, "PATH=/bin") + !strcmp(*e, "HOME=/root");
	cr_assert_eq(found, 3);
	free(envp);
	plan_free(&p);
}

LEAK_TEST(plan, the_attempts_variables_go_over_everything)
{
	struct cluster_info ci = two_nodes();
	struct plan_opts po = { .secret = "x" };
	char *base[] = { "PATH=/bin", "SLOTRUN_RESTART_COUNT=7", NULL };
	char *extra[] = { "SLOTRUN_RESTART_COUNT=1", "SLOTRUN_JOB_SECRET=x.attempt-1", NULL };
	struct plan p;
	char **envp;
	int count = 0, secret = 0;

	fake_env = NULL;
	cr_assert_eq(plan_build(&ci, NULL, &po, &FAKE_ENV, &p), 0);
	envp = plan_envp(&p.slots[0], base, extra);
	for (char **e = envp; *e; e++) {
		if (!strncmp(*e, "SLOTRUN_RESTART_COUNT=", 22)) {
			count++;
			cr_assert_str_eq(*e, "SLOTRUN_RESTART_COUNT=1", "over the inherited one");
		}
		if (!strncmp(*e, "SLOTRUN_JOB_SECRET=", 19)) {
			secret++;
			cr_assert_str_eq(*e, "SLOTRUN_JOB_SECRET=x.attempt-1", "over the slot's own");
		}
	}
	cr_assert_eq(count, 1);
	cr_assert_eq(secret, 1);
	free(envp);
	plan_free(&p);
}

LEAK_TEST(plan, slots_own_their_placement_and_start_shown)
{
	struct cluster_info ci = two_nodes();
	struct plan_opts po = { .secret = "x" };
	struct topo_slot ts[3] = {
		placed("5", "0-3", "0", 4),
		placed("2", "4-7", "1", 4),
		placed(NULL, "8", "1", 1),
	};
	char *gpu0 = ts[0].gpu, *cpus2 = ts[2].cpus;
	struct plan p;

	fake_env = NULL;
	cr_assert_eq(plan_build(&ci, ts, &po, &FAKE_ENV, &p), 0);
	cr_assert_eq(p.slots[0].place.gpu, gpu0, "moved, not copied");
	cr_assert_eq(p.slots[2].place.cpus, cpus2);
	cr_assert_eq(p.slots[1].place.ncpus, 4);
	for (int i = 0; i < 3; i++) {
		cr_assert(p.slots[i].shown);
		cr_assert_null(ts[i].gpu, "the caller's entry is left empty");
		cr_assert_null(ts[i].cpus);
		cr_assert_null(ts[i].numa);
	}
	plan_free(&p);
	cr_assert_null(p.slots);
	cr_assert_eq(p.nslots, 0);

	cr_assert_eq(plan_build(&ci, NULL, &po, &FAKE_ENV, &p), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert(p.slots[i].shown);
		cr_assert_null(p.slots[i].place.gpu, "no topology: unplaced");
		cr_assert_null(p.slots[i].place.cpus);
		cr_assert_null(p.slots[i].place.cpuset);
		cr_assert_eq(p.slots[i].place.gpu_index, -1);
	}
	plan_free(&p);
}

/* ---- the GPU each worker is told, in CUDA's numbering ---- */

static char *one_addr[] = { "127.0.0.1" };
static int one_count[] = { 2 };

/* One node with two slots whose GPU source named physical GPUs 4 and 6. */
static struct cluster_info gpu_node(enum ci_source src, char **gpus, int ngpus, int slots)
{
	one_count[0] = slots;
	return (struct cluster_info){
		.nnodes = 1, .addrs = one_addr, .slot_counts = one_count, .slots = slots,
		.world_size = slots, .master_port = 29400, .gpus = gpus, .ngpus = ngpus,
		.src_gpus = src,
	};
}

/* Plans ci with placements on the GPUs ci names and returns the
 * CUDA_VISIBLE_DEVICES of every slot joined by ' '. */
static const char *cuda_ids(const struct cluster_info *ci, const char *const *env)
{
	static char out[64];
	struct plan_opts po = { .secret = "x" };
	struct topo_slot ts[4];
	struct plan p;

	cr_assert(ci->slots <= 4);
	for (int i = 0; i < ci->slots; i++)
		ts[i] = placed(ci->gpus[i % ci->ngpus], "0", "0", 1);
	fake_env = env;
	cr_assert_eq(plan_build(ci, ts, &po, &FAKE_ENV, &p), 0);
	out[0] = '\0';
	for (int i = 0; i < p.nslots; i++) {
		const char *v = get(&p.slots[i], "CUDA_VISIBLE_DEVICES");
		cr_assert_not_null(v);
		cr_assert_str_eq(v, p.slots[i].place.gpu, "the placement holds what the worker is told");
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i ? " " : "", v);
	}
	plan_free(&p);
	return out;
}

static char *phys[] = { "4", "6" };

LEAK_TEST(plan, cuda_numbering_determined_container)
{
	struct cluster_info ci = gpu_node(CI_SRC_DETERMINED, phys, 2, 2);
	const char *hidden[] = { "CUDA_VISIBLE_DEVICES=-1", NULL };
	const char *nodev[] = { "CUDA_VISIBLE_DEVICES=NoDevFiles", NULL };
	const char *empty[] = { "CUDA_VISIBLE_DEVICES=", NULL };

	cr_assert_str_eq(cuda_ids(&ci, NULL), "0 1", "the container's own GPUs, by position");
	cr_assert_str_eq(cuda_ids(&ci, hidden), "0 1");
	cr_assert_str_eq(cuda_ids(&ci, nodev), "0 1");
	cr_assert_str_eq(cuda_ids(&ci, empty), "0 1");
	ci = gpu_node(CI_SRC_DETERMINED, phys, 2, 4);
	cr_assert_str_eq(cuda_ids(&ci, NULL), "0 1 0 1", "slots share GPUs round-robin");
}

LEAK_TEST(plan, cuda_numbering_determined_with_inherited_list)
{
	struct cluster_info ci = gpu_node(CI_SRC_DETERMINED, phys, 2, 2);
	const char *uuids[] = { "CUDA_VISIBLE_DEVICES=GPU-a,GPU-b", NULL };
	const char *one[] = { "CUDA_VISIBLE_DEVICES=3", NULL };

	cr_assert_str_eq(cuda_ids(&ci, uuids), "GPU-a GPU-b", "the slot's entry, as written");
	cr_assert_str_eq(cuda_ids(&ci, one), "3 3", "a shorter list wraps");
	ci = gpu_node(CI_SRC_DETERMINED, phys, 2, 4);
	cr_assert_str_eq(cuda_ids(&ci, uuids), "GPU-a GPU-b GPU-a GPU-b");
}

LEAK_TEST(plan, cuda_numbering_slurm)
{
	struct cluster_info ci = gpu_node(CI_SRC_SLURM, phys, 2, 2);
	const char *cgroup[] = { "CUDA_VISIBLE_DEVICES=0,1", NULL };
	const char *hidden[] = { "CUDA_VISIBLE_DEVICES=-1", NULL };

	cr_assert_str_eq(cuda_ids(&ci, NULL), "4 6", "bare metal: Slurm's ids are CUDA's");
	cr_assert_str_eq(cuda_ids(&ci, hidden), "4 6");
	cr_assert_str_eq(cuda_ids(&ci, cgroup), "0 1", "device cgroup: the inherited entries");
}

LEAK_TEST(plan, cuda_numbering_only_for_scheduler_ids)
{
	struct cluster_info ci = gpu_node(CI_SRC_SLOTRUN_ENV, phys, 2, 2);
	const char *inh[] = { "CUDA_VISIBLE_DEVICES=4,6", NULL };
	struct plan_opts po = { .secret = "x" };
	struct plan p;

	/* the GPUs came from CUDA_VISIBLE_DEVICES itself: already CUDA's */
	cr_assert_str_eq(cuda_ids(&ci, inh), "4 6");
	ci = gpu_node(CI_SRC_DEFAULT, NULL, 0, 2);
	struct topo_slot ts[2] = { placed("0", "0", "0", 1), placed("1", "1", "0", 1) };
	fake_env = NULL;
	cr_assert_eq(plan_build(&ci, ts, &po, &FAKE_ENV, &p), 0);
	cr_assert_str_eq(get(&p.slots[1], "CUDA_VISIBLE_DEVICES"), "1", "topology's numbering");
	plan_free(&p);
	ci = gpu_node(CI_SRC_DETERMINED, phys, 2, 2);
	cr_assert_eq(plan_build(&ci, NULL, &po, &FAKE_ENV, &p), 0);
	cr_assert_null(get(&p.slots[0], "CUDA_VISIBLE_DEVICES"), "no topology, no GPU");
	plan_free(&p);
}

/* ---- the job secret ---- */

static char *pair[] = { "127.0.0.1", "b" };
static int pair_counts[] = { 1, 1 };

static struct cluster_info pair_node(int node_rank)
{
	return (struct cluster_info){
		.nnodes = 2, .node_rank = node_rank, .addrs = pair, .slot_counts = pair_counts,
		.slots = 1, .rank_base = node_rank, .world_size = 2, .master_port = 29400,
	};
}

static struct plan_secret secret_of(const struct cluster_info *ci, const char *const *env)
{
	struct plan_secret s;

	memset(&s, 0x55, sizeof(s));
	fake_env = env;
	cr_assert_eq(plan_job_secret(ci, &FAKE_ENV, &s), 0);
	cr_assert_lt(strlen(s.value), sizeof(s.value));
	return s;
}

LEAK_TEST(plan, secret_given_by_the_user)
{
	struct cluster_info one = gpu_node(CI_SRC_DEFAULT, NULL, 0, 1), two = pair_node(1);
	const char *e[] = { "SLOTRUN_JOB_SECRET=s3cret", "DET_ALLOCATION_ID=x1", NULL };
	char longer[300] = "SLOTRUN_JOB_SECRET=";
	const char *e2[] = { longer, NULL };
	struct plan_secret s;

	s = secret_of(&one, e);
	cr_assert_str_eq(s.value, "s3cret");
	cr_assert_eq(s.kind, PLAN_SECRET_GIVEN);
	s = secret_of(&two, e);
	cr_assert_str_eq(s.value, "s3cret", "given beats derived");
	cr_assert_eq(s.kind, PLAN_SECRET_GIVEN);
	memset(longer + strlen(longer), 'k', PLAN_SECRET_MAX - 1);
	s = secret_of(&two, e2);
	cr_assert_eq(strlen(s.value), PLAN_SECRET_MAX - 1, "the longest allowed");
	cr_assert_eq(s.kind, PLAN_SECRET_GIVEN);
}

/* A secret one byte over the limit is refused, not cut: a cut one would
 * differ from the same secret given to a program that takes it whole. */
LEAK_TEST(plan, secret_over_the_limit_is_refused)
{
	struct cluster_info two = pair_node(1);
	char longer[300] = "SLOTRUN_JOB_SECRET=";
	const char *e[] = { longer, NULL };
	struct plan_secret s = { .value = "untouched", .kind = PLAN_SECRET_DERIVED };

	memset(longer + strlen(longer), 'k', PLAN_SECRET_MAX);
	fake_env = e;
	cr_assert_eq(plan_job_secret(&two, &FAKE_ENV, &s), -E2BIG);
	cr_assert_str_eq(s.value, "untouched");
	cr_assert_eq(s.kind, PLAN_SECRET_DERIVED);
}

/* --secret-file's first line goes through the same check. */
LEAK_TEST(plan, secret_given_has_one_limit)
{
	char text[PLAN_SECRET_MAX + 1];
	struct plan_secret s = { .value = "untouched" };

	memset(text, 'k', sizeof(text));
	cr_assert_eq(plan_secret_given(&s, text, PLAN_SECRET_MAX), -E2BIG);
	cr_assert_str_eq(s.value, "untouched");
	cr_assert_eq(plan_secret_given(&s, text, 0), -EINVAL);
	cr_assert_str_eq(s.value, "untouched");
	cr_assert_eq(plan_secret_given(&s, text, PLAN_SECRET_MAX - 1), 0);
	cr_assert_eq(strlen(s.value), PLAN_SECRET_MAX - 1);
	cr_assert_eq(s.kind, PLAN_SECRET_GIVEN);
	cr_assert_eq(plan_secret_given(&s, "ab\ncd", 2), 0, "only len bytes are taken");
	cr_assert_str_eq(s.value, "ab");
}

LEAK_TEST(plan, secret_of_one_node_is_random_hex)
{
	struct cluster_info one = gpu_node(CI_SRC_DEFAULT, NULL, 0, 1);
	const char *empty[] = { "SLOTRUN_JOB_SECRET=", "DET_ALLOCATION_ID=x1", NULL };
	struct plan_secret a = secret_of(&one, NULL), b = secret_of(&one, empty);

	cr_assert_eq(a.kind, PLAN_SECRET_RANDOM);
	cr_assert_eq(b.kind, PLAN_SECRET_RANDOM, "an empty SLOTRUN_JOB_SECRET is none");
	cr_assert_eq(strlen(a.value), 32);
	cr_assert_eq(strspn(a.value, "0123456789abcdef"), 32, "'%s'", a.value);
	cr_assert_str_neq(a.value, b.value, "fresh every time");
}

LEAK_TEST(plan, secret_of_several_nodes_is_derived_alike_on_every_node)
{
	static const struct {
		const char *env[3];
		const char *want;
	} cases[] = {
		/* the values slotrun has always derived: nodes of one job may
		 * run different builds */
		{ { "DET_ALLOCATION_ID=x1", "SLURM_JOB_ID=77" }, "derived-4176e96147f199b9" },
		{ { "SLURM_JOB_ID=77", "DET_TRIAL_ID=5" }, "derived-f260fbeb1565bf09" },
		{ { "DET_ALLOCATION_ID=", "SLURM_JOB_ID=77" }, "derived-f260fbeb1565bf09" },
		{ { NULL }, "derived-cba6ad9892cd8c73" },    /* chief 127.0.0.1:29400 */
	};
	struct cluster_info chief = pair_node(0), other = pair_node(1);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct plan_secret a = secret_of(&chief, cases[i].env);
		struct plan_secret b = secret_of(&other, cases[i].env);

		cr_assert_str_eq(a.value, cases[i].want, "case %zu", i);
		cr_assert_eq(a.kind, PLAN_SECRET_DERIVED);
		cr_assert_str_eq(b.value, a.value, "every node derives the same secret");
		cr_assert_eq(b.kind, PLAN_SECRET_DERIVED);
	}

	const char *trial[] = { "DET_TRIAL_ID=5", NULL };
	struct plan_secret t = secret_of(&chief, trial);
	cr_assert_str_neq(t.value, "derived-cba6ad9892cd8c73", "DET_TRIAL_ID is used");
	chief.master_port = 29401;
	cr_assert_str_neq(secret_of(&chief, NULL).value, "derived-cba6ad9892cd8c73",
			  "the chief's port is part of it");
}
