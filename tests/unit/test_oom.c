// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leak_check.h"
#include "oom.h"
#include "summary.h"
#include "supervisor.h"

static enum oom_record parse(const char *rec, struct oom_kill *k)
{
	return oom_parse_record(rec, strlen(rec), k);
}

LEAK_TEST(oom, killed_process_names_pid_and_name)
{
	struct oom_kill k;

	cr_assert_eq(parse("3,9312,8773564652,-;Memory cgroup out of memory: Killed process 1234 "
			   "(python3) total-vm:400000kB, anon-rss:65000kB, file-rss:0kB\n", &k), OOM_REC_KILLED);
	cr_assert_eq(k.pid, 1234);
	cr_assert_str_eq(k.name, "python3");
	cr_assert_str_eq(k.memcg, "");
	cr_assert_eq(parse("3,1,2,-;Out of memory: Killed process 77 (a) b) total-vm:1kB\n", &k),
		     OOM_REC_KILLED, "a name may hold ')'");
	cr_assert_str_eq(k.name, "a) b");
}

LEAK_TEST(oom, summary_line_names_the_cgroup)
{
	struct oom_kill k;

	cr_assert_eq(parse("6,9311,8773564600,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
			   "cpuset=/,mems_allowed=0,oom_memcg=/a/b,task_memcg=/a/b,task=python3,pid=1234,"
			   "uid=0\n", &k), OOM_REC_SUMMARY);
	cr_assert_eq(k.pid, 1234);
	cr_assert_str_eq(k.name, "python3");
	cr_assert_str_eq(k.memcg, "/a/b");
}

LEAK_TEST(oom, other_records_are_not_kills)
{
	struct oom_kill k;

	cr_assert_eq(parse("6,27568,8773564652,-;br0: port 2(p1) entered disabled state\n", &k), OOM_REC_OTHER);
	cr_assert_eq(parse("6,1,2,-;Killed process x (y)\n", &k), OOM_REC_OTHER, "no pid");
	cr_assert_eq(parse("6,1,2,-;Killed process 12\n", &k), OOM_REC_OTHER, "no name");
	cr_assert_eq(parse("6,1,2,-;oom-kill:task=a,pid=,uid=0\n", &k), OOM_REC_OTHER);
	cr_assert_eq(parse("no header at all Killed process 1 (a)", &k), OOM_REC_OTHER);
	cr_assert_eq(parse("", &k), OOM_REC_OTHER);
	cr_assert_eq(parse("6,1,2,-;text\n SUBSYSTEM=Killed process 5 (x)\n", &k), OOM_REC_OTHER,
		     "only the record's first line is its text");
	cr_assert_eq(parse("12,1,2,-;Killed process 5 (x) total-vm:1kB\n", &k), OOM_REC_OTHER,
		     "written by a process (facility user), not the kernel");
	cr_assert_eq(parse("6,1,2,-;oom-kill:task=a,pid=12x,uid=0\n", &k), OOM_REC_OTHER);
	cr_assert_eq(parse("6,1,2,-;Killed process 99999999999999999999 (x) total-vm:1kB\n", &k), OOM_REC_OTHER);
}

LEAK_TEST(oom, counter_is_the_oom_kill_line)
{
	long long n = -1;

	cr_assert_eq(oom_parse_counter("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", &n), 0);
	cr_assert_eq(n, 3, "cgroup v1 memory.oom_control");
	cr_assert_eq(oom_parse_counter("low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\noom_group_kill 0\n", &n), 0);
	cr_assert_eq(n, 2, "cgroup v2 memory.events");
	cr_assert_eq(oom_parse_counter("oom_kill_disable 0\n", &n), -ENOENT);
	cr_assert_eq(oom_parse_counter("", &n), -ENOENT);
}

LEAK_TEST(oom, memory_cgroup_of_v1_then_v2)
{
	char path[OOM_PATH_MAX];

	cr_assert_eq(oom_cgroup("9:name=systemd:/\n4:memory:/process_api/x\n0::/\n", path, sizeof(path)), 1);
	cr_assert_str_eq(path, "/process_api/x");
	cr_assert_eq(oom_cgroup("3:cpu,memory:/j\n", path, sizeof(path)), 1);
	cr_assert_str_eq(path, "/j");
	cr_assert_eq(oom_cgroup("1:name=systemd:/u\n0::/user.slice/s.scope\n", path, sizeof(path)), 2);
	cr_assert_str_eq(path, "/user.slice/s.scope");
	cr_assert_eq(oom_cgroup("3:memoryx:/j\n", path, sizeof(path)), -ENOENT);
	cr_assert_eq(oom_cgroup("", path, sizeof(path)), -ENOENT);
}

LEAK_TEST(oom, within_is_the_cgroup_or_below)
{
	cr_assert(oom_memcg_within("/a/b", "/a/b"));
	cr_assert(oom_memcg_within("/a/b/c", "/a/b"));
	cr_assert(!oom_memcg_within("/a/bc", "/a/b"));
	cr_assert(!oom_memcg_within("/a", "/a/b"));
	cr_assert(oom_memcg_within("/x", "/"));
	cr_assert(!oom_memcg_within("", "/a"), "a kill whose cgroup is not said");
	cr_assert(!oom_memcg_within("/a", ""), "our cgroup unknown");
}

LEAK_TEST(oom, an_unsent_sigkill_is_looked_into)
{
	enum sup_worker_fate fate[2];
	int code[2];
	struct sup s;

	sup_init(&s, 2, fate, code);
	cr_assert(sup_unsent_kill(&s, 137));
	cr_assert(!sup_unsent_kill(&s, 143), "SIGTERM");
	cr_assert(!sup_unsent_kill(&s, 1));
	sup_step(&s, &(struct sup_event){ .type = SUP_EV_SIGNAL, .sig = SIGINT });
	sup_step(&s, &(struct sup_event){ .type = SUP_EV_SIGNAL, .sig = SIGINT });
	cr_assert(!sup_unsent_kill(&s, 137), "slotrun sent SIGKILL itself");
}

/* Rank 1 is the root cause, killed by the OOM killer; rank 0 was killed
 * too while the job was being stopped; rank 2 was stopped. */
static void oom_job(struct sum_worker w[3], struct sum_job *j)
{
	w[0] = (struct sum_worker){ .rank = 0, .local_rank = 0, .pid = 100, .code = 137, .fate = SUP_W_STOPPED,
				    .note = "the OOM killer killed pid 103 (python3) in slotrun's cgroup", .oom = true };
	w[1] = (struct sum_worker){ .rank = 1, .local_rank = 1, .pid = 101, .code = 137, .fate = SUP_W_EXITED,
				    .note = "killed by the OOM killer (pid 104, python3)", .oom = true };
	w[2] = (struct sum_worker){ .rank = 2, .local_rank = 2, .pid = 102, .code = 143, .fate = SUP_W_STOPPED };
	*j = (struct sum_job){ .nworkers = 3, .w = w, .root = 1, .exit_code = 137, .attempts = 1 };
}

LEAK_TEST(oom, the_summary_says_it_on_the_rank_lines)
{
	struct sum_worker w[3];
	struct sum_job j;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	oom_job(w, &j);
	summary_print(f, &j);
	fclose(f);
	cr_assert(strstr(text, "slotrun: job failed: rank 1 (node 0, local rank 1, pid 101) exit 137 (SIGKILL) at "),
		  "%s", text);
	cr_assert(strstr(text, " after start: killed by the OOM killer (pid 104, python3)\n"), "%s", text);
	cr_assert(strstr(text, "slotrun:   rank 0 (local rank 0, pid 100): exit 137 (SIGKILL), died while slotrun "
			 "was stopping the job: the OOM killer killed pid 103 (python3) in slotrun's cgroup\n"), "%s", text);
	cr_assert(strstr(text, "slotrun:   rank 2 (local rank 2, pid 102): exit 143 (SIGTERM), stopped by slotrun\n"),
		  "%s", text);
	free(text);
}

LEAK_TEST(oom, the_error_file_says_oom_killed)
{
	char path[] = "/tmp/slotrun-oom-XXXXXX";
	struct sum_worker w[3];
	struct sum_job j;
	json_error_t e;
	json_t *root, *ranks;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	oom_job(w, &j);
	cr_assert_eq(summary_write_json(path, &j), 0);
	root = json_load_file(path, 0, &e);
	unlink(path);
	cr_assert_not_null(root);
	cr_assert(json_is_true(json_object_get(json_object_get(root, "root_cause"), "oom_killed")));
	ranks = json_object_get(root, "ranks");
	cr_assert(json_is_true(json_object_get(json_array_get(ranks, 0), "oom_killed")));
	cr_assert(json_is_true(json_object_get(json_array_get(ranks, 1), "oom_killed")));
	cr_assert_null(json_object_get(json_array_get(ranks, 2), "oom_killed"), "absent, not false");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(ranks, 1), "note")),
			 "killed by the OOM killer (pid 104, python3)");
	json_decref(root);
}

static void write_counter(const char *path, int n)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fprintf(f, "oom_kill_disable 0\nunder_oom 0\noom_kill %d\n", n);
	fclose(f);
}

static void add_kill(struct oom *o, pid_t pid, const char *name, const char *memcg)
{
	struct oom_kill *k = &o->kills[o->nkills++];

	*k = (struct oom_kill){ .pid = pid };
	snprintf(k->name, sizeof(k->name), "%s", name);
	snprintf(k->memcg, sizeof(k->memcg), "%s", memcg);
}

LEAK_TEST(oom, each_kill_explains_one_death_and_only_its_own)
{
	char path[] = "/tmp/slotrun-oomctl-XXXXXX", buf[256];
	struct oom o = { 0 };
	int fd = mkstemp(path);
	pid_t worker[2] = { 10, 11 }, other[2] = { 20, 21 };

	cr_assert_geq(fd, 0);
	close(fd);
	write_counter(path, 5);
	snprintf(o.counter, sizeof(o.counter), "%s", path);
	snprintf(o.memcg, sizeof(o.memcg), "/job");
	o.counted = 5;
	cr_assert(!oom_explain(&o, worker, 2, buf, sizeof(buf)), "no kill, no count: a plain SIGKILL");

	add_kill(&o, 99, "x", "/elsewhere");
	cr_assert(!oom_explain(&o, worker, 2, buf, sizeof(buf)), "a kill in another cgroup is not ours");

	add_kill(&o, 11, "python3", "/job");
	write_counter(path, 6);
	cr_assert(oom_explain(&o, worker, 2, buf, sizeof(buf)));
	cr_assert_str_eq(buf, "killed by the OOM killer (pid 11, python3)");
	cr_assert(!oom_explain(&o, worker, 2, buf, sizeof(buf)), "that kill and its count are spent");

	add_kill(&o, 10, "", "");
	write_counter(path, 7);
	cr_assert(oom_explain(&o, worker, 1, buf, sizeof(buf)));
	cr_assert_str_eq(buf, "killed by the OOM killer", "the worker's own pid");

	add_kill(&o, 30, "tor\001ch", "/job/sub");
	write_counter(path, 8);
	cr_assert(oom_explain(&o, other, 2, buf, sizeof(buf)));
	cr_assert_str_eq(buf, "the OOM killer killed pid 30 (tor\\x01ch) in slotrun's cgroup", "a name is escaped");
	cr_assert(!oom_explain(&o, other, 2, buf, sizeof(buf)));

	write_counter(path, 9);
	cr_assert(oom_explain(&o, other, 2, buf, sizeof(buf)), "the counter alone");
	cr_assert_str_eq(buf, "the OOM killer killed a process in slotrun's cgroup");
	cr_assert(!oom_explain(&o, worker, 2, buf, sizeof(buf)), "one count, one death");
	unlink(path);
	oom_close(&o);
}
