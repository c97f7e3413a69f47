// SPDX-License-Identifier: MIT
#include "pyframes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyline.h"

/* Bounds on what memory may claim: interpreters, thread states in each,
 * frames in a walk, characters in a name or a file, bytes in a line table. */
#define MAX_INTERPRETERS 64
#define MAX_TSTATES 4096
#define MAX_NAME 512
#define MAX_TABLE (256 * 1024)

/* CPython 3.11: offsets for x86-64 and the other 64-bit Linux ABIs (LP64),
 * a release build (no Py_TRACE_REFS, whose object header is larger). */
static const struct pyframes_layout py311 = {
	.major = 3,
	.minor = 11,
	.runtime_interpreters_head = 40,
	.runtime_gil_last_holder = 368,
	.runtime_gil_locked = 376,
	.interp_next = 0,
	.interp_threads_head = 16,
	.tstate_next = 8,
	.tstate_cframe = 56,
	.tstate_native_thread_id = 160,
	.cframe_current_frame = 8,
	.frame_code = 32,
	.frame_previous = 48,
	.frame_prev_instr = 56,
	.frame_is_entry = 68,
	.frame_size = 72,
	.code_firstlineno = 72,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_linetable = 136,
	.code_code = 184,
	.ob_type = 8,
	.ob_size = 16,
	.bytes_data = 32,
	.str_length = 16,
	.str_state = 32,
	.str_ascii_data = 48,
	.str_compact_data = 72,
	.str_kind_shift = 2,
	.str_compact_bit = 5,
	.str_ascii_bit = 6,
};

const struct pyframes_layout *pyframes_layout(unsigned long version_hex)
{
	unsigned major = (version_hex >> 24) & 0xff, minor = (version_hex >> 16) & 0xff;
	unsigned level = (version_hex >> 4) & 0xf;

	/* a release candidate or a final release: the alphas and betas
	 * moved these structures around */
	if (sizeof(void *) != 8 || level < 0xc)
		return NULL;
	if (major == py311.major && minor == py311.minor)
		return &py311;
	return NULL;
}

void pyframes_init(struct pyframes *py, const struct pyframes_layout *l, pyframes_read_fn read, void *ctx,
		   uint64_t runtime, uint64_t code_type, uint64_t str_type, uint64_t bytes_type)
{
	memset(py, 0, sizeof(*py));
	py->l = l;
	py->read = read;
	py->ctx = ctx;
	py->runtime = runtime;
	py->code_type = code_type;
	py->str_type = str_type;
	py->bytes_type = bytes_type;
}

static void code_clear(struct pyframes_code *c)
{
	free(c->name);
	free(c->file);
	free(c->table);
	memset(c, 0, sizeof(*c));
}

void pyframes_free(struct pyframes *py)
{
	for (int i = 0; i < PYFRAMES_CACHE; i++)
		code_clear(&py->cache[i]);
}

void pyframes_frame_free(struct pyframes_frame *f)
{
	free(f->function);
	free(f->file);
	f->function = f->file = NULL;
}

/* ---- Reading ---- */

static int read_ptr(struct pyframes *py, uint64_t addr, uint64_t *v)
{
	return py->read(py->ctx, addr, v, sizeof(*v));
}

/* Whether the object at addr has the type at type_addr. */
static bool has_type(struct pyframes *py, uint64_t addr, uint64_t type_addr)
{
	uint64_t type;

	return addr && type_addr && read_ptr(py, addr + py->l->ob_type, &type) == 0 && type == type_addr;
}

/* Appends code point c to out as UTF-8 (a surrogate or a value past
 * Unicode as U+FFFD). */
static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if ((c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
		c = 0xfffd;
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* A str object as UTF-8, malloc'd: compact strings only (the names and
 * file names of code objects always are), at most MAX_NAME characters.
 * NULL when it is not a str or cannot be read. */
static char *read_str(struct pyframes *py, uint64_t addr)
{
	const struct pyframes_layout *l = py->l;
	uint64_t length;
	uint32_t state;
	unsigned kind;
	size_t n, at = 0;
	uint8_t *raw;
	char *out;

	if (!has_type(py, addr, py->str_type) || read_ptr(py, addr + l->str_length, &length) < 0 ||
	    py->read(py->ctx, addr + l->str_state, &state, sizeof(state)) < 0)
		return NULL;
	kind = (state >> l->str_kind_shift) & 7;
	if (!(state >> l->str_compact_bit & 1) || (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	n = length > MAX_NAME ? MAX_NAME : (size_t)length;
	if (!(raw = malloc(n * kind + 1)) || !(out = malloc(n * 4 + 1))) {
		free(raw);
		return NULL;
	}
	if (py->read(py->ctx, addr + (state >> l->str_ascii_bit & 1 ? l->str_ascii_data : l->str_compact_data), raw,
		     n * kind) < 0) {
		free(raw);
		free(out);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t c;

		if (kind == 1)
			c = raw[i];
		else if (kind == 2)
			c = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
		else
			c = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 | (uint32_t)raw[4 * i + 2] << 16 |
			    (uint32_t)raw[4 * i + 3] << 24;
		at += put_utf8(out + at, c);
	}
	out[at] = '\0';
	free(raw);
	return out;
}

/* A bytes object's contents, malloc'd, at most MAX_TABLE bytes. */
static uint8_t *read_bytes(struct pyframes *py, uint64_t addr, size_t *len)
{
	uint64_t size;
	uint8_t *b;

	if (!has_type(py, addr, py->bytes_type) || read_ptr(py, addr + py->l->ob_size, &size) < 0 ||
	    size > MAX_TABLE || !(b = malloc(size ? size : 1)))
		return NULL;
	if (size && py->read(py->ctx, addr + py->l->bytes_data, b, size) < 0) {
		free(b);
		return NULL;
	}
	*len = size;
	return b;
}

static struct pyframes_code *code_slot(struct pyframes *py, uint64_t addr)
{
	return &py->cache[(addr >> 4) % PYFRAMES_CACHE];
}

/* The code object at addr, from the cache or read now; NULL when it is
 * not one or cannot be read. */
static const struct pyframes_code *code_at(struct pyframes *py, uint64_t addr)
{
	const struct pyframes_layout *l = py->l;
	struct pyframes_code *c = code_slot(py, addr), fresh = { .addr = addr };
	uint64_t name, qualname, filename, linetable, size;
	int32_t firstlineno;

	if (c->addr == addr)
		return c;
	if (!has_type(py, addr, py->code_type) || read_ptr(py, addr + l->code_name, &name) < 0 ||
	    read_ptr(py, addr + l->code_qualname, &qualname) < 0 ||
	    read_ptr(py, addr + l->code_filename, &filename) < 0 ||
	    read_ptr(py, addr + l->code_linetable, &linetable) < 0 || read_ptr(py, addr + l->ob_size, &size) < 0 ||
	    py->read(py->ctx, addr + l->code_firstlineno, &firstlineno, sizeof(firstlineno)) < 0)
		return NULL;
	fresh.firstlineno = firstlineno;
	fresh.units = size > MAX_TABLE ? MAX_TABLE : (int)size;
	if (!(fresh.name = read_str(py, qualname)))
		fresh.name = read_str(py, name);
	fresh.file = read_str(py, filename);
	fresh.table = read_bytes(py, linetable, &fresh.table_len);
	if (!fresh.name || !fresh.file) {
		code_clear(&fresh);
		return NULL;
	}
	code_clear(c);
	*c = fresh;
	return c;
}

/* ---- Walking ---- */

int pyframes_tstates(struct pyframes *py, struct pyframes_tstate *out, int max)
{
	const struct pyframes_layout *l = py->l;
	uint64_t interp, holder = 0;
	int32_t locked = 0;
	int n = 0, e;

	if ((e = read_ptr(py, py->runtime + l->runtime_interpreters_head, &interp)) < 0)
		return e;
	if (py->read(py->ctx, py->runtime + l->runtime_gil_locked, &locked, sizeof(locked)) < 0 ||
	    read_ptr(py, py->runtime + l->runtime_gil_last_holder, &holder) < 0)
		holder = 0;
	for (int i = 0; interp && i < MAX_INTERPRETERS && n < max; i++) {
		uint64_t ts;

		if (read_ptr(py, interp + l->interp_threads_head, &ts) < 0)
			break;
		for (int k = 0; ts && k < MAX_TSTATES && n < max; k++) {
			uint64_t tid;

			if (read_ptr(py, ts + l->tstate_native_thread_id, &tid) < 0)
				break;
			out[n++] = (struct pyframes_tstate){ .addr = ts, .tid = (long)tid,
							     .gil = locked > 0 && holder == ts };
			if (read_ptr(py, ts + l->tstate_next, &ts) < 0)
				break;
		}
		if (read_ptr(py, interp + l->interp_next, &interp) < 0)
			break;
	}
	return n;
}

/* The line a frame is at: its last instruction's, found in the table. */
static int frame_line(const struct pyframes_code *c, uint64_t code_start, uint64_t prev_instr)
{
	uint64_t unit = (prev_instr - code_start) / 2;

	if (prev_instr < code_start)
		return c->firstlineno; /* not started */
	if (unit >= (uint64_t)c->units || !c->table)
		return -1;
	return pyline_find(c->table, c->table_len, c->firstlineno, (int)unit);
}

int pyframes_stack(struct pyframes *py, uint64_t tstate, struct pyframes_frame *out, int max, bool *complete)
{
	const struct pyframes_layout *l = py->l;
	uint64_t cframe, frame;
	int n = 0, e;

	*complete = false;
	if ((e = read_ptr(py, tstate + l->tstate_cframe, &cframe)) < 0)
		return e;
	if (!cframe) { /* a thread state that runs nothing */
		*complete = true;
		return 0;
	}
	if ((e = read_ptr(py, cframe + l->cframe_current_frame, &frame)) < 0)
		return e;
	while (frame && n < max) {
		uint8_t raw[128];
		uint64_t code, previous, prev_instr;
		const struct pyframes_code *c;

		if (l->frame_size > sizeof(raw) || py->read(py->ctx, frame, raw, l->frame_size) < 0)
			return n;
		memcpy(&code, raw + l->frame_code, sizeof(code));
		memcpy(&previous, raw + l->frame_previous, sizeof(previous));
		memcpy(&prev_instr, raw + l->frame_prev_instr, sizeof(prev_instr));
		if (!(c = code_at(py, code)))
			return n;
		out[n] = (struct pyframes_frame){
			.function = strdup(c->name),
			.file = strdup(c->file),
			.line = frame_line(c, code + l->code_code, prev_instr),
			.entry = raw[l->frame_is_entry] != 0,
		};
		if (!out[n].function || !out[n].file) {
			pyframes_frame_free(&out[n]);
			return n;
		}
		n++;
		if (previous == frame)
			return n;
		frame = previous;
	}
	*complete = frame == 0;
	return n;
}

void pyframes_place(const bool *is_eval, int n_native, const bool *entry, int n_py, int *place)
{
	int next = 0;
	bool any_eval = false;

	for (int i = 0; i <= n_native; i++)
		place[i] = 0;
	for (int i = 0; i < n_native && next < n_py; i++) {
		if (!is_eval[i])
			continue;
		any_eval = true;
		while (next < n_py) {
			place[i]++;
			if (entry[next++])
				break;
		}
	}
	if (!any_eval)
		place[0] = n_py;
	else
		place[n_native] = n_py - next;
}
