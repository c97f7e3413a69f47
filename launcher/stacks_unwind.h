// SPDX-License-Identifier: MIT
/* The part of a stack collection that reads ELF files (stacks.h), with
 * elfutils' libdwfl: a process's modules from /proc/PID/maps, the symbols
 * CPython's frames are found from, and the native frames of threads that
 * were stopped and copied (stacks_grab.h), unwound from that copy (CFI,
 * or frame pointers where there is none) once the threads run again.
 *
 * Debug information is looked for by build ID under /usr/lib/debug only:
 * never through debuginfod, whose downloads no deadline bounds. */
#ifndef SLOTRUN_STACKS_UNWIND_H
#define SLOTRUN_STACKS_UNWIND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "stacks.h"
#include "stacks_grab.h"

struct stacks_unwind;

/* Reads pid's modules.  Returns 0 with *up set, or -errno. */
int stacks_unwind_open(struct stacks_unwind **up, pid_t pid);

void stacks_unwind_close(struct stacks_unwind *u);

/* Where a CPython keeps what its frames are found from: the symbols of a
 * module named python3.N or libpython3.N.so (the binary, or the library
 * an embedding program loads). */
struct stacks_unwind_py {
	char module[64];          /* that module's file name, "" when there is none */
	uint64_t version;         /* &Py_Version (3.11 and later), 0: none */
	uint64_t runtime, code_type, str_type, bytes_type;
};

/* 0 with *py filled in, -ENOENT when no module is CPython's, or -errno. */
int stacks_unwind_python(struct stacks_unwind *u, struct stacks_unwind_py *py);

/* The native frames of t (stopped and copied: STACKS_TAKEN), innermost
 * first, up to max into out (each one's strings malloc'd).  *cut is set
 * when there were more.  Returns how many. */
int stacks_unwind_thread(struct stacks_unwind *u, const struct stacks_grab_thread *t, struct stacks_frame *out,
			 int max, bool *cut);

/* Whether a native frame's function is the one that runs Python frames
 * (CPython 3.11's _PyEval_EvalFrameDefault, a .cold part of it too). */
bool stacks_unwind_is_eval(const char *function);

#endif
