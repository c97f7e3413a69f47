// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "leak_check.h"
#include "metrics.h"
#include "metrics_http.h"

static struct status_job job(void)
{
	struct status_job j = { .node = 1, .nnodes = 2, .nodes_joined = 2, .attempt = 3 };

	strcpy(j.state, "running");
	strcpy(j.host, "n1");
	return j;
}

static void two_rows(struct status_row r[2])
{
	r[0] = (struct status_row){ .node = 1, .rank = 4, .local_rank = 0, .up = true, .cpu_s = 12.5,
				    .rss_bytes = 1048576, .threads = 3, .out_bytes = 100, .out_lines = 2,
				    .silent_s = 1.5, .restarts = 2, .exit_code = -1 };
	strcpy(r[0].host, "n1");
	r[1] = (struct status_row){ .node = 1, .rank = 5, .local_rank = 1, .up = false, .exit_code = 137,
				    .restarts = 2, .lag = true };
	strcpy(r[1].host, "a\"b\\c\nd");
}

static char *render(enum metrics_format fmt)
{
	struct status_job j = job();
	struct status_row r[2];
	char *text;
	size_t len;

	two_rows(r);
	cr_assert_eq(metrics_render(&j, r, 2, fmt, &text, &len), 0);
	cr_assert_eq(strlen(text), len);
	return text;
}

LEAK_TEST(metrics, openmetrics_families_units_and_eof)
{
	char *t = render(METRICS_OPENMETRICS);
	const char *want[] = {
		"# HELP slotrun_rank_up ",
		"# TYPE slotrun_rank_up gauge\n",
		"slotrun_rank_up{node=\"1\",rank=\"4\",local_rank=\"0\",host=\"n1\"} 1\n",
		"slotrun_rank_up{node=\"1\",rank=\"5\",local_rank=\"1\",host=\"a\\\"b\\\\c\\nd\"} 0\n",
		"# TYPE slotrun_rank_restarts counter\n",
		"slotrun_rank_restarts_total{node=\"1\",rank=\"4\",local_rank=\"0\",host=\"n1\"} 2\n",
		"# TYPE slotrun_rank_cpu_seconds counter\n# UNIT slotrun_rank_cpu_seconds seconds\n",
		"slotrun_rank_cpu_seconds_total{node=\"1\",rank=\"4\",local_rank=\"0\",host=\"n1\"} 12.500\n",
		"# UNIT slotrun_rank_rss_bytes bytes\n",
		"slotrun_rank_rss_bytes{node=\"1\",rank=\"4\",local_rank=\"0\",host=\"n1\"} 1048576\n",
		"slotrun_rank_output_bytes_total{node=\"1\",rank=\"4\",local_rank=\"0\",host=\"n1\"} 100\n",
		"slotrun_rank_output_lines_total{node=\"1\",rank=\"4\",local_rank=\"0\",host=\"n1\"} 2\n",
		"slotrun_rank_output_idle_seconds{node=\"1\",rank=\"4\",local_rank=\"0\",host=\"n1\"} 1.500\n",
		"slotrun_rank_lagging{node=\"1\",rank=\"5\",local_rank=\"1\",host=\"a\\\"b\\\\c\\nd\"} 1\n",
		"# TYPE slotrun_job_state stateset\n",
		"slotrun_job_state{node=\"1\",host=\"n1\",slotrun_job_state=\"running\"} 1\n",
		"slotrun_job_state{node=\"1\",host=\"n1\",slotrun_job_state=\"done\"} 0\n",
		"slotrun_job_attempt{node=\"1\",host=\"n1\"} 3\n",
		"slotrun_job_nodes_joined{node=\"1\",host=\"n1\"} 2\n",
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(strstr(t, want[i]), "missing %s in:\n%s", want[i], t);
	cr_assert(strstr(t, "slotrun_rank_last_exit_code{node=\"1\",rank=\"5\""), "%s", t);
	cr_assert_null(strstr(t, "slotrun_rank_last_exit_code{node=\"1\",rank=\"4\""), "no exit yet: no sample");
	cr_assert_str_eq(t + strlen(t) - 6, "# EOF\n", "EOF last");
	cr_assert_null(strstr(t, "_total counter"), "OpenMetrics families are named without _total");
	free(t);
}

LEAK_TEST(metrics, the_text_format_names_counters_with_total_and_has_no_unit_or_eof)
{
	char *t = render(METRICS_TEXT);

	cr_assert(strstr(t, "# HELP slotrun_rank_cpu_seconds_total "), "%s", t);
	cr_assert(strstr(t, "# TYPE slotrun_rank_cpu_seconds_total counter\n"), "%s", t);
	cr_assert(strstr(t, "# TYPE slotrun_job_state gauge\n"), "a stateset is a gauge there");
	cr_assert_null(strstr(t, "# UNIT"));
	cr_assert_null(strstr(t, "# EOF"));
	free(t);
}

LEAK_TEST(metrics, no_rows_still_says_the_job)
{
	struct status_job j = job();
	char *t;
	size_t len;

	cr_assert_eq(metrics_render(&j, NULL, 0, METRICS_OPENMETRICS, &t, &len), 0);
	cr_assert_null(strstr(t, "slotrun_rank_"));
	cr_assert(strstr(t, "slotrun_job_attempt"));
	free(t);
}

LEAK_TEST(metrics, accept_header_chooses_the_syntax)
{
	cr_assert_eq(metrics_negotiate("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
		     METRICS_OPENMETRICS);
	cr_assert_eq(metrics_negotiate("text/plain"), METRICS_TEXT);
	cr_assert_eq(metrics_negotiate("*/*"), METRICS_TEXT);
	cr_assert_eq(metrics_negotiate(NULL), METRICS_TEXT);
}

LEAK_TEST(metrics, listen_addresses)
{
	char *addr;
	int port;

	cr_assert_eq(metrics_parse_listen("9400", &addr, &port), 0);
	cr_assert_null(addr);
	cr_assert_eq(port, 9400);
	cr_assert_eq(metrics_parse_listen("127.0.0.1:9401", &addr, &port), 0);
	cr_assert_str_eq(addr, "127.0.0.1");
	cr_assert_eq(port, 9401);
	free(addr);
	cr_assert_eq(metrics_parse_listen("[::1]:9402", &addr, &port), 0);
	cr_assert_str_eq(addr, "::1");
	free(addr);
	cr_assert_eq(metrics_parse_listen("0", &addr, &port), 0);
	cr_assert_eq(port, 0, "off");
	const char *bad[] = { "", "x", "65536", "-1", ":9400", "::1:9400", "[::1]", "1.2.3.4:" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(metrics_parse_listen(bad[i], &addr, &port), -EINVAL, "%s", bad[i]);
}
