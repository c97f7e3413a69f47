// SPDX-License-Identifier: MIT
/* The Python frames of a CPython worker, read from its memory as py-spy
 * does: from _PyRuntime (a symbol of the python binary or of libpython) to
 * the interpreters, their thread states (matched to OS threads through
 * native_thread_id), each thread's chain of frames, and each frame's code
 * object: name, file, and the line from the location table (pyline.h).
 *
 * The structures are CPython's internals, whose layout changes with every
 * minor version: the offsets are in one table per version (pyframes.c),
 * checked against python3.11-dev's headers by tests/unit/test_py_layout.c.
 * Only CPython 3.11 is known; for another version pyframes_layout returns
 * NULL and the caller shows native frames alone.
 *
 * Memory comes through a read callback, so that everything here is values
 * in, values out, and runs in the unit tests on a made-up memory image.
 * Nothing read is trusted: every pointer followed is bounded (counts,
 * lengths) and every object checked for its type (PyCode_Type,
 * PyUnicode_Type, PyBytes_Type, whose addresses the caller found in the
 * same ELF symbol table), so a torn read or a wrong layout ends a walk
 * with what it has, never a loop or a huge allocation. */
#ifndef SLOTRUN_PYFRAMES_H
#define SLOTRUN_PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where CPython keeps what the walk reads, for one minor version. */
struct pyframes_layout {
	unsigned major, minor;
	/* _PyRuntimeState */
	size_t runtime_interpreters_head, runtime_gil_last_holder, runtime_gil_locked;
	/* PyInterpreterState */
	size_t interp_next, interp_threads_head;
	/* PyThreadState */
	size_t tstate_next, tstate_cframe, tstate_native_thread_id;
	/* _PyCFrame */
	size_t cframe_current_frame;
	/* _PyInterpreterFrame */
	size_t frame_code, frame_previous, frame_prev_instr, frame_is_entry, frame_size;
	/* PyCodeObject (co_code_adaptive: the first instruction) */
	size_t code_firstlineno, code_filename, code_name, code_qualname, code_linetable, code_code;
	/* PyObject, PyVarObject, PyBytesObject */
	size_t ob_type, ob_size, bytes_data;
	/* PyASCIIObject, PyCompactUnicodeObject: where a compact string's
	 * characters start, ASCII or not; the state's bits */
	size_t str_length, str_state, str_ascii_data, str_compact_data;
	unsigned str_kind_shift, str_compact_bit, str_ascii_bit;
};

/* The layout for a CPython whose Py_Version is version_hex
 * (PY_VERSION_HEX: 0x030b02f0 is 3.11.2 final), or NULL when unknown. */
const struct pyframes_layout *pyframes_layout(unsigned long version_hex);

/* Reads len bytes at addr of the process into buf: 0, or -errno (a short
 * read is a failure). */
typedef int (*pyframes_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Names and line tables of code objects already read, by address: a code
 * object does not change, and a stack holds the same few many times. */
#define PYFRAMES_CACHE 256

struct pyframes_code {
	uint64_t addr;            /* 0: a free slot */
	char *name, *file;
	int firstlineno, units;   /* units: the code's length in 2-byte units */
	uint8_t *table;
	size_t table_len;
};

struct pyframes {
	const struct pyframes_layout *l;
	pyframes_read_fn read;
	void *ctx;
	/* in the process: _PyRuntime and the three types */
	uint64_t runtime, code_type, str_type, bytes_type;
	struct pyframes_code cache[PYFRAMES_CACHE];
};

/* Ready to walk: py is filled in (nothing allocated yet). */
void pyframes_init(struct pyframes *py, const struct pyframes_layout *l, pyframes_read_fn read, void *ctx,
		   uint64_t runtime, uint64_t code_type, uint64_t str_type, uint64_t bytes_type);

/* Frees the cache. */
void pyframes_free(struct pyframes *py);

/* A thread state: its address and the OS thread it belongs to. */
struct pyframes_tstate {
	uint64_t addr;
	long tid;
	bool gil;                 /* it holds the GIL */
};

/* The thread states of every interpreter, up to max of them into out.
 * Returns how many, or -errno when _PyRuntime cannot be read. */
int pyframes_tstates(struct pyframes *py, struct pyframes_tstate *out, int max);

/* One Python frame. */
struct pyframes_frame {
	char *function;           /* co_qualname ("Class.method"), malloc'd */
	char *file;               /* co_filename, malloc'd */
	int line;                 /* -1: unknown */
	bool entry;               /* the first frame of a _PyEval_EvalFrameDefault call */
};

/* The frames of thread state tstate, innermost first, up to max into
 * out (the caller frees each one's strings: pyframes_frame_free).
 * *complete says whether the walk reached the thread's first frame; it is
 * false when max cut it or memory stopped making sense.  Returns how many
 * frames, or -errno when the thread state cannot be read. */
int pyframes_stack(struct pyframes *py, uint64_t tstate, struct pyframes_frame *out, int max, bool *complete);

void pyframes_frame_free(struct pyframes_frame *f);

/* Where the Python frames go among a thread's native ones, innermost
 * first both: each native frame of _PyEval_EvalFrameDefault (is_eval[i])
 * runs the Python frames from the last one placed to the next entry frame
 * (entry), which come just before it.  place[i] gets how many Python
 * frames go before native frame i, place[n_native] how many after the
 * last: those the native stack did not reach (it was cut, or no eval
 * frame was named: then all of them, at the top, place[0]). */
void pyframes_place(const bool *is_eval, int n_native, const bool *entry, int n_py, int *place);

#endif
