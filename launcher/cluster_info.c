/* ClusterInfo: the sources, their order and the rules are in cluster_info.h.
 *
 * Shape: each source is parsed on its own into a struct source (values plus
 * the words that name them in messages) and checked for agreement within
 * itself; then every field takes the first source that has it, and the
 * chosen values are checked against each other.  Only at the very end is
 * anything moved into the caller's struct, so an error leaves nothing
 * behind. */
#include "cluster_info.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ci_parse.h"
#include "hostlist.h"
#include "io.h"

struct source {
	enum ci_source src;
	struct ci_num nnodes;      /* an explicit count */
	struct ci_num node_rank;
	struct ci_strlist addrs;
	struct ci_slotspec slots;
	struct ci_num port;
	struct ci_str iface;
	struct ci_strlist gpus;    /* set with n == 0: the source says "no GPUs" */
	struct ci_num nn;          /* the node count this source implies (see header) */
};


static void source_free(struct source *s)
{
	ci_strv_free(s->addrs.v, s->addrs.n);
	ci_strv_free(s->gpus.v, s->gpus.n);
	free(s->slots.v);
	free(s->iface.v);
}

/* Slurm's GPU variables: comma lists of device indices. */
static int parse_slurm_gpus(struct ci_ctx *c, struct ci_strlist *out, const char *name, const char *s)
{
	int r;

	if (!s || !*s)
		return 0;
	r = ci_parse_list(c, out, name, s, CI_MAX_SLOTS, ci_gpu_index_ok,
			  ": expected a comma list of GPU indices");
	return r < 0 ? r : ci_check_unique(c, out);
}

static bool cuda_id_ok(const char *s)
{
	if (!strncmp(s, "GPU-", 4) || !strncmp(s, "MIG-", 4))
		return ci_host_ok(s, strlen(s));
	return ci_gpu_index_ok(s);
}

/* CUDA_VISIBLE_DEVICES as CUDA reads it: "", "-1" and Slurm's "NoDevFiles"
 * hide every GPU; otherwise indices or GPU-/MIG- UUIDs, kept as written. */
static int parse_cuda_visible(struct ci_ctx *c, struct ci_strlist *out, const char *s)
{
	static const char name[] = "CUDA_VISIBLE_DEVICES";
	struct ci_quoted q;
	int r;

	if (!s)
		return 0;
	if (!*s || !strcmp(s, "-1") || !strcmp(s, "NoDevFiles")) {
		ci_name_it(out->what, "%s '%s'", name, ci_quote(&q, s));
		out->set = true;
		return 0;
	}
	r = ci_parse_list(c, out, name, s, CI_MAX_SLOTS, cuda_id_ok,
			  " is neither a device index nor a GPU-/MIG- UUID");
	return r < 0 ? r : ci_check_unique(c, out);
}

/* ---- JSON (Determined) ---- */

static const char *json_kind(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "unknown";
}

/* An integer member in [min, max]; absent or null leaves out unset (Go
 * writes nil values as null). */
static int json_num(struct ci_ctx *c, json_t *obj, const char *file, const char *key, long min,
		    long max, struct ci_num *out)
{
	json_t *j = json_object_get(obj, key);
	json_int_t v;

	if (!j || json_is_null(j))
		return 0;
	if (!json_is_integer(j))
		return ci_fail(c, "%s: %s must be an integer, got %s", file, key, json_kind(j));
	v = json_integer_value(j);
	if (v < min || v > max)
		return ci_fail(c, "%s: %s %lld is out of range: expected %ld..%ld", file, key,
			       (long long)v, min, max);
	out->set = true;
	out->v = (long)v;
	ci_name_it(out->what, "%s %s %lld", file, key, (long long)v);
	return 0;
}

/* An array member, checked for kind and size; *arr NULL when absent/null. */
static int json_list(struct ci_ctx *c, json_t *obj, const char *file, const char *key, int max,
		     json_t **arr)
{
	json_t *j = json_object_get(obj, key);

	*arr = NULL;
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_array(j))
		return ci_fail(c, "%s: %s must be a list, got %s", file, key, json_kind(j));
	/* [] says nothing about the job: the same as absent */
	if (json_array_size(j) == 0)
		return 0;
	if (json_array_size(j) > (size_t)max)
		return ci_fail(c, "%s: %s has %zu entries: at most %d", file, key,
			       json_array_size(j), max);
	*arr = j;
	return 0;
}

/* A list of integers in [min, max] as decimal strings (GPU ids) or ints. */
static int json_int_list(struct ci_ctx *c, json_t *arr, const char *what, long min, long max,
			 char ***strs, int **ints)
{
	size_t n = json_array_size(arr), i;
	char **s = NULL;
	int *v = NULL;

	if (strs && !(s = calloc(n + 1, sizeof(*s))))
		return ci_oom(c);
	if (ints && !(v = calloc(n + 1, sizeof(*v)))) {
		free(s);
		return ci_oom(c);
	}
	for (i = 0; i < n; i++) {
		json_t *e = json_array_get(arr, i);
		json_int_t x;

		if (!json_is_integer(e)) {
			ci_fail(c, "%s: entry %zu must be an integer, got %s", what, i, json_kind(e));
			goto bad;
		}
		x = json_integer_value(e);
		if (x < min || x > max) {
			ci_fail(c, "%s: entry %zu (%lld) is out of range: expected %ld..%ld", what, i,
				(long long)x, min, max);
			goto bad;
		}
		if (v)
			v[i] = (int)x;
		if (s && asprintf(&s[i], "%lld", (long long)x) < 0) {
			s[i] = NULL;
			ci_strv_free(s, (int)i);
			free(v);
			return ci_oom(c);
		}
	}
	if (strs)
		*strs = s;
	if (ints)
		*ints = v;
	return 0;
bad:
	ci_strv_free(s, (int)n);
	free(v);
	return -EINVAL;
}

/* jansson 2.14 reports most allocation failures with no position and no
 * text rather than json_error_out_of_memory; a syntax error always has a
 * line. */
static bool json_oom(const json_error_t *je)
{
	return json_error_code(je) == json_error_out_of_memory || je->line < 0;
}

/* Reads and parses dir/name; *root NULL when the file is absent. */
static int json_file(struct ci_ctx *c, const char *dir, const char *name, json_t **root)
{
	json_error_t je;
	char *path, *text;
	int e;

	*root = NULL;
	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return ci_oom(c);
	errno = 0;
	text = c->env->read_file(c->env->ctx, path);
	if (!text) {
		e = errno;
		if (e == ENOENT) {
			free(path);
			return 0;
		}
		if (e == ENOMEM) {
			free(path);
			return ci_oom(c);
		}
		if (e == EFBIG)
			ci_fail(c, "%s: cannot read: larger than %d bytes", path, CI_MAX_FILE_SIZE);
		else if (e == EINVAL)
			ci_fail(c, "%s: cannot read: not a regular file", path);
		else
			ci_fail(c, "%s: cannot read: %s", path, strerror(e ? e : EIO));
		free(path);
		return -EINVAL;
	}
	*root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!*root && json_oom(&je)) {
		free(path);
		return ci_oom(c);
	}
	if (!*root) {
		ci_fail(c, "%s: invalid JSON at line %d column %d: %s", path, je.line, je.column,
			je.text);
		free(path);
		return -EINVAL;
	}
	if (!json_is_object(*root)) {
		ci_fail(c, "%s: expected a JSON object, got %s", path, json_kind(*root));
		free(path);
		json_decref(*root);
		*root = NULL;
		return -EINVAL;
	}
	free(path);
	return 0;
}

static int load_rendezvous(struct ci_ctx *c, struct source *d, const char *dir)
{
	static const char file[] = "rendezvous.json";
	json_t *root, *addrs, *counts;
	int r;

	r = json_file(c, dir, file, &root);
	if (r < 0 || !root)
		return r;
	r = json_num(c, root, file, "container_rank", 0, CI_MAX_NODES - 1, &d->node_rank);
	if (r == 0)
		r = json_list(c, root, file, "container_addrs", CI_MAX_NODES, &addrs);
	if (r == 0 && addrs) {
		size_t n = json_array_size(addrs);
		d->addrs.v = calloc(n, sizeof(char *));
		if (!d->addrs.v)
			r = ci_oom(c);
		for (size_t i = 0; r == 0 && i < n; i++) {
			json_t *e = json_array_get(addrs, i);
			struct ci_quoted q;
			if (!json_is_string(e))
				r = ci_fail(c, "%s: container_addrs entry %zu must be a string, got %s",
					    file, i, json_kind(e));
			else if (!ci_host_ok(json_string_value(e), json_string_length(e)))
				r = ci_fail(c, "%s: container_addrs entry %zu '%s' is not a host name "
					    "or address", file, i, ci_quote(&q, json_string_value(e)));
			else if (!(d->addrs.v[i] = strdup(json_string_value(e))))
				r = ci_oom(c);
			else
				d->addrs.n++;
		}
		d->addrs.set = true;
		ci_name_it(d->addrs.what, "%s container_addrs", file);
	}
	if (r == 0)
		r = json_list(c, root, file, "container_slot_counts", CI_MAX_NODES, &counts);
	if (r == 0 && counts) {
		char what[CI_WHAT_MAX];
		ci_name_it(what, "%s container_slot_counts", file);
		r = json_int_list(c, counts, what, 1, CI_MAX_SLOTS, NULL, &d->slots.v);
		if (r == 0) {
			d->slots.set = d->slots.per_node = true;
			d->slots.n = (int)json_array_size(counts);
			memcpy(d->slots.what, what, sizeof(what));
		}
	}
	json_decref(root);
	return r;
}

static int load_cluster_json(struct ci_ctx *c, struct source *d, const char *dir)
{
	static const char file[] = "cluster.json";
	json_t *root, *j;
	int r;

	r = json_file(c, dir, file, &root);
	if (r < 0 || !root)
		return r;
	j = json_object_get(root, "slot_ids");
	if (j && !json_is_null(j)) {
		ci_name_it(d->gpus.what, "%s slot_ids", file);
		if (!json_is_array(j))
			r = ci_fail(c, "%s: slot_ids must be a list of integers, got %s", file,
				    json_kind(j));
		else if (json_array_size(j) > CI_MAX_SLOTS)
			r = ci_fail(c, "%s: slot_ids has %zu entries: at most %d", file,
				    json_array_size(j), CI_MAX_SLOTS);
		else
			r = json_int_list(c, j, d->gpus.what, 0, INT32_MAX, &d->gpus.v, NULL);
		if (r == 0) {
			d->gpus.set = true;
			d->gpus.n = (int)json_array_size(j);
			r = ci_check_unique(c, &d->gpus);
		}
	}
	json_decref(root);
	return r;
}

/* DET_SLOT_IDS: a JSON list of integers ("[0,1]", "[0, 1]"). */
static int load_det_slot_ids(struct ci_ctx *c, struct ci_strlist *out, const char *s)
{
	struct ci_quoted q;
	json_error_t je;
	json_t *j;
	int r;

	ci_name_it(out->what, "DET_SLOT_IDS '%s'", ci_quote(&q, s));
	j = json_loads(s, JSON_DECODE_ANY, &je);
	if (!j && json_oom(&je))
		return ci_oom(c);
	if (!j || !json_is_array(j) || json_array_size(j) > CI_MAX_SLOTS) {
		json_decref(j);
		return ci_fail(c, "%s: expected a JSON list of integers (at most %d)", out->what,
			       CI_MAX_SLOTS);
	}
	r = json_int_list(c, j, out->what, 0, INT32_MAX, &out->v, NULL);
	if (r == 0) {
		out->set = true;
		out->n = (int)json_array_size(j);
		r = ci_check_unique(c, out);
	}
	json_decref(j);
	return r;
}

/* ---- the sources ---- */

static int load_flags(struct ci_ctx *c, struct source *f, const struct ci_flags *fl)
{
	int r;

	if (!fl)
		return 0;
	if ((r = ci_parse_num(c, &f->nnodes, "--nnodes", fl->nnodes, 1, CI_MAX_NODES)) < 0 ||
	    (r = ci_parse_num(c, &f->node_rank, "--node-rank", fl->node_rank, 0, CI_MAX_NODES - 1)) < 0 ||
	    (r = ci_parse_addrs(c, &f->addrs, "--addrs", fl->addrs)) < 0 ||
	    (r = ci_parse_slots(c, &f->slots, "--slots", fl->slots)) < 0 ||
	    (r = ci_parse_num(c, &f->port, "--master-port", fl->master_port, 1, 65535)) < 0 ||
	    (r = ci_parse_iface(c, &f->iface, "--iface", fl->iface)) < 0)
		return r;
	return 0;
}

static int load_determined(struct ci_ctx *c, struct source *d)
{
	const char *dir = ci_get(c, "SLOTRUN_DET_INFO_DIR");
	const char *s;
	struct ci_strlist env_ids = { 0 };
	int r;

	if (!dir)
		dir = CI_DEFAULT_DET_INFO_DIR;
	else if (!*dir)
		return ci_fail(c, "SLOTRUN_DET_INFO_DIR '': expected a directory (default %s)",
			       CI_DEFAULT_DET_INFO_DIR);
	if ((r = load_rendezvous(c, d, dir)) < 0 || (r = load_cluster_json(c, d, dir)) < 0)
		return r;
	if ((s = ci_get(c, "DET_SLOT_IDS"))) {
		r = load_det_slot_ids(c, &env_ids, s);
		if (r < 0) {
			ci_strv_free(env_ids.v, env_ids.n);
			return r;
		}
		/* DET_SLOT_IDS is the container's own view: it beats cluster.json */
		ci_strv_free(d->gpus.v, d->gpus.n);
		d->gpus = env_ids;
	}
	s = ci_get(c, "DET_INTER_NODE_NETWORK_INTERFACE");
	/* Determined exports it empty when no interface is configured */
	if (s && *s && (r = ci_parse_iface(c, &d->iface, "DET_INTER_NODE_NETWORK_INTERFACE", s)) < 0)
		return r;
	return ci_parse_num(c, &d->port, "C10D_PORT", ci_get(c, "C10D_PORT"), 1, 65535);
}

static int load_slurm(struct ci_ctx *c, struct source *s)
{
	const char *list = ci_get(c, "SLURM_JOB_NODELIST");
	const char *id = ci_get(c, "SLURM_NODEID");
	int r;

	/* Only a Slurm job or step sets these two; other SLURM_* variables
	 * can leak from an outer shell and must not make Slurm a source. */
	if (!list && !id)
		return 0;
	if (list) {
		struct ci_quoted q;
		r = hostlist_parse("SLURM_JOB_NODELIST", list, &s->addrs.v, &s->addrs.n, c->err,
				   c->errlen);
		if (r < 0)
			return r;
		s->addrs.set = true;
		ci_name_it(s->addrs.what, "SLURM_JOB_NODELIST '%s'", ci_quote(&q, list));
	}
	if ((r = ci_parse_num(c, &s->nnodes, "SLURM_NNODES", ci_get(c, "SLURM_NNODES"), 1,
			      CI_MAX_NODES)) < 0 ||
	    (r = ci_parse_num(c, &s->node_rank, "SLURM_NODEID", id, 0, CI_MAX_NODES - 1)) < 0)
		return r;
	r = parse_slurm_gpus(c, &s->gpus, "SLURM_STEP_GPUS", ci_get(c, "SLURM_STEP_GPUS"));
	if (r == 0) {
		/* SLURM_JOB_GPUS is checked too, but the step's list wins */
		struct ci_strlist job = { 0 };
		r = parse_slurm_gpus(c, &job, "SLURM_JOB_GPUS", ci_get(c, "SLURM_JOB_GPUS"));
		if (r == 0 && !s->gpus.set)
			s->gpus = job;
		else
			ci_strv_free(job.v, job.n);
	}
	return r;
}

static int load_env(struct ci_ctx *c, struct source *e)
{
	int r;

	if ((r = ci_parse_num(c, &e->nnodes, "SLOTRUN_NNODES", ci_get(c, "SLOTRUN_NNODES"), 1,
			      CI_MAX_NODES)) < 0 ||
	    (r = ci_parse_num(c, &e->node_rank, "SLOTRUN_NODE_RANK", ci_get(c, "SLOTRUN_NODE_RANK"), 0,
			      CI_MAX_NODES - 1)) < 0 ||
	    (r = ci_parse_addrs(c, &e->addrs, "SLOTRUN_ADDRS", ci_get(c, "SLOTRUN_ADDRS"))) < 0 ||
	    (r = ci_parse_slots(c, &e->slots, "SLOTRUN_SLOTS", ci_get(c, "SLOTRUN_SLOTS"))) < 0 ||
	    (r = ci_parse_num(c, &e->port, "SLOTRUN_MASTER_PORT", ci_get(c, "SLOTRUN_MASTER_PORT"), 1,
			      65535)) < 0 ||
	    (r = ci_parse_iface(c, &e->iface, "SLOTRUN_IFACE", ci_get(c, "SLOTRUN_IFACE"))) < 0 ||
	    (r = parse_cuda_visible(c, &e->gpus, ci_get(c, "CUDA_VISIBLE_DEVICES"))) < 0)
		return r;
	return 0;
}

/* The node count a source implies, and its own agreement: explicit count,
 * address list and per-node slot list name the same number, and its node
 * rank is inside it. */
static int settle(struct ci_ctx *c, struct source *s)
{
	if (s->nnodes.set)
		s->nn = s->nnodes;
	if (s->addrs.set) {
		if (s->nn.set && s->nn.v != s->addrs.n)
			return ci_fail(c, "%s (%d addresses) disagrees with %s (%ld nodes)",
				       s->addrs.what, s->addrs.n, s->nn.what, s->nn.v);
		if (!s->nn.set) {
			s->nn.set = true;
			s->nn.v = s->addrs.n;
			memcpy(s->nn.what, s->addrs.what, CI_WHAT_MAX);
		}
	}
	if (s->slots.set && s->slots.per_node) {
		if (s->nn.set && s->nn.v != s->slots.n)
			return ci_fail(c, "%s has %d entries, but %s gives %ld nodes", s->slots.what,
				       s->slots.n, s->nn.what, s->nn.v);
		if (!s->nn.set) {
			s->nn.set = true;
			s->nn.v = s->slots.n;
			memcpy(s->nn.what, s->slots.what, CI_WHAT_MAX);
		}
	}
	if (s->node_rank.set && s->nn.set && s->node_rank.v >= s->nn.v)
		return ci_fail(c, "%s is out of range: %s names %ld nodes (0..%ld)", s->node_rank.what,
			       s->nn.what, s->nn.v, s->nn.v - 1);
	return 0;
}

/* ---- putting it together ---- */

enum { NSRC = 4 };

static int resolve(struct ci_ctx *c, struct source *src, int visible_gpus, struct cluster_info *out)
{
	struct source *nn = NULL, *rk = NULL, *ad = NULL, *sl = NULL, *pt = NULL, *ifc = NULL,
		*gp = NULL;
	long nnodes;
	const char *nn_what;
	int i, this_slots;

	for (i = NSRC - 1; i >= 0; i--) {    /* lowest first: the last set wins */
		struct source *s = &src[i];
		nn = s->nn.set ? s : nn;
		rk = s->node_rank.set ? s : rk;
		ad = s->addrs.set ? s : ad;
		sl = s->slots.set ? s : sl;
		pt = s->port.set ? s : pt;
		ifc = s->iface.set ? s : ifc;
		gp = s->gpus.set ? s : gp;
	}

	nnodes = nn ? nn->nn.v : 1;
	nn_what = nn ? nn->nn.what : "the default";
	out->src_nnodes = nn ? nn->src : CI_SRC_DEFAULT;

	if (ad && ad->addrs.n != nnodes)
		return ci_fail(c, "%s (%d addresses) disagrees with %s (%ld nodes)", ad->addrs.what,
			       ad->addrs.n, nn_what, nnodes);
	if (!ad && nnodes > 1)
		return ci_fail(c, "%s gives %ld nodes but no source names their addresses: pass "
			       "--addrs host0,host1,... (chief first) or set SLOTRUN_ADDRS",
			       nn_what, nnodes);
	if (rk && rk->node_rank.v >= nnodes)
		return ci_fail(c, "%s is out of range: %s names %ld nodes (0..%ld)",
			       rk->node_rank.what, nn_what, nnodes, nnodes - 1);
	if (!rk && nnodes > 1)
		return ci_fail(c, "%s gives %ld nodes but no source names this node's rank: pass "
			       "--node-rank or set SLOTRUN_NODE_RANK", nn_what, nnodes);
	out->nnodes = (int)nnodes;
	out->node_rank = rk ? (int)rk->node_rank.v : 0;
	out->src_node_rank = rk ? rk->src : CI_SRC_DEFAULT;
	out->src_addrs = ad ? ad->src : CI_SRC_DEFAULT;

	if (gp) {
		out->src_gpus = gp->src;
		out->ngpus = gp->gpus.n;
		out->gpus_none = gp->gpus.n == 0;
	} else {
		out->src_gpus = CI_SRC_DEFAULT;
	}

	if (sl && sl->slots.per_node && sl->slots.n != nnodes)
		return ci_fail(c, "%s has %d entries, but %s gives %ld nodes", sl->slots.what,
			       sl->slots.n, nn_what, nnodes);
	if (sl) {
		this_slots = sl->slots.v[sl->slots.per_node ? out->node_rank : 0];
		if (gp && gp->gpus.n > 0 && gp->gpus.n != this_slots)
			return ci_fail(c, "%s gives this node %d slots, but %s names %d GPUs",
				       sl->slots.what, this_slots, gp->gpus.what, gp->gpus.n);
		out->src_slots = sl->src;
	} else if (gp && gp->gpus.n > 0) {
		this_slots = gp->gpus.n;
		out->src_slots = gp->src;
	} else {
		/* gpus_none: the source hid the GPUs, so the topology's count
		 * would be wrong */
		this_slots = visible_gpus > 0 && !out->gpus_none ? visible_gpus : 1;
		if (this_slots > CI_MAX_SLOTS)
			this_slots = CI_MAX_SLOTS;
		out->src_slots = CI_SRC_DEFAULT;
	}
	out->slots = this_slots;

	out->master_port = pt ? (int)pt->port.v : CI_DEFAULT_MASTER_PORT;
	out->src_master_port = pt ? pt->src : CI_SRC_DEFAULT;
	out->src_iface = ifc ? ifc->src : CI_SRC_DEFAULT;

	/* Everything is checked: allocate and move.  Only ENOMEM can fail now. */
	out->slot_counts = calloc((size_t)nnodes, sizeof(int));
	if (!out->slot_counts)
		return ci_oom(c);
	for (i = 0; i < nnodes; i++) {
		int n = sl && sl->slots.per_node ? sl->slots.v[i] : this_slots;
		if (i < out->node_rank)
			out->rank_base += n;
		out->world_size += n;
		out->slot_counts[i] = n;
	}
	if (ad) {
		out->addrs = ad->addrs.v;
		ad->addrs.v = NULL;
		ad->addrs.n = 0;
	} else {
		out->addrs = calloc(1, sizeof(char *));
		if (!out->addrs || !(out->addrs[0] = strdup("127.0.0.1")))
			return ci_oom(c);
	}
	if (gp && gp->gpus.n > 0) {
		out->gpus = gp->gpus.v;
		gp->gpus.v = NULL;
		gp->gpus.n = 0;
	}
	if (ifc) {
		out->iface = ifc->iface.v;
		ifc->iface.v = NULL;
	}
	return 0;
}

int ci_load(const struct ci_flags *flags, const struct ci_env *env, int visible_gpus,
	    struct cluster_info *ci, char *err, size_t errlen)
{
	struct ci_ctx c = { .env = env, .err = err, .errlen = errlen };
	struct source *src;
	struct cluster_info out = { 0 };
	int r, i;

	memset(ci, 0, sizeof(*ci));
	if (err && errlen)
		err[0] = '\0';
	/* ~10 KiB of message buffers: keep them off the stack */
	src = calloc(NSRC, sizeof(*src));
	if (!src)
		return ci_oom(&c);
	/* in order of precedence */
	src[0].src = CI_SRC_FLAG;
	src[1].src = CI_SRC_DETERMINED;
	src[2].src = CI_SRC_SLURM;
	src[3].src = CI_SRC_SLOTRUN_ENV;

	r = load_flags(&c, &src[0], flags);
	if (r == 0)
		r = load_determined(&c, &src[1]);
	if (r == 0)
		r = load_slurm(&c, &src[2]);
	if (r == 0)
		r = load_env(&c, &src[3]);
	for (i = 0; r == 0 && i < NSRC; i++)
		r = settle(&c, &src[i]);
	if (r == 0)
		r = resolve(&c, src, visible_gpus, &out);
	for (i = 0; i < NSRC; i++)
		source_free(&src[i]);
	free(src);
	if (r < 0) {
		ci_free(&out);
		return r;
	}
	*ci = out;
	return 0;
}

void ci_free(struct cluster_info *ci)
{
	if (!ci)
		return;
	ci_strv_free(ci->addrs, ci->nnodes);
	ci_strv_free(ci->gpus, ci->ngpus);
	free(ci->slot_counts);
	free(ci->iface);
	memset(ci, 0, sizeof(*ci));
}

const char *ci_source_name(enum ci_source s)
{
	switch (s) {
	case CI_SRC_DEFAULT: return "default";
	case CI_SRC_SLOTRUN_ENV: return "env";
	case CI_SRC_SLURM: return "slurm";
	case CI_SRC_DETERMINED: return "determined";
	case CI_SRC_FLAG: return "flag";
	}
	return "unknown";
}

/* ---- the real world ---- */

static const char *process_getenv(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

static char *process_read_file(void *ctx, const char *path)
{
	(void)ctx;
	return io_read_file(path, CI_MAX_FILE_SIZE);
}

const struct ci_env ci_process_env = {
	.getenv = process_getenv,
	.read_file = process_read_file,
};
