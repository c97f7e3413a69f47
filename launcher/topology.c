// SPDX-License-Identifier: MIT
/* Topology: the slot plan's cpusets, from hwloc.
 *
 * Policy (topology.h has the contract; this is how it is met):
 * - GPUs are hwloc's CUDA OS devices "cudaN" when it has any, numbered by
 *   N; otherwise NVIDIA PCI devices of class 0x0300/0x0302 in bus order.
 *   Live discovery never loads hwloc's cuda/nvml/opencl plugins: they would
 *   initialise GPU runtimes in the launcher and number devices after an
 *   inherited CUDA_VISIBLE_DEVICES, which is exactly what the ids we are
 *   given index into.  So on a live machine GPUs come in PCI bus order and
 *   cudaN only from XML.
 * - A GPU's locality is the first ancestor of its PCI device that carries
 *   NUMA nodes; when that is the whole machine (no NUMA information) and
 *   the device sits under a package, the package.
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
 * - Memory: MPOL_BIND to the NUMA nodes local to the set, applied only when
 *   that excludes an allowed node.
 * - Allowed PUs: hwloc's allowed set (cgroup cpuset; disallowed PUs in an
 *   XML export are dropped) and, on the live system, the process's own
 *   affinity (taskset, Slurm), narrowed further by topo_restrict. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <hwloc.h>

#include "io.h"
#include "topology.h"

#define NVIDIA_VENDOR 0x10de

struct topo_gpu {
	unsigned id;       /* CUDA index: N of cudaN, or rank in bus order */
	hwloc_obj_t dev;   /* the PCI device (or the OS device without one) */
	hwloc_obj_t loc;   /* locality: see gpu_locality() */
};

struct topo {
	hwloc_topology_t h;
	hwloc_bitmap_t allowed;        /* PUs slots may use */
	hwloc_bitmap_t allowed_nodes;  /* NUMA nodes memory may be bound to */
	struct topo_gpu *gpu;          /* sorted by id */
	int ngpus;
	bool pci_order;
};

/* Precomputed in topo_plan so the child after fork only makes syscalls. */
struct topo_bindmask {
	size_t cpusize;
	cpu_set_t *cpus;
	unsigned long maxnode;
	unsigned long *nodes;          /* NULL: leave the memory policy alone */
};

__attribute__((format(printf, 3, 4)))
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static const char *const bind_names[] = {
	[TOPO_BIND_AUTO] = "auto",
	[TOPO_BIND_NONE] = "none",
	[TOPO_BIND_CORE] = "core",
	[TOPO_BIND_NUMA] = "numa",
	[TOPO_BIND_GPU] = "gpu",
};
#define NBIND ((int)(sizeof(bind_names) / sizeof(bind_names[0])))

int topo_parse_bind(const char *s, enum topo_bind *out)
{
	if (!s || !out)
		return -EINVAL;
	for (int i = 0; i < NBIND; i++) {
		if (strcmp(s, bind_names[i]) == 0) {
			*out = (enum topo_bind)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *topo_bind_name(enum topo_bind b)
{
	if ((int)b < 0 || (int)b >= NBIND)
		return NULL;
	return bind_names[b];
}

/* The object whose memory children are the NUMA nodes local to obj. */
static hwloc_obj_t numa_home(hwloc_obj_t obj)
{
	hwloc_obj_t last = obj;

	for (; obj; obj = obj->parent) {
		if (obj->memory_arity > 0)
			return obj;
		last = obj;
	}
	return last;
}

static hwloc_obj_t gpu_locality(struct topo *t, hwloc_obj_t dev)
{
	hwloc_obj_t root = hwloc_get_root_obj(t->h);
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t->h, dev);
	hwloc_obj_t loc = numa_home(anc);
	hwloc_obj_t pkg;

	if (loc == root && anc != root) {
		/* No NUMA information: the package is the next best thing. */
		pkg = anc->type == HWLOC_OBJ_PACKAGE ? anc
			: hwloc_get_ancestor_obj_by_type(t->h, HWLOC_OBJ_PACKAGE, anc);
		if (pkg)
			loc = pkg;
	}
	return loc;
}

/* "cudaN" with N a plain number; *n = N. */
static bool cuda_name(const char *name, unsigned *n)
{
	unsigned long v = 0;
	const char *p;

	if (!name || strncmp(name, "cuda", 4) != 0 || !name[4])
		return false;
	for (p = name + 4; *p; p++) {
		if (*p < '0' || *p > '9' || v > 100000)
			return false;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	*n = (unsigned)v;
	return true;
}

static bool nvidia_gpu(hwloc_obj_t pci)
{
	return pci->attr->pcidev.vendor_id == NVIDIA_VENDOR &&
	       (pci->attr->pcidev.class_id == 0x0300 || pci->attr->pcidev.class_id == 0x0302);
}

static int cmp_gpu_id(const void *a, const void *b)
{
	const struct topo_gpu *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

#define CMP_FIELD(x, y, f) \
	do { \
		if ((x)->f != (y)->f) \
			return ((x)->f > (y)->f) - ((x)->f < (y)->f); \
	} while (0)

static int cmp_gpu_bus(const void *a, const void *b)
{
	const struct hwloc_pcidev_attr_s *x = &((const struct topo_gpu *)a)->dev->attr->pcidev;
	const struct hwloc_pcidev_attr_s *y = &((const struct topo_gpu *)b)->dev->attr->pcidev;

	CMP_FIELD(x, y, domain);
	CMP_FIELD(x, y, bus);
	CMP_FIELD(x, y, dev);
	CMP_FIELD(x, y, func);
	return 0;
}

static int find_gpus(struct topo *t)
{
	hwloc_obj_t o = NULL, dev;
	int n = 0, cap = 0;
	unsigned id;

	while ((o = hwloc_get_next_osdev(t->h, o)))
		if (cuda_name(o->name, &id))
			cap++;
	if (cap > 0) {
		t->gpu = calloc((size_t)cap, sizeof(*t->gpu));
		if (!t->gpu)
			return -ENOMEM;
		while ((o = hwloc_get_next_osdev(t->h, o))) {
			if (!cuda_name(o->name, &id))
				continue;
			dev = o->parent;
			if (!dev || dev->type != HWLOC_OBJ_PCI_DEVICE)
				dev = o;
			t->gpu[n++] = (struct topo_gpu){ .id = id, .dev = dev };
		}
		qsort(t->gpu, (size_t)n, sizeof(*t->gpu), cmp_gpu_id);
		/* Two OS devices with one name would be a broken export; keep
		 * the first so ids stay unique. */
		int w = 0;
		for (int i = 0; i < n; i++)
			if (w == 0 || t->gpu[w - 1].id != t->gpu[i].id)
				t->gpu[w++] = t->gpu[i];
		n = w;
	} else {
		while ((o = hwloc_get_next_pcidev(t->h, o)))
			if (nvidia_gpu(o))
				cap++;
		if (cap == 0)
			return 0;
		t->gpu = calloc((size_t)cap, sizeof(*t->gpu));
		if (!t->gpu)
			return -ENOMEM;
		while ((o = hwloc_get_next_pcidev(t->h, o)))
			if (nvidia_gpu(o))
				t->gpu[n++] = (struct topo_gpu){ .dev = o };
		qsort(t->gpu, (size_t)n, sizeof(*t->gpu), cmp_gpu_bus);
		for (int i = 0; i < n; i++)
			t->gpu[i].id = (unsigned)i;
		t->pci_order = true;
	}
	for (int i = 0; i < n; i++)
		t->gpu[i].loc = gpu_locality(t, t->gpu[i].dev);
	t->ngpus = n;
	return 0;
}

/* Whether sysfs lists an NVIDIA PCI device.  Reading each device's vendor
 * attribute is cheap; hwloc's PCI discovery also reads config space, which
 * costs milliseconds per device in a VM, so it runs only when it can find
 * something we use. */
static bool nvidia_in_sysfs(void)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *de;
	bool found = false;

	if (!d)
		return true; /* cannot tell: let hwloc look */
	while (!found && (de = readdir(d))) {
		char path[512], buf[16] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", de->d_name);
		f = fopen(path, "re");
		if (f) {
			found = fgets(buf, sizeof(buf), f) && strncmp(buf, "0x10de", 6) == 0;
			fclose(f);
		}
	}
	closedir(d);
	return found;
}

int topo_open(struct topo **tp, char *err, size_t errlen)
{
	/* GPU runtimes' plugins: slow, side effects, and a numbering we
	 * cannot use (see the top of this file). */
	static const char *const skip[] = { "cuda", "nvml", "opencl", "rsmi", "levelzero", "gl" };
	const char *xml = getenv("HWLOC_XMLFILE");
	struct topo *t;
	hwloc_bitmap_t bound = NULL;
	const char *user_plugins;
	bool live;
	int r;

	if (!tp)
		return -EINVAL;
	*tp = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	/* hwloc dlopens every plugin at its first init (1.6 ms here); none is
	 * needed: the Linux backend finds PCI devices in sysfs, XML has a
	 * built-in parser, and the GPU runtimes' plugins are unwanted anyway.
	 * The variable is put back at once, so workers inherit the user's. */
	user_plugins = getenv("HWLOC_PLUGINS_PATH");
	if (!user_plugins)
		setenv("HWLOC_PLUGINS_PATH", "/nonexistent/slotrun-loads-no-hwloc-plugins", 1);
	r = hwloc_topology_init(&t->h);
	if (!user_plugins)
		unsetenv("HWLOC_PLUGINS_PATH");
	if (r < 0) {
		r = -errno;
		seterr(err, errlen, "hwloc: cannot initialise a topology: %s", strerror(-r));
		free(t);
		return r;
	}
	live = !(xml && *xml) && !getenv("HWLOC_SYNTHETIC");
	hwloc_topology_set_io_types_filter(t->h, !live || nvidia_in_sysfs() ?
					   HWLOC_TYPE_FILTER_KEEP_IMPORTANT : HWLOC_TYPE_FILTER_KEEP_NONE);
	/* Placement works on packages, NUMA nodes, cores and PUs; caches are
	 * dozens of sysfs reads we never use. */
	hwloc_topology_set_cache_types_filter(t->h, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_icache_types_filter(t->h, HWLOC_TYPE_FILTER_KEEP_NONE);
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		hwloc_topology_set_components(t->h, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, skip[i]);
	/* hwloc reads HWLOC_XMLFILE itself, but falls back to the live machine
	 * when the file is bad; a plan for another machine must fail instead. */
	if (xml && *xml && hwloc_topology_set_xml(t->h, xml) < 0) {
		r = errno ? -errno : -EINVAL;
		seterr(err, errlen, "hwloc: cannot use HWLOC_XMLFILE '%s': %s", xml, strerror(-r));
		goto fail;
	}
	if (hwloc_topology_load(t->h) < 0) {
		r = errno ? -errno : -EINVAL;
		if (xml && *xml)
			seterr(err, errlen, "hwloc: cannot load HWLOC_XMLFILE '%s': %s", xml, strerror(-r));
		else
			seterr(err, errlen, "hwloc: cannot discover the topology: %s", strerror(-r));
		goto fail;
	}
	t->allowed = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(t->h));
	t->allowed_nodes = hwloc_bitmap_dup(hwloc_topology_get_allowed_nodeset(t->h));
	bound = hwloc_bitmap_alloc();
	if (!t->allowed || !t->allowed_nodes || !bound) {
		r = -ENOMEM;
		seterr(err, errlen, "hwloc: out of memory");
		goto fail;
	}
	hwloc_bitmap_and(t->allowed, t->allowed, hwloc_topology_get_topology_cpuset(t->h));
	/* cgroups are in hwloc's allowed set; taskset and Slurm's binding are
	 * only in our affinity. */
	if (hwloc_topology_is_thissystem(t->h) &&
	    hwloc_get_cpubind(t->h, bound, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(bound))
		hwloc_bitmap_and(t->allowed, t->allowed, bound);
	hwloc_bitmap_free(bound);
	bound = NULL;
	if (hwloc_bitmap_iszero(t->allowed)) {
		r = -EINVAL;
		seterr(err, errlen, "hwloc: none of the topology's PUs is allowed to this process");
		goto fail;
	}
	r = find_gpus(t);
	if (r < 0) {
		seterr(err, errlen, "hwloc: %s", strerror(-r));
		goto fail;
	}
	*tp = t;
	return 0;
fail:
	hwloc_bitmap_free(bound);
	topo_close(t);
	return r;
}

void topo_close(struct topo *t)
{
	if (!t)
		return;
	hwloc_bitmap_free(t->allowed);
	hwloc_bitmap_free(t->allowed_nodes);
	free(t->gpu);
	hwloc_topology_destroy(t->h);
	free(t);
}

int topo_gpu_count(struct topo *t, bool *pci_order)
{
	if (!t)
		return -EINVAL;
	if (pci_order)
		*pci_order = t->pci_order;
	return t->ngpus;
}

int topo_restrict(struct topo *t, const char *cpulist, char *err, size_t errlen)
{
	hwloc_bitmap_t set;
	int r = 0;

	if (!t || !cpulist) {
		seterr(err, errlen, "no CPU list");
		return -EINVAL;
	}
	set = hwloc_bitmap_alloc();
	if (!set)
		return -ENOMEM;
	if (!*cpulist || hwloc_bitmap_list_sscanf(set, cpulist) < 0) {
		seterr(err, errlen, "'%s' is not a CPU list (such as 0-5,32)", cpulist);
		r = -EINVAL;
	} else {
		hwloc_bitmap_and(set, set, t->allowed);
		if (hwloc_bitmap_iszero(set)) {
			seterr(err, errlen, "CPU list '%s' has none of the allowed PUs", cpulist);
			r = -EINVAL;
		} else {
			hwloc_bitmap_copy(t->allowed, set);
		}
	}
	hwloc_bitmap_free(set);
	return r;
}

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
	return numa_home(pu);
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
		home = numa_home(pu);
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

static void free_bindmask(struct topo_bindmask *b)
{
	if (!b)
		return;
	if (b->cpus)
		CPU_FREE(b->cpus);
	free(b->nodes);
	free(b);
}

static int make_bindmask(struct topo *t, hwloc_const_bitmap_t set, hwloc_const_bitmap_t ns,
			 struct topo_bindmask **out)
{
	struct topo_bindmask *b = calloc(1, sizeof(*b));
	int last = hwloc_bitmap_last(set), i;

	if (!b)
		return -ENOMEM;
	if (last < 0) {
		free(b);
		return -EINVAL;
	}
	b->cpus = CPU_ALLOC(last + 1);
	if (!b->cpus)
		goto nomem;
	b->cpusize = CPU_ALLOC_SIZE(last + 1);
	CPU_ZERO_S(b->cpusize, b->cpus);
	hwloc_bitmap_foreach_begin(i, set)
		CPU_SET_S((size_t)i, b->cpusize, b->cpus);
	hwloc_bitmap_foreach_end();

	/* A policy naming every node we may use binds nothing; skipping it
	 * also spares containers whose seccomp profile refuses it. */
	if (!hwloc_bitmap_iszero(ns) && !hwloc_bitmap_isincluded(t->allowed_nodes, ns)) {
		const unsigned bits = sizeof(unsigned long) * CHAR_BIT;
		/* The kernel reads maxnode - 1 bits: leave a spare one. */
		size_t words = ((size_t)hwloc_bitmap_last(ns) + 2 + bits - 1) / bits;

		b->nodes = calloc(words, sizeof(unsigned long));
		if (!b->nodes)
			goto nomem;
		hwloc_bitmap_foreach_begin(i, ns)
			b->nodes[(unsigned)i / bits] |= 1UL << ((unsigned)i % bits);
		hwloc_bitmap_foreach_end();
		b->maxnode = (unsigned long)(words * bits);
	}
	*out = b;
	return 0;
nomem:
	free_bindmask(b);
	return -ENOMEM;
}

/* The topo_gpu an id names, or NULL: ids are CUDA indexes in decimal;
 * anything else (UUIDs, MIG names, lists) is not ours to place. */
static struct topo_gpu *gpu_by_id(struct topo *t, const char *id)
{
	long v;

	if (!id || io_parse_long(id, 0, INT_MAX, &v) < 0)
		return NULL;
	for (int i = 0; i < t->ngpus; i++)
		if (t->gpu[i].id == (unsigned long)v)
			return &t->gpu[i];
	return NULL;
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
		r = make_bindmask(t, s->cpuset, ns, (struct topo_bindmask **)&s->bindmask);
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

int topo_plan(struct topo *t, enum topo_bind bind, int nslots, char *const *gpus,
	      struct topo_slot *out, char *err, size_t errlen)
{
	hwloc_bitmap_t *sets = NULL;
	bool *placed = NULL;
	enum topo_bind mode = bind;
	int r = 0;

	if (!t || !out) {
		seterr(err, errlen, "topology plan: no topology or no output");
		return -EINVAL;
	}
	if (nslots < 1 || nslots > TOPO_MAX_SLOTS) {
		seterr(err, errlen, "topology plan: %d slots (must be 1 to %d)", nslots, TOPO_MAX_SLOTS);
		return -EINVAL;
	}
	if (!topo_bind_name(bind)) {
		seterr(err, errlen, "topology plan: unknown binding %d", (int)bind);
		return -EINVAL;
	}
	memset(out, 0, (size_t)nslots * sizeof(*out));
	for (int i = 0; i < nslots; i++) {
		struct topo_gpu *g;

		out[i].gpu_index = -1;
		if (!gpus || !gpus[i])
			continue;
		out[i].gpu = strdup(gpus[i]);
		if (!out[i].gpu) {
			r = -ENOMEM;
			goto fail;
		}
		g = gpu_by_id(t, gpus[i]);
		if (g)
			out[i].gpu_index = (int)g->id;
	}
	if (bind == TOPO_BIND_NONE) {
		r = unbound_strings(nslots, out);
		if (r < 0)
			goto fail;
		return 0;
	}
	if (mode == TOPO_BIND_AUTO)
		mode = gpus ? TOPO_BIND_GPU : TOPO_BIND_CORE;

	sets = calloc((size_t)nslots, sizeof(*sets));
	placed = calloc((size_t)nslots, sizeof(*placed));
	if (!sets || !placed) {
		r = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < nslots; i++) {
		sets[i] = hwloc_bitmap_alloc();
		if (!sets[i]) {
			r = -ENOMEM;
			goto fail;
		}
	}
	if (mode == TOPO_BIND_GPU || mode == TOPO_BIND_NUMA) {
		r = place_gpu_slots(t, mode, nslots, out, sets, placed);
		if (r < 0)
			goto fail;
	}
	r = place_rest(t, mode, nslots, sets, placed);
	if (r < 0)
		goto fail;
	r = finish_slots(t, nslots, out, sets);
	if (r < 0)
		goto fail;
	for (int i = 0; i < nslots; i++)
		hwloc_bitmap_free(sets[i]);
	free(sets);
	free(placed);
	return 0;
fail:
	seterr(err, errlen, "topology plan: %s", strerror(-r));
	if (sets)
		for (int i = 0; i < nslots; i++)
			hwloc_bitmap_free(sets[i]);
	free(sets);
	free(placed);
	for (int i = 0; i < nslots; i++)
		topo_slot_free(&out[i]);
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
	free_bindmask(s->bindmask);
	memset(s, 0, sizeof(*s));
	s->gpu_index = -1;
}

int topo_bind_self(struct topo *t, const struct topo_slot *s)
{
	const struct topo_bindmask *b;

	(void)t;
	if (!s)
		return -EINVAL;
	b = s->bindmask;
	if (!b)
		return 0;
	if (sched_setaffinity(0, b->cpusize, b->cpus) < 0)
		return -errno;
	/* EPERM: Docker's default seccomp profile refuses set_mempolicy
	 * without CAP_SYS_NICE; ENOSYS: a kernel without NUMA.  The CPUs are
	 * bound and first-touch allocation already favours their node, so
	 * the launch goes on. */
	if (b->nodes && syscall(SYS_set_mempolicy, MPOL_BIND, b->nodes, b->maxnode) < 0 &&
	    errno != EPERM && errno != ENOSYS)
		return -errno;
	return 0;
}

int topo_format_binding(const struct topo_slot *s, int rank, char *buf, size_t len)
{
	int n;

	if (!s || !buf || len == 0)
		return -EINVAL;
	n = snprintf(buf, len, "rank %d: gpu %s, cpus %s, numa %s%s", rank,
		     s->gpu ? s->gpu : "none",
		     s->cpuset && s->cpus ? s->cpus : "unbound",
		     s->cpuset && s->numa && *s->numa ? s->numa : "unbound",
		     s->shared ? " (shares cores)" : "");
	if (n < 0)
		return -EINVAL;
	return (size_t)n >= len ? -ENOSPC : 0;
}
