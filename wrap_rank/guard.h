// SPDX-License-Identifier: MIT
/* wrap_rank's guard: the process between wrap_rank and its command that
 * keeps everything the command starts from outliving slotrun.
 *
 *   slotrun -> wrap_rank -> guard -> COMMAND -> ... (background, setsid, daemons)
 *
 * Why a process of its own.  Containment needs a process that is an
 * ancestor of all the command starts (a child subreaper: orphans, double
 * forks and setsid'ed processes come back to it, unlike process groups,
 * which setsid leaves) and that learns of slotrun's death (a catchable
 * parent-death signal: SIGKILL, which slotrun's death gives wrap_rank,
 * cannot be acted on).  wrap_rank itself must exit when the command does
 * (slotrun learns the rank's end from it), so what the command left
 * running would go up to slotrun and, slotrun killed, survive.  The guard
 * outlives wrap_rank in that case: slotrun, a subreaper, adopts it, its
 * parent-death signal now follows slotrun, and it goes on watching.
 *
 * Other ways were tried (docs/supervision.md, "Containment"): a cgroup with cgroup.kill
 * needs the right to create one (a trial's container or a user's ssh
 * session does not have it) and still a watcher outside slotrun to kill it
 * when slotrun gets SIGKILL; a PID namespace per worker needs CAP_SYS_ADMIN,
 * changes the pids the worker sees, and kills what a rank leaves running at
 * the rank's end instead of the job's.
 *
 * The guard's rules.  It blocks every signal and acts on a change of its
 * parent (its parent-death signal, SIGTERM, wakes it; any other signal
 * just makes it look):
 * - wrap_rank died while the command ran: the command's whole tree is
 *   SIGKILLed (as the command alone was before);
 * - wrap_rank exited after the command, and the process that started
 *   wrap_rank (slotrun) has died too: the tree left is SIGKILLed;
 * - ... that process adopted the guard (it is a subreaper, as slotrun is):
 *   the guard stays, now watching it;
 * - ... it lives but did not adopt the guard (wrap_rank run by hand from a
 *   shell): the guard exits and what is left is orphaned, as it would be
 *   without wrap_rank, since the guard cannot learn of that process's death.
 * It exits once it has no child left. */
#ifndef SLOTRUN_GUARD_H
#define SLOTRUN_GUARD_H

#include <signal.h>
#include <stdbool.h>
#include <stdnoreturn.h>
#include <sys/types.h>

/* The guard's parent-death signal: SIGCONT, blocked and read like the
 * others, since it also wakes a guard that is stopped (a pause, Ctrl-Z)
 * and drops a stop still on its way.  The kernel's SIGHUP and SIGCONT to
 * an orphaned process group come only if a member is stopped as the group
 * is orphaned and the last parent outside it was in the same session: a
 * guard stopped a moment later, or under a wrap_rank whose parent is in
 * another session, slept on with its command (a SIGTERM, blocked, did not
 * wake it). */
#define GUARD_DEATH_SIGNAL SIGCONT

enum guard_msg_kind { GUARD_STARTED = 1, GUARD_EXITED };

/* What the guard tells wrap_rank, in this order, over a pipe: the command
 * started (stage CHILD_OK, pid) or did not (stage and errno); then its wait
 * status, and whether the guard was left without children (then it exits
 * at once, else it stays to watch what the command left). */
struct guard_msg {
	int kind;
	pid_t pid;
	int stage;
	int err;
	int status;
	int alone;            /* a bool; an int, so the message has no padding */
};

struct guard_cfg {
	char *const *argv;         /* the command, argv[0] looked up in PATH */
	const sigset_t *mask;      /* the command's signal mask */
	const struct sigaction *sigpipe; /* the command's SIGPIPE action */
	int out_fd, err_fd;        /* the command's stdout and stderr; -1: the guard's */
	pid_t wrap, watched;       /* wrap_rank (our parent) and its parent */
	int msg_fd;                /* write end of the pipe to wrap_rank */
	const int *close_fds;      /* wrap_rank's fds the guard closes, -1 ends */
};

/* Runs in the child wrap_rank forked, with every signal wrap_rank handles
 * blocked; never returns. */
noreturn void guard_run(const struct guard_cfg *c);

#endif
