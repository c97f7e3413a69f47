// SPDX-License-Identifier: MIT
/* Whether a worker that died of a SIGKILL slotrun did not send was killed
 * by the kernel's OOM killer, as the kernel tells it.
 *
 * Two witnesses, best first:
 * - the kernel log (/dev/kmsg, readable as root): "Killed process PID
 *   (NAME)" and "oom-kill:...,task_memcg=PATH,task=NAME,pid=PID,...", read
 *   from the attempt's start, non-blocking and bounded;
 * - the oom_kill counter of slotrun's memory cgroup, which the workers
 *   inherit (cgroup v1 memory.oom_control, cgroup v2 memory.events), read
 *   at the attempt's start and again at the death.
 * A kill of the worker's own pid, or of the command its wrap_rank said it
 * runs, is its death for certain.  Otherwise the kernel only says that it
 * killed some process of slotrun's cgroup (one the command started, or
 * any other process of the cgroup): that is what is said then, in those
 * words.  Neither witness (no root, no memory controller): nothing is
 * said, and the death stays a plain SIGKILL. */
#ifndef SLOTRUN_OOM_H
#define SLOTRUN_OOM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define OOM_NAME_MAX 64
#define OOM_PATH_MAX 1024
#define OOM_KILLS_MAX 16

/* One kill in the kernel log. */
struct oom_kill {
	pid_t pid;
	char name[OOM_NAME_MAX];     /* the process's name, "" when not said */
	char memcg[OOM_PATH_MAX];    /* its memory cgroup, "" when not said */
};

/* All zeros is a valid start: nothing open, nothing known. */
struct oom {
	bool have_kmsg;
	int kmsg;                    /* with have_kmsg: /dev/kmsg from the attempt's start */
	char counter[OOM_PATH_MAX];  /* the file with our cgroup's oom_kill, "" if none */
	char memcg[OOM_PATH_MAX];    /* our memory cgroup as the kernel names it, "" if unknown */
	long long counted;           /* oom_kill at the start, plus the kills explained since */
	struct oom_kill kills[OOM_KILLS_MAX]; /* kills read from the log, not yet explained */
	int nkills;
};

/* At an attempt's start, before its workers: opens the kernel log at its
 * end and reads the cgroup's counter.  What cannot be had is left out,
 * silently: it only leaves deaths unexplained. */
void oom_start(struct oom *o);

/* A worker died of a SIGKILL slotrun did not send: pids[0] is the worker,
 * the others what it is known to have run (wrap_rank's command).  Returns
 * true with buf saying why ("killed by the OOM killer", "... (pid P,
 * NAME)" for one of the others, or that the OOM killer killed a process
 * in slotrun's cgroup) when the kernel says so; that kill is then spent,
 * so one kill never explains two deaths.  Reads what the kernel log has
 * (never blocks) and the counter. */
bool oom_explain(struct oom *o, const pid_t *pids, int npids, char *buf, size_t len);

/* Closes the kernel log; the struct may be started again. */
void oom_close(struct oom *o);

/* ---- Pure parts, for the tests ---- */

enum oom_record { OOM_REC_OTHER, OOM_REC_KILLED, OOM_REC_SUMMARY };

/* One /dev/kmsg record ("PRIO,SEQ,TIME,FLAGS;TEXT\n..."), n bytes:
 * OOM_REC_KILLED for "... Killed process PID (NAME) ..." (pid and name
 * set), OOM_REC_SUMMARY for "oom-kill:...task_memcg=P,task=N,pid=PID,..."
 * (pid, name and memcg set), else OOM_REC_OTHER, as is any record not
 * the kernel's own (a process may write to /dev/kmsg). */
enum oom_record oom_parse_record(const char *rec, size_t n, struct oom_kill *k);

/* The "oom_kill N" line of memory.oom_control or memory.events: 0 with
 * *count set, or -ENOENT. */
int oom_parse_counter(const char *text, long long *count);

/* From /proc/self/cgroup's text, the memory cgroup's path (in memcg,
 * mlen bytes): returns 1 when cgroup v1's memory controller has it, 2
 * for cgroup v2's unified hierarchy, or -ENOENT. */
int oom_cgroup(const char *proc_cgroup, char *memcg, size_t mlen);

/* Whether a kill's memcg is path or below it. */
bool oom_memcg_within(const char *memcg, const char *path);

#endif
