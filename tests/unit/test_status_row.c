// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "leak_check.h"
#include "status_row.h"

static struct status_row sample_row(int node, int rank)
{
	struct status_row r = {
		.node = node, .rank = rank, .local_rank = rank % 4, .pid = 4242, .up = true, .state = SAMPLE_DISK,
		.state_s = 12.5, .cpu_pct = 3.25, .cpu_s = 100.5, .rss_bytes = 1ull << 40, .threads = 17, .procs = 3,
		.silent_s = 42, .wrote = true, .out_bytes = 5000000000ull, .out_lines = 7, .restarts = 2,
		.exit_code = 137, .lag = true,
	};

	strcpy(r.host, "n\"1\\");
	strcpy(r.line, "step 3 \xc3\xa9t\xc3\xa9");
	strcpy(r.why, "uninterruptible (D) for 12 s");
	return r;
}

LEAK_TEST(status_row, a_row_goes_through_json_unchanged)
{
	struct status_row in = sample_row(1, 5), out;
	json_t *j = status_row_json(&in);
	char *text = json_dumps(j, JSON_COMPACT);
	json_t *back = json_loads(text, 0, NULL);

	cr_assert_not_null(j);
	cr_assert_eq(status_row_from_json(back, &out), 0);
	cr_assert_eq(memcmp(&in, &out, sizeof(in)), 0, "%s", text);
	free(text);
	json_decref(j);
	json_decref(back);
}

LEAK_TEST(status_row, unknowns_are_null_and_missing_members_default)
{
	struct status_row in = sample_row(0, 0), out;
	json_t *j;

	in.cpu_pct = -1;
	in.exit_code = -1;
	j = status_row_json(&in);
	cr_assert(json_is_null(json_object_get(j, "cpu_pct")));
	cr_assert(json_is_null(json_object_get(j, "exit_code")));
	json_object_del(j, "line");
	json_object_set_new(j, "from_a_newer_slotrun", json_true());
	cr_assert_eq(status_row_from_json(j, &out), 0, "unknown members are skipped");
	cr_assert_lt(out.cpu_pct, 0);
	cr_assert_eq(out.exit_code, -1);
	cr_assert_str_eq(out.line, "", "a missing member is its default");
	json_decref(j);
}

LEAK_TEST(status_row, wrong_types_are_refused)
{
	const char *bad[] = { "[]", "{\"rank\": \"3\"}", "{\"up\": 1}", "{\"state\": \"busy\"}", "{\"line\": 3}",
			      "{\"cpu_pct\": \"x\"}" };
	struct status_row r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = json_loads(bad[i], 0, NULL);

		cr_assert_eq(status_row_from_json(j, &r), -EINVAL, "%s", bad[i]);
		json_decref(j);
	}
}

LEAK_TEST(status_row, the_job_header_goes_through_json)
{
	struct status_job in = { .pid = 99, .node = 2, .nnodes = 3, .nodes_joined = 3, .world_size = 24,
				 .attempt = 2, .attempts = 4, .started_us = 1795791203992008, .uptime_s = 61.5 }, out;
	json_t *j;

	strcpy(in.id, "slurm-77");
	strcpy(in.state, "running");
	strcpy(in.command, "python3 train.py");
	strcpy(in.host, "n2");
	j = status_job_json(&in);
	cr_assert_eq(status_job_from_json(j, &out), 0);
	cr_assert_eq(memcmp(&in, &out, sizeof(in)), 0);
	json_decref(j);
	j = json_loads("{\"pid\": \"x\"}", 0, NULL);
	cr_assert_eq(status_job_from_json(j, &out), -EINVAL);
	json_decref(j);
}

LEAK_TEST(status_row, rows_of_several_nodes_merge_in_rank_order)
{
	struct status_row node0[] = { sample_row(0, 0), sample_row(0, 1) };
	struct status_row node1[] = { sample_row(1, 3), sample_row(1, 2) };
	struct status_row *rows = NULL, *back;
	int n = 0, m;
	json_t *a;

	cr_assert_eq(status_rows_merge(&rows, &n, node1, 2), 0);
	cr_assert_eq(status_rows_merge(&rows, &n, node0, 2), 0);
	cr_assert_eq(status_rows_merge(&rows, &n, NULL, 0), 0);
	cr_assert_eq(n, 4);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(rows[i].rank, i);
	cr_assert_eq(rows[3].node, 1);
	a = status_rows_json(rows, n);
	cr_assert_eq(status_rows_from_json(a, &back, &m), 0);
	cr_assert_eq(m, 4);
	cr_assert_eq(memcmp(rows, back, sizeof(*rows) * 4), 0);
	free(back);
	json_decref(a);
	a = json_loads("[{\"rank\": 1}, 3]", 0, NULL);
	cr_assert_eq(status_rows_from_json(a, &back, &m), -EINVAL);
	cr_assert_null(back);
	json_decref(a);
	free(rows);
}
