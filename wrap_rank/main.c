// SPDX-License-Identifier: MIT
/* wrap_rank [--no-redirect-stdio] [--no-prefix] [--pid-fd N] RANK [--] CMD [ARGS...] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "wrap.h"

static const char usage[] =
	"Usage: wrap_rank [--no-redirect-stdio] [--no-prefix] [--pid-fd N] RANK [--] COMMAND [ARGS...]\n"
	"\n"
	"Runs COMMAND and prefixes every line it writes with \"[rank=RANK] \", keeping\n"
	"stdout and stderr apart.  \\n, \\r\\n and \\r each end a line; lines are written\n"
	"whole (at most PIPE_BUF bytes per write), so ranks sharing a terminal or pipe\n"
	"never interleave inside a line.\n"
	"\n"
	"RANK  a number, or a comma list of environment variables tried in order,\n"
	"      e.g. RANK,OMPI_COMM_WORLD_RANK,PMI_RANK\n"
	"\n"
	"Options:\n"
	"  --no-redirect-stdio  write to wrap_rank's own stdout/stderr even inside a\n"
	"                       Determined container (" WRAP_DET_LOG_DIR "/stdout.log\n"
	"                       exists), where output otherwise goes to stdout.log and\n"
	"                       stderr.log in that folder\n"
	"  --no-prefix          COMMAND writes to wrap_rank's stdout and stderr itself,\n"
	"                       with no prefix (signals and containment as usual)\n"
	"  --pid-fd N           once COMMAND runs, write its pid and a newline to the\n"
	"                       inherited fd N and close it (slotrun ties the kernel's\n"
	"                       word on a killed process to the rank so)\n"
	"  -h, --help           show this help\n"
	"  --version            show the version\n"
	"\n"
	"INT, TERM, HUP, QUIT, USR1, USR2 and WINCH are forwarded to COMMAND's process\n"
	"group; output is read until COMMAND's pipes close.  Exit status: COMMAND's,\n"
	"128+N if it died of signal N, 127 if not found, 126 if not executable, 2 on\n"
	"a usage error.  Whatever COMMAND starts (in the background, double-forked,\n"
	"setsid'ed) is killed when wrap_rank is killed, and when wrap_rank's parent\n"
	"dies if that parent is a subreaper (slotrun is).\n";

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "wrap_rank: %s%s%s\nTry 'wrap_rank --help'.\n", msg, arg ? arg : "",
		arg ? "'" : "");
	return 2;
}

int main(int argc, char **argv)
{
	struct wrap_opts o = { .out_fd = STDOUT_FILENO, .err_fd = STDERR_FILENO };
	int redirect = 1, i = 1, code;
	const char *log_dir;
	char err[512];

	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		if (strcmp(argv[i], "--no-redirect-stdio") == 0) {
			redirect = 0;
		} else if (strcmp(argv[i], "--no-prefix") == 0) {
			o.no_prefix = true;
		} else if (strcmp(argv[i], "--pid-fd") == 0) {
			long fd;

			if (i + 1 >= argc || io_parse_long(argv[i + 1], 3, 0x7fffffff, &fd) < 0 ||
			    fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0) /* not COMMAND's to inherit */
				return usage_error("--pid-fd wants an open fd above 2, not '",
						   i + 1 < argc ? argv[i + 1] : "");
			o.pid_fd = (int)fd;
			i++;
		} else if (strcmp(argv[i], "--help") == 0) {
			fputs(usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			puts("wrap_rank " SLOTRUN_VERSION);
			return 0;
		} else if (strcmp(argv[i], "--") == 0) {
			break;
		} else {
			return usage_error("unknown option '", argv[i]);
		}
	}
	if (i < argc && strcmp(argv[i], "-h") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (i >= argc || strcmp(argv[i], "--") == 0)
		return usage_error("missing RANK", NULL);
	if (wrap_resolve_rank(argv[i], &o.rank, err, sizeof(err)) < 0) {
		fprintf(stderr, "wrap_rank: %s\n", err);
		return 2;
	}
	i++;
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc)
		return usage_error("missing COMMAND after RANK", NULL);
	o.argv = argv + i;

	/* WRAP_RANK_LOG_DIR moves Determined's log folder; tests use it. */
	log_dir = getenv("WRAP_RANK_LOG_DIR");
	if (!log_dir || !*log_dir)
		log_dir = WRAP_DET_LOG_DIR;
	if (redirect && wrap_open_logs(log_dir, &o.out_fd, &o.err_fd, err, sizeof(err)) < 0) {
		fprintf(stderr, "wrap_rank: %s\n", err);
		return 1;
	}
	code = wrap_run(&o);
	/* exit() has nothing to do here (stderr is unbuffered, stdout holds
	 * nothing past the options), and its handlers would fault in four
	 * pages in a program started once per rank.  A sanitizer checks for
	 * leaks at exit, so that build exits normally. */
#ifndef SLOTRUN_ASAN
	_exit(code);
#endif
	return code;
}
