// SPDX-License-Identifier: MIT
#include "status_client.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "sock.h"
#include "status_row.h"
#include "status_sock.h"
#include "status_table.h"

const char status_usage[] =
"Usage: slotrun status [--json] [--watch[=SECONDS]] [--stacks] [JOB]\n"
"\n"
"Shows a running job of yours on this node: one row per rank (node, rank, pid,\n"
"state, CPU %, memory, threads, time since its last line and that line,\n"
"restarts, last exit code) and the ranks that lag the others, with why.\n"
"JOB is slotrun's pid or the job's id; it is needed only when several of your\n"
"jobs run here.\n"
"\n"
"  --json               the reply as JSON, one object per line\n"
"  --watch[=SECONDS]    show it again every SECONDS (2) until the job ends\n"
"  --stacks             also every rank's stacks\n"
"  -h, --help           this help\n"
"\n"
"Exit status: 0 shown; 1 no such job here, or it did not answer; 2 usage, or\n"
"several jobs and none named.\n";

struct job {
	char path[PATH_MAX];
	pid_t pid;
	struct status_job head;
};

struct args {
	bool json, stacks, watch;
	double every;
	const char *job;
};

__attribute__((format(printf, 2, 3))) static int fail(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "slotrun: status: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

/* One request and its reply on the socket at path: 0 with *reply (a JSON
 * object), or -errno (-ECONNREFUSED: stale, -EPROTO: not JSON). */
static int ask(const char *path, const char *request, double seconds, json_t **reply)
{
	int64_t deadline = sock_deadline_in(seconds);
	int fd = status_sock_connect(path), e;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	json_error_t jerr;

	*reply = NULL;
	if (fd < 0)
		return fd;
	if ((e = sock_send_all(fd, request, strlen(request), deadline)) < 0)
		goto out;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (len == cap) {
			char *m = cap < STATUS_REPLY_MAX ? realloc(buf, cap = cap ? cap * 2 : 65536) : NULL;

			if (!m) {
				e = -EFBIG;
				goto out;
			}
			buf = m;
		}
		n = recv(fd, buf + len, cap - len, MSG_DONTWAIT);
		if (n > 0) {
			len += (size_t)n;
			if (memchr(buf + len - (size_t)n, '\n', (size_t)n))
				break;
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			e = -errno;
			goto out;
		}
		if ((e = poll(&p, 1, sock_poll_ms(deadline))) == 0) {
			e = -ETIMEDOUT;
			goto out;
		}
		if (e < 0 && errno != EINTR) {
			e = -errno;
			goto out;
		}
	}
	*reply = json_loadb(buf ? buf : "", len, 0, &jerr);
	e = json_is_object(*reply) ? 0 : -EPROTO;
	if (e < 0) {
		json_decref(*reply);
		*reply = NULL;
	}
out:
	free(buf);
	close(fd);
	return e;
}

/* Every live job in the folders; stale sockets are removed first.
 * Returns how many, with *jobs malloc'd. */
static int list_jobs(char (*dirs)[PATH_MAX], int ndirs, struct job **jobs)
{
	int n = 0, cap = 0;

	*jobs = NULL;
	for (int k = 0; k < ndirs; k++) {
		DIR *d;
		struct dirent *de;

		(void)status_sock_sweep(dirs[k], 0, false); /* a killed slotrun's socket */
		d = opendir(dirs[k]);

		while (d && (de = readdir(d))) {
			pid_t pid = status_sock_pid(de->d_name);
			struct job j = { .pid = pid };
			json_t *reply;
			int e;

			if (pid <= 0)
				continue;
			snprintf(j.path, sizeof(j.path), "%s/%s", dirs[k], de->d_name);
			e = ask(j.path, "{\"v\":1,\"want\":\"hello\"}\n", STATUS_CLIENT_DEADLINE, &reply);
			if (e == -ECONNREFUSED || e == -ENOENT) /* ended meanwhile */
				continue;
			if (e < 0 || status_job_from_json(json_object_get(reply, "job"), &j.head) < 0) {
				/* it answered with an error, or not in time: listed by its pid */
				snprintf(j.head.id, sizeof(j.head.id), "%d", (int)pid);
				snprintf(j.head.state, sizeof(j.head.state), "%s", e < 0 ? "no answer" : "?");
			}
			json_decref(reply);
			if (n == cap) {
				struct job *m = realloc(*jobs, (size_t)(cap = cap ? cap * 2 : 4) * sizeof(*m));

				if (!m)
					break;
				*jobs = m;
			}
			(*jobs)[n++] = j;
		}
		if (d)
			closedir(d);
	}
	return n;
}

static void show_list(const struct job *jobs, int n)
{
	char up[32];

	printf("%-8s %-16s %-5s %-10s %-8s %s\n", "PID", "JOB", "NODE", "STATE", "UP", "COMMAND");
	for (int i = 0; i < n; i++)
		printf("%-8d %-16s %-5d %-10s %-8s %s\n", (int)jobs[i].pid, jobs[i].head.id, jobs[i].head.node,
		       jobs[i].head.state, status_table_duration(jobs[i].head.uptime_s, up, sizeof(up)),
		       jobs[i].head.command);
}

/* The job the user means, or -1 with the reason said (*code set). */
static int choose(const struct job *jobs, int n, const char *want, const char *foreign, int *code)
{
	int found = -1, matches = 0;

	for (int i = 0; i < n; i++) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", (int)jobs[i].pid);
		if (!want || strcmp(want, pid) == 0 || strcmp(want, jobs[i].head.id) == 0) {
			found = found < 0 ? i : found;
			matches++;
		}
	}
	if (matches == 1)
		return found;
	if (matches > 1) {
		show_list(jobs, n);
		*code = fail(2, "%d jobs of yours%s run on this node: name one by its PID, e.g. slotrun status %d",
			     matches, want ? " match" : "", (int)jobs[found].pid);
		return -1;
	}
	if (n == 0 && foreign[0])
		*code = fail(1, "%s belongs to another user: only the user who started a job may see its status",
			     foreign);
	else if (n == 0)
		*code = fail(1, "no slotrun job of yours runs on this node");
	else {
		show_list(jobs, n);
		*code = fail(1, "no job of yours on this node is '%s': give a PID or JOB from the list", want);
	}
	return -1;
}

static int width(void)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");

	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return cols && atoi(cols) > 0 ? atoi(cols) : 0;
}

/* Shows one reply.  Returns 0, or 1 with the reason said. */
static int show(const json_t *reply, const struct args *a)
{
	const char *err = json_string_value(json_object_get(reply, "error"));
	struct status_row *rows = NULL;
	struct status_job job;
	char *text;
	int n = 0;

	if (err)
		return fail(1, "%s", err);
	if (a->json) {
		if (!(text = json_dumps(reply, JSON_COMPACT)))
			return fail(1, "out of memory");
		puts(text);
		free(text);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (status_job_from_json(json_object_get(reply, "job"), &job) < 0 ||
	    status_rows_from_json(json_object_get(reply, "rows"), &rows, &n) < 0)
		return fail(1, "the job's reply is not what this slotrun reads");
	text = status_table(&job, rows, n, json_object_get(reply, "stacks"), width());
	free(rows);
	if (!text)
		return fail(1, "out of memory");
	fputs(text, stdout);
	free(text);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int parse(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "watch", optional_argument, NULL, 'w' },
		{ "stacks", no_argument, NULL, 's' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c;

	*a = (struct args){ .every = STATUS_WATCH_DEFAULT };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'j': a->json = true; break;
		case 's': a->stacks = true; break;
		case 'w':
			a->watch = true;
			if (optarg) {
				a->every = strtod(optarg, &end);
				if (!*optarg || *end || !isfinite(a->every) || a->every < 0.1 || a->every > 86400)
					return fail(2, "--watch=%s: expected seconds, from 0.1 to 86400", optarg);
			}
			break;
		case 'h':
			fputs(status_usage, stdout);
			return 0;
		default:
			fprintf(stderr, "slotrun: status: unknown option '%s'\nTry 'slotrun status --help'.\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (argc - optind > 1)
		return fail(2, "one JOB at most, got '%s' and '%s'", argv[optind], argv[optind + 1]);
	a->job = optind < argc ? argv[optind] : NULL;
	return -1;
}

static void pause_for(double seconds)
{
	struct timespec ts = clock_ts(seconds);

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int status_main(int argc, char **argv)
{
	char dirs[1][PATH_MAX], foreign[PATH_MAX], request[64];
	struct job *jobs;
	struct args a;
	int code = parse(argc, argv, &a), ndirs, n, k, e;
	bool tty = isatty(STDOUT_FILENO);
	json_t *reply;

	if (code >= 0)
		return code;
	ndirs = status_dir_find(dirs[0], sizeof(dirs[0]), foreign, sizeof(foreign));
	n = list_jobs(dirs, ndirs, &jobs);
	if ((k = choose(jobs, n, a.job, foreign, &code)) < 0) {
		free(jobs);
		return code;
	}
	snprintf(request, sizeof(request), "{\"v\":1,\"want\":\"status\",\"stacks\":%s}\n", a.stacks ? "true" : "false");
	for (int round = 0;; round++) {
		e = ask(jobs[k].path, request, a.stacks ? STATUS_CLIENT_STACKS_DEADLINE : STATUS_CLIENT_DEADLINE, &reply);
		if (e < 0 && round > 0 && (e == -ECONNREFUSED || e == -ENOENT || e == -EPROTO)) {
			printf("slotrun: status: job %s ended\n", jobs[k].head.id);
			code = 0;
			break;
		}
		if (e < 0) {
			code = fail(1, "job %s did not answer: %s", jobs[k].head.id,
				    e == -EPROTO ? "its reply was cut short" : strerror(-e));
			break;
		}
		if (a.watch && round > 0 && !a.json)
			fputs(tty ? "\033[H\033[2J" : "\n", stdout);
		else if (a.watch && round == 0 && tty && !a.json)
			fputs("\033[H\033[2J", stdout);
		code = show(reply, &a);
		json_decref(reply);
		if (code || !a.watch)
			break;
		pause_for(a.every);
	}
	free(jobs);
	return code;
}
