// SPDX-License-Identifier: MIT
#include "oom.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "quote.h"

/* At most this many records of the kernel log are read per death: the
 * log is a ring of bounded size, and a look must never hold the loop. */
#define KMSG_READS_MAX 8192
#define KMSG_RECORD_MAX 8192

static void copy_field(char *dst, size_t len, const char *s, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* A pid: the digits at p, before end.  Returns 0 with *pid and *after
 * set, or -EINVAL. */
static int parse_pid(const char *p, const char *end, pid_t *pid, const char **after)
{
	char num[16];
	size_t n = 0;
	long v;

	while (p + n < end && n < sizeof(num) - 1 && p[n] >= '0' && p[n] <= '9')
		n++;
	copy_field(num, sizeof(num), p, n);
	if (!n || io_parse_long(num, 1, 0x7fffffff, &v) < 0)
		return -EINVAL;
	*pid = (pid_t)v;
	*after = p + n;
	return 0;
}

/* "Killed process PID (NAME) total-vm:..." anywhere in the line. */
static bool parse_killed(const char *text, size_t n, struct oom_kill *k)
{
	static const char key[] = "Killed process ";
	const char *p = memmem(text, n, key, sizeof(key) - 1), *end = text + n, *name, *close, *num_end;
	pid_t pid;

	if (!p)
		return false;
	p += sizeof(key) - 1;
	if (parse_pid(p, end, &pid, &num_end) < 0 || num_end + 2 > end || num_end[0] != ' ' ||
	    num_end[1] != '(')
		return false;
	name = num_end + 2;
	/* a name may hold ')': the one before " total-vm:" ends it */
	close = memmem(name, (size_t)(end - name), ") total-vm:", 11);
	if (!close)
		close = memrchr(name, ')', (size_t)(end - name));
	if (!close)
		return false;
	k->pid = pid;
	copy_field(k->name, sizeof(k->name), name, (size_t)(close - name));
	return true;
}

/* The value of ",KEY=" in the line, up to the ",NEXT=" that follows it
 * (a path may hold commas; the kernel's field order is fixed). */
static bool field(const char *text, size_t n, const char *key, const char *next, const char **v, size_t *vn)
{
	const char *p = memmem(text, n, key, strlen(key)), *q;

	if (!p)
		return false;
	p += strlen(key);
	q = memmem(p, (size_t)(text + n - p), next, strlen(next));
	if (!q)
		q = memchr(p, ',', (size_t)(text + n - p));
	*v = p;
	*vn = q ? (size_t)(q - p) : (size_t)(text + n - p);
	return true;
}

/* "oom-kill:constraint=...,task_memcg=PATH,task=NAME,pid=PID,uid=UID" */
static bool parse_summary(const char *text, size_t n, struct oom_kill *k)
{
	const char *v, *after;
	size_t vn;

	if (n < 9 || memcmp(text, "oom-kill:", 9) != 0)
		return false;
	if (!field(text, n, ",pid=", ",uid=", &v, &vn) || parse_pid(v, v + vn, &k->pid, &after) < 0 ||
	    after != v + vn)
		return false;
	if (field(text, n, ",task_memcg=", ",task=", &v, &vn))
		copy_field(k->memcg, sizeof(k->memcg), v, vn);
	if (field(text, n, ",task=", ",pid=", &v, &vn))
		copy_field(k->name, sizeof(k->name), v, vn);
	return true;
}

enum oom_record oom_parse_record(const char *rec, size_t n, struct oom_kill *k)
{
	const char *semi = memchr(rec, ';', n), *text, *nl;
	size_t tn;

	*k = (struct oom_kill){ 0 };
	/* the kernel's own: facility 0, so the prefix (facility * 8 + level)
	 * is one digit; what a process writes to /dev/kmsg is "user", above */
	if (!semi || n < 2 || rec[0] < '0' || rec[0] > '7' || rec[1] != ',')
		return OOM_REC_OTHER;
	text = semi + 1;
	nl = memchr(text, '\n', (size_t)(rec + n - text));
	tn = nl ? (size_t)(nl - text) : (size_t)(rec + n - text);
	if (parse_summary(text, tn, k))
		return OOM_REC_SUMMARY;
	if (parse_killed(text, tn, k))
		return OOM_REC_KILLED;
	*k = (struct oom_kill){ 0 };
	return OOM_REC_OTHER;
}

int oom_parse_counter(const char *text, long long *count)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, "oom_kill ", 9) == 0) {
			char *end;
			long long v = strtoll(p + 9, &end, 10);

			if (end == p + 9 || v < 0)
				return -ENOENT;
			*count = v;
			return 0;
		}
	return -ENOENT;
}

/* Whether a /proc/self/cgroup line's controller list ("cpu,cpuacct")
 * holds "memory". */
static bool has_memory(const char *list, size_t n)
{
	const char *p = list, *end = list + n;

	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t len = c ? (size_t)(c - p) : (size_t)(end - p);

		if (len == 6 && memcmp(p, "memory", 6) == 0)
			return true;
		p += len + 1;
	}
	return false;
}

int oom_cgroup(const char *proc_cgroup, char *memcg, size_t mlen)
{
	const char *v2 = NULL, *p = proc_cgroup;

	/* lines "ID:CONTROLLERS:PATH"; cgroup v2's is "0::PATH" */
	while (p && *p) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
		const char *c1 = memchr(p, ':', (size_t)(end - p));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;

		if (c2 && has_memory(c1 + 1, (size_t)(c2 - c1 - 1))) {
			copy_field(memcg, mlen, c2 + 1, (size_t)(end - c2 - 1));
			return 1;
		}
		if (c2 && c2 == c1 + 1 && c1 - p == 1 && *p == '0')
			v2 = c2 + 1;
		p = nl ? nl + 1 : NULL;
	}
	if (!v2)
		return -ENOENT;
	copy_field(memcg, mlen, v2, strcspn(v2, "\n"));
	return 2;
}

bool oom_memcg_within(const char *memcg, const char *path)
{
	size_t n = strlen(path);

	if (!*memcg || !*path)
		return false;
	if (strcmp(path, "/") == 0)
		return *memcg == '/';
	return strncmp(memcg, path, n) == 0 && (memcg[n] == '\0' || memcg[n] == '/');
}

void oom_close(struct oom *o)
{
	if (o->have_kmsg)
		close(o->kmsg);
	o->have_kmsg = false;
}

static int read_counter(const struct oom *o, long long *count)
{
	char *text;
	int r;

	if (!*o->counter || !(text = io_read_file(o->counter, 4096)))
		return -ENOENT;
	r = oom_parse_counter(text, count);
	free(text);
	return r;
}

/* The memory cgroup's counter file: cgroup v1's memory controller, or
 * cgroup v2's where the unified hierarchy is mounted (alone, or beside
 * v1's controllers). */
static void find_counter(struct oom *o)
{
	char *self = io_read_file("/proc/self/cgroup", 1 << 16);
	int kind = self ? oom_cgroup(self, o->memcg, sizeof(o->memcg)) : -ENOENT;
	const char *const v2_roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };

	free(self);
	*o->counter = '\0';
	if (kind == 1) {
		snprintf(o->counter, sizeof(o->counter), "/sys/fs/cgroup/memory%s/memory.oom_control",
			 strcmp(o->memcg, "/") == 0 ? "" : o->memcg);
	} else if (kind == 2) {
		for (size_t i = 0; i < sizeof(v2_roots) / sizeof(v2_roots[0]); i++) {
			snprintf(o->counter, sizeof(o->counter), "%s%s/memory.events", v2_roots[i],
				 strcmp(o->memcg, "/") == 0 ? "" : o->memcg);
			if (access(o->counter, R_OK) == 0)
				return;
		}
		*o->counter = '\0';
	} else {
		*o->memcg = '\0';
	}
}

void oom_start(struct oom *o)
{
	oom_close(o);
	o->nkills = 0;
	o->kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	o->have_kmsg = o->kmsg >= 0;
	if (o->have_kmsg && lseek(o->kmsg, 0, SEEK_END) < 0)
		oom_close(o);
	find_counter(o);
	if (read_counter(o, &o->counted) < 0)
		*o->counter = '\0';
}

/* Keeps a kill: the two records of one kill merge; the oldest kill goes
 * when there is no room. */
static void keep(struct oom *o, const struct oom_kill *k)
{
	struct oom_kill *to = NULL;

	for (int i = 0; i < o->nkills && !to; i++)
		if (o->kills[i].pid == k->pid)
			to = &o->kills[i];
	if (!to) {
		if (o->nkills == OOM_KILLS_MAX)
			memmove(o->kills, o->kills + 1, sizeof(o->kills[0]) * (size_t)--o->nkills);
		to = &o->kills[o->nkills++];
		*to = (struct oom_kill){ .pid = k->pid };
	}
	if (*k->name)
		snprintf(to->name, sizeof(to->name), "%s", k->name);
	if (*k->memcg)
		snprintf(to->memcg, sizeof(to->memcg), "%s", k->memcg);
}

/* What the kernel log has now.  EPIPE: records were overwritten before
 * we read them (the read goes on from the oldest left); EAGAIN: no more. */
static void read_log(struct oom *o)
{
	static char rec[KMSG_RECORD_MAX];
	struct oom_kill k;

	for (int i = 0; o->have_kmsg && i < KMSG_READS_MAX; i++) {
		ssize_t n = read(o->kmsg, rec, sizeof(rec));

		if (n < 0 && (errno == EPIPE || errno == EINTR))
			continue;
		if (n <= 0)
			return;
		if (oom_parse_record(rec, (size_t)n, &k) != OOM_REC_OTHER)
			keep(o, &k);
	}
}

/* Kill i explains a death: it goes, and so does its count in our
 * cgroup's counter (where it was counted: a kill in a cgroup of ours). */
static void spend(struct oom *o, int i)
{
	if (!*o->kills[i].memcg || oom_memcg_within(o->kills[i].memcg, o->memcg))
		o->counted++;
	memmove(o->kills + i, o->kills + i + 1, sizeof(o->kills[0]) * (size_t)(o->nkills - i - 1));
	o->nkills--;
}

bool oom_explain(struct oom *o, const pid_t *pids, int npids, char *buf, size_t len)
{
	char shown[QUOTE_SIZE(OOM_NAME_MAX)];
	long long count;

	read_log(o);
	for (int k = 0; k < npids; k++)
		for (int i = 0; i < o->nkills; i++) {
			if (o->kills[i].pid != pids[k])
				continue;
			quote_ctl(shown, sizeof(shown), o->kills[i].name, sizeof(o->kills[i].name));
			if (k == 0)
				snprintf(buf, len, "killed by the OOM killer");
			else
				snprintf(buf, len, "killed by the OOM killer (pid %d%s%s)", (int)pids[k],
					 *shown ? ", " : "", shown);
			spend(o, i);
			return true;
		}
	for (int i = 0; i < o->nkills; i++)
		if (oom_memcg_within(o->kills[i].memcg, o->memcg)) {
			quote_ctl(shown, sizeof(shown), o->kills[i].name, sizeof(o->kills[i].name));
			snprintf(buf, len, "the OOM killer killed pid %d (%s) in slotrun's cgroup",
				 (int)o->kills[i].pid, shown);
			spend(o, i);
			return true;
		}
	if (read_counter(o, &count) == 0 && count > o->counted) {
		o->counted++;
		snprintf(buf, len, "the OOM killer killed a process in slotrun's cgroup");
		return true;
	}
	return false;
}
