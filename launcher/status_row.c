// SPDX-License-Identifier: MIT
#include "status_row.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const status_job_states[STATUS_JOB_NSTATES] = {
	"starting", "running", "paused", "stopping", "restarting", "done",
};

/* A number that JSON can hold: NaN and infinities become null. */
static json_t *num(double v)
{
	return v == v && v - v == 0 ? json_real(v) : json_null();
}

json_t *status_row_json(const struct status_row *r)
{
	return json_pack("{s:i, s:s, s:i, s:i, s:I, s:b, s:s, s:o, s:o, s:o, s:I, s:I, s:i, s:o, s:b, s:s, "
			 "s:I, s:I, s:i, s:o, s:b, s:s}",
			 "node", r->node, "host", r->host, "rank", r->rank, "local_rank", r->local_rank,
			 "pid", (json_int_t)r->pid, "up", r->up, "state", sample_state_name(r->state),
			 "state_s", num(r->state_s), "cpu_pct", r->cpu_pct < 0 ? json_null() : num(r->cpu_pct),
			 "cpu_s", num(r->cpu_s), "rss_bytes", (json_int_t)r->rss_bytes,
			 "threads", (json_int_t)r->threads, "procs", r->procs, "silent_s", num(r->silent_s),
			 "wrote", r->wrote, "line", r->line, "out_bytes", (json_int_t)r->out_bytes,
			 "out_lines", (json_int_t)r->out_lines, "restarts", r->restarts,
			 "exit_code", r->exit_code < 0 ? json_null() : json_integer(r->exit_code),
			 "lag", r->lag, "why", r->why);
}

json_t *status_job_json(const struct status_job *j)
{
	return json_pack("{s:s, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:I, s:o, s:s, s:s}",
			 "id", j->id, "pid", (json_int_t)j->pid, "node", j->node, "nnodes", j->nnodes,
			 "nodes_joined", j->nodes_joined, "world_size", j->world_size, "attempt", j->attempt,
			 "attempts", j->attempts, "state", j->state, "started_us", (json_int_t)j->started_us,
			 "uptime_s", num(j->uptime_s), "command", j->command, "host", j->host);
}

/* Readers of one member: each returns 0 (absent is fine: the value is
 * left as it was) or -EINVAL for a member of the wrong type. */
static int get_int(const json_t *o, const char *key, long long *v)
{
	const json_t *m = json_object_get(o, key);

	if (!m || json_is_null(m))
		return 0;
	if (!json_is_integer(m))
		return -EINVAL;
	*v = json_integer_value(m);
	return 0;
}

static int get_num(const json_t *o, const char *key, double *v)
{
	const json_t *m = json_object_get(o, key);

	if (!m || json_is_null(m))
		return 0;
	if (!json_is_number(m))
		return -EINVAL;
	*v = json_number_value(m);
	return 0;
}

static int get_bool(const json_t *o, const char *key, bool *v)
{
	const json_t *m = json_object_get(o, key);

	if (!m)
		return 0;
	if (!json_is_boolean(m))
		return -EINVAL;
	*v = json_is_true(m);
	return 0;
}

static int get_str(const json_t *o, const char *key, char *buf, size_t size)
{
	const json_t *m = json_object_get(o, key);

	if (!m)
		return 0;
	if (!json_is_string(m))
		return -EINVAL;
	snprintf(buf, size, "%s", json_string_value(m));
	return 0;
}

int status_row_from_json(const json_t *o, struct status_row *r)
{
	long long node = 0, rank = 0, local = 0, pid = 0, rss = 0, threads = 0, procs = 0, bytes = 0, lines = 0,
		  restarts = 0, code = -1;
	char state[32] = "gone";
	int e = 0;

	*r = (struct status_row){ .cpu_pct = -1, .exit_code = -1 };
	if (!json_is_object(o))
		return -EINVAL;
	e |= get_int(o, "node", &node) | get_int(o, "rank", &rank) | get_int(o, "local_rank", &local);
	e |= get_int(o, "pid", &pid) | get_int(o, "rss_bytes", &rss) | get_int(o, "threads", &threads);
	e |= get_int(o, "procs", &procs) | get_int(o, "out_bytes", &bytes) | get_int(o, "out_lines", &lines);
	e |= get_int(o, "restarts", &restarts) | get_int(o, "exit_code", &code);
	e |= get_num(o, "state_s", &r->state_s) | get_num(o, "cpu_pct", &r->cpu_pct);
	e |= get_num(o, "cpu_s", &r->cpu_s) | get_num(o, "silent_s", &r->silent_s);
	e |= get_bool(o, "up", &r->up) | get_bool(o, "wrote", &r->wrote) | get_bool(o, "lag", &r->lag);
	e |= get_str(o, "host", r->host, sizeof(r->host)) | get_str(o, "line", r->line, sizeof(r->line));
	e |= get_str(o, "why", r->why, sizeof(r->why)) | get_str(o, "state", state, sizeof(state));
	if (e || sample_state_parse(state, &r->state) < 0)
		return -EINVAL;
	r->node = (int)node;
	r->rank = (int)rank;
	r->local_rank = (int)local;
	r->pid = (pid_t)pid;
	r->rss_bytes = rss > 0 ? (unsigned long long)rss : 0;
	r->threads = (long)threads;
	r->procs = (int)procs;
	r->out_bytes = bytes > 0 ? (unsigned long long)bytes : 0;
	r->out_lines = lines > 0 ? (unsigned long long)lines : 0;
	r->restarts = (int)restarts;
	r->exit_code = (int)code;
	return 0;
}

int status_job_from_json(const json_t *o, struct status_job *j)
{
	long long pid = 0, node = 0, nnodes = 1, joined = 1, world = 0, attempt = 1, attempts = 1, started = 0;
	int e = 0;

	*j = (struct status_job){ 0 };
	if (!json_is_object(o))
		return -EINVAL;
	e |= get_int(o, "pid", &pid) | get_int(o, "node", &node) | get_int(o, "nnodes", &nnodes);
	e |= get_int(o, "nodes_joined", &joined) | get_int(o, "world_size", &world);
	e |= get_int(o, "attempt", &attempt) | get_int(o, "attempts", &attempts);
	e |= get_int(o, "started_us", &started) | get_num(o, "uptime_s", &j->uptime_s);
	e |= get_str(o, "id", j->id, sizeof(j->id)) | get_str(o, "state", j->state, sizeof(j->state));
	e |= get_str(o, "command", j->command, sizeof(j->command)) | get_str(o, "host", j->host, sizeof(j->host));
	if (e)
		return -EINVAL;
	j->pid = (pid_t)pid;
	j->node = (int)node;
	j->nnodes = (int)nnodes;
	j->nodes_joined = (int)joined;
	j->world_size = (int)world;
	j->attempt = (int)attempt;
	j->attempts = (int)attempts;
	j->started_us = started;
	return 0;
}

json_t *status_rows_json(const struct status_row *rows, int n)
{
	json_t *a = json_array();

	for (int i = 0; a && i < n; i++)
		if (json_array_append_new(a, status_row_json(&rows[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

int status_rows_from_json(const json_t *a, struct status_row **rows, int *n)
{
	size_t len = json_array_size(a);

	*rows = NULL;
	*n = 0;
	if (!json_is_array(a))
		return -EINVAL;
	if (len == 0)
		return 0;
	if (!(*rows = calloc(len, sizeof(**rows))))
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		if (status_row_from_json(json_array_get(a, i), &(*rows)[i]) < 0) {
			free(*rows);
			*rows = NULL;
			return -EINVAL;
		}
	*n = (int)len;
	return 0;
}

static int by_rank(const void *a, const void *b)
{
	const struct status_row *x = a, *y = b;

	if (x->rank != y->rank)
		return (x->rank > y->rank) - (x->rank < y->rank);
	return (x->node > y->node) - (x->node < y->node);
}

int status_rows_merge(struct status_row **rows, int *n, const struct status_row *more, int m)
{
	struct status_row *all;

	if (m <= 0)
		return 0;
	if (!(all = realloc(*rows, ((size_t)*n + (size_t)m) * sizeof(*all))))
		return -ENOMEM;
	memcpy(all + *n, more, (size_t)m * sizeof(*all));
	*n += m;
	*rows = all;
	qsort(all, (size_t)*n, sizeof(*all), by_rank);
	return 0;
}
