// SPDX-License-Identifier: MIT
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "quote.h"

#ifdef SLOTRUN_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* What runs in the child before its exec is not instrumented by ASan: its
 * stack is not the one ASan knows, so the check before a noreturn call
 * (_exit) would warn on the worker's stderr, and the redzones it poisons
 * would outlive the child in the shared shadow memory. */
#define CHILD_SIDE __attribute__((no_sanitize("address")))

extern char **environ;

struct report {
	int stage;
	int err;
};

static CHILD_SIDE noreturn void fail(int fd, enum child_stage stage, int err)
{
	struct report rep = { stage, err };

	(void)!write(fd, &rep, sizeof(rep));
	_exit(stage == CHILD_EXEC ? (err == ENOENT ? 127 : 126) : 1);
}

/* execve, and for a file the kernel cannot run (ENOEXEC: no #!, not ELF)
 * /bin/sh with it, as POSIX asks of execvp.  Returns with errno set. */
static CHILD_SIDE void exec_or_sh(const char *path, char *const *argv, char *const *envp)
{
	size_t argc = 0;

	execve(path, argv, envp);
	if (errno != ENOEXEC)
		return;
	while (argv[argc])
		argc++;
	{
		/* on the child's stack, which child_start sized for argv */
		char *sh_argv[argc + 2];

		sh_argv[0] = "/bin/sh";
		sh_argv[1] = (char *)path;
		for (size_t i = 1; i <= argc; i++)
			sh_argv[i + 1] = argv[i];
		execve("/bin/sh", sh_argv, envp);
		errno = ENOEXEC; /* the file's failure, not the shell's */
	}
}

/* execvp's search, done here rather than by the C library (their
 * fallbacks differ: musl runs no file without #! through /bin/sh), and
 * without allocation: each entry of path (the caller's PATH) in turn; a
 * file that is there but cannot be run (EACCES) is remembered and the
 * search goes on.  Returns with errno set. */
static CHILD_SIDE void exec_search(const char *file, const char *path, char *const *argv,
				   char *const *envp)
{
	const char *p, *end;
	size_t flen = strlen(file);
	bool eacces = false;
	char buf[4096];

	if (!*file) {
		errno = ENOENT;
		return;
	}
	if (strchr(file, '/')) {
		exec_or_sh(file, argv, envp);
		return;
	}
	for (p = path;; p = end + 1) {
		size_t dlen;

		end = strchrnul(p, ':');
		dlen = (size_t)(end - p);
		if (dlen + 1 + flen < sizeof(buf)) {
			/* an empty entry is the current folder */
			memcpy(buf, p, dlen);
			buf[dlen] = dlen ? '/' : '\0';
			memcpy(buf + (dlen ? dlen + 1 : 0), file, flen + 1);
			exec_or_sh(buf, argv, envp);
			switch (errno) {
			case EACCES:
				eacces = true;
				break;
			case ENOENT: case ENOTDIR: case ENAMETOOLONG: case ESTALE: case ENODEV:
			case ETIMEDOUT: case ELOOP:
				break;
			default:
				return; /* it is there, and could not run: say why */
			}
		}
		if (!*end)
			break;
	}
	errno = eacces ? EACCES : ENOENT;
}

/* Runs in the child only; never returns.  path: PATH, looked up by the
 * parent. */
static CHILD_SIDE noreturn void child(const struct child_spec *s, pid_t parent, const char *path,
				      int report_w)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int e;

	for (int i = 0; i < s->nreset; i++)
		sigaction(s->reset_signals[i], &dfl, NULL);
	sigaction(SIGPIPE, s->sigpipe ? s->sigpipe : &dfl, NULL);
	sigaction(SIGXFSZ, &dfl, NULL); /* slotrun ignores it; an ignored signal survives exec */
	if (setpgid(0, 0) < 0)
		fail(report_w, CHILD_SETUP, errno);
	if (s->death_signal) {
		if (prctl(PR_SET_PDEATHSIG, s->death_signal) < 0)
			fail(report_w, CHILD_SETUP, errno);
		if (getppid() != parent)
			_exit(128 + SIGKILL);
	}
	if (s->prepare && (e = s->prepare(s->ctx)) < 0)
		fail(report_w, CHILD_PREPARE, -e);
	for (int fd = 0; fd < 3; fd++)
		if (s->stdio[fd] >= 0 && dup2(s->stdio[fd], fd) < 0)
			fail(report_w, CHILD_SETUP, errno);
	sigprocmask(SIG_SETMASK, s->mask, NULL);
	if (s->path)
		exec_or_sh(s->path, s->argv, s->envp ? s->envp : environ);
	else
		exec_search(s->argv[0], path, s->argv, s->envp ? s->envp : environ);
	fail(report_w, CHILD_EXEC, errno);
}

pid_t child_fork_pipe(int p[2])
{
	pid_t pid;
	int e;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid >= 0)
		return pid;
	e = errno;
	close(p[0]);
	close(p[1]);
	return -e;
}

/* The child's stack.  It runs in our memory (CLONE_VM) until it execs, so
 * it needs a stack of its own; one mapping is kept from start to start,
 * so that its pages fault in once and not once a child, and grown when an
 * argv needs more: execvp runs a script without #! through /bin/sh with
 * a copy of argv on the stack, as posix_spawn allows for.  A PROT_NONE
 * page below it turns an overflow into the child's SIGSEGV rather than a
 * write into our memory. */
#define CHILD_STACK_MIN (64 * 1024)

static struct {
	char *base;   /* the mapping, its lowest page the guard page */
	size_t size;  /* with the guard page */
} stack;

static int stack_for(char *const *argv, char **top)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), argc = 0, want;
	char *base;

	while (argv[argc])
		argc++;
	want = CHILD_STACK_MIN + (argc + 2) * sizeof(char *) + page;
	want = (want + page - 1) / page * page;
	if (stack.size < want) {
		base = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
			    -1, 0);
		if (base == MAP_FAILED)
			return -errno;
		if (mprotect(base, page, PROT_NONE) < 0) {
			int e = errno;

			munmap(base, want);
			return -e;
		}
		if (stack.base)
			munmap(stack.base, stack.size);
		stack.base = base;
		stack.size = want;
	}
	*top = stack.base + stack.size; /* page-aligned, so 16-byte aligned */
#ifdef SLOTRUN_ASAN
	/* A prepare step that is instrumented may leave poisoned redzones
	 * behind on this stack; the next child starts on a clean one. */
	ASAN_UNPOISON_MEMORY_REGION(stack.base + page, stack.size - page);
#endif
	return 0;
}

struct start {
	const struct child_spec *s;
	pid_t parent;
	const char *path;   /* PATH, or CHILD_DEFAULT_PATH */
	int report_w;
};

static CHILD_SIDE int child_main(void *arg)
{
	const struct start *st = arg;

	child(st->s, st->parent, st->path, st->report_w);
}

int child_start(const struct child_spec *s, pid_t *pid, int *report_fd)
{
	struct start st = { .s = s, .parent = getpid(), .path = getenv("PATH") };
	sigset_t all, old;
	char *top = NULL;
	int p[2], e;

	if ((e = stack_for(s->argv, &top)) < 0)
		return e;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	st.report_w = p[1];
	if (!st.path)
		st.path = CHILD_DEFAULT_PATH;
	/* No handler may run in the child while it shares our memory: every
	 * signal is blocked across the clone, and the child sets the
	 * program's mask just before exec, once its handled signals are back
	 * at their defaults. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	/* CLONE_VFORK: we go on once the child has exec'd or exited, so
	 * nothing of ours changes under it; CLONE_VM: no copy of our page
	 * tables and no copy-on-write faults on either side, which is most
	 * of what a fork of a large process costs. */
	*pid = clone(child_main, top, CLONE_VM | CLONE_VFORK | SIGCHLD, &st);
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(p[1]);
	if (*pid < 0) {
		close(p[0]);
		return -e;
	}
	/* The child set its group before it exec'd.  Setting it here too
	 * covers a clone that did not wait (valgrind runs it as a fork), so
	 * that signals sent right after already reach the group; after the
	 * exec it fails harmlessly. */
	(void)setpgid(*pid, *pid);
	*report_fd = p[0];
	return 0;
}

enum child_stage child_read_report(int report_fd, int *err)
{
	struct report rep;
	ssize_t n = io_read(report_fd, &rep, sizeof(rep));

	close(report_fd);
	if (n != (ssize_t)sizeof(rep))
		return CHILD_OK;
	*err = rep.err;
	return (enum child_stage)rep.stage;
}

static int blank(char c)
{
	return c == ' ' || c == '\t';
}

int child_shebang(const char *head, size_t n, struct child_shebang *sb)
{
	const char *end, *p, *q;

	if (n < 2 || head[0] != '#' || head[1] != '!')
		return -ENOEXEC;
	end = memchr(head, '\n', n);
	if (!end)
		end = head + n;
	while (end > head + 2 && blank(end[-1]))
		end--;
	for (p = head + 2; p < end && blank(*p); p++)
		;
	for (q = p; q < end && *q && !blank(*q); q++)
		;
	if (q == p)
		return -ENOEXEC;
	if ((size_t)(q - p) >= sizeof(sb->path))
		return -ENAMETOOLONG;
	memcpy(sb->path, p, (size_t)(q - p));
	sb->path[q - p] = '\0';
	for (p = q; p < end && blank(*p); p++)
		;
	if ((size_t)(end - p) >= sizeof(sb->arg))
		return -ENAMETOOLONG;
	memcpy(sb->arg, p, (size_t)(end - p));
	sb->arg[end - p] = '\0';
	return 0;
}

void child_explain_interp(const char *interp, int err, char *buf, size_t len)
{
	char name[2 * CHILD_SHEBANG_MAX], shown[QUOTE_SIZE(2 * CHILD_SHEBANG_MAX)];
	int cr;

	snprintf(name, sizeof(name), "%s", interp);
	cr = *name && name[strlen(name) - 1] == '\r';
	/* The CR is written as \r, the way the script's author knows it. */
	if (cr)
		name[strlen(name) - 1] = '\0';
	quote_ctl(shown, sizeof(shown), name, sizeof(name));
	snprintf(buf, len, "bad interpreter '%s%s' (%s)", shown, cr ? "\\r" : "",
		 cr ? "the #! line ends in CR: the script has Windows line endings" : strerror(err));
}

static int is_env(const char *path)
{
	const char *slash = strrchr(path, '/');

	return strcmp(slash ? slash + 1 : path, "env") == 0;
}

int child_check_script(const char *path, char *buf, size_t len)
{
	char head[CHILD_SHEBANG_MAX], shown[2 * CHILD_SHEBANG_MAX];
	struct child_shebang sb;
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = io_read(fd, head, sizeof(head));
	close(fd);
	if (n <= 0 || child_shebang(head, (size_t)n, &sb) < 0)
		return 0;
	if (stat(sb.path, &st) < 0)
		err = errno;
	else if (S_ISDIR(st.st_mode) || access(sb.path, X_OK) < 0)
		err = EACCES;
	if (err) {
		child_explain_interp(sb.path, err, buf, len);
		return -err;
	}
	/* Another interpreter may cope with a CR ending its argument (perl
	 * does); env cannot, it looks for a program whose name ends in CR. */
	if (is_env(sb.path) && *sb.arg && sb.arg[strlen(sb.arg) - 1] == '\r') {
		snprintf(shown, sizeof(shown), "%s %s", sb.path, sb.arg);
		child_explain_interp(shown, ENOENT, buf, len);
		return -ENOENT;
	}
	return 0;
}
