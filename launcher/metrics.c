// SPDX-License-Identifier: MIT
#include "metrics.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { GAUGE, COUNTER, STATESET };

struct family {
	const char *name;      /* without _total */
	enum kind kind;
	const char *unit;      /* or NULL */
	const char *help;
};

/* A label value with \, " and newlines escaped, as both syntaxes want. */
static void put_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void describe(FILE *f, const struct family *m, enum metrics_format fmt)
{
	const char *total = m->kind == COUNTER && fmt == METRICS_TEXT ? "_total" : "";
	const char *type = m->kind == COUNTER ? "counter" : m->kind == STATESET && fmt == METRICS_OPENMETRICS ?
			   "stateset" : "gauge";

	fprintf(f, "# HELP %s%s %s\n# TYPE %s%s %s\n", m->name, total, m->help, m->name, total, type);
	if (m->unit && fmt == METRICS_OPENMETRICS)
		fprintf(f, "# UNIT %s %s\n", m->name, m->unit);
}

static void rank_labels(FILE *f, const struct status_row *r)
{
	fprintf(f, "{node=\"%d\",rank=\"%d\",local_rank=\"%d\",host=\"", r->node, r->rank, r->local_rank);
	put_value(f, r->host);
	fputs("\"}", f);
}

static void job_labels(FILE *f, const struct status_job *j)
{
	fprintf(f, "node=\"%d\",host=\"", j->node);
	put_value(f, j->host);
	fputc('"', f);
}

/* The per-rank families, in this order; value() gives each row's. */
enum { R_UP, R_RESTARTS, R_EXIT, R_CPU, R_RSS, R_THREADS, R_OUT_BYTES, R_OUT_LINES, R_IDLE, R_LAG, R_N };

static const struct family rank_families[R_N] = {
	[R_UP] = { "slotrun_rank_up", GAUGE, NULL, "1 while the rank's worker runs, else 0." },
	[R_RESTARTS] = { "slotrun_rank_restarts", COUNTER, NULL, "Restarts of the job the rank went through." },
	[R_EXIT] = { "slotrun_rank_last_exit_code", GAUGE, NULL,
		     "The rank's last exit code (128+N for signal N); absent before its first exit." },
	[R_CPU] = { "slotrun_rank_cpu_seconds", COUNTER, "seconds",
		    "CPU time of the rank's processes (user and system), as sampled." },
	[R_RSS] = { "slotrun_rank_rss_bytes", GAUGE, "bytes", "Resident memory of the rank's processes, summed." },
	[R_THREADS] = { "slotrun_rank_threads", GAUGE, NULL, "Threads of the rank's processes." },
	[R_OUT_BYTES] = { "slotrun_rank_output_bytes", COUNTER, "bytes",
			  "Bytes of output lines the rank wrote (stdout and stderr)." },
	[R_OUT_LINES] = { "slotrun_rank_output_lines", COUNTER, NULL, "Output lines the rank wrote." },
	[R_IDLE] = { "slotrun_rank_output_idle_seconds", GAUGE, "seconds",
		     "Seconds since the rank's last output line (or its start)." },
	[R_LAG] = { "slotrun_rank_lagging", GAUGE, NULL,
		    "1 while the rank lags the others: idle while they progress, or long in state D or T." },
};

/* Row r's value of family k into buf; false: none (left out). */
static bool value(const struct status_row *r, int k, char *buf, size_t size)
{
	switch (k) {
	case R_UP: snprintf(buf, size, "%d", r->up); break;
	case R_RESTARTS: snprintf(buf, size, "%d", r->restarts); break;
	case R_EXIT:
		if (r->exit_code < 0)
			return false;
		snprintf(buf, size, "%d", r->exit_code);
		break;
	case R_CPU: snprintf(buf, size, "%.3f", r->cpu_s); break;
	case R_RSS: snprintf(buf, size, "%llu", r->rss_bytes); break;
	case R_THREADS: snprintf(buf, size, "%ld", r->threads); break;
	case R_OUT_BYTES: snprintf(buf, size, "%llu", r->out_bytes); break;
	case R_OUT_LINES: snprintf(buf, size, "%llu", r->out_lines); break;
	case R_IDLE: snprintf(buf, size, "%.3f", r->silent_s > 0 ? r->silent_s : 0); break;
	default: snprintf(buf, size, "%d", r->lag); break;
	}
	return true;
}

static void rank_metrics(FILE *f, const struct status_row *rows, int n, enum metrics_format fmt)
{
	char v[64];

	for (int k = 0; k < R_N; k++) {
		const struct family *m = &rank_families[k];
		bool any = false;

		for (int i = 0; i < n && !any; i++)
			any = value(&rows[i], k, v, sizeof(v));
		if (!any)
			continue;
		describe(f, m, fmt);
		for (int i = 0; i < n; i++)
			if (value(&rows[i], k, v, sizeof(v))) {
				fprintf(f, "%s%s", m->name, m->kind == COUNTER ? "_total" : "");
				rank_labels(f, &rows[i]);
				fprintf(f, " %s\n", v);
			}
	}
}

static void job_metrics(FILE *f, const struct status_job *j, enum metrics_format fmt)
{
	static const struct family state = { "slotrun_job_state", STATESET, NULL,
					     "The job's state on this node: 1 for the one it is in." };
	static const struct family gauges[] = {
		{ "slotrun_job_attempt", GAUGE, NULL, "The attempt that runs, 1 for the first (restarts + 1)." },
		{ "slotrun_job_nodes", GAUGE, NULL, "Nodes the job has." },
		{ "slotrun_job_nodes_joined", GAUGE, NULL, "Nodes that joined the job." },
	};
	const int values[] = { j->attempt, j->nnodes, j->nodes_joined };

	describe(f, &state, fmt);
	for (int s = 0; s < STATUS_JOB_NSTATES; s++) {
		fprintf(f, "slotrun_job_state{");
		job_labels(f, j);
		fprintf(f, ",slotrun_job_state=\"%s\"} %d\n", status_job_states[s],
			strcmp(j->state, status_job_states[s]) == 0);
	}
	for (size_t k = 0; k < sizeof(gauges) / sizeof(gauges[0]); k++) {
		describe(f, &gauges[k], fmt);
		fprintf(f, "%s{", gauges[k].name);
		job_labels(f, j);
		fprintf(f, "} %d\n", values[k]);
	}
}

int metrics_render(const struct status_job *job, const struct status_row *rows, int n, enum metrics_format fmt,
		   char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);

	if (!f)
		return -ENOMEM;
	rank_metrics(f, rows, n, fmt);
	job_metrics(f, job, fmt);
	if (fmt == METRICS_OPENMETRICS)
		fputs("# EOF\n", f);
	if (fclose(f) != 0) {
		free(*text);
		*text = NULL;
		return -ENOMEM;
	}
	return 0;
}

enum metrics_format metrics_negotiate(const char *accept)
{
	return accept && strstr(accept, "application/openmetrics-text") ? METRICS_OPENMETRICS : METRICS_TEXT;
}
