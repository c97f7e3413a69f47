// SPDX-License-Identifier: MIT
/* Topology: loading it from hwloc and what of it this process may use.
 * The GPUs are found in topo_gpu.c, each slot's cpuset chosen in
 * topo_cpuset.c, and bound in topo_bind.c.
 *
 * Allowed PUs: hwloc's allowed set (cgroup cpuset; disallowed PUs in an
 * XML export are dropped) and, on the live system, the process's own
 * affinity (taskset, Slurm), narrowed further by topo_restrict. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_priv.h"

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

/* A topology handle with none of hwloc's plugins loaded.  hwloc dlopens
 * every plugin at its first init; none is needed: the Linux backend finds
 * PCI devices in sysfs, XML has a built-in parser, and the GPU runtimes'
 * plugins are unwanted anyway (topo_gpu.c).  The variable is put back at
 * once, so workers inherit the user's. */
static int init_without_plugins(hwloc_topology_t *h)
{
	const char *user_plugins = getenv("HWLOC_PLUGINS_PATH");
	int r;

	if (!user_plugins)
		setenv("HWLOC_PLUGINS_PATH", "/nonexistent/slotrun-loads-no-hwloc-plugins", 1);
	r = hwloc_topology_init(h) < 0 ? (errno ? -errno : -ENOMEM) : 0;
	if (!user_plugins)
		unsetenv("HWLOC_PLUGINS_PATH");
	return r;
}

/* What hwloc is to discover: I/O devices only where they can include a
 * GPU, no caches, no GPU runtimes' plugins. */
static void set_filters(hwloc_topology_t h, bool live)
{
	/* GPU runtimes' plugins: slow, side effects, and a numbering we
	 * cannot use (topo_gpu.c). */
	static const char *const skip[] = { "cuda", "nvml", "opencl", "rsmi", "levelzero", "gl" };

	hwloc_topology_set_io_types_filter(h, !live || nvidia_in_sysfs() ?
					   HWLOC_TYPE_FILTER_KEEP_IMPORTANT : HWLOC_TYPE_FILTER_KEEP_NONE);
	/* Placement works on packages, NUMA nodes, cores and PUs; caches are
	 * dozens of sysfs reads we never use. */
	hwloc_topology_set_cache_types_filter(h, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_icache_types_filter(h, HWLOC_TYPE_FILTER_KEEP_NONE);
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		hwloc_topology_set_components(h, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, skip[i]);
}

/* hwloc reads HWLOC_XMLFILE itself, but falls back to the live machine
 * when the file is bad; a plan for another machine must fail instead. */
static int load(hwloc_topology_t h, const char *xml, char *err, size_t errlen)
{
	int r;

	if (xml && hwloc_topology_set_xml(h, xml) < 0) {
		r = errno ? -errno : -EINVAL;
		topo_seterr(err, errlen, "hwloc: cannot use HWLOC_XMLFILE '%s': %s", xml, strerror(-r));
		return r;
	}
	if (hwloc_topology_load(h) < 0) {
		r = errno ? -errno : -EINVAL;
		if (xml)
			topo_seterr(err, errlen, "hwloc: cannot load HWLOC_XMLFILE '%s': %s", xml, strerror(-r));
		else
			topo_seterr(err, errlen, "hwloc: cannot discover the topology: %s", strerror(-r));
		return r;
	}
	return 0;
}

/* t->allowed and t->allowed_nodes: see the top of this file. */
static int find_allowed(struct topo *t, char *err, size_t errlen)
{
	hwloc_bitmap_t bound = hwloc_bitmap_alloc();

	t->allowed = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(t->h));
	t->allowed_nodes = hwloc_bitmap_dup(hwloc_topology_get_allowed_nodeset(t->h));
	if (!t->allowed || !t->allowed_nodes || !bound) {
		hwloc_bitmap_free(bound);
		topo_seterr(err, errlen, "hwloc: out of memory");
		return -ENOMEM;
	}
	hwloc_bitmap_and(t->allowed, t->allowed, hwloc_topology_get_topology_cpuset(t->h));
	/* cgroups are in hwloc's allowed set; taskset and Slurm's binding are
	 * only in our affinity. */
	if (hwloc_topology_is_thissystem(t->h) &&
	    hwloc_get_cpubind(t->h, bound, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(bound))
		hwloc_bitmap_and(t->allowed, t->allowed, bound);
	hwloc_bitmap_free(bound);
	if (hwloc_bitmap_iszero(t->allowed)) {
		topo_seterr(err, errlen, "hwloc: none of the topology's PUs is allowed to this process");
		return -EINVAL;
	}
	return 0;
}

int topo_open(struct topo **tp, char *err, size_t errlen)
{
	const char *xml = getenv("HWLOC_XMLFILE");
	struct topo *t;
	int r;

	if (!tp)
		return -EINVAL;
	*tp = NULL;
	if (xml && !*xml)
		xml = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	r = init_without_plugins(&t->h);
	if (r < 0) {
		topo_seterr(err, errlen, "hwloc: cannot initialise a topology: %s", strerror(-r));
		free(t);
		return r;
	}
	set_filters(t->h, !xml && !getenv("HWLOC_SYNTHETIC"));
	r = load(t->h, xml, err, errlen);
	if (r == 0)
		r = find_allowed(t, err, errlen);
	if (r == 0 && (r = topo_find_gpus(t)) < 0)
		topo_seterr(err, errlen, "hwloc: %s", strerror(-r));
	if (r < 0) {
		topo_close(t);
		return r;
	}
	*tp = t;
	return 0;
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
		topo_seterr(err, errlen, "no CPU list");
		return -EINVAL;
	}
	set = hwloc_bitmap_alloc();
	if (!set)
		return -ENOMEM;
	if (!*cpulist || hwloc_bitmap_list_sscanf(set, cpulist) < 0) {
		topo_seterr(err, errlen, "'%s' is not a CPU list (such as 0-5,32)", cpulist);
		r = -EINVAL;
	} else {
		hwloc_bitmap_and(set, set, t->allowed);
		if (hwloc_bitmap_iszero(set)) {
			topo_seterr(err, errlen, "CPU list '%s' has none of the allowed PUs", cpulist);
			r = -EINVAL;
		} else {
			hwloc_bitmap_copy(t->allowed, set);
		}
	}
	hwloc_bitmap_free(set);
	return r;
}
