// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "leak_check.h"
#include "status_table.h"

static struct status_job job(void)
{
	struct status_job j = { .pid = 100, .node = 0, .nnodes = 1, .nodes_joined = 1, .world_size = 2,
				.attempt = 2, .attempts = 3, .uptime_s = 65 };

	strcpy(j.id, "100");
	strcpy(j.state, "running");
	strcpy(j.command, "python3 train.py");
	strcpy(j.host, "n0");
	return j;
}

static void rows(struct status_row r[2])
{
	r[0] = (struct status_row){ .rank = 0, .pid = 101, .up = true, .state = SAMPLE_RUNNING, .cpu_pct = 99.5,
				    .rss_bytes = 3 << 20, .threads = 4, .silent_s = 0.25, .out_bytes = 2048,
				    .exit_code = -1, .restarts = 1 };
	strcpy(r[0].line, "step 7 loss 0.25");
	r[1] = (struct status_row){ .rank = 1, .pid = 102, .up = true, .state = SAMPLE_SLEEPING, .cpu_pct = 0,
				    .rss_bytes = 1 << 20, .threads = 1, .silent_s = 42, .exit_code = 1, .restarts = 1,
				    .lag = true };
	strcpy(r[1].why, "no output for 42 s and 0% CPU while rank 0 progresses");
}

LEAK_TEST(status_table, header_rows_and_lag_lines)
{
	struct status_job j = job();
	struct status_row r[2];
	char *t;

	rows(r);
	t = status_table(&j, r, 2, NULL, 0);
	cr_assert_not_null(t);
	cr_assert(strstr(t, "job 100: slotrun 100 on node 0 (n0), 1 of 1 node, 2 ranks shown, attempt 2 of 3, "
			 "running for 1m05s\n"), "%s", t);
	cr_assert(strstr(t, "command: python3 train.py\n"), "%s", t);
	cr_assert(strstr(t, "NODE RANK PID STATE    CPU%  RSS THR  IDLE  OUT RST EXIT LAG LAST LINE\n"), "%s", t);
	cr_assert(strstr(t, "   0    0 101 running  99.5 3.0M   4 250ms 2.0K   1    -     step 7 loss 0.25\n"), "%s", t);
	cr_assert(strstr(t, "   0    1 102 sleeping  0.0 1.0M   1   42s   0B   1    1 LAG \n"), "%s", t);
	cr_assert(strstr(t, "rank 1 (node 0) lags: no output for 42 s and 0% CPU while rank 0 progresses\n"), "%s", t);
	cr_assert_null(strstr(t, "stacks"));
	free(t);
}

LEAK_TEST(status_table, ranks_that_are_not_up_show_dashes)
{
	struct status_job j = job();
	struct status_row r[2];
	char *t;

	rows(r);
	r[1].up = false;
	r[1].state = SAMPLE_GONE;
	r[1].pid = 0;
	r[1].lag = false;
	t = status_table(&j, r, 2, NULL, 0);
	cr_assert(strstr(t, "   0    1   - gone       -    -   -     -   0B   1    1     \n"), "%s", t);
	free(t);
}

LEAK_TEST(status_table, the_last_line_is_cut_to_the_width_on_a_character)
{
	struct status_job j = job();
	struct status_row r[2];
	char *t, *line;

	rows(r);
	strcpy(r[0].line, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9xyz");
	t = status_table(&j, r, 2, NULL, 61 + 9); /* the columns before it take 61 */
	line = strstr(t, "running");
	cr_assert_not_null(line);
	cr_assert(strstr(line, " \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\n"), "%s", t);
	cr_assert(strstr(t, " LAG LAST LINE\n"), "the header fits: %s", t);
	free(t);
	cr_assert_eq(status_table_fit("\xc3\xa9" "ab", 1), 2);
	cr_assert_eq(status_table_fit("abc", 5), 3);
	cr_assert_eq(status_table_fit("abc", 0), 0);
}

LEAK_TEST(status_table, stacks_are_shown_after_the_table)
{
	struct status_job j = job();
	struct status_row r[2];
	json_t *stacks = json_loads("[{\"node\":0,\"rank\":0,\"pid\":101,\"text\":\"#0 main\\n#1 start\"},"
				    "{\"node\":0,\"rank\":1,\"pid\":102,\"error\":\"stacks: not available in this build\"}]",
				    0, NULL);
	char *t;

	rows(r);
	t = status_table(&j, r, 2, stacks, 0);
	cr_assert(strstr(t, "\nstacks:\n== rank 0 (node 0, pid 101)\n#0 main\n#1 start\n"
			 "== rank 1 (node 0, pid 102): stacks: not available in this build\n"), "%s", t);
	free(t);
	json_decref(stacks);
}

LEAK_TEST(status_table, short_forms)
{
	char b[32];

	cr_assert_str_eq(status_table_duration(0.85, b, sizeof(b)), "850ms");
	cr_assert_str_eq(status_table_duration(42.9, b, sizeof(b)), "42s");
	cr_assert_str_eq(status_table_duration(185, b, sizeof(b)), "3m05s");
	cr_assert_str_eq(status_table_duration(7380, b, sizeof(b)), "2h03m");
	cr_assert_str_eq(status_table_duration(-1, b, sizeof(b)), "-");
	cr_assert_str_eq(status_table_bytes(512, b, sizeof(b)), "512B");
	cr_assert_str_eq(status_table_bytes(3277, b, sizeof(b)), "3.2K");
	cr_assert_str_eq(status_table_bytes(12u << 20, b, sizeof(b)), "12.0M");
	cr_assert_str_eq(status_table_bytes(3ull << 40, b, sizeof(b)), "3.0T");
}
