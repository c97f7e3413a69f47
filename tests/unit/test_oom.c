// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "leak_check.h"
#include "oom.h"
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
