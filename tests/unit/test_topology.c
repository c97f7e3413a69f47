// SPDX-License-Identifier: MIT
/* Topology planning on hwloc XML fixtures (tests/data, made by
 * make_topologies.py) and on this machine.
 *
 * Expectations come from the fixtures' design (which GPU sits on which NUMA
 * node or package), not from topology.c: the test reads the fixture with
 * hwloc itself only to get the cpusets of those nodes and packages. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <limits.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hwloc.h>

#include "topology.h"
#include "leak_check.h"

#define MAXS 256

/* Where each GPU (by CUDA index) must be placed: a NUMA node, or a
 * package when the machine has no NUMA information. */
struct fixture {
	const char *file;
	int ngpus;
	bool pci_order;
	bool by_package;
	int home[8];     /* NUMA node (or package) os index per GPU */
	const char *numa[8];  /* expected numa string per GPU */
};

static const struct fixture fixtures[] = {
	{ "gpu8_2socket.xml", 8, false, false, { 1, 1, 0, 0, 1, 1, 0, 0 },
	  { "1", "1", "0", "0", "1", "1", "0", "0" } },
	{ "gpu8_2socket_pci.xml", 8, true, false, { 1, 1, 0, 0, 1, 1, 0, 0 },
	  { "1", "1", "0", "0", "1", "1", "0", "0" } },
	{ "gpu8_restricted.xml", 8, false, false, { 1, 1, 0, 0, 1, 1, 0, 0 },
	  { "1", "1", "0", "0", "1", "1", "0", "0" } },
	{ "gpu4_asym.xml", 4, false, false, { 1, 0, 0, 0 }, { "1", "0", "0", "0" } },
	{ "gpu2_nonuma_pci.xml", 2, true, true, { 1, 0 }, { "0", "0" } },
	{ "cpu_2numa.xml", 0, false, false, { 0 }, { NULL } },
};
#define NFIX (sizeof(fixtures) / sizeof(fixtures[0]))

static void use_fixture(const char *file)
{
	const char *dir = getenv("SLOTRUN_TEST_DATA");
	char path[PATH_MAX];

	cr_assert(dir, "SLOTRUN_TEST_DATA is not set (meson sets it)");
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	cr_assert_eq(access(path, R_OK), 0, "cannot read %s", path);
	setenv("HWLOC_XMLFILE", path, 1);
	setenv("HWLOC_THISSYSTEM", "0", 1);
}

static struct topo *open_fixture(const char *file)
{
	struct topo *t = NULL;
	char err[256] = "";

	use_fixture(file);
	cr_assert_eq(topo_open(&t, err, sizeof(err)), 0, "%s: %s", file, err);
	cr_assert_not_null(t);
	return t;
}

/* The same fixture through hwloc directly, for reference cpusets. */
struct ref {
	hwloc_topology_t h;
	hwloc_const_bitmap_t allowed;
};

static void ref_open(struct ref *r)
{
	cr_assert_eq(hwloc_topology_init(&r->h), 0);
	cr_assert_eq(hwloc_topology_load(r->h), 0);
	r->allowed = hwloc_topology_get_allowed_cpuset(r->h);
}

static hwloc_const_bitmap_t ref_home(struct ref *r, const struct fixture *f, int gpu)
{
	hwloc_obj_t o;

	if (f->by_package) {
		o = NULL;
		while ((o = hwloc_get_next_obj_by_type(r->h, HWLOC_OBJ_PACKAGE, o)))
			if ((int)o->os_index == f->home[gpu])
				return o->cpuset;
		cr_assert_fail("no package %d", f->home[gpu]);
	}
	o = hwloc_get_numanode_obj_by_os_index(r->h, (unsigned)f->home[gpu]);
	cr_assert_not_null(o, "no NUMA node %d", f->home[gpu]);
	return o->cpuset;
}

static hwloc_obj_t core_of(struct ref *r, hwloc_obj_t pu)
{
	hwloc_obj_t c = hwloc_get_ancestor_obj_by_type(r->h, HWLOC_OBJ_CORE, pu);

	return c ? c : pu;
}

static int ref_cores(struct ref *r, hwloc_const_bitmap_t set)
{
	hwloc_obj_t pu = NULL, last = NULL;
	int n = 0;

	while ((pu = hwloc_get_next_obj_inside_cpuset_by_type(r->h, set, HWLOC_OBJ_PU, pu))) {
		if (core_of(r, pu) != last)
			n++;
		last = core_of(r, pu);
	}
	return n;
}

/* The whole cores (their allowed PUs) a set touches. */
static hwloc_bitmap_t ref_core_cover(struct ref *r, hwloc_const_bitmap_t set,
				     hwloc_const_bitmap_t allowed)
{
	hwloc_bitmap_t out = hwloc_bitmap_alloc();
	hwloc_obj_t pu = NULL;

	while ((pu = hwloc_get_next_obj_inside_cpuset_by_type(r->h, set, HWLOC_OBJ_PU, pu)))
		hwloc_bitmap_or(out, out, core_of(r, pu)->cpuset);
	hwloc_bitmap_and(out, out, allowed);
	return out;
}

/* Every invariant of a plan made with `ids` (NULL: CPU slots) on fixture f
 * under --bind auto/gpu.  restrict_to narrows the reference allowed set the
 * way topo_restrict narrowed the plan's (NULL: none). */
static void check_plan(const struct fixture *f, struct ref *r, int n, char *const *ids,
		       struct topo_slot *s, hwloc_const_bitmap_t restrict_to)
{
	hwloc_bitmap_t allowed = hwloc_bitmap_dup(r->allowed);
	hwloc_bitmap_t scratch = hwloc_bitmap_alloc();
	char *str;

	if (restrict_to)
		hwloc_bitmap_and(allowed, allowed, restrict_to);
	for (int i = 0; i < n; i++) {
		hwloc_const_bitmap_t set = s[i].cpuset;

		cr_assert_not_null(set, "%s n=%d slot %d: unbound", f->file, n, i);
		cr_assert(!hwloc_bitmap_iszero(set), "%s n=%d slot %d: empty set", f->file, n, i);
		cr_assert(hwloc_bitmap_isincluded(set, allowed),
			  "%s n=%d slot %d: cpus %s not all allowed", f->file, n, i, s[i].cpus);
		hwloc_bitmap_list_asprintf(&str, set);
		cr_assert_str_eq(s[i].cpus, str);
		free(str);
		hwloc_bitmap_list_sscanf(scratch, s[i].cpus);
		cr_assert(hwloc_bitmap_isequal(scratch, set));
		cr_assert_eq(s[i].ncpus, ref_cores(r, set), "%s n=%d slot %d: ncpus %d for %s",
			     f->file, n, i, s[i].ncpus, s[i].cpus);
		cr_assert_not_null(s[i].nodeset);
		hwloc_bitmap_list_asprintf(&str, s[i].nodeset);
		cr_assert_str_eq(s[i].numa, str);
		free(str);
		if (ids && ids[i]) {
			cr_assert_str_eq(s[i].gpu, ids[i]);
		} else {
			cr_assert_null(s[i].gpu);
		}
		if (ids && ids[i] && atoi(ids[i]) < f->ngpus) {
			int g = atoi(ids[i]);

			cr_assert_eq(s[i].gpu_index, g);
			cr_assert(s[i].gpu_local, "%s n=%d slot %d: not placed by GPU %d",
				  f->file, n, i, g);
			cr_assert(hwloc_bitmap_isincluded(set, ref_home(r, f, g)),
				  "%s n=%d slot %d: cpus %s not local to GPU %d", f->file, n, i,
				  s[i].cpus, g);
			cr_assert_str_eq(s[i].numa, f->numa[g], "%s n=%d slot %d (GPU %d): numa %s",
					 f->file, n, i, g, s[i].numa);
		}
		if (!s[i].shared) {
			/* Whole cores: every core touched is in the set entirely. */
			hwloc_bitmap_t cover = ref_core_cover(r, set, allowed);

			cr_assert(hwloc_bitmap_isequal(cover, set),
				  "%s n=%d slot %d: cpus %s split a core", f->file, n, i, s[i].cpus);
			hwloc_bitmap_free(cover);
		}
	}
	/* Exclusive: an unshared slot shares no core with any other slot. */
	for (int i = 0; i < n; i++) {
		hwloc_bitmap_t ci = ref_core_cover(r, s[i].cpuset, allowed);

		for (int j = 0; j < n; j++) {
			hwloc_bitmap_t cj;

			if (i == j)
				continue;
			cj = ref_core_cover(r, s[j].cpuset, allowed);
			if (!s[i].shared)
				cr_assert(!hwloc_bitmap_intersects(ci, cj),
					  "%s n=%d: slot %d (%s) and slot %d (%s) share a core",
					  f->file, n, i, s[i].cpus, j, s[j].cpus);
			else if (hwloc_bitmap_intersects(ci, cj))
				cr_assert(s[j].shared, "%s n=%d: slot %d overlaps slot %d unflagged",
					  f->file, n, j, i);
			hwloc_bitmap_free(cj);
		}
		hwloc_bitmap_free(ci);
	}
	hwloc_bitmap_free(scratch);
	hwloc_bitmap_free(allowed);
}

/* Slots sharing a place (a GPU's home, or the machine for CPU slots) share
 * cores only when there are fewer cores there than slots, and PUs only when
 * there are fewer PUs; with enough cores they differ by at most one. */
static void check_sharing(const char *what, struct ref *r, hwloc_const_bitmap_t place,
			  const int *idx, int k, struct topo_slot *s)
{
	hwloc_bitmap_t p = hwloc_bitmap_dup(place);
	int cores, pus, min = INT_MAX, max = 0;

	hwloc_bitmap_and(p, p, r->allowed);
	cores = ref_cores(r, p);
	pus = hwloc_bitmap_weight(p);
	int nshared = 0;

	for (int a = 0; a < k; a++) {
		struct topo_slot *x = &s[idx[a]];

		nshared += x->shared;
		if (k <= cores)
			cr_assert_not(x->shared, "%s: slot %d shared with %d slots on %d cores",
				      what, idx[a], k, cores);
		if (x->ncpus < min)
			min = x->ncpus;
		if (x->ncpus > max)
			max = x->ncpus;
		for (int b = a + 1; b < k && k <= pus; b++)
			cr_assert(!hwloc_bitmap_intersects(x->cpuset, s[idx[b]].cpuset),
				  "%s: %d slots on %d PUs, slots %d and %d overlap", what, k, pus,
				  idx[a], idx[b]);
	}
	if (k <= cores)
		cr_assert(max - min <= 1, "%s: unbalanced, %d to %d cores", what, min, max);
	else
		cr_assert_gt(nshared, 0, "%s: %d slots on %d cores, none shared", what, k, cores);
	hwloc_bitmap_free(p);
}

static char **ids_for(int n, int ngpus)
{
	char **ids = calloc((size_t)n, sizeof(*ids));

	for (int i = 0; i < n; i++) {
		ids[i] = malloc(12);
		snprintf(ids[i], 12, "%d", i % ngpus);
	}
	return ids;
}

static void free_ids(char **ids, int n)
{
	for (int i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

static void free_slots(struct topo_slot *s, int n)
{
	for (int i = 0; i < n; i++)
		topo_slot_free(&s[i]);
}

/* For every slot count, GPU slots (ids 0..n-1, then round robin so GPUs
 * carry several slots) and CPU slots, on every fixture. */
LEAK_TEST_OPTS(topology, every_fixture_every_slot_count, .timeout = 60)
{
	static struct topo_slot s[MAXS];
	char err[256];

	for (size_t fi = 0; fi < NFIX; fi++) {
		const struct fixture *f = &fixtures[fi];
		struct topo *t = open_fixture(f->file);
		struct ref r;
		bool pci;
		int npus;

		ref_open(&r);
		cr_assert_eq(topo_gpu_count(t, &pci), f->ngpus, "%s", f->file);
		cr_assert_eq(pci, f->pci_order, "%s: pci_order", f->file);
		npus = hwloc_bitmap_weight(r.allowed);

		for (int n = 1; f->ngpus && n <= 3 * f->ngpus; n++) {
			char **ids = ids_for(n, f->ngpus);

			cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, n, ids, s, err, sizeof(err)), 0,
				     "%s n=%d: %s", f->file, n, err);
			check_plan(f, &r, n, ids, s, NULL);
			/* Per home: the slots of every GPU living there. */
			for (int g = 0; g < f->ngpus; g++) {
				int idx[MAXS], k = 0;
				char what[128];

				for (int i = 0; i < n; i++)
					if (f->home[i % f->ngpus] == f->home[g])
						idx[k++] = i;
				snprintf(what, sizeof(what), "%s n=%d home %d", f->file, n, f->home[g]);
				check_sharing(what, &r, ref_home(&r, f, g), idx, k, s);
			}
			free_slots(s, n);
			free_ids(ids, n);
		}
		for (int n = 1; n <= npus + 3 && n <= MAXS; n++) {
			int idx[MAXS];
			char what[128];

			cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, n, NULL, s, err, sizeof(err)), 0,
				     "%s n=%d cpu: %s", f->file, n, err);
			check_plan(f, &r, n, NULL, s, NULL);
			for (int i = 0; i < n; i++)
				idx[i] = i;
			snprintf(what, sizeof(what), "%s n=%d cpu", f->file, n);
			check_sharing(what, &r, r.allowed, idx, n, s);
			free_slots(s, n);
		}
		hwloc_topology_destroy(r.h);
		topo_close(t);
	}
}

/* The line the launcher prints for --report-bindings, and slotrun(1)'s. */
LEAK_TEST(topology, gpu8_eight_slots_golden)
{
	static const char *const want[] = {
		"rank 0: gpu 0, cpus 16-19,48-51, numa 1",
		"rank 1: gpu 1, cpus 20-23,52-55, numa 1",
		"rank 2: gpu 2, cpus 0-3,32-35, numa 0",
		"rank 3: gpu 3, cpus 4-7,36-39, numa 0",
		"rank 4: gpu 4, cpus 24-27,56-59, numa 1",
		"rank 5: gpu 5, cpus 28-31,60-63, numa 1",
		"rank 6: gpu 6, cpus 8-11,40-43, numa 0",
		"rank 7: gpu 7, cpus 12-15,44-47, numa 0",
	};
	const char *files[] = { "gpu8_2socket.xml", "gpu8_2socket_pci.xml" };
	char *ids[] = { "0", "1", "2", "3", "4", "5", "6", "7" };
	struct topo_slot s[8];
	char err[256], line[128];

	for (int fi = 0; fi < 2; fi++) {
		struct topo *t = open_fixture(files[fi]);

		cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 8, ids, s, err, sizeof(err)), 0, "%s", err);
		for (int i = 0; i < 8; i++) {
			cr_assert_eq(topo_format_binding(&s[i], i, line, sizeof(line)), 0);
			cr_assert_str_eq(line, want[i], "%s", files[fi]);
			cr_assert_eq(s[i].ncpus, 4);
			cr_assert_not(s[i].shared);
		}
		free_slots(s, 8);
		topo_close(t);
	}
}

/* An inherited CUDA_VISIBLE_DEVICES=5,2: the launcher passes "5","2". */
LEAK_TEST(topology, visible_devices_narrowing)
{
	struct topo *t = open_fixture("gpu8_2socket.xml");
	char *ids[] = { "5", "2" };
	struct topo_slot s[2];
	char err[256];
	struct ref r;

	ref_open(&r);
	cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 2, ids, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s[0].gpu, "5");
	cr_assert_eq(s[0].gpu_index, 5);
	cr_assert_str_eq(s[0].numa, "1");
	cr_assert(hwloc_bitmap_isincluded(s[0].cpuset,
					  hwloc_get_numanode_obj_by_os_index(r.h, 1)->cpuset));
	cr_assert_str_eq(s[1].gpu, "2");
	cr_assert_str_eq(s[1].numa, "0");
	/* Alone on its node, each gets all of it. */
	cr_assert_str_eq(s[0].cpus, "16-31,48-63");
	cr_assert_str_eq(s[1].cpus, "0-15,32-47");
	cr_assert_eq(s[0].ncpus, 16);
	free_slots(s, 2);
	hwloc_topology_destroy(r.h);
	topo_close(t);
}

/* Slots on one GPU split its share; GPUs on one node split the node. */
LEAK_TEST(topology, slots_on_the_same_gpu_split_its_share)
{
	struct topo *t = open_fixture("gpu8_2socket.xml");
	char *ids[] = { "0", "0", "1" };
	struct topo_slot s[3];
	char err[256];

	cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 3, ids, s, err, sizeof(err)), 0, "%s", err);
	/* NUMA node 1 has 16 cores: GPU 0's two slots 6+5, GPU 1's one 5. */
	cr_assert_str_eq(s[0].cpus, "16-21,48-53");
	cr_assert_str_eq(s[1].cpus, "22-26,54-58");
	cr_assert_str_eq(s[2].cpus, "27-31,59-63");
	for (int i = 0; i < 3; i++)
		cr_assert_not(s[i].shared);
	free_slots(s, 3);
	topo_close(t);
}

LEAK_TEST(topology, asymmetric_sockets)
{
	struct topo *t = open_fixture("gpu4_asym.xml");
	char *ids[] = { "0", "1", "2", "3" };
	struct topo_slot s[4];
	char err[256];

	cr_assert_eq(topo_plan(t, TOPO_BIND_GPU, 4, ids, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s[0].cpus, "10-19");   /* alone on socket 1 */
	cr_assert_str_eq(s[1].cpus, "0-3");     /* 10 cores over 3 GPUs: 4+3+3 */
	cr_assert_str_eq(s[2].cpus, "4-6");
	cr_assert_str_eq(s[3].cpus, "7-9");
	cr_assert_str_eq(s[0].numa, "1");
	cr_assert_str_eq(s[3].numa, "0");
	free_slots(s, 4);
	topo_close(t);
}

/* No CUDA devices: NVIDIA display/3D PCI functions in bus order, nothing
 * else (an ASPEED VGA and an NVSwitch are in the fixture); no NUMA
 * information, so the package is the locality. */
LEAK_TEST(topology, pci_order_and_package_locality)
{
	struct topo *t = open_fixture("gpu2_nonuma_pci.xml");
	char *ids[] = { "0", "1" };
	struct topo_slot s[2];
	char err[256];
	bool pci = false;

	cr_assert_eq(topo_gpu_count(t, &pci), 2);
	cr_assert(pci);
	cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 2, ids, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s[0].cpus, "4-7");     /* bus 41: package 1 */
	cr_assert_str_eq(s[1].cpus, "0-3");     /* bus 81: package 0 */
	cr_assert_str_eq(s[0].numa, "0");
	cr_assert_not_null(s[0].bindmask);
	free_slots(s, 2);
	topo_close(t);
}

LEAK_TEST(topology, cpu_only_box)
{
	struct topo *t = open_fixture("cpu_2numa.xml");
	struct topo_slot s[40];
	char err[256];
	bool pci = true;

	cr_assert_eq(topo_gpu_count(t, &pci), 0);
	cr_assert_not(pci);
	cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 2, NULL, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s[0].cpus, "0-7,16-23");
	cr_assert_str_eq(s[0].numa, "0");
	cr_assert_str_eq(s[1].cpus, "8-15,24-31");
	cr_assert_str_eq(s[1].numa, "1");
	cr_assert_eq(s[0].ncpus, 8);
	cr_assert_null(s[0].gpu);
	free_slots(s, 2);

	/* 20 slots on 16 cores x 2 PUs: PUs split evenly (2 or 1 each), so
	 * the first 12 keep whole cores and the last 8 pair up on 4 cores;
	 * no PU is shared. */
	cr_assert_eq(topo_plan(t, TOPO_BIND_CORE, 20, NULL, s, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(s[i].shared, i >= 12, "slot %d: cpus %s", i, s[i].cpus);
		cr_assert_eq(s[i].ncpus, 1);
		for (int j = i + 1; j < 20; j++)
			cr_assert_not(hwloc_bitmap_intersects(s[i].cpuset, s[j].cpuset));
	}
	cr_assert_str_eq(s[0].cpus, "0,16");
	cr_assert_str_eq(s[12].cpus, "12");
	cr_assert_str_eq(s[13].cpus, "28");
	free_slots(s, 20);

	/* 40 slots on 32 PUs: sharing is unavoidable and flagged. */
	cr_assert_eq(topo_plan(t, TOPO_BIND_CORE, 40, NULL, s, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < 40; i++) {
		cr_assert(s[i].shared);
		cr_assert_eq(hwloc_bitmap_weight(s[i].cpuset), 1);
		cr_assert_eq(s[i].ncpus, 1);
	}
	free_slots(s, 40);
	topo_close(t);
}

/* A cgroup-restricted export: only allowed PUs, and four GPUs on three PUs
 * share, flagged. */
LEAK_TEST(topology, cpuset_restricted_fixture)
{
	struct topo *t = open_fixture("gpu8_restricted.xml");
	char *ids[] = { "0", "1", "2", "3", "4", "5", "6", "7" };
	struct topo_slot s[8];
	char err[256];

	cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 8, ids, s, err, sizeof(err)), 0, "%s", err);
	/* Socket 0: six cores over GPUs 2, 3, 6, 7. */
	cr_assert_str_eq(s[2].cpus, "0-1,32-33");
	cr_assert_str_eq(s[3].cpus, "2-3,34-35");
	cr_assert_str_eq(s[6].cpus, "4,36");
	cr_assert_str_eq(s[7].cpus, "5,37");
	/* Socket 1: PUs 16-18 over GPUs 0, 1, 4, 5. */
	cr_assert_str_eq(s[0].cpus, "16");
	cr_assert_str_eq(s[1].cpus, "16");
	cr_assert_str_eq(s[4].cpus, "17");
	cr_assert_str_eq(s[5].cpus, "18");
	cr_assert(s[0].shared && s[1].shared);
	cr_assert_not(s[4].shared || s[5].shared || s[2].shared);
	free_slots(s, 8);
	topo_close(t);
}

LEAK_TEST(topology, restrict_narrows_allowed_pus)
{
	struct topo *t = open_fixture("gpu8_2socket.xml");
	char *ids[] = { "0", "1", "2" };
	struct topo_slot s[3];
	char err[256] = "";
	hwloc_bitmap_t only = hwloc_bitmap_alloc();
	struct ref r;

	ref_open(&r);
	cr_assert_eq(topo_restrict(t, "0-3,16-23,48-55", err, sizeof(err)), 0, "%s", err);
	hwloc_bitmap_list_sscanf(only, "0-3,16-23,48-55");
	cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 3, ids, s, err, sizeof(err)), 0, "%s", err);
	check_plan(&fixtures[0], &r, 3, ids, s, only);
	cr_assert_str_eq(s[0].cpus, "16-19,48-51");
	cr_assert_str_eq(s[1].cpus, "20-23,52-55");
	cr_assert_str_eq(s[2].cpus, "0-3");     /* siblings 32-35 not allowed */
	free_slots(s, 3);

	cr_assert_eq(topo_restrict(t, "", err, sizeof(err)), -EINVAL);
	cr_assert_eq(topo_restrict(t, "zero", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "zero"), "%s", err);
	cr_assert_eq(topo_restrict(t, "100-200", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "100-200"), "%s", err);
	cr_assert_eq(topo_restrict(t, NULL, err, sizeof(err)), -EINVAL);
	/* A failed restriction changes nothing. */
	cr_assert_eq(topo_plan(t, TOPO_BIND_CORE, 1, NULL, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s[0].cpus, "0-3,16-23,48-55");
	free_slots(s, 1);
	hwloc_bitmap_free(only);
	hwloc_topology_destroy(r.h);
	topo_close(t);
}

/* UUIDs, MIG names, lists and ids beyond the GPUs are CPU slots, placed on
 * what the GPU slots left; the id is still the slot's gpu string. */
LEAK_TEST(topology, unmappable_ids_become_cpu_slots)
{
	struct topo *t = open_fixture("gpu8_2socket.xml");
	char *ids[] = { "0", "GPU-8f3c1a2e-0000", "8", "MIG-1", "1,2", "-1" };
	struct topo_slot s[6];
	char err[256];

	cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 6, ids, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s[0].gpu_index, 0);
	cr_assert(s[0].gpu_local);
	cr_assert_str_eq(s[0].cpus, "16-31,48-63");
	for (int i = 1; i < 6; i++) {
		cr_assert_str_eq(s[i].gpu, ids[i]);
		cr_assert_eq(s[i].gpu_index, -1, "%s", ids[i]);
		cr_assert_not(s[i].gpu_local);
		cr_assert_not(s[i].shared);
		cr_assert_not(hwloc_bitmap_intersects(s[i].cpuset, s[0].cpuset), "%s", ids[i]);
		cr_assert_str_eq(s[i].numa, "0");
	}
	free_slots(s, 6);
	topo_close(t);
}

/* A GPU whose node has no allowed PU: its slot is placed as a CPU slot. */
LEAK_TEST(topology, gpu_without_local_cpus)
{
	struct topo *t = open_fixture("gpu8_2socket.xml");
	char *ids[] = { "0", "2" };
	struct topo_slot s[2];
	char err[256];

	cr_assert_eq(topo_restrict(t, "0-15", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 2, ids, s, err, sizeof(err)), 0, "%s", err);
	cr_assert(s[1].gpu_local);
	cr_assert_eq(s[0].gpu_index, 0);
	cr_assert_not(s[0].gpu_local);
	/* GPU 2's slot took node 0; nothing is left, so slot 0 shares. */
	cr_assert_str_eq(s[1].cpus, "0-15");
	cr_assert_str_eq(s[0].cpus, "0-15");
	cr_assert(s[0].shared && s[1].shared);
	free_slots(s, 2);
	topo_close(t);
}

LEAK_TEST(topology, bind_none_keeps_gpus_and_binds_nothing)
{
	struct topo *t = open_fixture("gpu8_2socket.xml");
	char *ids[] = { "3", "1" };
	struct topo_slot s[2];
	char err[256], line[128];

	cr_assert_eq(topo_plan(t, TOPO_BIND_NONE, 2, ids, s, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < 2; i++) {
		cr_assert_str_eq(s[i].gpu, ids[i]);
		cr_assert_str_eq(s[i].cpus, "");
		cr_assert_str_eq(s[i].numa, "");
		cr_assert_eq(s[i].ncpus, 0);
		cr_assert_null(s[i].cpuset);
		cr_assert_null(s[i].nodeset);
		cr_assert_null(s[i].bindmask);
		cr_assert_eq(topo_bind_self(t, &s[i]), 0);
	}
	cr_assert_eq(topo_format_binding(&s[0], 0, line, sizeof(line)), 0);
	cr_assert_str_eq(line, "rank 0: gpu 3, cpus unbound, numa unbound");
	free_slots(s, 2);
	topo_close(t);
}

LEAK_TEST(topology, bind_numa_gives_whole_nodes)
{
	struct topo *t = open_fixture("gpu8_2socket.xml");
	char *ids[] = { "0", "1", "2" };
	struct topo_slot s[3];
	char err[256], line[128];

	cr_assert_eq(topo_plan(t, TOPO_BIND_NUMA, 3, ids, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s[0].cpus, "16-31,48-63");
	cr_assert_str_eq(s[1].cpus, "16-31,48-63");
	cr_assert_str_eq(s[2].cpus, "0-15,32-47");
	cr_assert(s[0].shared && s[1].shared);
	cr_assert_not(s[2].shared);
	cr_assert_eq(topo_format_binding(&s[0], 0, line, sizeof(line)), 0);
	cr_assert_str_eq(line, "rank 0: gpu 0, cpus 16-31,48-63, numa 1 (shares cores)");
	free_slots(s, 3);

	cr_assert_eq(topo_plan(t, TOPO_BIND_NUMA, 2, NULL, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s[0].numa, "0");
	cr_assert_str_eq(s[1].numa, "1");
	cr_assert_str_eq(s[1].cpus, "16-31,48-63");
	free_slots(s, 2);
	cr_assert_eq(topo_plan(t, TOPO_BIND_NUMA, 1, NULL, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s[0].numa, "0-1");
	free_slots(s, 1);
	topo_close(t);
}

/* --bind core ignores where the GPUs are. */
LEAK_TEST(topology, bind_core_ignores_gpus)
{
	struct topo *t = open_fixture("gpu8_2socket.xml");
	char *ids[] = { "0", "1" };
	struct topo_slot s[2];
	char err[256];

	cr_assert_eq(topo_plan(t, TOPO_BIND_CORE, 2, ids, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s[0].cpus, "0-15,32-47");
	cr_assert_str_eq(s[1].cpus, "16-31,48-63");
	cr_assert_not(s[0].gpu_local);
	cr_assert_eq(s[0].gpu_index, 0);
	free_slots(s, 2);
	topo_close(t);
}

LEAK_TEST(topology, bad_inputs)
{
	struct topo *t = open_fixture("cpu_2numa.xml");
	struct topo_slot s[2];
	char err[256];
	int counts[] = { 0, -1, TOPO_MAX_SLOTS + 1, INT_MAX };

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		err[0] = 0;
		cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, counts[i], NULL, s, err, sizeof(err)),
			     -EINVAL);
		cr_assert(strstr(err, "slots"), "message for %d: '%s'", counts[i], err);
	}
	err[0] = 0;
	cr_assert_eq(topo_plan(t, (enum topo_bind)99, 1, NULL, s, err, sizeof(err)), -EINVAL);
	cr_assert(err[0]);
	cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 1, NULL, NULL, err, sizeof(err)), -EINVAL);
	cr_assert_eq(topo_plan(NULL, TOPO_BIND_AUTO, 1, NULL, s, err, sizeof(err)), -EINVAL);
	/* A NULL err buffer is allowed. */
	cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 0, NULL, s, NULL, 0), -EINVAL);
	cr_assert_eq(topo_gpu_count(NULL, NULL), -EINVAL);
	cr_assert_eq(topo_bind_self(t, NULL), -EINVAL);
	topo_slot_free(NULL);
	topo_close(NULL);
	topo_close(t);
}

LEAK_TEST(topology, missing_xml_file_is_an_error)
{
	struct topo *t = (struct topo *)1;
	char err[256] = "";

	setenv("HWLOC_XMLFILE", "/nonexistent/slotrun.xml", 1);
	cr_assert_lt(topo_open(&t, err, sizeof(err)), 0);
	cr_assert_null(t);
	cr_assert(strstr(err, "/nonexistent/slotrun.xml"), "%s", err);
}

/* Criterion may run each parameter in a fresh exec of this binary, so a
 * parameter holds its string, not a pointer into this process. */
struct bind_case {
	char name[8];
	enum topo_bind b;
};

ParameterizedTestParameters(topology, parse_bind)
{
	static struct bind_case cases[] = {
		{ "auto", TOPO_BIND_AUTO }, { "none", TOPO_BIND_NONE }, { "core", TOPO_BIND_CORE },
		{ "numa", TOPO_BIND_NUMA }, { "gpu", TOPO_BIND_GPU },
	};
	return cr_make_param_array(struct bind_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct bind_case *c, topology, parse_bind)
{
	enum topo_bind b = (enum topo_bind)-1;

	cr_assert_eq(topo_parse_bind(c->name, &b), 0);
	cr_assert_eq(b, c->b);
	cr_assert_str_eq(topo_bind_name(c->b), c->name);
}

LEAK_TEST(topology, parse_bind_rejects)
{
	const char *bad[] = { "", "AUTO", "cores", "auto ", "gpus", "socket", "0" };
	enum topo_bind b = TOPO_BIND_GPU;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(topo_parse_bind(bad[i], &b), -EINVAL, "'%s'", bad[i]);
	cr_assert_eq(b, TOPO_BIND_GPU, "untouched on failure");
	cr_assert_eq(topo_parse_bind(NULL, &b), -EINVAL);
	cr_assert_eq(topo_parse_bind("auto", NULL), -EINVAL);
	cr_assert_null(topo_bind_name((enum topo_bind)42));
	cr_assert_null(topo_bind_name((enum topo_bind)-1));
}

LEAK_TEST(topology, format_binding_edges)
{
	struct topo *t = open_fixture("cpu_2numa.xml");
	struct topo_slot s[1];
	char err[256], line[128], tiny[8];

	cr_assert_eq(topo_plan(t, TOPO_BIND_AUTO, 1, NULL, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(topo_format_binding(&s[0], 12, line, sizeof(line)), 0);
	cr_assert_str_eq(line, "rank 12: gpu none, cpus 0-31, numa 0-1");
	cr_assert_eq(topo_format_binding(&s[0], 0, tiny, sizeof(tiny)), -ENOSPC);
	cr_assert_eq(strlen(tiny), sizeof(tiny) - 1);
	cr_assert_eq(topo_format_binding(NULL, 0, line, sizeof(line)), -EINVAL);
	cr_assert_eq(topo_format_binding(&s[0], 0, NULL, 0), -EINVAL);
	free_slots(s, 1);
	topo_close(t);
}

/* ---- this machine ---- */

static int allowed_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 0;
	return CPU_COUNT(&set);
}

static void use_this_machine(void)
{
	unsetenv("HWLOC_XMLFILE");
	unsetenv("HWLOC_THISSYSTEM");
}

LEAK_TEST_OPTS(topology, this_machine_two_cpu_slots, .timeout = 30)
{
	struct topo *t = NULL;
	struct topo_slot s[2];
	char err[256] = "";

	use_this_machine();
	cr_assert_eq(topo_open(&t, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(topo_plan(t, TOPO_BIND_CORE, 2, NULL, s, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < 2; i++) {
		cr_assert(!hwloc_bitmap_iszero(s[i].cpuset));
		cr_assert_gt(s[i].ncpus, 0);
	}
	if (allowed_cpus() >= 2) {
		cr_assert_not(hwloc_bitmap_intersects(s[0].cpuset, s[1].cpuset),
			      "cpus %s and %s overlap", s[0].cpus, s[1].cpus);
	}
	free_slots(s, 2);
	topo_close(t);
}

/* Exit codes of the binding child: 0 ok, else what went wrong. */
enum { CHILD_OK, CHILD_BIND, CHILD_AFFINITY, CHILD_MISMATCH, CHILD_POLICY };

static int wait_child(pid_t pid)
{
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "child died: status %#x", status);
	return WEXITSTATUS(status);
}

/* In a forked child: bind to slot 1's set and read the affinity back. */
LEAK_TEST_OPTS(topology, bind_self_in_a_child, .timeout = 30)
{
	struct topo *t = NULL;
	struct topo_slot s[2];
	char err[256] = "";
	pid_t pid;

	use_this_machine();
	cr_assert_eq(topo_open(&t, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(topo_plan(t, TOPO_BIND_CORE, 2, NULL, s, err, sizeof(err)), 0, "%s", err);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		cpu_set_t got;
		int code = CHILD_OK;

		if (topo_bind_self(t, &s[1]) < 0)
			_exit(CHILD_BIND);
		if (sched_getaffinity(0, sizeof(got), &got) < 0)
			_exit(CHILD_AFFINITY);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (!!CPU_ISSET(c, &got) != hwloc_bitmap_isset(s[1].cpuset, (unsigned)c))
				code = CHILD_MISMATCH;
		_exit(code);
	}
	cr_assert_eq(wait_child(pid), CHILD_OK, "child bound to %s", s[1].cpus);
	free_slots(s, 2);
	topo_close(t);
}

/* A plan naming CPUs this machine lacks fails in the child with an errno,
 * and memory is bound (MPOL_BIND) when the set's node excludes another. */
LEAK_TEST_OPTS(topology, bind_self_errors_and_memory, .timeout = 30)
{
	struct topo *t = open_fixture("cpu_2numa.xml");
	struct topo_slot s[2];
	char err[256] = "";
	pid_t pid;

	if (sysconf(_SC_NPROCESSORS_CONF) > 31)
		cr_skip_test("this machine has CPU 31");
	cr_assert_eq(topo_plan(t, TOPO_BIND_CORE, 2, NULL, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s[1].cpus, "8-15,24-31");
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0)
		_exit(-topo_bind_self(t, &s[1]));
	cr_assert_eq(wait_child(pid), EINVAL, "binding to CPUs that do not exist");
	free_slots(s, 2);

	/* CPU 0 and node 0 exist everywhere; node 1 of the fixture is left
	 * out, so the child gets a memory policy. */
	cr_assert_eq(topo_restrict(t, "0", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(topo_plan(t, TOPO_BIND_CORE, 1, NULL, s, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(s[0].numa, "0");
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		unsigned long mask[16] = { 0 };
		int mode = -1;

		if (topo_bind_self(t, &s[0]) < 0)
			_exit(CHILD_BIND);
		if (syscall(SYS_get_mempolicy, &mode, mask, sizeof(mask) * CHAR_BIT, NULL, 0UL) < 0)
			_exit(CHILD_POLICY);
		if (mode == MPOL_BIND)
			_exit(mask[0] == 1 ? CHILD_OK : CHILD_MISMATCH);
		/* Still the default: fine only where the kernel or a seccomp
		 * profile refuses memory policies (topo_bind_self's contract). */
		mask[0] = 1;
		if (syscall(SYS_set_mempolicy, MPOL_BIND, mask, sizeof(mask) * CHAR_BIT) < 0 &&
		    (errno == EPERM || errno == ENOSYS))
			_exit(CHILD_OK);
		_exit(CHILD_MISMATCH);
	}
	cr_assert_eq(wait_child(pid), CHILD_OK);
	free_slots(s, 1);
	topo_close(t);
}

/* One NUMA node: a memory policy would bind nothing, so none is set. */
LEAK_TEST_OPTS(topology, bind_self_skips_pointless_memory_policy, .timeout = 30)
{
	struct topo *t = open_fixture("gpu2_nonuma_pci.xml");
	struct topo_slot s[1];
	char err[256] = "";
	pid_t pid;

	cr_assert_eq(topo_restrict(t, "0", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(topo_plan(t, TOPO_BIND_CORE, 1, NULL, s, err, sizeof(err)), 0, "%s", err);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		unsigned long mask[16] = { 0 };
		int mode = -1;

		if (topo_bind_self(t, &s[0]) < 0)
			_exit(CHILD_BIND);
		if (syscall(SYS_get_mempolicy, &mode, mask, sizeof(mask) * CHAR_BIT, NULL, 0UL) < 0)
			_exit(CHILD_POLICY);
		_exit(mode == MPOL_DEFAULT ? CHILD_OK : CHILD_MISMATCH);
	}
	cr_assert_eq(wait_child(pid), CHILD_OK);
	free_slots(s, 1);
	topo_close(t);
}
