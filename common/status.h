// SPDX-License-Identifier: MIT
/* Exit statuses as the programs report them: a worker's exit code, or
 * 128+N when it died of signal N (the shell's convention, which wrap_rank
 * and slotrun follow). */
#ifndef SLOTRUN_STATUS_H
#define SLOTRUN_STATUS_H

/* A waitpid(2) status as an exit code: the code, or 128+N for signal N. */
int status_exit_code(int wait_status);

/* N when code is 128+N for a signal N, else 0. */
int status_code_signal(int code);

#endif
