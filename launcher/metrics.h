// SPDX-License-Identifier: MIT
/* The job's metrics as Prometheus reads them: pure rendering of this
 * node's rows and the job's header (status_row.h) into text.
 *
 * One `slotrun_` prefix, base units (seconds, bytes), counters ending in
 * `_total`.  Per rank, labelled node, rank, local_rank and host:
 * slotrun_rank_up, _restarts_total, _last_exit_code, _cpu_seconds_total,
 * _rss_bytes, _threads, _output_bytes_total, _output_lines_total,
 * _output_idle_seconds (since its last line) and _lagging (lag.h).  Per
 * job, labelled node and host: slotrun_job_state (a stateset: one series
 * per state of status_job_states, 1 for the one it is in), _attempt,
 * _nodes and _nodes_joined.
 *
 * Two syntaxes of the same metrics: OpenMetrics 1.0.0 (HELP, TYPE and
 * UNIT lines, counter families named without `_total`, `# EOF` last),
 * which Prometheus asks for; and Prometheus's text format 0.0.4 (counter
 * families named with `_total`, no UNIT, no EOF), which node_exporter's
 * textfile collector and promtool read. */
#ifndef SLOTRUN_METRICS_H
#define SLOTRUN_METRICS_H

#include <stddef.h>

#include "status_row.h"

enum metrics_format { METRICS_OPENMETRICS, METRICS_TEXT };

#define METRICS_OPENMETRICS_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define METRICS_TEXT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The exposition, malloc'd into *text (*len bytes, NUL-terminated).
 * Returns 0 or -ENOMEM. */
int metrics_render(const struct status_job *job, const struct status_row *rows, int n, enum metrics_format fmt,
		   char **text, size_t *len);

/* Which syntax an HTTP Accept header asks for: OpenMetrics when it names
 * application/openmetrics-text, else the text format (NULL: none). */
enum metrics_format metrics_negotiate(const char *accept);

#endif
