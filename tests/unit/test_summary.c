// SPDX-License-Identifier: MIT
/* The failure summary as JSON (--error-file): what summary_write_json
 * writes is read back with jansson and every field checked, its type and
 * its value, for each kind of root cause, with restarts, and with lines
 * that are not plain ASCII. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "folder.h"
#include "leak_check.h"
#include "summary.h"
#include "tmp_dir.h"

TestSuite(summary, .init = tmp_dir_setup, .fini = tmp_dir_teardown);

/* ---- reading it back ---- */

static json_t *write_and_load(const struct sum_job *j)
{
	const char *path = tmp_path("error.json");
	json_error_t e;
	json_t *root;

	cr_assert_eq(summary_write_json(path, j), 0, "summary_write_json: %s", strerror(errno));
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
	cr_assert_not_null(root, "not JSON (or not UTF-8): line %d: %s", e.line, e.text);
	cr_assert(json_is_object(root));
	return root;
}

/* o is an object with exactly these keys, no more. */
static void assert_keys(const json_t *o, const char *const *keys)
{
	size_t n;

	cr_assert(json_is_object(o), "not an object");
	for (n = 0; keys[n]; n++)
		cr_assert_not_null(json_object_get(o, keys[n]), "no \"%s\"", keys[n]);
	cr_assert_eq(json_object_size(o), n, "%zu keys where %zu are named", json_object_size(o), n);
}
#define KEYS(o, ...) assert_keys((o), (const char *const[]){ __VA_ARGS__, NULL })

static json_t *get(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	cr_assert_not_null(v, "no \"%s\"", key);
	return v;
}

static json_int_t get_int(const json_t *o, const char *key)
{
	json_t *v = get(o, key);

	cr_assert(json_is_integer(v), "\"%s\" is not an integer", key);
	return json_integer_value(v);
}

static const char *get_str(const json_t *o, const char *key)
{
	json_t *v = get(o, key);

	cr_assert(json_is_string(v), "\"%s\" is not a string", key);
	return json_string_value(v);
}

static double get_real(const json_t *o, const char *key)
{
	json_t *v = get(o, key);

	cr_assert(json_is_real(v), "\"%s\" is not a real number", key);
	return json_real_value(v);
}

static void assert_null(const json_t *o, const char *key)
{
	cr_assert(json_is_null(get(o, key)), "\"%s\" is not null", key);
}

/* The strings of an array, checked one by one against want (n of them). */
static void assert_lines(const json_t *a, const char *const *want, size_t n)
{
	cr_assert(json_is_array(a), "not an array");
	cr_assert_eq(json_array_size(a), n, "%zu lines, want %zu", json_array_size(a), n);
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(a, i);

		cr_assert(json_is_string(s), "line %zu is not a string", i);
		cr_assert_str_eq(json_string_value(s), want[i], "line %zu", i);
	}
}
#define LINES(a, ...)                                                            \
	assert_lines((a), (const char *const[]){ __VA_ARGS__ },                   \
		     sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *))

/* ---- a job to describe: node 1, ranks 3..5, rank 4 failed first ---- */

static struct out_tail tail;
static struct sum_worker w[3];
static struct plane_cause cause, history[2];

/* 2023-11-14T22:13:20.123Z */
static const struct timespec WHEN = { 1700000000, 123456789 };

static struct sum_job three_ranks(void)
{
	static const char text[] = "loading\nTraceback: boom\nValueError: bad\nunfinished";

	memset(&tail, 0, sizeof(tail));
	out_tail_append(&tail, text, sizeof(text) - 1);
	for (int i = 0; i < 3; i++)
		w[i] = (struct sum_worker){ .rank = 3 + i, .local_rank = i, .pid = 1000 + i,
					    .code = 128 + SIGTERM, .fate = SUP_W_STOPPED,
					    .when = { WHEN.tv_sec + 1, 0 }, .after_start = 3.0 };
	w[1] = (struct sum_worker){ .rank = 4, .local_rank = 1, .pid = 1001, .code = 3,
				    .fate = SUP_W_EXITED, .when = WHEN, .after_start = 2.5, .tail = &tail };
	w[2].code = -1;
	w[2].fate = SUP_W_RUNNING;
	return (struct sum_job){ .node_rank = 1, .nworkers = 3, .w = w, .root = 1, .exit_code = 3,
				 .attempts = 1 };
}

static void rank_cause(struct plane_cause *c, int node, const char *host, int rank, int code)
{
	memset(c, 0, sizeof(*c));
	c->kind = PLANE_CAUSE_RANK;
	c->node = node;
	c->rank = rank;
	c->code = code;
	c->when_ms = 1700000000123;
	c->after_ms = 1250;
	snprintf(c->host, sizeof(c->host), "%s", host);
}

/* ---- a root cause on this node ---- */

LEAK_TEST(summary, a_local_root_cause_has_every_field_with_its_type)
{
	struct sum_job j = three_ranks();
	json_t *root, *rc, *ranks, *r;

	/* the times are UTC whatever the local zone */
	setenv("TZ", "XST-5:30", 1); /* a POSIX zone: no tzdata needed */
	tzset();
	root = write_and_load(&j);
	KEYS(root, "root_cause", "stop_signal", "node_rank", "exit_status", "ranks");
	assert_null(root, "stop_signal");
	cr_assert_eq(get_int(root, "node_rank"), 1);
	cr_assert_eq(get_int(root, "exit_status"), 3);

	rc = get(root, "root_cause");
	KEYS(rc, "rank", "local_rank", "pid", "exit_code", "signal", "time", "seconds_after_start", "fate",
	     "node_rank", "stderr_tail");
	cr_assert_eq(get_int(rc, "rank"), 4);
	cr_assert_eq(get_int(rc, "local_rank"), 1);
	cr_assert_eq(get_int(rc, "pid"), 1001);
	cr_assert_eq(get_int(rc, "exit_code"), 3);
	assert_null(rc, "signal");
	cr_assert_str_eq(get_str(rc, "time"), "2023-11-14T22:13:20.123Z");
	cr_assert_float_eq(get_real(rc, "seconds_after_start"), 2.5, 1e-9);
	cr_assert_str_eq(get_str(rc, "fate"), "exited");
	cr_assert_eq(get_int(rc, "node_rank"), 1);
	/* whole lines only: the unfinished one is not shown */
	LINES(get(rc, "stderr_tail"), "loading", "Traceback: boom", "ValueError: bad");

	ranks = get(root, "ranks");
	cr_assert(json_is_array(ranks));
	cr_assert_eq(json_array_size(ranks), 3, "every rank, the root cause too");
	for (size_t i = 0; i < 3; i++) {
		r = json_array_get(ranks, i);
		KEYS(r, "rank", "local_rank", "pid", "exit_code", "signal", "time", "seconds_after_start",
		     "fate");
		cr_assert_eq(get_int(r, "rank"), 3 + (json_int_t)i, "in rank order");
		cr_assert_eq(get_int(r, "local_rank"), (json_int_t)i);
		cr_assert_eq(get_int(r, "pid"), 1000 + (json_int_t)i);
	}
	r = json_array_get(ranks, 0);
	cr_assert_eq(get_int(r, "exit_code"), 143);
	cr_assert_str_eq(get_str(r, "signal"), "SIGTERM");
	cr_assert_str_eq(get_str(r, "fate"), "stopped");
	cr_assert_str_eq(get_str(r, "time"), "2023-11-14T22:13:21.000Z");
	cr_assert_float_eq(get_real(r, "seconds_after_start"), 3.0, 1e-9, "a whole number is still a real");
	r = json_array_get(ranks, 1);
	cr_assert_str_eq(get_str(r, "fate"), "exited");
	assert_null(r, "signal");
	r = json_array_get(ranks, 2);
	cr_assert_eq(get_int(r, "exit_code"), -1, "never reaped");
	assert_null(r, "signal");
	cr_assert_str_eq(get_str(r, "fate"), "running");
	json_decref(root);
	unsetenv("TZ");
	tzset();
}

LEAK_TEST(summary, a_death_by_signal_names_the_signal)
{
	struct sum_job j = three_ranks();
	json_t *root, *rc;

	w[1].code = 128 + SIGSEGV;
	j.exit_code = w[1].code;
	root = write_and_load(&j);
	rc = get(root, "root_cause");
	cr_assert_eq(get_int(rc, "exit_code"), 139);
	cr_assert_str_eq(get_str(rc, "signal"), "SIGSEGV");
	cr_assert_eq(get_int(root, "exit_status"), 139);
	json_decref(root);

	/* a real-time signal has no abbreviation */
	w[1].code = 128 + 40;
	root = write_and_load(&j);
	cr_assert_str_eq(get_str(get(root, "root_cause"), "signal"), "signal 40");
	json_decref(root);

	/* 128 itself, and codes past 128+64, are exit codes, not signals */
	w[1].code = 128;
	root = write_and_load(&j);
	assert_null(get(root, "root_cause"), "signal");
	json_decref(root);
	w[1].code = 255;
	root = write_and_load(&j);
	assert_null(get(root, "root_cause"), "signal");
	json_decref(root);
}

LEAK_TEST(summary, a_worker_that_did_not_start_has_its_note_and_no_tail)
{
	struct sum_job j = three_ranks();
	json_t *root, *rc;

	w[1] = (struct sum_worker){ .rank = 4, .local_rank = 1, .pid = 0, .code = 127,
				    .fate = SUP_W_EXITED,
				    .note = "cannot execute '/opt/tr\"ain': No such file or directory" };
	j.exit_code = 127;
	root = write_and_load(&j);
	rc = get(root, "root_cause");
	KEYS(rc, "rank", "local_rank", "pid", "exit_code", "signal", "time", "seconds_after_start", "fate",
	     "note", "node_rank", "stderr_tail");
	cr_assert_eq(get_int(rc, "pid"), 0);
	cr_assert_eq(get_int(rc, "exit_code"), 127);
	cr_assert_str_eq(get_str(rc, "note"), "cannot execute '/opt/tr\"ain': No such file or directory");
	cr_assert_str_eq(get_str(rc, "time"), "1970-01-01T00:00:00.000Z", "no exit time");
	cr_assert(json_is_array(get(rc, "stderr_tail")));
	cr_assert_eq(json_array_size(get(rc, "stderr_tail")), 0);
	json_decref(root);
}

LEAK_TEST(summary, a_stop_by_signal_has_no_root_cause_and_names_the_signal)
{
	struct sum_job j = three_ranks();
	json_t *root;

	w[1].code = 128 + SIGTERM;
	w[1].fate = SUP_W_STOPPED;
	j.root = -1;
	j.stop_signal = SIGINT;
	j.exit_code = 128 + SIGINT;
	root = write_and_load(&j);
	KEYS(root, "root_cause", "stop_signal", "node_rank", "exit_status", "ranks");
	assert_null(root, "root_cause");
	cr_assert_str_eq(get_str(root, "stop_signal"), "SIGINT");
	cr_assert_eq(get_int(root, "exit_status"), 130);
	cr_assert_eq(json_array_size(get(root, "ranks")), 3);
	json_decref(root);

	/* a clean finish: nothing to blame */
	j.stop_signal = 0;
	j.exit_code = 0;
	root = write_and_load(&j);
	assert_null(root, "root_cause");
	assert_null(root, "stop_signal");
	cr_assert_eq(get_int(root, "exit_status"), 0);
	json_decref(root);
}

LEAK_TEST(summary, the_tail_is_the_last_twenty_whole_lines_and_the_kill_diagnosis_is_kept)
{
	struct sum_job j = three_ranks();
	char line[32], want[20][32];
	const char *wantp[20];
	json_t *root, *rc;

	memset(&tail, 0, sizeof(tail));
	for (int i = 0; i < 25; i++) {
		int n = snprintf(line, sizeof(line), "line %d\n", i);

		out_tail_append(&tail, line, (size_t)n);
	}
	for (int i = 0; i < 20; i++) {
		snprintf(want[i], sizeof(want[i]), "line %d", i + 5);
		wantp[i] = want[i];
	}
	w[1].diag = "pid 1001 sh -c train: state S\npid 1009 python3: state D";
	w[0].note = "no output and no exit for 5 s (--hang-timeout)";
	root = write_and_load(&j);
	rc = get(root, "root_cause");
	assert_lines(get(rc, "stderr_tail"), wantp, 20);
	cr_assert_str_eq(get_str(rc, "at_kill"), "pid 1001 sh -c train: state S\npid 1009 python3: state D");
	KEYS(json_array_get(get(root, "ranks"), 0), "rank", "local_rank", "pid", "exit_code", "signal",
	     "time", "seconds_after_start", "fate", "note");
	cr_assert_str_eq(get_str(json_array_get(get(root, "ranks"), 0), "note"),
			 "no output and no exit for 5 s (--hang-timeout)");
	json_decref(root);

	/* a root cause without a kept tail has an empty one */
	w[1].tail = NULL;
	root = write_and_load(&j);
	cr_assert_eq(json_array_size(get(get(root, "root_cause"), "stderr_tail")), 0);
	json_decref(root);
}

/* ---- the job's root cause, as the chief decided it ---- */

LEAK_TEST(summary, a_rank_on_another_node_is_the_root_cause_and_ours_are_not_shown)
{
	struct sum_job j = three_ranks();
	json_t *root, *rc;

	rank_cause(&cause, 2, "node-b.example", 9, 128 + SIGKILL);
	snprintf(cause.text, sizeof(cause.text), "no output and no exit for 5 s (--hang-timeout)");
	snprintf(cause.tail, sizeof(cause.tail), "epoch 1\nCUDA error: out of memory\n");
	j.job = &cause;
	j.stop_signal = SIGTERM; /* ours: not shown beside the job's cause */
	j.exit_code = 137;
	root = write_and_load(&j);
	KEYS(root, "root_cause", "stop_signal", "node_rank", "exit_status", "ranks");
	assert_null(root, "stop_signal");
	cr_assert_eq(get_int(root, "node_rank"), 1, "this node");
	cr_assert_eq(get_int(root, "exit_status"), 137);
	rc = get(root, "root_cause");
	KEYS(rc, "kind", "node_rank", "host", "rank", "exit_code", "signal", "time", "seconds_after_start",
	     "note", "stderr_tail");
	cr_assert_str_eq(get_str(rc, "kind"), "rank");
	cr_assert_eq(get_int(rc, "node_rank"), 2, "the node where it failed");
	cr_assert_str_eq(get_str(rc, "host"), "node-b.example");
	cr_assert_eq(get_int(rc, "rank"), 9);
	cr_assert_eq(get_int(rc, "exit_code"), 137);
	cr_assert_str_eq(get_str(rc, "signal"), "SIGKILL");
	cr_assert_str_eq(get_str(rc, "time"), "2023-11-14T22:13:20.123Z");
	cr_assert_float_eq(get_real(rc, "seconds_after_start"), 1.25, 1e-9);
	cr_assert_str_eq(get_str(rc, "note"), "no output and no exit for 5 s (--hang-timeout)");
	LINES(get(rc, "stderr_tail"), "epoch 1", "CUDA error: out of memory");
	cr_assert_eq(json_array_size(get(root, "ranks")), 3, "this node's ranks are still listed");
	json_decref(root);

	/* an exit code, no note, no tail */
	rank_cause(&cause, 0, "node-a", 0, 1);
	root = write_and_load(&j);
	rc = get(root, "root_cause");
	KEYS(rc, "kind", "node_rank", "host", "rank", "exit_code", "signal", "time", "seconds_after_start",
	     "stderr_tail");
	assert_null(rc, "signal");
	cr_assert_eq(json_array_size(get(rc, "stderr_tail")), 0);
	json_decref(root);
}

LEAK_TEST(summary, a_signal_to_some_node_is_the_stop_signal)
{
	struct sum_job j = three_ranks();
	json_t *root, *rc;

	memset(&cause, 0, sizeof(cause));
	cause.kind = PLANE_CAUSE_SIGNAL;
	cause.node = 3;
	cause.code = SIGINT;
	snprintf(cause.host, sizeof(cause.host), "10.0.0.4");
	j.job = &cause;
	j.exit_code = 130;
	root = write_and_load(&j);
	rc = get(root, "root_cause");
	KEYS(rc, "kind", "node_rank", "host", "signal");
	cr_assert_str_eq(get_str(rc, "kind"), "signal");
	cr_assert_eq(get_int(rc, "node_rank"), 3);
	cr_assert_str_eq(get_str(rc, "host"), "10.0.0.4");
	cr_assert_str_eq(get_str(rc, "signal"), "SIGINT");
	cr_assert_str_eq(get_str(root, "stop_signal"), "SIGINT");
	json_decref(root);
}

LEAK_TEST(summary, a_lost_node_gives_its_reason_and_no_cause_gives_null)
{
	struct sum_job j = three_ranks();
	json_t *root, *rc;

	memset(&cause, 0, sizeof(cause));
	cause.kind = PLANE_CAUSE_LOST;
	cause.node = 2;
	snprintf(cause.host, sizeof(cause.host), "node-c");
	snprintf(cause.text, sizeof(cause.text), "no heartbeat for 5 s");
	j.job = &cause;
	j.exit_code = 1;
	root = write_and_load(&j);
	rc = get(root, "root_cause");
	KEYS(rc, "kind", "node_rank", "host", "reason");
	cr_assert_str_eq(get_str(rc, "kind"), "lost");
	cr_assert_eq(get_int(rc, "node_rank"), 2);
	cr_assert_str_eq(get_str(rc, "host"), "node-c");
	cr_assert_str_eq(get_str(rc, "reason"), "no heartbeat for 5 s");
	assert_null(root, "stop_signal");
	json_decref(root);

	cause.kind = PLANE_CAUSE_NONE;
	root = write_and_load(&j);
	assert_null(root, "root_cause");
	json_decref(root);
}

/* ---- restarts ---- */

LEAK_TEST(summary, restarts_list_every_attempts_root_cause_the_last_one_too)
{
	struct sum_job j = three_ranks();
	json_t *root, *list, *a;

	rank_cause(&history[0], 0, "node-a", 2, 128 + SIGSEGV);
	snprintf(history[0].tail, sizeof(history[0].tail), "Segmentation fault\n");
	memset(&history[1], 0, sizeof(history[1]));
	history[1].kind = PLANE_CAUSE_LOST;
	history[1].node = 1;
	snprintf(history[1].host, sizeof(history[1].host), "node-b");
	snprintf(history[1].text, sizeof(history[1].text), "connection reset");
	j.history = history;
	j.attempt = 2;
	j.attempts = 4;
	root = write_and_load(&j);
	KEYS(root, "root_cause", "stop_signal", "node_rank", "exit_status", "attempts", "ranks");
	list = get(root, "attempts");
	cr_assert(json_is_array(list));
	cr_assert_eq(json_array_size(list), 3, "the two before and this one");
	a = json_array_get(list, 0);
	cr_assert_str_eq(get_str(a, "kind"), "rank");
	cr_assert_eq(get_int(a, "rank"), 2);
	cr_assert_str_eq(get_str(a, "signal"), "SIGSEGV");
	LINES(get(a, "stderr_tail"), "Segmentation fault");
	a = json_array_get(list, 1);
	KEYS(a, "kind", "node_rank", "host", "reason");
	cr_assert_str_eq(get_str(a, "reason"), "connection reset");
	cr_assert(json_equal(json_array_get(list, 2), get(root, "root_cause")));
	cr_assert_eq(get_int(json_array_get(list, 2), "rank"), 4);
	json_decref(root);

	/* the first attempt failed, restarts were allowed: a list of one */
	j.attempt = 0;
	root = write_and_load(&j);
	cr_assert_eq(json_array_size(get(root, "attempts")), 1);
	cr_assert_eq(get_int(json_array_get(get(root, "attempts"), 0), "rank"), 4);
	json_decref(root);

	/* a restart that succeeded: the last entry is null */
	j.attempt = 1;
	j.root = -1;
	j.exit_code = 0;
	root = write_and_load(&j);
	list = get(root, "attempts");
	cr_assert_eq(json_array_size(list), 2);
	cr_assert_str_eq(get_str(json_array_get(list, 0), "kind"), "rank");
	cr_assert(json_is_null(json_array_get(list, 1)));
	assert_null(root, "root_cause");
	json_decref(root);
}

static char *printed(const struct sum_job *j);

/* ---- bytes that are not plain text ---- */

LEAK_TEST(summary, bytes_that_are_not_text_are_escaped_and_a_nul_does_not_end_the_line)
{
	struct sum_job j = three_ranks();
	static const char text[] = "tab\there \x01 quote\" back\\slash\n"
				   "na\xc3\xafve \xe2\x9c\x93\n"
				   "bad \xff byte\n"
				   "nul\0after\n"
				   "cut \xc3\n";
	json_t *root, *rc;
	char *printed_text;

	memset(&tail, 0, sizeof(tail));
	out_tail_append(&tail, text, sizeof(text) - 1);
	w[1].diag = "pid 1001 \xfe\x01x";
	root = write_and_load(&j);
	rc = get(root, "root_cause");
	LINES(get(rc, "stderr_tail"), "tab\there \\x01 quote\" back\\\\slash", "na\xc3\xafve \xe2\x9c\x93",
	      "bad \\xff byte", "nul\\x00after", "cut \\xc3");
	cr_assert_str_eq(get_str(rc, "at_kill"), "pid 1001 \\xfe\\x01x");
	json_decref(root);

	/* the text summary shows the same escaped lines */
	printed_text = printed(&j);
	cr_assert(strstr(printed_text, "slotrun: last 5 lines of rank 4's stderr:\n"
				       "slotrun: | tab\there \\x01 quote\" back\\\\slash\n"
				       "slotrun: | na\xc3\xafve \xe2\x9c\x93\n"
				       "slotrun: | bad \\xff byte\n"
				       "slotrun: | nul\\x00after\n"
				       "slotrun: | cut \\xc3\n"), "%s", printed_text);
	free(printed_text);

	/* the same from another node: tail and note */
	rank_cause(&cause, 2, "node-b", 9, 1);
	snprintf(cause.tail, sizeof(cause.tail), "%s", text);
	snprintf(cause.text, sizeof(cause.text), "why \xff\n");
	j.job = &cause;
	root = write_and_load(&j);
	rc = get(root, "root_cause");
	LINES(get(rc, "stderr_tail"), "tab\there \x01 quote\" back\\slash", "na\xc3\xafve \xe2\x9c\x93",
	      "bad \\xff byte", "nul");
	cr_assert_str_eq(get_str(rc, "note"), "why \\xff\\x0a");
	json_decref(root);

	/* a lost node's reason */
	cause.kind = PLANE_CAUSE_LOST;
	snprintf(cause.text, sizeof(cause.text), "peer said \xff\"");
	root = write_and_load(&j);
	cr_assert_str_eq(get_str(get(root, "root_cause"), "reason"), "peer said \\xff\"");
	json_decref(root);
}

/* ---- the file ---- */

LEAK_TEST(summary, the_file_is_replaced_whole_and_a_bad_path_is_an_errno)
{
	struct sum_job j = three_ranks();
	const char *path = tmp_write("error.json", "old", 3);
	char long_path[5000];
	json_t *root;

	root = write_and_load(&j);
	cr_assert_eq(get_int(root, "exit_status"), 3, "the old content is gone");
	json_decref(root);
	cr_assert_eq(folder_entries(tmpdir), 1, "no temporary file is left beside it");

	errno = 0;
	cr_assert_eq(summary_write_json(tmp_path("missing/error.json"), &j), -ENOENT);
	cr_assert_eq(errno, ENOENT, "errno is set too");
	cr_assert_eq(folder_entries(tmpdir), 1);

	memset(long_path, 'x', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = '\0';
	cr_assert_eq(summary_write_json(long_path, &j), -ENAMETOOLONG);

	/* a directory in the way: the rename fails, nothing is left behind */
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert_lt(summary_write_json(path, &j), 0);
	cr_assert_eq(folder_entries(tmpdir), 1);
}

/* ---- the words of the text summary ---- */

/* What summary_print writes, as one malloc'd string. */
static char *printed(const struct sum_job *j)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	summary_print(f, j);
	cr_assert_eq(fclose(f), 0);
	return text;
}

LEAK_TEST(summary, the_text_names_the_root_cause_its_lines_and_every_other_rank)
{
	struct sum_job j = three_ranks();
	char *text;

	setenv("TZ", "UTC0", 1);
	tzset();
	w[1].note = "no output and no exit for 5 s (--hang-timeout)";
	text = printed(&j);
	cr_assert_str_eq(text,
			 "slotrun: job failed: rank 4 (node 1, local rank 1, pid 1001) exit 3 at 22:13:20.123, "
			 "2.500 s after start: no output and no exit for 5 s (--hang-timeout)\n"
			 "slotrun: last 3 lines of rank 4's stderr:\n"
			 "slotrun: | loading\n"
			 "slotrun: | Traceback: boom\n"
			 "slotrun: | ValueError: bad\n"
			 "slotrun: other ranks:\n"
			 "slotrun:   rank 3 (local rank 0, pid 1000): exit 143 (SIGTERM), stopped by slotrun\n"
			 "slotrun:   rank 5 (local rank 2, pid 1002): never reaped, still running\n");
	free(text);
	unsetenv("TZ");
	tzset();
}

/* ---- a rank named at fault by the one that failed (rank_report.h) ---- */

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

LEAK_TEST(summary, a_rank_named_at_fault_heads_the_text_and_the_json)
{
	struct sum_job j = three_ranks();
	json_t *root, *rc, *by;
	char *text;

	setenv("TZ", "UTC0", 1);
	tzset();
	w[1].message = "peer rank 3 did not answer\nwithin 2s";
	j.culprit = &w[0];
	text = printed(&j);
	cr_assert(starts_with(text,
			      "slotrun: job failed: rank 3 (node 1, local rank 0), named by rank 4: "
			      "peer rank 3 did not answer\\x0awithin 2s\n"
			      "slotrun: rank 4 (node 1, local rank 1, pid 1001) named it: exit 3 at 22:13:20.123, "
			      "2.500 s after start\n"
			      "slotrun: last 3 lines of rank 4's stderr:\n"), "%s", text);
	cr_assert(strstr(text, "slotrun:   rank 3 (local rank 0, pid 1000): exit 143 (SIGTERM), stopped by slotrun\n"),
		  "the culprit's own fate among the others: %s", text);
	free(text);

	root = write_and_load(&j);
	rc = get(root, "root_cause");
	KEYS(rc, "rank", "node_rank", "local_rank", "pid", "message", "named_by");
	cr_assert_eq(get_int(rc, "rank"), 3);
	cr_assert_eq(get_int(rc, "node_rank"), 1);
	cr_assert_eq(get_int(rc, "pid"), 1000);
	cr_assert_str_eq(get_str(rc, "message"), "peer rank 3 did not answer\nwithin 2s");
	by = get(rc, "named_by");
	cr_assert_eq(get_int(by, "rank"), 4);
	cr_assert_eq(get_int(by, "exit_code"), 3);
	cr_assert_str_eq(get_str(by, "message"), "peer rank 3 did not answer\nwithin 2s");
	LINES(get(by, "stderr_tail"), "loading", "Traceback: boom", "ValueError: bad");
	json_decref(root);
	unsetenv("TZ");
	tzset();
}

LEAK_TEST(summary, a_rank_named_at_fault_on_another_node_heads_the_job_cause)
{
	struct sum_job j = three_ranks();
	json_t *root, *rc, *by;
	char *text;

	setenv("TZ", "UTC0", 1);
	tzset();
	rank_cause(&cause, 0, "node-a", 1, 1);
	snprintf(cause.message, sizeof(cause.message), "peer rank 4 did not answer");
	cause.blamed = true;
	cause.culprit = 4;
	cause.culprit_node = 1;
	snprintf(cause.culprit_host, sizeof(cause.culprit_host), "node-b");
	j.job = &cause;
	text = printed(&j);
	cr_assert(starts_with(text,
			      "slotrun: job failed: rank 4 on node 1 (node-b), named by rank 1 on node 0 (node-a): "
			      "peer rank 4 did not answer\n"
			      "slotrun: rank 1 on node 0 (node-a) named it: exit 1 at 22:13:20.123, 1.250 s after its "
			      "node's start\n"), "%s", text);
	free(text);

	root = write_and_load(&j);
	rc = get(root, "root_cause");
	KEYS(rc, "kind", "rank", "node_rank", "host", "message", "named_by");
	cr_assert_str_eq(get_str(rc, "kind"), "rank");
	cr_assert_eq(get_int(rc, "rank"), 4);
	cr_assert_eq(get_int(rc, "node_rank"), 1);
	cr_assert_str_eq(get_str(rc, "host"), "node-b");
	by = get(rc, "named_by");
	KEYS(by, "node_rank", "host", "rank", "exit_code", "signal", "time", "seconds_after_start", "message",
	     "stderr_tail");
	cr_assert_eq(get_int(by, "rank"), 1);
	cr_assert_eq(get_int(by, "exit_code"), 1);
	json_decref(root);
	unsetenv("TZ");
	tzset();
}

LEAK_TEST(summary, a_hung_rank_has_the_fate_hung_in_the_json)
{
	struct sum_job j = three_ranks();
	json_t *root;

	w[1].fate = SUP_W_HUNG;
	root = write_and_load(&j);
	cr_assert_str_eq(get_str(get(root, "root_cause"), "fate"), "hung");
	cr_assert_str_eq(get_str(json_array_get(get(root, "ranks"), 1), "fate"), "hung");
	json_decref(root);
}

LEAK_TEST(summary, the_text_lists_the_attempts_before_and_says_when_a_restart_succeeded)
{
	struct sum_job j = three_ranks();
	char *text;

	rank_cause(&history[0], 0, "node-a", 2, 128 + SIGSEGV);
	memset(&history[1], 0, sizeof(history[1]));
	history[1].kind = PLANE_CAUSE_LOST;
	history[1].node = 1;
	snprintf(history[1].host, sizeof(history[1].host), "node-b");
	snprintf(history[1].text, sizeof(history[1].text), "connection reset");
	j.history = history;
	j.attempt = 2;
	j.attempts = 3;
	j.root = -1;
	j.exit_code = 0;
	text = printed(&j);
	cr_assert_str_eq(text,
			 "slotrun: attempt 1 of 3 failed: rank 2 on node 0 (node-a) exit 139 (SIGSEGV)\n"
			 "slotrun: attempt 2 of 3 failed: node 1 (node-b) lost: connection reset\n"
			 "slotrun: attempt 3 of 3 succeeded\n",
			 "a success says nothing of the ranks");
	free(text);

	j.root = 1;
	j.exit_code = 3;
	text = printed(&j);
	cr_assert(strstr(text, "slotrun: attempt 3 of 3, the last:\n"
			       "slotrun: job failed: rank 4 (node 1, local rank 1, pid 1001) exit 3 at "), "%s", text);
	free(text);
}


Test(summary, describe_code)
{
	static const struct { int code; const char *text; } t[] = {
		{ -1, "never reaped" }, { 0, "exit 0" }, { 1, "exit 1" }, { 128, "exit 128" },
		{ 137, "exit 137 (SIGKILL)" }, { 143, "exit 143 (SIGTERM)" }, { 168, "exit 168 (signal 40)" },
		{ 255, "exit 255" },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		sum_describe_code(t[i].code, buf, sizeof(buf));
		cr_assert_str_eq(buf, t[i].text, "code %d", t[i].code);
	}
}

/* A note names the command it could not run: a path is bytes, not
 * necessarily UTF-8, and json_string() would refuse it. */
LEAK_TEST(summary, a_note_naming_a_command_that_is_not_utf8_is_kept)
{
	struct sum_job j = three_ranks();
	json_t *root, *rc;

	w[1] = (struct sum_worker){ .rank = 4, .local_rank = 1, .pid = 0, .code = 126,
				    .fate = SUP_W_EXITED,
				    .note = "cannot execute '/opt/\xff\x01run': Permission denied" };
	root = write_and_load(&j);
	rc = get(root, "root_cause");
	cr_assert_str_eq(get_str(rc, "note"), "cannot execute '/opt/\\xff\\x01run': Permission denied");
	json_decref(root);
}

/* Stopped while waiting to restart: attempt 2 never ran, so it is neither
 * "the last" nor listed, and no rank header stands over nothing. */
LEAK_TEST(summary, an_attempt_that_never_started_is_not_shown)
{
	struct sum_job j = three_ranks();
	json_t *root;
	char *text;

	rank_cause(&history[0], 1, "node-b", 4, 3);
	j.history = history;
	j.attempt = 1;
	j.attempts = 4;
	j.nworkers = 0;
	j.root = -1;
	j.stop_signal = SIGTERM;
	j.exit_code = 128 + SIGTERM;
	j.between = true;
	text = printed(&j);
	cr_assert_str_eq(text,
			 "slotrun: attempt 1 of 4 failed: rank 4 on node 1 (node-b) exit 3\n"
			 "slotrun: stopped by SIGTERM before attempt 2 of 4 started\n");
	free(text);
	root = write_and_load(&j);
	cr_assert_eq(json_array_size(get(root, "attempts")), 1, "the attempt that never ran is listed");
	cr_assert_eq(get_int(json_array_get(get(root, "attempts"), 0), "rank"), 4);
	json_decref(root);

	/* several nodes: the chief's cause is the signal */
	memset(&cause, 0, sizeof(cause));
	cause.kind = PLANE_CAUSE_SIGNAL;
	cause.code = SIGTERM;
	cause.node = 0;
	snprintf(cause.host, sizeof(cause.host), "node-a");
	j.job = &cause;
	text = printed(&j);
	cr_assert(!strstr(text, "the last"), "%s", text);
	cr_assert(!strstr(text, "ranks:"), "a header with nothing under it: %s", text);
	cr_assert(strstr(text, "slotrun: job stopped: "), "%s", text);
	free(text);
}

/* A rank stopped by slotrun that exits with an error of its own (a
 * checkpoint on SIGTERM that failed) shows that exit and its lines. */
LEAK_TEST(summary, a_rank_that_fails_while_being_stopped_shows_its_exit_and_its_lines)
{
	struct sum_job j = three_ranks();
	static const char own[] = "saving checkpoint\nOSError: disk full\n";
	static struct out_tail own_tail;
	json_t *root, *r0;
	char *text;

	memset(&own_tail, 0, sizeof(own_tail));
	out_tail_append(&own_tail, own, sizeof(own) - 1);
	w[0].code = 1;
	w[0].tail = &own_tail;
	text = printed(&j);
	cr_assert(strstr(text, "slotrun:   rank 3 (local rank 0, pid 1000): exit 1, failed while slotrun was "
			       "stopping the job\n"
			       "slotrun:     last 2 lines of rank 3's stderr:\n"
			       "slotrun:     | saving checkpoint\n"
			       "slotrun:     | OSError: disk full\n"), "%s", text);
	free(text);
	root = write_and_load(&j);
	r0 = json_array_get(get(root, "ranks"), 0);
	cr_assert_str_eq(get_str(r0, "fate"), "stopped");
	cr_assert_eq(get_int(r0, "exit_code"), 1);
	LINES(get(r0, "stderr_tail"), "saving checkpoint", "OSError: disk full");
	/* one killed by the signal has no tail: it said nothing of its own */
	cr_assert_null(json_object_get(json_array_get(get(root, "ranks"), 2), "stderr_tail"));
	json_decref(root);
}
