// SPDX-License-Identifier: MIT
/* The GPUs of a topology and where each sits.
 *
 * - GPUs are hwloc's CUDA OS devices "cudaN" when it has any, numbered by
 *   N; otherwise NVIDIA PCI devices of class 0x0300/0x0302 in bus order.
 *   Live discovery never loads hwloc's cuda/nvml/opencl plugins: they would
 *   initialise GPU runtimes in the launcher and number devices after an
 *   inherited CUDA_VISIBLE_DEVICES, which is exactly what the ids we are
 *   given index into.  So on a live machine GPUs come in PCI bus order and
 *   cudaN only from XML.
 * - A GPU's locality is the first ancestor of its PCI device that carries
 *   NUMA nodes; when that is the whole machine (no NUMA information) and
 *   the device sits under a package, the package. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "topo_priv.h"

#define NVIDIA_VENDOR 0x10de

hwloc_obj_t topo_numa_home(hwloc_obj_t obj)
{
	hwloc_obj_t last = obj;

	for (; obj; obj = obj->parent) {
		if (obj->memory_arity > 0)
			return obj;
		last = obj;
	}
	return last;
}

/* See the top of this file. */
static hwloc_obj_t gpu_locality(struct topo *t, hwloc_obj_t dev)
{
	hwloc_obj_t root = hwloc_get_root_obj(t->h);
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t->h, dev);
	hwloc_obj_t loc = topo_numa_home(anc);
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

int topo_find_gpus(struct topo *t)
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

struct topo_gpu *topo_gpu_by_id(struct topo *t, const char *id)
{
	long v;

	if (!id || io_parse_long(id, 0, INT_MAX, &v) < 0)
		return NULL;
	for (int i = 0; i < t->ngpus; i++)
		if (t->gpu[i].id == (unsigned long)v)
			return &t->gpu[i];
	return NULL;
}
