// SPDX-License-Identifier: MIT
/* The failure reports workers leave for slotrun.  Each worker gets, in
 * SLOTRUN_ERROR_FILE and torchrun's TORCHELASTIC_ERROR_FILE, the path of a
 * file of its own in a private folder; a worker that fails may write there
 * a JSON object:
 *
 *   {"message": "what went wrong, one line", "culprit_rank": 3}
 *
 * both keys optional, others ignored; torch's @record form, where message
 * is an object whose own "message" is the text, is read too.  culprit_rank
 * names the rank at fault when it is another one (a peer that stopped
 * answering cannot say so itself): slotrun then makes that rank the job's
 * root cause, named by the one that failed (libslotcomm writes it, see
 * slotcomm(3)).  The file is the worker's, so untrusted: read with a size
 * limit, only when it is a regular file, and anything malformed is
 * ignored. */
#ifndef SLOTRUN_RANK_REPORT_H
#define SLOTRUN_RANK_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "plane_cause.h"

#define RANK_REPORT_VAR "SLOTRUN_ERROR_FILE"
#define RANK_REPORT_TORCH_VAR "TORCHELASTIC_ERROR_FILE"

/* The most of a report that is read; torch's carries a Python stack. */
#define RANK_REPORT_MAX (1 << 20)

struct rank_report {
	char message[PLANE_TEXT_MAX];  /* "" when none (cut to fit) */
	int culprit;                   /* the rank named at fault, or -1 */
};

/* Pure: the report in text (len bytes), into out.  Returns 0, or -EINVAL
 * when it is no JSON object, or a key has the wrong type (a culprit_rank
 * that is not an integer in [0, INT_MAX], a message that is neither a
 * string nor an object with a string "message"): then out says nothing. */
int rank_report_parse(const char *text, size_t len, struct rank_report *out);

/* The folder of one slotrun's reports. */
struct rank_reports {
	char *dir;      /* NULL: none could be made, the workers get no path */
};

/* Makes the private folder under $TMPDIR (else /tmp).  Returns 0 or a
 * negative errno; rr->dir is NULL then, and nothing else changes: the
 * reports are a refinement, a job runs without them. */
int rank_reports_open(struct rank_reports *rr);

/* Rank's report path, "" without a folder. */
void rank_reports_path(const struct rank_reports *rr, int rank, char *buf, size_t len);

/* Removes rank's report, before it starts: an earlier attempt's must not
 * pass for the next one's. */
void rank_reports_clear(const struct rank_reports *rr, int rank);

/* Reads rank's report into out.  Returns 0, -ENOENT when there is none, or
 * another negative errno when it cannot be read or is malformed (out then
 * says nothing: message "", culprit -1). */
int rank_reports_read(const struct rank_reports *rr, int rank, struct rank_report *out);

/* Removes the folder and whatever the workers left in it. */
void rank_reports_close(struct rank_reports *rr);

#endif
