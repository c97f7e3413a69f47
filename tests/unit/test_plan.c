#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
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
		{ .gpu = "5", .cpus = "0-3", .numa = "0", .ncpus = 4 },
		{ .gpu = "2", .cpus = "4-7", .numa = "1", .ncpus = 4 },
		{ .gpu = NULL, .cpus = "8", .numa = "1", .ncpus = 1 },
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
	cr_assert_eq(plan_build(&ci, ts, &po, &FAKE_ENV, &p), 0);
	cr_assert_null(get(&p.slots[0], "OMP_NUM_THREADS"), "the user's OMP_NUM_THREADS stays");
	plan_free(&p);
}

LEAK_TEST(plan, dry_run_row_is_json_with_the_secret_hidden)
{
	struct cluster_info ci = two_nodes();
	struct plan_opts po = { .secret = "topsecret" };
	struct topo_slot ts[3] = { { .gpu = "1", .cpus = "0-1", .numa = "0", .ncpus = 2 } };
	struct plan p;
	json_error_t je;
	char *row;
	json_t *o;

	fake_env = NULL;
	cr_assert_eq(plan_build(&ci, ts, &po, &FAKE_ENV, &p), 0);
	row = plan_slot_json(&p, 0);
	cr_assert_null(strstr(row, "topsecret"));
	cr_assert_null(strchr(row, '\n'), "one line");
	o = json_loads(row, 0, &je);
	cr_assert_not_null(o, "%s", je.text);
	cr_assert_eq(json_integer_value(json_object_get(o, "rank")), 2);
	cr_assert_eq(json_integer_value(json_object_get(o, "node_rank")), 1);
	cr_assert_str_eq(json_string_value(json_object_get(o, "gpu")), "1");
	cr_assert_str_eq(json_string_value(json_object_get(o, "cpus")), "0-1");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "env"), PLAN_SECRET_VAR)), "<secret>");
	json_decref(o);
	free(row);
	row = plan_slot_json(&p, 1);
	o = json_loads(row, 0, &je);
	cr_assert(json_is_null(json_object_get(o, "gpu")), "no GPU is null");
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
	envp = plan_envp(&p.slots[0], base);
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
