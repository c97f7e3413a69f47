// SPDX-License-Identifier: MIT
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "rank_report.h"
#include "summary.h"

/* What was lost on the way, one line each: a log file that failed, a
 * console that failed or could not be written in time. */
static void print_losses(FILE *f, const struct runner *r)
{
	static const char *const names[] = { "stdout", "stderr" };

	for (int i = 0; i < r->n; i++) {
		const struct out_stream *ss[2] = { &r->w[i].out, &r->w[i].err };

		for (int k = 0; k < 2; k++)
			if (ss[k]->file_lost) /* a log file that resumed may have lost nothing */
				fprintf(f, "slotrun: output lost: rank %d's %s log (%s): %zu bytes not written\n",
					r->cfg->plan->slots[i].rank, names[k], strerror(ss[k]->file_err),
					ss[k]->file_lost);
	}
	for (int k = 0; k < 2; k++)
		if (r->cons.con[k].dropped)
			fprintf(f, "slotrun: output lost: %zu bytes for slotrun's %s were dropped (%s)\n",
				r->cons.con[k].dropped, names[k],
				r->cons.con[k].err ? strerror(r->cons.con[k].err) : "its reader did not take them in time");
}

static bool lost_any(const struct runner *r)
{
	for (int i = 0; i < r->n; i++)
		if (r->w[i].out.file_lost || r->w[i].err.file_lost)
			return true;
	return r->cons.con[0].dropped || r->cons.con[1].dropped;
}

/* A clean run: an error file an earlier run left must not pass for this
 * run's.  Only a regular file goes; a link or anything else at the path
 * was not ours to write (slotrun checked it at start and would replace
 * only a link). */
static void clear_error_file(struct runner *r)
{
	const char *path = r->cfg->error_file;
	int e;

	if (path && (e = io_remove_regular(path)) < 0 && e != -ENOENT && e != -EEXIST)
		note(r, "slotrun: --error-file %s: cannot remove an earlier run's: %s", path, strerror(-e));
}

void report_fill_cause(const struct runner *r, int i, struct plane_cause *f)
{
	const struct plan *p = r->cfg->plan;
	struct rank_report rep;

	if (rank_reports_read(&r->reports, p->slots[i].rank, &rep) < 0)
		return;
	snprintf(f->message, sizeof(f->message), "%s", rep.message);
	if (rep.culprit < 0 || rep.culprit == p->slots[i].rank)
		return;
	f->culprit = rep.culprit;
	f->culprit_node = -1;
	for (int k = 0; k < p->nslots; k++)
		if (p->slots[k].rank == rep.culprit) {
			f->culprit_node = p->node_rank;
			snprintf(f->culprit_host, sizeof(f->culprit_host), "%s", r->cfg->host ? r->cfg->host : "");
		}
	/* one node has every rank; on several the chief places it */
	f->blamed = f->culprit_node >= 0 || r->cfg->plane;
}

/* The root cause's report, and the worker it names at fault (NULL: none). */
static const struct sum_worker *root_report(const struct runner *r, struct sum_worker *sw, int root,
					    struct rank_report *rep)
{
	const struct plan *p = r->cfg->plan;

	if (root < 0 || rank_reports_read(&r->reports, p->slots[root].rank, rep) < 0)
		return NULL;
	if (rep->message[0])
		sw[root].message = rep->message;
	for (int k = 0; k < r->n; k++)
		if (k != root && p->slots[k].rank == rep->culprit)
			return &sw[k];
	return NULL;
}

void report_print(struct runner *r, int code)
{
	const struct runner_cfg *c = r->cfg;
	const struct plane_cause *cause = c->plane ? &r->job_cause : NULL;
	int n = r->started ? r->n : 0; /* stopped between attempts: none ran */
	struct sum_worker *sw;
	struct sum_job job;
	struct rank_report rep;
	char *text = NULL;
	size_t len = 0;
	FILE *mem;

	if (code == 0 && !r->attempt && r->nrounds < 2 && !lost_any(r) &&
	    (cause ? cause->kind == PLANE_CAUSE_NONE : r->sup.root_cause < 0 && !r->sup.stop_signal)) {
		clear_error_file(r);
		return;
	}
	sw = calloc((size_t)r->n, sizeof(*sw));
	mem = open_memstream(&text, &len);
	if (!sw || !mem) {
		note(r, "slotrun: cannot write the summary: out of memory (exit status %d)", code);
		free(sw);
		if (mem)
			fclose(mem);
		free(text);
		return;
	}
	for (int i = 0; i < n; i++)
		sw[i] = (struct sum_worker){
			.rank = c->plan->slots[i].rank, .local_rank = i, .pid = r->w[i].pid,
			.code = r->code[i], .fate = r->fate[i], .when = r->w[i].when,
			.after_start = r->w[i].after, .tail = &r->w[i].tail,
			.note = r->w[i].note[0] ? r->w[i].note : NULL, .diag = r->w[i].diag,
			.diag_hung = r->w[i].diag_hung,
			.oom = r->w[i].oom,
		};
	job = (struct sum_job){ .node_rank = c->plan->node_rank, .nworkers = n, .w = sw,
				.root = n ? r->sup.root_cause : -1,
				.stop_signal = n ? r->sup.stop_signal : r->stopped_between,
				.exit_code = code, .job = cause, .history = r->history, .attempt = r->attempt,
				.attempts = runner_attempts(r), .between = !r->started,
				.rounds = r->rounds, .nrounds = r->nrounds };
	if (!cause && n)
		job.culprit = root_report(r, sw, job.root, &rep);
	if (code != 0 || r->attempt || r->nrounds > 1 || (cause ? cause->kind != PLANE_CAUSE_NONE :
					r->sup.root_cause >= 0 || r->sup.stop_signal))
		summary_print(mem, &job);
	print_losses(mem, r);
	if (c->error_file && summary_write_json(c->error_file, &job) < 0)
		fprintf(mem, "slotrun: cannot write --error-file %s: %s\n", c->error_file,
			errno == EEXIST ? "something other than a regular file is there (left as it is)" :
			strerror(errno));
	if (fclose(mem) == 0 && len)
		out_console_put(&r->cons.con[1], text, len);
	free(text);
	free(sw);
}
