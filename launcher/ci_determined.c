// SPDX-License-Identifier: MIT
/* ClusterInfo source: Determined.  $SLOTRUN_DET_INFO_DIR (default
 * /run/determined/info)/rendezvous.json {container_addrs, container_rank,
 * container_slot_counts} and cluster.json {slot_ids}, DET_SLOT_IDS ("[0,1]"),
 * DET_INTER_NODE_NETWORK_INTERFACE and C10D_PORT. */
#include "ci_source.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON ---- */

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

/* ---- the files and the variables ---- */

static int load_rendezvous(struct ci_ctx *c, struct ci_found *d, const char *dir)
{
	static const char file[] = "rendezvous.json";
	json_t *root, *addrs, *counts;
	int r;

	r = json_file(c, dir, file, &root);
	if (r < 0 || !root)
		return r;
	r = json_num(c, root, file, "container_rank", 0, CI_MAX_NODES - 1, &d->node_rank);
	/* null is Go's nil slice (absent); [] claims a job of no container,
	 * which no trial is: it would silently run as a single node */
	addrs = json_object_get(root, "container_addrs");
	if (r == 0 && json_is_array(addrs) && json_array_size(addrs) == 0)
		r = ci_fail(c, "%s: container_addrs is empty: expected the address of every container of "
			    "the trial, this one's included", file);
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

static int load_cluster_json(struct ci_ctx *c, struct ci_found *d, const char *dir)
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

int ci_load_determined(struct ci_ctx *c, struct ci_found *d)
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
