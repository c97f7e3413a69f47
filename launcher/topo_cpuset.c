// SPDX-License-Identifier: MIT
/* The cpuset each slot gets (topology.h has the contract; this is how it
 * is met):
 * - --bind gpu (auto with GPUs): the allowed PUs of each locality are split
 *   among the slots placed there, slots ordered by GPU then by slot, so a
 *   GPU's slots get adjacent runs and a GPU with two slots gets twice the
 *   cores of one with a single slot (slots on one GPU split its share).
 *   Splits are of whole cores, contiguous, sizes differing by at most one;
 *   with fewer cores than slots, of PUs (hyperthreads); with fewer PUs
 *   than slots, slots share PUs.  Either way the slot is marked shared.
 * - Slots without a GPU topo can place (no id, an id it cannot map, or a
 *   GPU whose locality has no allowed PU) split what the GPU slots left;
 *   when they left nothing, all allowed PUs.
 * - --bind core (auto without GPUs): the allowed PUs split over all slots
 *   in slot order, as above.  --bind numa: a GPU slot gets its locality's
 *   allowed PUs; other slots get whole NUMA nodes, contiguous runs.
 * - A slot's memory: the NUMA nodes nearest its PUs (topo_bind.c says when
 *   it is bound to them). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

/* The core a PU belongs to, or the PU when hwloc knows no cores. */
static hwloc_obj_t core_of(struct topo *t, hwloc_obj_t pu)
{
	hwloc_obj_t c = hwloc_get_ancestor_obj_by_type(t->h, HWLOC_OBJ_CORE, pu);

	return c ? c : pu;
}

/* Gives units[0..n) to k consumers: out[i] |= its units' cpusets, masked
 * by within.  Contiguous runs whose sizes differ by at most one, the
 * larger first; with fewer units than consumers, consumer i gets unit
 * i*n/k (adjacent consumers share). */
static int split_units(hwloc_obj_t *units, int n, int k, hwloc_const_bitmap_t within,
		       hwloc_bitmap_t *out)
{
	int u = 0;

	for (int i = 0; i < k; i++) {
		int len = n >= k ? n / k + (i < n % k) : 1;
		int first = n >= k ? u : (int)((long)i * n / k);

		for (int j = 0; j < len; j++)
			if (hwloc_bitmap_or(out[i], out[i], units[first + j]->cpuset) < 0)
				return -ENOMEM;
		u = first + len;
		if (hwloc_bitmap_and(out[i], out[i], within) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The distinct units (unit_of each PU of set, in logical order, where a
 * unit's PUs are consecutive) into units[], which holds npus entries.
 * Returns how many. */
static int collect_units(struct topo *t, hwloc_const_bitmap_t set,
			 hwloc_obj_t (*unit_of)(struct topo *, hwloc_obj_t), hwloc_obj_t *units)
{
	hwloc_obj_t pu = NULL, u;
	int n = 0;

	while ((pu = hwloc_get_next_obj_inside_cpuset_by_type(t->h, set, HWLOC_OBJ_PU, pu))) {
		u = unit_of(t, pu);
		if (n == 0 || units[n - 1] != u)
			units[n++] = u;
	}
	return n;
}

static hwloc_obj_t pu_itself(struct topo *t, hwloc_obj_t pu)
{
	return pu;
}

/* The objects carrying the NUMA nodes nearest a PU (so a machine-wide
 * memory node, CXL or GPU memory, is not a unit of its own). */
static hwloc_obj_t numa_unit(struct topo *t, hwloc_obj_t pu)
{
	return topo_numa_home(pu);
}

/* Splits the PUs of set among k consumers by units: whole cores when there
 * are enough (falling back to PUs), or NUMA localities. */
static int split_by(struct topo *t, hwloc_const_bitmap_t set, int k, bool numa, hwloc_bitmap_t *out)
{
	int npus = hwloc_bitmap_weight(set), n, r;
	hwloc_obj_t *units;

	if (npus <= 0 || k <= 0)
		return -EINVAL;
	units = calloc((size_t)npus, sizeof(*units));
	if (!units)
		return -ENOMEM;
	n = collect_units(t, set, numa ? numa_unit : core_of, units);
	if (!numa && n < k)
		n = collect_units(t, set, pu_itself, units);
	r = split_units(units, n, k, set, out);
	free(units);
	return r;
}

static int split_cpus(struct topo *t, hwloc_const_bitmap_t set, int k, hwloc_bitmap_t *out)
{
	return split_by(t, set, k, false, out);
}

static int split_numa(struct topo *t, hwloc_const_bitmap_t set, int k, hwloc_bitmap_t *out)
{
	return split_by(t, set, k, true, out);
}

static bool memory_node_wanted(struct topo *t, hwloc_obj_t node)
{
	/* GPU memory exposed as a NUMA node (Grace Hopper) is not where a
	 * worker's host memory belongs. */
	if (node->subtype && strcmp(node->subtype, "GPUMemory") == 0)
		return false;
	return hwloc_bitmap_isset(t->allowed_nodes, node->os_index);
}

static void add_memory_children(struct topo *t, hwloc_obj_t parent, hwloc_bitmap_t ns)
{
	/* Memory children may be memory-side caches above the NUMA nodes. */
	for (hwloc_obj_t m = parent->memory_first_child; m; m = m->next_sibling) {
		if (m->type == HWLOC_OBJ_NUMANODE) {
			if (memory_node_wanted(t, m))
				hwloc_bitmap_set(ns, m->os_index);
		} else {
			add_memory_children(t, m, ns);
		}
	}
}

/* The NUMA nodes nearest the set's PUs (not every node whose locality
 * covers them: a machine-wide CXL node is not local memory). */
static int nodes_of(struct topo *t, hwloc_const_bitmap_t set, hwloc_bitmap_t ns)
{
	hwloc_obj_t pu = NULL, home, last = NULL;

	hwloc_bitmap_zero(ns);
	while ((pu = hwloc_get_next_obj_inside_cpuset_by_type(t->h, set, HWLOC_OBJ_PU, pu))) {
		home = topo_numa_home(pu);
		if (home != last)
			add_memory_children(t, home, ns);
		last = home;
	}
	if (hwloc_bitmap_iszero(ns)) {
		if (hwloc_cpuset_to_nodeset(t->h, set, ns) < 0)
			return -ENOMEM;
		hwloc_bitmap_and(ns, ns, t->allowed_nodes);
	}
	return 0;
}

static int count_cores(struct topo *t, hwloc_const_bitmap_t set)
{
	hwloc_obj_t pu = NULL, c, last = NULL;
	int n = 0;

	while ((pu = hwloc_get_next_obj_inside_cpuset_by_type(t->h, set, HWLOC_OBJ_PU, pu))) {
		c = core_of(t, pu);
		if (c != last)
			n++;
		last = c;
	}
	return n;
}

/* The whole cores the set touches. */
static int cores_of(struct topo *t, hwloc_const_bitmap_t set, hwloc_bitmap_t out)
{
	hwloc_obj_t pu = NULL;

	hwloc_bitmap_zero(out);
	while ((pu = hwloc_get_next_obj_inside_cpuset_by_type(t->h, set, HWLOC_OBJ_PU, pu)))
		if (hwloc_bitmap_or(out, out, core_of(t, pu)->cpuset) < 0)
			return -ENOMEM;
	return 0;
}

struct gpu_slot {
	int slot;
	int gpos;   /* position in t->gpu */
};

static int cmp_gpu_slot(const void *a, const void *b)
{
	const struct gpu_slot *x = a, *y = b;

	if (x->gpos != y->gpos)
		return (x->gpos > y->gpos) - (x->gpos < y->gpos);
	return (x->slot > y->slot) - (x->slot < y->slot);
}

/* Places the slots that sit by their GPU (--bind gpu or numa); marks them
 * in placed[]. */
static int place_gpu_slots(struct topo *t, enum topo_bind mode, int nslots,
			   struct topo_slot *out, hwloc_bitmap_t *sets, bool *placed)
{
	struct gpu_slot *gs = calloc((size_t)nslots, sizeof(*gs));
	hwloc_bitmap_t local = hwloc_bitmap_alloc();
	hwloc_bitmap_t *run = calloc((size_t)nslots, sizeof(*run));
	int n = 0, r = 0;

	if (!gs || !local || !run) {
		r = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nslots; i++) {
		if (out[i].gpu_index < 0)
			continue;
		for (int g = 0; g < t->ngpus; g++) {
			if ((int)t->gpu[g].id != out[i].gpu_index)
				continue;
			if (hwloc_bitmap_intersects(t->gpu[g].loc->cpuset, t->allowed))
				gs[n++] = (struct gpu_slot){ .slot = i, .gpos = g };
			break;
		}
	}
	qsort(gs, (size_t)n, sizeof(*gs), cmp_gpu_slot);
	for (int i = 0; i < n; i++) {
		hwloc_obj_t loc = t->gpu[gs[i].gpos].loc;
		int k = 0;

		if (placed[gs[i].slot])
			continue;
		/* Every slot by a GPU of this locality, in (GPU, slot) order. */
		for (int j = i; j < n; j++)
			if (t->gpu[gs[j].gpos].loc == loc)
				run[k++] = sets[gs[j].slot];
		hwloc_bitmap_and(local, loc->cpuset, t->allowed);
		if (mode == TOPO_BIND_NUMA) {
			for (int j = 0; j < k; j++)
				hwloc_bitmap_copy(run[j], local);
		} else {
			r = split_cpus(t, local, k, run);
			if (r < 0)
				goto out;
		}
		for (int j = i; j < n; j++) {
			if (t->gpu[gs[j].gpos].loc == loc) {
				placed[gs[j].slot] = true;
				out[gs[j].slot].gpu_local = true;
			}
		}
	}
out:
	free(gs);
	free(run);
	hwloc_bitmap_free(local);
	return r;
}

/* Places the slots not placed yet on what the placed ones left, or on
 * every allowed PU when they left none. */
static int place_rest(struct topo *t, enum topo_bind mode, int nslots, hwloc_bitmap_t *sets,
		      const bool *placed)
{
	hwloc_bitmap_t pool = hwloc_bitmap_dup(t->allowed);
	hwloc_bitmap_t *run = calloc((size_t)nslots, sizeof(*run));
	int k = 0, r = 0;

	if (!pool || !run) {
		r = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nslots; i++) {
		if (placed[i])
			hwloc_bitmap_andnot(pool, pool, sets[i]);
		else
			run[k++] = sets[i];
	}
	if (k == 0)
		goto out;
	if (hwloc_bitmap_iszero(pool))
		hwloc_bitmap_copy(pool, t->allowed);
	r = mode == TOPO_BIND_NUMA ? split_numa(t, pool, k, run) : split_cpus(t, pool, k, run);
out:
	hwloc_bitmap_free(pool);
	free(run);
	return r;
}

/* Strings, counts, sharing and bind masks, from the chosen sets. */
static int finish_slots(struct topo *t, int nslots, struct topo_slot *out, hwloc_bitmap_t *sets)
{
	hwloc_bitmap_t seen = hwloc_bitmap_alloc(), dup = hwloc_bitmap_alloc();
	hwloc_bitmap_t cores = hwloc_bitmap_alloc(), both = hwloc_bitmap_alloc();
	int r = 0;

	if (!seen || !dup || !cores || !both) {
		r = -ENOMEM;
		goto out;
	}
	/* dup: the cores more than one slot touches, in one pass. */
	for (int i = 0; i < nslots && r == 0; i++) {
		r = cores_of(t, sets[i], cores);
		if (r == 0 && (hwloc_bitmap_and(both, seen, cores) < 0 ||
			       hwloc_bitmap_or(dup, dup, both) < 0 ||
			       hwloc_bitmap_or(seen, seen, cores) < 0))
			r = -ENOMEM;
	}
	for (int i = 0; i < nslots && r == 0; i++) {
		struct topo_slot *s = &out[i];
		hwloc_bitmap_t ns = hwloc_bitmap_alloc();

		if (!ns) {
			r = -ENOMEM;
			break;
		}
		s->nodeset = ns;
		s->cpuset = sets[i];
		sets[i] = NULL;
		r = nodes_of(t, s->cpuset, ns);
		if (r == 0)
			r = cores_of(t, s->cpuset, cores);
		if (r < 0)
			break;
		s->shared = hwloc_bitmap_intersects(cores, dup);
		s->ncpus = count_cores(t, s->cpuset);
		if (hwloc_bitmap_list_asprintf(&s->cpus, s->cpuset) < 0 ||
		    hwloc_bitmap_list_asprintf(&s->numa, ns) < 0) {
			r = -ENOMEM;
			break;
		}
		r = topo_bindmask_make(t, s->cpuset, ns, (struct topo_bindmask **)&s->bindmask);
	}
out:
	hwloc_bitmap_free(seen);
	hwloc_bitmap_free(dup);
	hwloc_bitmap_free(cores);
	hwloc_bitmap_free(both);
	return r;
}

static int unbound_strings(int nslots, struct topo_slot *out)
{
	for (int i = 0; i < nslots; i++) {
		out[i].cpus = strdup("");
		out[i].numa = strdup("");
		if (!out[i].cpus || !out[i].numa)
			return -ENOMEM;
	}
	return 0;
}

/* Each slot's GPU string and, when topo knows that GPU, its index. */
static int name_gpus(struct topo *t, int nslots, char *const *gpus, struct topo_slot *out)
{
	for (int i = 0; i < nslots; i++) {
		struct topo_gpu *g;

		out[i].gpu_index = -1;
		if (!gpus || !gpus[i])
			continue;
		out[i].gpu = strdup(gpus[i]);
		if (!out[i].gpu)
			return -ENOMEM;
		g = topo_gpu_by_id(t, gpus[i]);
		if (g)
			out[i].gpu_index = (int)g->id;
	}
	return 0;
}

static void free_sets(hwloc_bitmap_t *sets, int nslots)
{
	if (sets)
		for (int i = 0; i < nslots; i++)
			hwloc_bitmap_free(sets[i]);
	free(sets);
}

/* Chooses every slot's set, then fills in out from them. */
static int place(struct topo *t, enum topo_bind mode, int nslots, struct topo_slot *out)
{
	hwloc_bitmap_t *sets = calloc((size_t)nslots, sizeof(*sets));
	bool *placed = calloc((size_t)nslots, sizeof(*placed));
	int r = sets && placed ? 0 : -ENOMEM;

	for (int i = 0; i < nslots && r == 0; i++)
		if (!(sets[i] = hwloc_bitmap_alloc()))
			r = -ENOMEM;
	if (r == 0 && (mode == TOPO_BIND_GPU || mode == TOPO_BIND_NUMA))
		r = place_gpu_slots(t, mode, nslots, out, sets, placed);
	if (r == 0)
		r = place_rest(t, mode, nslots, sets, placed);
	if (r == 0)
		r = finish_slots(t, nslots, out, sets);
	free_sets(sets, nslots);
	free(placed);
	return r;
}

int topo_plan(struct topo *t, enum topo_bind bind, int nslots, char *const *gpus,
	      struct topo_slot *out, char *err, size_t errlen)
{
	enum topo_bind mode = bind;
	int r;

	if (!t || !out) {
		topo_seterr(err, errlen, "topology plan: no topology or no output");
		return -EINVAL;
	}
	if (nslots < 1 || nslots > TOPO_MAX_SLOTS) {
		topo_seterr(err, errlen, "topology plan: %d slots (must be 1 to %d)", nslots, TOPO_MAX_SLOTS);
		return -EINVAL;
	}
	if (!topo_bind_name(bind)) {
		topo_seterr(err, errlen, "topology plan: unknown binding %d", (int)bind);
		return -EINVAL;
	}
	memset(out, 0, (size_t)nslots * sizeof(*out));
	if (mode == TOPO_BIND_AUTO)
		mode = gpus ? TOPO_BIND_GPU : TOPO_BIND_CORE;
	r = name_gpus(t, nslots, gpus, out);
	if (r == 0)
		r = bind == TOPO_BIND_NONE ? unbound_strings(nslots, out) : place(t, mode, nslots, out);
	if (r < 0) {
		topo_seterr(err, errlen, "topology plan: %s", strerror(-r));
		for (int i = 0; i < nslots; i++)
			topo_slot_free(&out[i]);
	}
	return r;
}

void topo_slot_free(struct topo_slot *s)
{
	if (!s)
		return;
	free(s->gpu);
	free(s->cpus);
	free(s->numa);
	hwloc_bitmap_free(s->cpuset);
	hwloc_bitmap_free(s->nodeset);
	topo_bindmask_free(s->bindmask);
	memset(s, 0, sizeof(*s));
	s->gpu_index = -1;
}
