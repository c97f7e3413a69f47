// SPDX-License-Identifier: MIT
/* The failure report a rank leaves for its launcher: a small JSON file
 * at the path in SLOTRUN_ERROR_FILE (else TORCHELASTIC_ERROR_FILE, which
 * torchrun sets), {"message": "...", "culprit_rank": N}.  slotrun reads it
 * when this rank's failure is the job's root cause, and puts the blame on
 * rank N when one is named (slotcomm(3), FAILURE REPORT). */
#ifndef SLOTRUN_COMM_REPORT_H
#define SLOTRUN_COMM_REPORT_H

#include <stddef.h>

#define COMM_REPORT_VAR "SLOTRUN_ERROR_FILE"
#define COMM_REPORT_TORCH_VAR "TORCHELASTIC_ERROR_FILE"

/* The report's text for message and culprit (-1: none) in buf: a JSON
 * object on one line, ending in '\n'; message's quotes, backslashes and
 * control characters escaped, a byte above 0x7f written as '?' so that the
 * file is valid UTF-8 whatever the message holds.  Returns its length,
 * cut (still valid JSON) to fit len; 0 when len is too small for any. */
size_t comm_report_format(char *buf, size_t len, const char *message, int culprit);

/* Writes the report to the path the environment names, replacing what is
 * there; nothing without one.  Best effort, once per failure: the failure
 * itself is the caller's to report, so this returns 0 or a negative errno
 * that the caller may ignore. */
int comm_report_write(const char *message, int culprit);

#endif
