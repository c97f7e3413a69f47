// SPDX-License-Identifier: MIT
/* --error-file's write (summary_write_json) against what another user of
 * the folder may have planted there. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "folder.h"
#include "leak_check.h"
#include "summary.h"
#include "tmp_dir.h"

TestSuite(error_file, .init = tmp_dir_setup, .fini = tmp_dir_teardown);

static const char victim_text[] = "must not be clobbered\n";

static void assert_victim_intact(const char *victim)
{
	char *text = io_read_file(victim, 4096);

	cr_assert_not_null(text);
	cr_assert_str_eq(text, victim_text, "the file behind the planted link was overwritten");
	free(text);
}

/* The temporary file beside the error file used to be named after the
 * error file and our pid: a link planted at that name was followed and
 * the file it points at written over. */
LEAK_TEST(error_file, does_not_follow_a_link_planted_at_a_predictable_temp_name)
{
	const char *victim = tmp_write("victim", victim_text, strlen(victim_text));
	const char *path = tmp_path("error.json");
	struct sum_job j = { .root = -1, .exit_code = 3 };
	char planted[256], *text;

	snprintf(planted, sizeof(planted), "%s.tmp.%d", path, (int)getpid());
	cr_assert_eq(symlink(victim, planted), 0);
	cr_assert_eq(summary_write_json(path, &j), 0);
	assert_victim_intact(victim);
	text = io_read_file(path, 1 << 16);
	cr_assert_not_null(text);
	cr_assert_not_null(strstr(text, "\"exit_status\": 3"), "%s", text);
	free(text);
}

/* The error file is replaced, not written through: a link at its own name
 * is replaced by the file. */
LEAK_TEST(error_file, replaces_a_link_at_its_name)
{
	const char *victim = tmp_write("victim", victim_text, strlen(victim_text));
	const char *path = tmp_path("error.json");
	struct sum_job j = { .root = -1 };
	struct stat st;

	cr_assert_eq(symlink(victim, path), 0);
	cr_assert_eq(summary_write_json(path, &j), 0);
	assert_victim_intact(victim);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
}

LEAK_TEST(error_file, failure_leaves_no_temp_file)
{
	struct sum_job j = { .root = -1 };

	cr_assert_eq(mkdir(tmp_path("dir"), 0755), 0);
	/* a folder at the name: the rename fails */
	cr_assert_lt(summary_write_json(tmp_path("dir"), &j), 0);
	cr_assert_eq(folder_entries(tmpdir), 1, "a temporary file was left behind");
}
