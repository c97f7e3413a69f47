// SPDX-License-Identifier: MIT
#include "status_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *status_table_duration(double s, char *buf, size_t size)
{
	long t;

	if (s < 0 || s != s)
		snprintf(buf, size, "-");
	else if (s < 1)
		snprintf(buf, size, "%.0fms", s * 1000);
	else if ((t = (long)s) < 60)
		snprintf(buf, size, "%lds", t);
	else if (t < 3600)
		snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, size, "%ldh%02ldm", t / 3600, t / 60 % 60);
	return buf;
}

const char *status_table_bytes(unsigned long long b, char *buf, size_t size)
{
	static const char units[] = "KMGTP";
	double v = (double)b;
	int u = -1;

	if (b < 1024) {
		snprintf(buf, size, "%lluB", b);
		return buf;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f%c", v, units[u]);
	return buf;
}

size_t status_table_fit(const char *s, int cols)
{
	size_t i = 0;

	for (int c = 0; s[i] && c < cols; c++) {
		i++;
		while ((s[i] & 0xc0) == 0x80) /* the rest of a UTF-8 sequence */
			i++;
	}
	return i;
}

enum { C_NODE, C_RANK, C_PID, C_STATE, C_CPU, C_RSS, C_THR, C_IDLE, C_OUT, C_RST, C_EXIT, C_LAG, NCOLS };

static const char *const heads[NCOLS] = {
	"NODE", "RANK", "PID", "STATE", "CPU%", "RSS", "THR", "IDLE", "OUT", "RST", "EXIT", "LAG",
};

/* Columns shown right-aligned (numbers). */
static const bool right[NCOLS] = {
	[C_NODE] = true, [C_RANK] = true, [C_PID] = true, [C_CPU] = true, [C_RSS] = true, [C_THR] = true,
	[C_IDLE] = true, [C_OUT] = true, [C_RST] = true, [C_EXIT] = true,
};

typedef char cell[24];

static void fill(const struct status_row *r, cell *c)
{
	snprintf(c[C_NODE], sizeof(cell), "%d", r->node);
	snprintf(c[C_RANK], sizeof(cell), "%d", r->rank);
	snprintf(c[C_PID], sizeof(cell), r->pid > 0 ? "%d" : "-", (int)r->pid);
	snprintf(c[C_STATE], sizeof(cell), "%s", sample_state_name(r->state));
	if (r->up && r->cpu_pct >= 0)
		snprintf(c[C_CPU], sizeof(cell), "%.1f", r->cpu_pct);
	else
		snprintf(c[C_CPU], sizeof(cell), "-");
	if (r->up)
		status_table_bytes(r->rss_bytes, c[C_RSS], sizeof(cell));
	else
		snprintf(c[C_RSS], sizeof(cell), "-");
	snprintf(c[C_THR], sizeof(cell), r->up ? "%ld" : "-", r->threads);
	status_table_duration(r->up ? r->silent_s : -1, c[C_IDLE], sizeof(cell));
	status_table_bytes(r->out_bytes, c[C_OUT], sizeof(cell));
	snprintf(c[C_RST], sizeof(cell), "%d", r->restarts);
	snprintf(c[C_EXIT], sizeof(cell), r->exit_code >= 0 ? "%d" : "-", r->exit_code);
	snprintf(c[C_LAG], sizeof(cell), "%s", r->lag ? "LAG" : "");
}

static void header(FILE *f, const struct status_job *j, int n)
{
	char up[32];

	fprintf(f, "job %s: slotrun %d on node %d", j->id, (int)j->pid, j->node);
	if (j->host[0])
		fprintf(f, " (%s)", j->host);
	fprintf(f, ", %d of %d node%s, %d rank%s shown", j->nodes_joined, j->nnodes, j->nnodes == 1 ? "" : "s", n,
		n == 1 ? "" : "s");
	if (j->attempts > 1)
		fprintf(f, ", attempt %d of %d", j->attempt, j->attempts);
	fprintf(f, ", %s for %s\n", j->state, status_table_duration(j->uptime_s, up, sizeof(up)));
	if (j->command[0])
		fprintf(f, "command: %s\n", j->command);
}

static void stacks_text(FILE *f, const json_t *stacks)
{
	size_t i;
	const json_t *e;

	fprintf(f, "\nstacks:\n");
	if (!json_is_array(stacks) || json_array_size(stacks) == 0) {
		fprintf(f, "  (none)\n");
		return;
	}
	json_array_foreach(stacks, i, e) {
		const char *text = json_string_value(json_object_get(e, "text"));
		const char *err = json_string_value(json_object_get(e, "error"));

		fprintf(f, "== rank %lld (node %lld, pid %lld)%s%s\n",
			(long long)json_integer_value(json_object_get(e, "rank")),
			(long long)json_integer_value(json_object_get(e, "node")),
			(long long)json_integer_value(json_object_get(e, "pid")), err ? ": " : "", err ? err : "");
		if (text) {
			size_t len = strlen(text);

			fprintf(f, "%s%s", text, len && text[len - 1] == '\n' ? "" : "\n");
		}
	}
}

char *status_table(const struct status_job *job, const struct status_row *rows, int n, const json_t *stacks,
		   int width)
{
	cell *cells = calloc((size_t)(n > 0 ? n : 1) * NCOLS, sizeof(cell));
	int w[NCOLS], used = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (!cells)
		return NULL;
	if (!(f = open_memstream(&text, &len))) {
		free(cells);
		return NULL;
	}
	for (int k = 0; k < NCOLS; k++)
		w[k] = (int)strlen(heads[k]);
	for (int i = 0; i < n; i++) {
		fill(&rows[i], &cells[i * NCOLS]);
		for (int k = 0; k < NCOLS; k++) {
			int l = (int)strlen(cells[i * NCOLS + k]);

			w[k] = l > w[k] ? l : w[k];
		}
	}
	for (int k = 0; k < NCOLS; k++)
		used += w[k] + 1;
	header(f, job, n);
	for (int i = -1; i < n; i++) {
		const char *line = i < 0 ? "LAST LINE" : rows[i].line;
		int room = width > 0 ? width - used : 1 << 20;

		for (int k = 0; k < NCOLS; k++)
			fprintf(f, right[k] ? "%*s " : "%-*s ", w[k], i < 0 ? heads[k] : cells[i * NCOLS + k]);
		fprintf(f, "%.*s\n", (int)status_table_fit(line, room > 8 ? room : 8), line);
	}
	for (int i = 0; i < n; i++)
		if (rows[i].lag)
			fprintf(f, "rank %d (node %d) lags: %s\n", rows[i].rank, rows[i].node, rows[i].why);
	if (stacks)
		stacks_text(f, stacks);
	free(cells);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
