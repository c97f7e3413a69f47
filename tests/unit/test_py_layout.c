// SPDX-License-Identifier: MIT
/* pyframes.c's table for CPython 3.11 against CPython's own headers
 * (python3.11-dev, found by pkg-config as python-3.11 when this was built):
 * every offset the walk reads, the sizes of the fields read, and where the
 * bits of a str's state lie.  Skipped, saying so, without the headers. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#ifdef HAVE_PY311_HEADERS
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#endif

#include "pyframes.h"

#ifdef HAVE_PY311_HEADERS
#define SAME(field, offset) cr_expect_eq(l->field, offset, #field ": %zu in the table, %zu in CPython", \
					 l->field, (size_t)(offset))
#define SIZE(type, member, n) cr_expect_eq(sizeof(((type *)0)->member), n, #type "." #member " is not %d bytes", n)
#endif

Test(py_layout, the_3_11_table_is_cpython_s_own)
{
#ifndef HAVE_PY311_HEADERS
	cr_skip_test("python3.11-dev's headers were not found when this was built (pkg-config python-3.11)");
#else
	const struct pyframes_layout *l = pyframes_layout(PY_VERSION_HEX);
	PyASCIIObject o;
	uint32_t state;

	cr_assert_eq(PY_MAJOR_VERSION * 100 + PY_MINOR_VERSION, 311, "the headers are CPython %d.%d's",
		     PY_MAJOR_VERSION, PY_MINOR_VERSION);
	cr_assert_not_null(l, "no table for %s", PY_VERSION);
	SAME(runtime_interpreters_head, offsetof(_PyRuntimeState, interpreters.head));
	SAME(runtime_gil_last_holder, offsetof(_PyRuntimeState, ceval.gil.last_holder));
	SAME(runtime_gil_locked, offsetof(_PyRuntimeState, ceval.gil.locked));
	SAME(interp_next, offsetof(PyInterpreterState, next));
	SAME(interp_threads_head, offsetof(PyInterpreterState, threads.head));
	SAME(tstate_next, offsetof(PyThreadState, next));
	SAME(tstate_cframe, offsetof(PyThreadState, cframe));
	SAME(tstate_native_thread_id, offsetof(PyThreadState, native_thread_id));
	SAME(cframe_current_frame, offsetof(_PyCFrame, current_frame));
	SAME(frame_code, offsetof(_PyInterpreterFrame, f_code));
	SAME(frame_previous, offsetof(_PyInterpreterFrame, previous));
	SAME(frame_prev_instr, offsetof(_PyInterpreterFrame, prev_instr));
	SAME(frame_is_entry, offsetof(_PyInterpreterFrame, is_entry));
	SAME(frame_size, offsetof(_PyInterpreterFrame, localsplus));
	SAME(code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	SAME(code_filename, offsetof(PyCodeObject, co_filename));
	SAME(code_name, offsetof(PyCodeObject, co_name));
	SAME(code_qualname, offsetof(PyCodeObject, co_qualname));
	SAME(code_linetable, offsetof(PyCodeObject, co_linetable));
	SAME(code_code, offsetof(PyCodeObject, co_code_adaptive));
	SAME(ob_type, offsetof(PyObject, ob_type));
	SAME(ob_size, offsetof(PyVarObject, ob_size));
	SAME(bytes_data, offsetof(PyBytesObject, ob_sval));
	SAME(str_length, offsetof(PyASCIIObject, length));
	SAME(str_state, offsetof(PyASCIIObject, state));
	SAME(str_ascii_data, sizeof(PyASCIIObject));
	SAME(str_compact_data, sizeof(PyCompactUnicodeObject));
	/* what is read as 8, 4 or 1 bytes is that wide */
	SIZE(PyThreadState, native_thread_id, 8);
	SIZE(PyCodeObject, co_firstlineno, 4);
	SIZE(_PyInterpreterFrame, is_entry, 1);
	SIZE(_PyInterpreterFrame, prev_instr, 8);
	SIZE(PyVarObject, ob_size, 8);
	SIZE(PyASCIIObject, length, 8);
	SIZE(PyASCIIObject, state, 4);
	cr_expect_eq(sizeof(_Py_CODEUNIT), 2, "a code unit is 2 bytes");
	cr_expect_eq(sizeof(((_PyRuntimeState *)0)->ceval.gil.locked), 4);
	/* a str's state: the bits where the table says */
	memset(&o, 0, sizeof(o));
	o.state.kind = PyUnicode_4BYTE_KIND;
	o.state.compact = 1;
	o.state.ascii = 1;
	memcpy(&state, (char *)&o + offsetof(PyASCIIObject, state), sizeof(state));
	cr_expect_eq(state >> l->str_kind_shift & 7, PyUnicode_4BYTE_KIND, "state %#x", state);
	cr_expect_eq(state >> l->str_compact_bit & 1, 1, "state %#x", state);
	cr_expect_eq(state >> l->str_ascii_bit & 1, 1, "state %#x", state);
	o.state.ascii = 0;
	o.state.compact = 0;
	o.state.kind = PyUnicode_1BYTE_KIND;
	memcpy(&state, (char *)&o + offsetof(PyASCIIObject, state), sizeof(state));
	cr_expect_eq(state >> l->str_kind_shift & 7, PyUnicode_1BYTE_KIND, "state %#x", state);
	cr_expect_eq(state >> l->str_compact_bit & 1, 0, "state %#x", state);
	cr_expect_eq(state >> l->str_ascii_bit & 1, 0, "state %#x", state);
#endif
}
