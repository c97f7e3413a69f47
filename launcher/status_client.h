// SPDX-License-Identifier: MIT
/* `slotrun status [--json] [--watch[=SECS]] [--stacks] [JOB]`: asks a
 * running slotrun of this user on this node for the job's status over its
 * socket (status_sock.h, status_server.h) and shows it (status_table.h).
 * With one job running it needs no JOB; with several it lists them and
 * asks for one, by slotrun's pid or the job's id. */
#ifndef SLOTRUN_STATUS_CLIENT_H
#define SLOTRUN_STATUS_CLIENT_H

/* Seconds a request may take (with --stacks, STATUS_CLIENT_STACKS_DEADLINE). */
#define STATUS_CLIENT_DEADLINE 5.0
#define STATUS_CLIENT_STACKS_DEADLINE 20.0
/* --watch's default refresh. */
#define STATUS_WATCH_DEFAULT 2.0
/* The largest reply taken. */
#define STATUS_REPLY_MAX (64 << 20)

/* argv[0] is "status".  Returns the exit status: 0, 1 (no such job, the
 * job refused or did not answer; one line said), 2 (usage, or several
 * jobs and none named). */
int status_main(int argc, char **argv);

extern const char status_usage[];

#endif
