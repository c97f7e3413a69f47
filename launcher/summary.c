// SPDX-License-Identifier: MIT
#include "summary.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "quote.h"
#include "status.h"

/* A worker's report message as one line of the summary. */
#define SHOWN_MESSAGE_MAX 400

static const char *sig_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

void sum_describe_code(int code, char *buf, size_t len)
{
	char sn[32];

	if (code < 0)
		snprintf(buf, len, "never reaped");
	else if (status_code_signal(code))
		snprintf(buf, len, "exit %d (%s)", code, sig_name(status_code_signal(code), sn, sizeof(sn)));
	else
		snprintf(buf, len, "exit %d", code);
}

static void fmt_time(const struct timespec *t, char *buf, size_t len, bool iso)
{
	struct tm tm;
	size_t n;

	if (iso)
		gmtime_r(&t->tv_sec, &tm);
	else
		localtime_r(&t->tv_sec, &tm);
	n = strftime(buf, len, iso ? "%Y-%m-%dT%H:%M:%S" : "%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03ld%s", t->tv_nsec / 1000000, iso ? "Z" : "");
}

/* Stopped, yet it exited with a code of its own rather than dying of the
 * signal: its own error (a checkpoint on SIGTERM that failed) is news. */
static bool failed_alone(const struct sum_worker *w)
{
	return w->fate == SUP_W_STOPPED && w->pid > 0 && w->code > 0 && !status_code_signal(w->code);
}

static const char *fate_text(const struct sum_worker *w)
{
	switch (w->fate) {
	case SUP_W_RUNNING:
		return "still running";
	case SUP_W_HUNG:
		return "killed by slotrun for --hang-timeout";
	case SUP_W_EXITED:
		return "exited on its own";
	case SUP_W_STOPPED:
		if (w->oom)
			return "died while slotrun was stopping the job";
		if (w->code == 0)
			return "finished while slotrun was stopping the job";
		return failed_alone(w) ? "failed while slotrun was stopping the job" : "stopped by slotrun";
	}
	return "?";
}

static void print_tail_lines(FILE *f, const char *indent, int rank, char **lines, int n)
{
	fprintf(f, "slotrun: %slast %d line%s of rank %d's stderr:\n", indent, n, n == 1 ? "" : "s", rank);
	for (int i = 0; i < n; i++)
		fprintf(f, "slotrun: %s| %s\n", indent, lines[i]);
}

/* Frees what out_tail_lines gave. */
static void free_lines(char **lines, int n)
{
	for (int i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
}

/* The cause's tail, '\n'-separated, as lines (pointers into copy). */
static int cause_lines(const struct plane_cause *c, char *copy, size_t len, char **lines, int max)
{
	int n = 0;
	char *save = NULL;

	snprintf(copy, len, "%s", c->tail);
	for (char *t = strtok_r(copy, "\n", &save); t && n < max; t = strtok_r(NULL, "\n", &save))
		lines[n++] = t;
	return n;
}

/* A rank named at fault by the one that failed: the culprit first, then
 * the rank that named it, with its status. */
static void print_blamed_cause(FILE *f, const struct plane_cause *c, const char *when)
{
	char msg[QUOTE_SIZE(SHOWN_MESSAGE_MAX)], desc[64];

	if (c->culprit_node >= 0)
		fprintf(f, "slotrun: job failed: rank %d on node %d (%s), named by rank %d on node %d (%s)%s%s\n",
			c->culprit, c->culprit_node, c->culprit_host, c->rank, c->node, c->host,
			c->message[0] ? ": " : "", quote_ctl(msg, sizeof(msg), c->message, SHOWN_MESSAGE_MAX));
	else
		fprintf(f, "slotrun: job failed: rank %d, named by rank %d on node %d (%s)%s%s\n", c->culprit,
			c->rank, c->node, c->host, c->message[0] ? ": " : "",
			quote_ctl(msg, sizeof(msg), c->message, SHOWN_MESSAGE_MAX));
	sum_describe_code(c->code, desc, sizeof(desc));
	fprintf(f, "slotrun: rank %d on node %d (%s) named it: %s at %s, %.3f s after its node's start%s%s\n",
		c->rank, c->node, c->host, desc, when, (double)c->after_ms / 1000, c->text[0] ? ": " : "",
		c->text);
}

static void print_job_cause(FILE *f, const struct plane_cause *c)
{
	char line[PLANE_TEXT_MAX + 512], when[32], copy[PLANE_TAIL_MAX], *lines[OUT_TAIL_LINES];
	char msg[QUOTE_SIZE(SHOWN_MESSAGE_MAX)];
	struct timespec ts = { c->when_ms / 1000, (c->when_ms % 1000) * 1000000 };
	int n;

	plane_cause_line(c, line, sizeof(line));
	switch (c->kind) {
	case PLANE_CAUSE_RANK:
		fmt_time(&ts, when, sizeof(when), false);
		if (c->blamed) {
			print_blamed_cause(f, c, when);
		} else {
			const char *why = c->text[0] ? c->text : c->message;

			fprintf(f, "slotrun: job failed: %s at %s, %.3f s after its node's start%s%s\n", line,
				when, (double)c->after_ms / 1000, why[0] ? ": " : "",
				quote_ctl(msg, sizeof(msg), why, SHOWN_MESSAGE_MAX));
		}
		n = cause_lines(c, copy, sizeof(copy), lines, OUT_TAIL_LINES);
		if (n > 0)
			print_tail_lines(f, "", c->rank, lines, n);
		else
			fprintf(f, "slotrun: rank %d wrote nothing to stderr\n", c->rank);
		return;
	case PLANE_CAUSE_SIGNAL:
		fprintf(f, "slotrun: job stopped: %s\n", line);
		return;
	case PLANE_CAUSE_LOST:
		fprintf(f, "slotrun: job failed: %s\n", line);
		return;
	default:
		return;
	}
}

/* Whether the last attempt ran: stopped before it started here, it ran
 * all the same when the job's cause is a rank of it on another node. */
static bool last_ran(const struct sum_job *j)
{
	return !j->between || (j->job && j->job->kind == PLANE_CAUSE_RANK);
}

/* An elastic job's rounds, one line each: nodes, ranks, since when, this
 * node's rank in it, and how it ended. */
static void print_rounds(FILE *f, const struct sum_job *j)
{
	char when[32];

	for (int k = 0; k < j->nrounds; k++) {
		const struct sum_round *r = &j->rounds[k];

		fmt_time(&r->start, when, sizeof(when), false);
		fprintf(f, "slotrun: round %d: %d node%s, %d rank%s, from %s, this node %d: %s%s\n", r->round,
			r->nnodes, r->nnodes == 1 ? "" : "s", r->ranks, r->ranks == 1 ? "" : "s", when,
			r->node_rank, r->end[0] ? "ended: " : "the last", r->end);
	}
}

static void print_history(FILE *f, const struct sum_job *j)
{
	char line[PLANE_TEXT_MAX + 512];

	if (j->nrounds) {
		print_rounds(f, j);
		return;
	}
	for (int k = 0; k < j->attempt; k++) {
		plane_cause_line(&j->history[k], line, sizeof(line));
		fprintf(f, "slotrun: attempt %d of %d failed: %s\n", k + 1, j->attempts, line);
	}
	if (j->attempt && j->exit_code == 0)
		fprintf(f, "slotrun: attempt %d of %d succeeded\n", j->attempt + 1, j->attempts);
	else if (j->attempt && last_ran(j))
		fprintf(f, "slotrun: attempt %d of %d, the last:\n", j->attempt + 1, j->attempts);
}

/* A killed worker's processes, as slotrun saw them at the grace's end, or
 * when it found the worker hung. */
static void print_diag(FILE *f, const struct sum_worker *w)
{
	const char *p = w->diag;

	if (!p)
		return;
	if (*p)
		fprintf(f, "slotrun:     %s:\n", w->diag_hung ? "when it was found hung" : "at the grace's end");
	while (*p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		fprintf(f, "slotrun:     %.*s\n", len, p);
		p += len + (nl ? 1 : 0);
	}
}

void summary_print(FILE *f, const struct sum_job *j)
{
	char desc[64], when[32], sn[32];

	print_history(f, j);
	if ((j->attempt || j->nrounds > 1) && j->exit_code == 0) {
		fflush(f);
		return;
	}
	if (j->job) {
		print_job_cause(f, j->job);
		if (j->nworkers > 0)
			fprintf(f, "slotrun: node %d's ranks:\n", j->node_rank);
	} else if (j->root >= 0) {
		const struct sum_worker *r = &j->w[j->root], *c = j->culprit;
		const char *why = r->note ? r->note : c ? NULL : r->message;
		char **lines, msg[QUOTE_SIZE(SHOWN_MESSAGE_MAX)];
		int n;

		sum_describe_code(r->code, desc, sizeof(desc));
		if (c)
			fprintf(f, "slotrun: job failed: rank %d (node %d, local rank %d), named by rank %d%s%s\n",
				c->rank, j->node_rank, c->local_rank, r->rank, r->message ? ": " : "",
				r->message ? quote_ctl(msg, sizeof(msg), r->message, SHOWN_MESSAGE_MAX) : "");
		if (r->pid <= 0) /* never started: no pid, no exit time */
			fprintf(f, "slotrun: job failed: rank %d (node %d, local rank %d) did not start: %s\n",
				r->rank, j->node_rank, r->local_rank, r->note ? r->note : "?");
		else {
			fmt_time(&r->when, when, sizeof(when), false);
			fprintf(f, "slotrun: %srank %d (node %d, local rank %d, pid %d) %s%s at %s, %.3f s after start%s%s\n",
				c ? "" : "job failed: ", r->rank, j->node_rank, r->local_rank, (int)r->pid,
				c ? "named it: " : "", desc, when, r->after_start, why ? ": " : "",
				why ? quote_ctl(msg, sizeof(msg), why, SHOWN_MESSAGE_MAX) : "");
		}
		n = r->tail ? out_tail_lines(r->tail, OUT_TAIL_LINES, &lines) : 0;
		if (n > 0)
			print_tail_lines(f, "", r->rank, lines, n);
		else if (r->tail && r->pid > 0)
			fprintf(f, "slotrun: rank %d wrote nothing to stderr\n", r->rank);
		if (r->tail)
			free_lines(lines, n);
		print_diag(f, r);
	} else if (j->stop_signal && j->between) {
		fprintf(f, "slotrun: stopped by %s before attempt %d of %d started\n",
			sig_name(j->stop_signal, sn, sizeof(sn)), j->attempt + 1, j->attempts);
	} else if (j->stop_signal) {
		fprintf(f, "slotrun: stopped by %s; workers were given the signal\n",
			sig_name(j->stop_signal, sn, sizeof(sn)));
	}
	if (!j->job && j->nworkers > (j->root >= 0 ? 1 : 0))
		fprintf(f, "slotrun: %s:\n", j->root >= 0 ? "other ranks" : "ranks");
	for (int i = 0; i < j->nworkers; i++) {
		const struct sum_worker *w = &j->w[i];

		if (i == j->root && !j->job)
			continue;
		if (w->pid <= 0) {
			fprintf(f, "slotrun:   rank %d (local rank %d): not started%s%s\n", w->rank,
				w->local_rank, w->note ? ": " : "", w->note ? w->note : "");
			continue;
		}
		sum_describe_code(w->code, desc, sizeof(desc));
		fprintf(f, "slotrun:   rank %d (local rank %d, pid %d): %s, %s%s%s\n", w->rank, w->local_rank,
			(int)w->pid, desc, fate_text(w), w->oom ? ": " : "", w->oom ? w->note : "");
		if (failed_alone(w) && w->tail) {
			char **lines;
			int n = out_tail_lines(w->tail, SUM_OTHER_TAIL_LINES, &lines);

			if (n > 0)
				print_tail_lines(f, "    ", w->rank, lines, n);
			else
				fprintf(f, "slotrun:     rank %d wrote nothing to stderr\n", w->rank);
			free_lines(lines, n);
		}
		print_diag(f, w);
	}
	fflush(f);
}

/* Lines are bytes, JSON strings are UTF-8: a line that is not valid UTF-8
 * is escaped as a tail line is (out_tail_escape), so no byte is lost. */
static json_t *line_json(const char *line)
{
	json_t *s = json_string(line);
	char *copy;

	if (s)
		return s;
	copy = out_tail_escape(line, strlen(line));
	if (!copy)
		return json_null();
	s = json_string(copy);
	free(copy);
	return s ? s : json_null();
}

/* The newest max lines of a worker's stderr, as a JSON array. */
static json_t *tail_json(const struct out_tail *t, int max)
{
	json_t *a = json_array();
	char **lines;
	int n = t ? out_tail_lines(t, max, &lines) : 0;

	for (int i = 0; i < n; i++)
		json_array_append_new(a, line_json(lines[i]));
	if (t)
		free_lines(lines, n);
	return a;
}

/* The JSON's word for a fate: a hung rank was stopped too, but for being
 * hung, which the text says as "killed by slotrun for --hang-timeout". */
static const char *fate_word(enum sup_worker_fate fate)
{
	switch (fate) {
	case SUP_W_RUNNING:
		return "running";
	case SUP_W_EXITED:
		return "exited";
	case SUP_W_HUNG:
		return "hung";
	case SUP_W_STOPPED:
		break;
	}
	return "stopped";
}

static json_t *worker_json(const struct sum_worker *w)
{
	char when[40], sn[32];
	int sig = status_code_signal(w->code);
	json_t *o;

	fmt_time(&w->when, when, sizeof(when), true);
	o = json_pack("{s:i, s:i, s:i, s:i, s:s?, s:s, s:f, s:s}", "rank", w->rank, "local_rank",
		      w->local_rank, "pid", (int)w->pid, "exit_code", w->code, "signal",
		      sig ? sig_name(sig, sn, sizeof(sn)) : NULL, "time", when, "seconds_after_start",
		      w->after_start, "fate",
		      fate_word(w->fate));
	if (o && w->note)
		json_object_set_new(o, "note", line_json(w->note));
	if (o && w->oom) /* absent otherwise, as the note is */
		json_object_set_new(o, "oom_killed", json_true());
	if (o && w->message)
		json_object_set_new(o, "message", line_json(w->message));
	if (o && w->diag)
		json_object_set_new(o, "at_kill", line_json(w->diag));
	if (o && failed_alone(w))
		json_object_set_new(o, "stderr_tail", tail_json(w->tail, SUM_OTHER_TAIL_LINES));
	return o;
}

/* A rank named at fault is the root cause; the rank that named it, as a
 * root cause of its own would read (o), is its named_by. */
static json_t *blamed_json(const struct plane_cause *c, json_t *o)
{
	json_t *b = json_pack("{s:s, s:i, s:o, s:o}", "kind", "rank", "rank", c->culprit, "node_rank",
			      c->culprit_node >= 0 ? json_integer(c->culprit_node) : json_null(), "host",
			      c->culprit_node >= 0 ? json_string(c->culprit_host) : json_null());

	if (!b)
		return o;
	if (c->message[0])
		json_object_set_new(b, "message", line_json(c->message));
	json_object_del(o, "kind");
	json_object_set_new(b, "named_by", o);
	return b;
}

static json_t *job_cause_json(const struct plane_cause *c)
{
	static const char *const kinds[] = { "none", "rank", "signal", "lost" };
	char when[40], sn[32], copy[PLANE_TAIL_MAX], *lines[OUT_TAIL_LINES];
	struct timespec ts = { c->when_ms / 1000, (c->when_ms % 1000) * 1000000 };
	json_t *o, *tail;
	int sig, n;

	if (c->kind == PLANE_CAUSE_NONE)
		return json_null();
	o = json_pack("{s:s, s:i, s:s}", "kind", kinds[c->kind], "node_rank", c->node, "host", c->host);
	if (!o)
		return json_null();
	switch (c->kind) {
	case PLANE_CAUSE_RANK:
		sig = status_code_signal(c->code);
		fmt_time(&ts, when, sizeof(when), true);
		json_object_set_new(o, "rank", json_integer(c->rank));
		json_object_set_new(o, "exit_code", json_integer(c->code));
		json_object_set_new(o, "signal", sig ? json_string(sig_name(sig, sn, sizeof(sn))) : json_null());
		json_object_set_new(o, "time", json_string(when));
		json_object_set_new(o, "seconds_after_start", json_real((double)c->after_ms / 1000));
		if (c->text[0])
			json_object_set_new(o, "note", line_json(c->text));
		if (c->message[0])
			json_object_set_new(o, "message", line_json(c->message));
		tail = json_array();
		n = cause_lines(c, copy, sizeof(copy), lines, OUT_TAIL_LINES);
		for (int i = 0; i < n; i++)
			json_array_append_new(tail, line_json(lines[i]));
		json_object_set_new(o, "stderr_tail", tail);
		if (c->blamed)
			return blamed_json(c, o);
		break;
	case PLANE_CAUSE_SIGNAL:
		json_object_set_new(o, "signal", json_string(sig_name(c->code, sn, sizeof(sn))));
		break;
	default:
		json_object_set_new(o, "reason", line_json(c->text));
		break;
	}
	return o;
}

/* The whole file or none, whatever is planted beside it (io.h). */
static int write_whole(json_t *root, const char *path)
{
	char *text = json_dumps(root, JSON_INDENT(2));
	size_t len;
	int r;

	if (!text) {
		errno = ENOMEM;
		return -ENOMEM;
	}
	len = strlen(text);
	text[len] = '\n'; /* over the NUL: the length is known */
	r = io_replace_file(path, text, len + 1, 0666);
	free(text);
	errno = -r;
	return r;
}

/* The same on one node: the culprit's place, the reporter's record (rc)
 * as its named_by. */
static json_t *culprit_json(const struct sum_job *j, json_t *rc)
{
	const struct sum_worker *c = j->culprit, *w = &j->w[j->root];
	json_t *b = json_pack("{s:i, s:i, s:i, s:i}", "rank", c->rank, "node_rank", j->node_rank,
			      "local_rank", c->local_rank, "pid", (int)c->pid);

	if (!b)
		return rc;
	if (w->message)
		json_object_set_new(b, "message", line_json(w->message));
	json_object_set_new(b, "named_by", rc);
	return b;
}

int summary_write_json(const char *path, const struct sum_job *j)
{
	json_t *root = json_object(), *ranks = json_array();
	char sn[32];
	int r = 0;

	if (j->job) {
		json_object_set_new(root, "root_cause", job_cause_json(j->job));
	} else if (j->root >= 0) {
		const struct sum_worker *w = &j->w[j->root];
		json_t *rc = worker_json(w);

		json_object_set_new(rc, "node_rank", json_integer(j->node_rank));
		json_object_set_new(rc, "stderr_tail", tail_json(w->tail, OUT_TAIL_LINES));
		if (j->culprit)
			rc = culprit_json(j, rc);
		json_object_set_new(root, "root_cause", rc);
	} else {
		json_object_set_new(root, "root_cause", json_null());
	}
	if (j->job && j->job->kind == PLANE_CAUSE_SIGNAL)
		json_object_set_new(root, "stop_signal", json_string(sig_name(j->job->code, sn, sizeof(sn))));
	else
		json_object_set_new(root, "stop_signal", !j->job && j->stop_signal ?
				    json_string(sig_name(j->stop_signal, sn, sizeof(sn))) : json_null());
	json_object_set_new(root, "node_rank", json_integer(j->node_rank));
	json_object_set_new(root, "exit_status", json_integer(j->exit_code));
	if (j->attempts > 1) {
		json_t *list = json_array();

		/* every attempt's root cause, the last one's too if it ran */
		for (int k = 0; k < j->attempt; k++)
			json_array_append_new(list, job_cause_json(&j->history[k]));
		if (last_ran(j))
			json_array_append(list, json_object_get(root, "root_cause"));
		json_object_set_new(root, "attempts", list);
	}
	if (j->nrounds) {
		json_t *list = json_array();

		for (int k = 0; k < j->nrounds; k++) {
			const struct sum_round *x = &j->rounds[k];
			char when[40];

			fmt_time(&x->start, when, sizeof(when), true);
			json_array_append_new(list, json_pack("{s:i, s:i, s:i, s:i, s:s, s:o, s:o}", "round", x->round,
							      "nodes", x->nnodes, "ranks", x->ranks, "node_rank",
							      x->node_rank, "start", when,
							      "why", x->why[0] ? line_json(x->why) : json_null(),
							      "ended", x->end[0] ? line_json(x->end) : json_null()));
		}
		json_object_set_new(root, "rounds", list);
	}
	for (int i = 0; i < j->nworkers; i++)
		json_array_append_new(ranks, worker_json(&j->w[i]));
	json_object_set_new(root, "ranks", ranks);
	r = write_whole(root, path);
	json_decref(root);
	return r;
}
