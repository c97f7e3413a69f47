// SPDX-License-Identifier: MIT
/* ClusterInfo from outside input: Determined's info files and DET_SLOT_IDS,
 * Slurm's variables and hostlists, slotrun's variables and flags, all
 * through ci_load with an environment and files made of the input.
 *
 * Input: NUL-separated records NAME=VALUE.  NAME is a variable, a file's
 * name ("rendezvous.json", "cluster.json": what read_file returns for a
 * path ending in it), a flag ("--nnodes", "--node-rank", "--addrs",
 * "--slots", "--master-port", "--iface") or "visible_gpus".  The first
 * record of a NAME wins.
 *
 * Checked: on success the result is consistent (ranks, counts and sums,
 * addresses, port); on failure the reason is one non-empty line and ci is
 * zeroed; nothing leaks either way (ASan). */
#include <errno.h>
#include <string.h>

#include "cluster_info.h"
#include "fuzz.h"

#define MAX_RECORDS 64

struct input {
	const char *name[MAX_RECORDS];
	size_t name_len[MAX_RECORDS];
	const char *value[MAX_RECORDS];
	int n;
};

static const char *lookup(const struct input *in, const char *name)
{
	size_t len = strlen(name);

	for (int i = 0; i < in->n; i++)
		if (in->name_len[i] == len && memcmp(in->name[i], name, len) == 0)
			return in->value[i];
	return NULL;
}

static const char *fake_getenv(void *ctx, const char *name)
{
	return lookup(ctx, name);
}

static char *fake_read_file(void *ctx, const char *path)
{
	const char *base = strrchr(path, '/');
	const char *v = lookup(ctx, base ? base + 1 : path);
	char *copy;

	if (!v) {
		errno = ENOENT;
		return NULL;
	}
	copy = strdup(v);
	if (!copy)
		errno = ENOMEM;
	return copy;
}

static void check_result(const struct cluster_info *ci)
{
	long sum = 0;

	FUZZ_CHECK(ci->nnodes >= 1 && ci->nnodes <= CI_MAX_NODES);
	FUZZ_CHECK(ci->node_rank >= 0 && ci->node_rank < ci->nnodes);
	FUZZ_CHECK(ci->addrs && ci->slot_counts);
	for (int i = 0; i < ci->nnodes; i++) {
		FUZZ_CHECK(ci->addrs[i] && ci->addrs[i][0]);
		FUZZ_CHECK(ci->slot_counts[i] >= 1 && ci->slot_counts[i] <= CI_MAX_SLOTS);
		if (i == ci->node_rank)
			FUZZ_CHECK(ci->rank_base == sum);
		sum += ci->slot_counts[i];
	}
	FUZZ_CHECK(ci->world_size == sum);
	FUZZ_CHECK(ci->slots == ci->slot_counts[ci->node_rank]);
	FUZZ_CHECK(ci->master_port >= 1 && ci->master_port <= 65535);
	FUZZ_CHECK(!ci->gpus == (ci->ngpus == 0));
	FUZZ_CHECK(!(ci->gpus && ci->gpus_none));
	for (int i = 0; i < ci->ngpus; i++)
		FUZZ_CHECK(ci->gpus[i] != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *p, *end;
	struct input in = { .n = 0 };
	struct ci_env env = { .getenv = fake_getenv, .read_file = fake_read_file, .ctx = &in };
	struct ci_flags flags;
	struct cluster_info ci;
	const char *gpus;
	char err[512];
	int r;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (p = buf, end = buf + size; p <= end && in.n < MAX_RECORDS; p += strlen(p) + 1) {
		char *eq = strchr(p, '=');

		if (!eq)
			continue;
		in.name[in.n] = p;
		in.name_len[in.n] = (size_t)(eq - p);
		in.value[in.n] = eq + 1;
		in.n++;
	}
	flags = (struct ci_flags){
		.nnodes = lookup(&in, "--nnodes"), .node_rank = lookup(&in, "--node-rank"),
		.addrs = lookup(&in, "--addrs"), .slots = lookup(&in, "--slots"),
		.master_port = lookup(&in, "--master-port"), .iface = lookup(&in, "--iface"),
	};
	gpus = lookup(&in, "visible_gpus");
	err[0] = '\0';
	r = ci_load(&flags, &env, gpus ? atoi(gpus) % 17 : 0, &ci, err, sizeof(err));
	if (r == 0) {
		check_result(&ci);
	} else {
		FUZZ_CHECK(r == -EINVAL || r == -ENOMEM);
		FUZZ_CHECK(err[0] != '\0' && !strchr(err, '\n'));
		FUZZ_CHECK(ci.addrs == NULL && ci.slot_counts == NULL && ci.gpus == NULL && ci.iface == NULL);
	}
	ci_free(&ci);
	free(buf);
	return 0;
}
