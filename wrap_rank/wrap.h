// SPDX-License-Identifier: MIT
/* wrap_rank's runtime: run one command with its stdout and stderr prefixed
 * by "[rank=N] ", forward signals to it, and return its status. */
#ifndef SLOTRUN_WRAP_H
#define SLOTRUN_WRAP_H

#include <stdbool.h>
#include <stddef.h>

/* Determined's log folder inside a trial container. */
#define WRAP_DET_LOG_DIR "/run/determined/train/logs"

/* After the command exits, output still arriving through its pipes (held
 * open by something it started) is read for this long at most; then
 * wrap_rank stops waiting for them. */
#define WRAP_LINGER_MS 1000

struct wrap_opts {
	long rank;
	char *const *argv;  /* the command, argv[0] looked up in PATH */
	int out_fd;         /* where prefixed stdout lines go */
	int err_fd;         /* where prefixed stderr lines go */
	bool no_prefix;     /* the command writes to out_fd and err_fd itself */
	int pid_fd;         /* the command's pid is written there, once it runs; 0 (no
			     * stdio fd is one): none */
};

/* spec: a rank number, or a comma list of environment variable names tried
 * in order.  Returns 0, or -EINVAL / -ENOENT with a one-line reason in err. */
int wrap_resolve_rank(const char *spec, long *rank, char *err, size_t errlen);

/* When dir/stdout.log exists, opens it and dir/stderr.log for appending.
 * Returns 1 when opened, 0 when there is no such log, or a negative errno
 * (with the failing path in err). */
int wrap_open_logs(const char *dir, int *out_fd, int *err_fd, char *err, size_t errlen);

/* Runs the command and returns wrap_rank's exit status: the command's exit
 * code, 128+N when it died of signal N, 127 when it was not found, 126 when
 * it could not be executed (said in one line on stderr), 1 on an internal
 * error. */
int wrap_run(const struct wrap_opts *o);

#endif
