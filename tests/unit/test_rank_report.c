// SPDX-License-Identifier: MIT
/* The workers' failure reports: what libslotcomm writes (comm_report.h)
 * and what slotrun reads of it, or of anything else at the path
 * (rank_report.h). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm_report.h"
#include "leak_check.h"
#include "rank_report.h"

static int parse(const char *text, struct rank_report *out)
{
	return rank_report_parse(text, strlen(text), out);
}

LEAK_TEST(rank_report, ours_and_torchs_forms_are_read)
{
	struct rank_report r;

	cr_assert_eq(parse("{\"message\": \"peer rank 3 did not answer\", \"culprit_rank\": 3}", &r), 0);
	cr_assert_str_eq(r.message, "peer rank 3 did not answer");
	cr_assert_eq(r.culprit, 3);
	/* torch's @record, with keys of its own beside */
	cr_assert_eq(parse("{\"message\": {\"message\": \"RuntimeError: boom\", \"extraInfo\": "
			   "{\"py_callstack\": \"Traceback\", \"timestamp\": \"17\"}}}", &r), 0);
	cr_assert_str_eq(r.message, "RuntimeError: boom");
	cr_assert_eq(r.culprit, -1);
	cr_assert_eq(parse("{\"culprit_rank\": 0, \"other\": [1, 2]}", &r), 0);
	cr_assert_str_eq(r.message, "");
	cr_assert_eq(r.culprit, 0);
	cr_assert_eq(parse("{}", &r), 0);
	cr_assert_eq(r.culprit, -1);
}

LEAK_TEST(rank_report, anything_else_says_nothing)
{
	static const char *const bad[] = {
		"", "not json", "[]", "\"text\"", "{\"message\": 7}", "{\"message\": {\"message\": 7}}",
		"{\"message\": {}}", "{\"culprit_rank\": \"3\"}", "{\"culprit_rank\": -1}",
		"{\"culprit_rank\": 2147483648}", "{\"culprit_rank\": 1.5}", "{\"message\": \"a\", \"message\": \"b\"}",
		"{\"message\": \"cut", "{\"message\": \"x\"} trailing",
	};
	struct rank_report r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(parse(bad[i], &r), -EINVAL, "%s", bad[i]);
		cr_assert_str_eq(r.message, "", "%s", bad[i]);
		cr_assert_eq(r.culprit, -1, "%s", bad[i]);
	}
}

LEAK_TEST(rank_report, a_long_message_is_cut_to_fit)
{
	size_t n = PLANE_TEXT_MAX * 3;
	char *text = malloc(n + 32);
	struct rank_report r;

	cr_assert_not_null(text);
	strcpy(text, "{\"message\": \"");
	memset(text + strlen(text), 'x', n);
	strcpy(text + 13 + n, "\"}");
	cr_assert_eq(parse(text, &r), 0);
	cr_assert_eq(strlen(r.message), PLANE_TEXT_MAX - 1);
	free(text);
}

/* What libslotcomm writes reads back as it was meant, whatever the
 * message holds. */
LEAK_TEST(rank_report, what_libslotcomm_writes_reads_back)
{
	char buf[512];
	struct rank_report r;
	size_t n;

	n = comm_report_format(buf, sizeof(buf), "peer rank 2 \"x\" \\ did\tnot\nanswer", 2);
	cr_assert_eq(buf[n - 1], '\n');
	cr_assert_eq(rank_report_parse(buf, n, &r), 0, "%s", buf);
	cr_assert_str_eq(r.message, "peer rank 2 \"x\" \\ did\tnot\nanswer");
	cr_assert_eq(r.culprit, 2);

	n = comm_report_format(buf, sizeof(buf), "caf\xc3\xa9 \xff", -1);
	cr_assert_eq(rank_report_parse(buf, n, &r), 0, "bytes above 0x7f keep it valid: %s", buf);
	cr_assert_str_eq(r.message, "caf?? ?");
	cr_assert_eq(r.culprit, -1);

	/* cut to fit, still whole JSON with the culprit */
	n = comm_report_format(buf, 80, "\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"", INT_MAX);
	cr_assert_leq(n, 79);
	cr_assert_eq(rank_report_parse(buf, n, &r), 0, "%s", buf);
	cr_assert_eq(r.culprit, INT_MAX);
	cr_assert_eq(comm_report_format(buf, 8, "m", 1), 0, "no room for any");
}

/* The folder's files: a planted FIFO, folder or oversized file is no
 * report, and closing removes whatever the workers left. */
LEAK_TEST_OPTS(rank_report_files, the_folder_reads_what_is_a_report_and_is_removed, .timeout = 10)
{
	struct rank_reports rr;
	struct rank_report r;
	char path[4096];
	int fd;

	setenv("TMPDIR", "/tmp", 1);
	cr_assert_eq(rank_reports_open(&rr), 0);
	cr_assert_not_null(rr.dir);
	cr_assert_eq(rank_reports_read(&rr, 0, &r), -ENOENT);

	rank_reports_path(&rr, 0, path, sizeof(path));
	setenv(COMM_REPORT_VAR, path, 1);
	cr_assert_eq(comm_report_write("stuck", 1), 0);
	cr_assert_eq(rank_reports_read(&rr, 0, &r), 0);
	cr_assert_str_eq(r.message, "stuck");
	cr_assert_eq(r.culprit, 1);
	rank_reports_clear(&rr, 0);
	cr_assert_eq(rank_reports_read(&rr, 0, &r), -ENOENT, "an earlier attempt's is gone");

	rank_reports_path(&rr, 1, path, sizeof(path));
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(rank_reports_read(&rr, 1, &r), -EINVAL, "a FIFO does not block");
	setenv(COMM_REPORT_VAR, path, 1);
	cr_assert_lt(comm_report_write("m", -1), 0, "nor does writing to one without a reader");
	rank_reports_path(&rr, 2, path, sizeof(path));
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_lt(rank_reports_read(&rr, 2, &r), 0);
	rank_reports_path(&rr, 3, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, RANK_REPORT_MAX + 1), 0);
	close(fd);
	cr_assert_eq(rank_reports_read(&rr, 3, &r), -EFBIG);
	rank_reports_path(&rr, 2, path, sizeof(path));
	cr_assert_eq(rmdir(path), 0, "a folder of the workers' is theirs to remove");

	snprintf(path, sizeof(path), "%s", rr.dir);
	rank_reports_close(&rr);
	cr_assert_null(rr.dir);
	cr_assert_eq(access(path, F_OK), -1, "the folder is gone");
	unsetenv(COMM_REPORT_VAR);
}
