// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "leak_check.h"
#include "timeline.h"
#include "tmp_dir.h"

static struct tl_event ev(enum tl_kind k, int node, int rank, int64_t t, int attempt, int code, int sig, bool root)
{
	return (struct tl_event){ .kind = k, .node = node, .rank = rank, .wall_us = t,
				  .a = { .attempt = attempt, .code = code, .sig = sig, .root_cause = root } };
}

/* The trace's events that are not metadata, in order. */
static json_t *events(const char *text)
{
	json_t *doc = json_loads(text, 0, NULL), *out = json_array(), *e;
	size_t i;

	cr_assert_not_null(doc, "not JSON: %s", text);
	json_array_foreach(json_object_get(doc, "traceEvents"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "ph")), "M") != 0)
			json_array_append(out, e);
	json_decref(doc);
	return out;
}

static const json_t *find(const json_t *a, const char *ph, int pid, int tid, int nth)
{
	size_t i;
	const json_t *e;

	json_array_foreach(a, i, e)
		if (strcmp(json_string_value(json_object_get(e, "ph")), ph) == 0 &&
		    json_integer_value(json_object_get(e, "pid")) == pid &&
		    json_integer_value(json_object_get(e, "tid")) == tid && nth-- == 0)
			return e;
	return NULL;
}

LEAK_TEST(timeline, a_failed_attempt_has_a_span_per_rank_and_its_root_cause_marked)
{
	struct tl_event e[] = {
		ev(TL_NODE_JOIN, 0, -1, 1000, 0, -1, 0, false),
		ev(TL_JOB_START, 0, -1, 2000, 0, -1, 0, false),
		ev(TL_RANK_START, 0, 0, 2000, 0, -1, 0, false),
		ev(TL_RANK_START, 0, 1, 2000, 0, -1, 0, false),
		ev(TL_RANK_EXIT, 0, 1, 5000, 0, 3, 0, false),
		ev(TL_STOP, 0, -1, 5001, 0, -1, 0, false),
		ev(TL_RANK_EXIT, 0, 0, 6000, 0, 143, 15, false),
		ev(TL_FAILURE, 0, 1, 5000, 0, 3, 0, true),
		ev(TL_JOB_END, 0, -1, 7000, 0, 3, 0, false),
	};
	char *hosts[] = { "n0" };
	char *text = tl_encode(e, sizeof(e) / sizeof(e[0]), hosts, 1);
	json_t *a = events(text);
	const json_t *r0 = find(a, "X", 1, 1, 0), *r1 = find(a, "X", 1, 2, 0), *f = find(a, "i", 1, 2, 0);

	cr_assert(r0 && r1 && f, "%s", text);
	cr_assert_eq(json_integer_value(json_object_get(r1, "ts")), 1000, "times count from the first event");
	cr_assert_eq(json_integer_value(json_object_get(r1, "dur")), 3000);
	cr_assert(json_is_true(json_object_get(json_object_get(r1, "args"), "root_cause")));
	cr_assert(json_is_false(json_object_get(json_object_get(r0, "args"), "root_cause")));
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(r1, "args"), "exit_code")), 3);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(r0, "args"), "signal")), 15);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(r0, "args"), "signal_name")), "TERM");
	cr_assert_str_eq(json_string_value(json_object_get(f, "name")), "failure (root cause)");
	cr_assert_null(find(a, "X", 1, 1, 1), "one span per rank per attempt");
	cr_assert(strstr(text, "\"process_name\""), "nodes are named");
	cr_assert(strstr(text, "\"node 0 (n0)\""), "%s", text);
	cr_assert(strstr(text, "\"rank 1\""), "ranks are named");
	cr_assert(strstr(text, "\"origin_us\": 1000"), "%s", text);
	json_decref(a);
	free(text);
}

LEAK_TEST(timeline, attempts_stalls_and_open_spans)
{
	struct tl_event e[] = {
		ev(TL_RANK_START, 1, 4, 100, 0, -1, 0, false),
		ev(TL_STALL, 1, 4, 150, 0, -1, 0, false),
		ev(TL_STALL_END, 1, 4, 170, 0, -1, 0, false),
		ev(TL_RANK_EXIT, 1, 4, 200, 0, 1, 0, false),
		ev(TL_RESTART, 1, -1, 210, 1, -1, 0, false),
		ev(TL_RANK_START, 1, 4, 300, 1, -1, 0, false),
		ev(TL_STALL, 1, 4, 350, 1, -1, 0, false),
		ev(TL_STOP, 1, -1, 400, 1, -1, 2, false),
	};
	char *text = tl_encode(e, sizeof(e) / sizeof(e[0]), NULL, 0);
	json_t *a = events(text);
	const json_t *first = find(a, "X", 2, 5, 0), *stall = find(a, "X", 2, 5, 1), *second = find(a, "X", 2, 5, 2),
		     *open = find(a, "X", 2, 5, 3), *stop = find(a, "i", 2, 0, 1);

	cr_assert(first && stall && second && open && stop, "%s", text);
	cr_assert_str_eq(json_string_value(json_object_get(first, "name")), "rank 4, attempt 1");
	cr_assert_eq(json_integer_value(json_object_get(stall, "dur")), 20);
	cr_assert_str_eq(json_string_value(json_object_get(second, "name")), "rank 4, attempt 2");
	cr_assert_eq(json_integer_value(json_object_get(second, "dur")), 100, "still running at the last event");
	cr_assert(json_is_true(json_object_get(json_object_get(second, "args"), "running")));
	cr_assert_str_eq(json_string_value(json_object_get(open, "name")), "stall");
	cr_assert_str_eq(json_string_value(json_object_get(stop, "name")), "stop: SIGINT");
	cr_assert(strstr(text, "\"node 1\""), "a node without a host is named by its rank");
	json_decref(a);
	free(text);
}

LEAK_TEST(timeline, events_go_through_json)
{
	struct tl_event in = ev(TL_FAILURE, 3, 17, 1795791203992008, 2, 137, 9, true), out;
	json_t *j;

	strcpy(in.a.text, "killed by the OOM killer");
	j = tl_event_json(&in);
	cr_assert_eq(tl_event_from_json(j, &out), 0);
	cr_assert_eq(memcmp(&in, &out, sizeof(in)), 0);
	json_decref(j);
	j = json_loads("{\"kind\": \"party\", \"node\": 0, \"rank\": 0, \"wall_us\": 1}", 0, NULL);
	cr_assert_eq(tl_event_from_json(j, &out), -EINVAL);
	json_decref(j);
	j = json_loads("{\"kind\": \"stop\", \"node\": 0}", 0, NULL);
	cr_assert_eq(tl_event_from_json(j, &out), -EINVAL);
	json_decref(j);
}

TestSuite(timeline_file, .init = tmp_dir_setup, .fini = tmp_dir_teardown);

LEAK_TEST(timeline_file, the_recorder_keeps_nothing_until_opened_and_writes_the_file)
{
	const struct tl_event *got;
	char *text;

	timeline_event(TL_JOB_START, 0, -1, 1, NULL);
	cr_assert_eq(timeline_events(&got), 0, "not open: nothing kept");
	cr_assert_eq(timeline_write(), 0);
	cr_assert_eq(timeline_open(tmp_path("t.json")), 0);
	cr_assert(timeline_on());
	timeline_host(0, "n0");
	timeline_event(TL_JOB_START, 0, -1, timeline_now_us(), NULL);
	timeline_add(&(struct tl_event){ .kind = TL_NODE_JOIN, .node = 1, .rank = -1, .wall_us = timeline_now_us() });
	cr_assert_eq(timeline_events(&got), 2);
	cr_assert_eq(got[0].a.code, -1, "no args: no code");
	cr_assert_eq(timeline_write(), 0);
	text = io_read_file(tmp_path("t.json"), 1 << 20);
	cr_assert_not_null(text);
	cr_assert(strstr(text, "\"node 0 (n0)\"") && strstr(text, "\"node 1 joined\""), "%s", text);
	free(text);
	timeline_close();
	cr_assert(!timeline_on());
}
