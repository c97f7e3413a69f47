// SPDX-License-Identifier: MIT
/* Starting a program in a child process: clone, set the child up, exec.
 * slotrun starts its workers with it and wrap_rank's guard its command.
 *
 * The child is a vfork-style clone (CLONE_VM | CLONE_VFORK): it runs in the
 * caller's memory, on a stack of its own, and the caller is suspended until
 * it has exec'd or exited.  Nothing is copied, neither the page tables nor
 * a page on a write, which is most of what a fork of a large process costs
 * (slotrun's workers start this way).  So everything the child runs before
 * its exec, the caller's prepare step included, makes system calls only:
 * no allocation, no stdio, no write to the caller's memory (errno aside,
 * which the caller does not read across the call).  Every signal is
 * blocked across the clone, so no handler runs on the shared memory.
 *
 * The caller blocks the signals it handles before calling and lists those
 * whose handlers the child must reset, and passes the mask the program is
 * to start with.  The child, in order:
 * SIGPIPE and the signals listed set back to their defaults; its own
 * process group (set by both sides, so a signal sent right after fork
 * already reaches it); the parent-death signal, then getppid() checked
 * (the parent may have died before prctl took effect, and then nobody
 * would send it); the caller's own step; stdio; the mask; exec.
 *
 * Whether that worked comes back over a CLOEXEC pipe (not through the
 * shared memory, which a clone run as a fork, as under valgrind, does not
 * share): EOF means the exec succeeded, else a report of the stage that
 * failed and its errno.  A
 * failed child exits 127 (exec: not found), 126 (exec: anything else) or
 * 1 (an earlier stage), never returning into the caller's code; one that
 * finds its parent gone exits 128+SIGKILL without a report. */
#ifndef SLOTRUN_CHILD_H
#define SLOTRUN_CHILD_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

enum child_stage { CHILD_OK, CHILD_SETUP, CHILD_PREPARE, CHILD_EXEC };

/* Where a command is looked up when PATH is not set (slotrun's checks use
 * the same). */
#define CHILD_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* The program runs as execvp would run it, whatever the C library: a file
 * the kernel cannot run (no #!, not ELF) runs under /bin/sh. */
struct child_spec {
	const char *path;              /* execve'd; NULL: argv[0] looked up in PATH */
	char *const *argv;
	char *const *envp;             /* NULL: the caller's environment */
	const sigset_t *mask;          /* the program's signal mask */
	const int *reset_signals;      /* set back to SIG_DFL (SIGPIPE always is) */
	int nreset;
	const struct sigaction *sigpipe; /* SIGPIPE's action instead of SIG_DFL, or NULL */
	int death_signal;              /* the parent-death signal; 0: none */
	int stdio[3];                  /* dup2'ed onto 0, 1 and 2; -1: inherited */
	/* The caller's step, run after the parent-death signal is set and
	 * before stdio: returns 0 or a negative errno (reported as
	 * CHILD_PREPARE).  System calls only (see above).  NULL: none. */
	int (*prepare)(void *ctx);
	void *ctx;
};

/* fork(2), with a CLOEXEC pipe made first for the two sides to talk over
 * (p[0] to read, p[1] to write; each side closes the end it does not use).
 * Returns the child's pid, 0 in the child, or -errno with nothing open. */
pid_t child_fork_pipe(int p[2]);

/* Clones and execs; returns once the child has exec'd or failed.  On
 * success *pid is the child, which leads its own process group, and
 * *report_fd the read end of its report pipe (for child_read_report), which
 * already holds the outcome.  Returns 0 or -errno (nothing was started).
 * Not from two threads at once: the child's stack is kept from call to
 * call. */
int child_start(const struct child_spec *s, pid_t *pid, int *report_fd);

/* Whether the child exec'd (returns CHILD_OK) or failed: returns the stage
 * and sets *err to its errno.  Closes report_fd.  Blocks only where the
 * clone could not wait for the exec (valgrind runs it as a fork). */
enum child_stage child_read_report(int report_fd, int *err);

/* execve(2) says ENOENT both for a file that is not there and for a script
 * whose #! interpreter is not: the helpers below tell the second apart, so
 * that the diagnostic names the interpreter rather than a file that exists.
 *
 * child_shebang: head holds a file's first n bytes.  Reads its #! line
 * the way the kernel does: blanks after "#!" skipped, the interpreter's
 * path ending at a blank, the rest of the line (trailing blanks dropped)
 * its one argument.  A line saved with Windows line endings therefore
 * leaves a CR at the end of the path, or of the argument.  Returns 0,
 * -ENOEXEC when head has no #! line naming an interpreter, or
 * -ENAMETOOLONG.  Pure. */
#define CHILD_SHEBANG_MAX 256   /* what the kernel reads of the line */
struct child_shebang {
	char path[CHILD_SHEBANG_MAX];
	char arg[CHILD_SHEBANG_MAX];  /* "" when none */
};
int child_shebang(const char *head, size_t n, struct child_shebang *sb);

/* Writes into buf (len bytes) why a script cannot run, given its
 * interpreter (as shown: the path, or the path and its argument) and the
 * errno of looking that up: "bad interpreter '/usr/bin/pyhton3' (No such
 * file or directory)", or for one ending in CR the Windows line endings
 * as the cause.  Control characters are escaped.  Pure. */
void child_explain_interp(const char *interp, int err, char *buf, size_t len);

/* Reads path's #! line and checks its interpreter can be executed.
 * Returns 0 when path is no script, or its interpreter is there (or path
 * cannot be read: the exec will say why); else, with the explanation in
 * buf, the errno the exec would fail with: -ENOENT when it is missing,
 * -EACCES when it is not executable or a folder.  "#!/usr/bin/env NAME"
 * ending in CR is -ENOENT too: env then looks for "NAME\r". */
int child_check_script(const char *path, char *buf, size_t len);

#endif
