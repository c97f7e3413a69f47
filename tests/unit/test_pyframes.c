// SPDX-License-Identifier: MIT
/* The CPython walk on a made-up memory image laid out as pyframes.c's 3.11
 * table says (its agreement with CPython's own headers is test_py_layout's
 * business): interpreters, thread states, frames, code objects, strings of
 * every kind, and memory that stops making sense. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "leak_check.h"
#include "pyframes.h"

#define BASE 0x7f0000000000ull

static struct mem {
	uint8_t buf[1 << 16];
	size_t used;
	int reads;
} m;

static const struct pyframes_layout *l;
static uint64_t code_type, str_type, bytes_type;

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct mem *mm = ctx;

	mm->reads++;
	if (addr < BASE || addr - BASE > sizeof(mm->buf) || len > sizeof(mm->buf) - (addr - BASE))
		return -EFAULT;
	memcpy(buf, mm->buf + (addr - BASE), len);
	return 0;
}

static uint64_t alloc(size_t len)
{
	uint64_t at = BASE + m.used;

	m.used += (len + 15) & ~(size_t)15;
	cr_assert_leq(m.used, sizeof(m.buf));
	return at;
}

static void put(uint64_t addr, const void *v, size_t len)
{
	memcpy(m.buf + (addr - BASE), v, len);
}

static void put64(uint64_t addr, uint64_t v)
{
	put(addr, &v, sizeof(v));
}

/* A compact str: kind 1 (ASCII when ascii), 2 or 4, from code points. */
static uint64_t str_of(const uint32_t *cp, size_t n, unsigned kind, bool ascii)
{
	size_t data = ascii ? l->str_ascii_data : l->str_compact_data;
	uint64_t s = alloc(data + n * kind + kind);
	uint32_t state = kind << l->str_kind_shift | 1u << l->str_compact_bit | (ascii ? 1u << l->str_ascii_bit : 0);

	put64(s + l->ob_type, str_type);
	put64(s + l->str_length, n);
	put(s + l->str_state, &state, sizeof(state));
	for (size_t i = 0; i < n; i++)
		put(s + data + i * kind, &cp[i], kind); /* little-endian */
	return s;
}

static uint64_t ascii(const char *text)
{
	uint32_t cp[1024];
	size_t n = strlen(text);

	for (size_t i = 0; i < n; i++)
		cp[i] = (unsigned char)text[i];
	return str_of(cp, n, 1, true);
}

static uint64_t bytes_of(const uint8_t *b, size_t n)
{
	uint64_t o = alloc(l->bytes_data + n + 1);

	put64(o + l->ob_type, bytes_type);
	put64(o + l->ob_size, n);
	put(o + l->bytes_data, b, n);
	return o;
}

/* stuck_here's table from tests/data/pyline/cases.txt: first line 9, units
 * 2 to 21 on line 11. */
static const uint8_t stuck_table[] = { 0x80, 0x00, 0xf0, 0x02, 0x01, 0x05, 0x18, 0xdd, 0x08, 0x0c, 0x8c, 0x0a, 0x90,
				       0x33, 0x89, 0x0f, 0x8c, 0x0f, 0x88, 0x0f, 0xf0, 0x03, 0x01, 0x05, 0x18 };

static uint64_t code_of(uint64_t name, uint64_t qualname, uint64_t file, int32_t firstlineno, int units)
{
	uint64_t c = alloc(l->code_code + 2 * (size_t)units);

	put64(c + l->ob_type, code_type);
	put64(c + l->ob_size, (uint64_t)units);
	put(c + l->code_firstlineno, &firstlineno, sizeof(firstlineno));
	put64(c + l->code_name, name);
	put64(c + l->code_qualname, qualname);
	put64(c + l->code_filename, file);
	put64(c + l->code_linetable, bytes_of(stuck_table, sizeof(stuck_table)));
	return c;
}

/* A frame of code at unit (-1: not started), entry or not, before previous. */
static uint64_t frame_of(uint64_t code, int unit, bool entry, uint64_t previous)
{
	uint64_t f = alloc(l->frame_size);
	uint8_t e = entry;

	put64(f + l->frame_code, code);
	put64(f + l->frame_previous, previous);
	put64(f + l->frame_prev_instr, code + l->code_code + (uint64_t)(2 * unit));
	put(f + l->frame_is_entry, &e, 1);
	return f;
}

static uint64_t tstate_of(uint64_t tid, uint64_t top, uint64_t next)
{
	uint64_t ts = alloc(l->tstate_native_thread_id + 8), cframe = alloc(l->cframe_current_frame + 8);

	put64(cframe + l->cframe_current_frame, top);
	put64(ts + l->tstate_cframe, cframe);
	put64(ts + l->tstate_native_thread_id, tid);
	put64(ts + l->tstate_next, next);
	return ts;
}

static uint64_t runtime_of(uint64_t threads, uint64_t gil_holder)
{
	uint64_t rt = alloc(l->runtime_gil_locked + 8), interp = alloc(l->interp_threads_head + 8);
	int32_t locked = gil_holder != 0;

	put64(interp + l->interp_threads_head, threads);
	put64(interp + l->interp_next, 0);
	put64(rt + l->runtime_interpreters_head, interp);
	put64(rt + l->runtime_gil_last_holder, gil_holder);
	put(rt + l->runtime_gil_locked, &locked, sizeof(locked));
	return rt;
}

static void setup(void)
{
	memset(&m, 0, sizeof(m));
	cr_assert_not_null(l = pyframes_layout(0x030b02f0));
	code_type = alloc(8);
	str_type = alloc(8);
	bytes_type = alloc(8);
}

TestSuite(pyframes, .init = setup);

static void init(struct pyframes *py, uint64_t runtime)
{
	pyframes_init(py, l, mem_read, &m, runtime, code_type, str_type, bytes_type);
}

LEAK_TEST(pyframes, the_layout_is_cpython_3_11_s_alone)
{
	cr_assert_not_null(pyframes_layout(0x030b00f0), "3.11.0");
	cr_assert_not_null(pyframes_layout(0x030b07f0), "3.11.7");
	cr_assert_not_null(pyframes_layout(0x030b00c1), "3.11.0rc1");
	cr_assert_null(pyframes_layout(0x030b00a7), "3.11.0a7 moved things around");
	cr_assert_null(pyframes_layout(0x030b00b4), "3.11.0b4");
	cr_assert_null(pyframes_layout(0x030c01f0), "3.12.1");
	cr_assert_null(pyframes_layout(0x030a0df0), "3.10.13");
	cr_assert_null(pyframes_layout(0), "no version");
}

LEAK_TEST(pyframes, a_thread_s_frames_have_their_function_file_and_line)
{
	const uint32_t e_acute[] = { 't', 'r', 0xe9, '.', 'p', 'y' };        /* latin-1, kind 1 */
	const uint32_t snake[] = { '/', 0x10d, '.', 'p', 'y' };               /* kind 2 */
	const uint32_t emoji[] = { 0x1f40d, 0xd800, 0x110000 };               /* kind 4, two not chars */
	uint64_t inner = code_of(ascii("method"), ascii("Outer.method"), str_of(e_acute, 6, 1, false), 9, 22),
		 outer = code_of(ascii("<module>"), str_of(emoji, 3, 4, false), str_of(snake, 5, 2, false), 1, 22);
	uint64_t f2 = frame_of(outer, -1, true, 0), f1 = frame_of(inner, 5, false, f2);
	uint64_t t2 = tstate_of(102, 0, 0), t1 = tstate_of(101, f1, t2);
	struct pyframes py;
	struct pyframes_tstate ts[4];
	struct pyframes_frame f[8];
	bool complete;

	init(&py, runtime_of(t1, t2));
	cr_assert_eq(pyframes_tstates(&py, ts, 4), 2);
	cr_assert_eq(ts[0].tid, 101);
	cr_assert_eq(ts[0].addr, t1);
	cr_assert_not(ts[0].gil);
	cr_assert_eq(ts[1].tid, 102);
	cr_assert(ts[1].gil, "the GIL's last holder, and it is locked");
	cr_assert_eq(pyframes_tstates(&py, ts, 1), 1, "max holds");

	cr_assert_eq(pyframes_stack(&py, t1, f, 8, &complete), 2);
	cr_assert(complete);
	cr_assert_str_eq(f[0].function, "Outer.method", "the qualified name");
	cr_assert_str_eq(f[0].file, "tr\xc3\xa9.py");
	cr_assert_eq(f[0].line, 11);
	cr_assert_not(f[0].entry);
	cr_assert_str_eq(f[1].function, "\xf0\x9f\x90\x8d\xef\xbf\xbd\xef\xbf\xbd");
	cr_assert_str_eq(f[1].file, "/\xc4\x8d.py");
	cr_assert_eq(f[1].line, 1, "not started: its first line");
	cr_assert(f[1].entry);
	for (int i = 0; i < 2; i++)
		pyframes_frame_free(&f[i]);

	/* the code objects come from the cache the second time */
	m.reads = 0;
	cr_assert_eq(pyframes_stack(&py, t1, f, 8, &complete), 2);
	cr_assert_leq(m.reads, 8, "%d reads", m.reads);
	for (int i = 0; i < 2; i++)
		pyframes_frame_free(&f[i]);

	cr_assert_eq(pyframes_stack(&py, t1, f, 1, &complete), 1);
	cr_assert_not(complete, "cut by max");
	pyframes_frame_free(&f[0]);
	cr_assert_eq(pyframes_stack(&py, t2, f, 8, &complete), 0, "a thread state with no frame");
	cr_assert(complete);
	pyframes_free(&py);
}

LEAK_TEST(pyframes, memory_that_stops_making_sense_ends_the_walk)
{
	uint64_t code = code_of(ascii("f"), ascii("f"), ascii("f.py"), 1, 22), not_code = ascii("nope");
	uint64_t loop = frame_of(code, 0, false, 0), bad = frame_of(not_code, 0, false, 0);
	uint64_t wild = frame_of(code, 0, false, 0x1000), past = frame_of(code, 40, false, 0);
	struct pyframes py;
	struct pyframes_frame f[8];
	bool complete;

	put64(loop + l->frame_previous, loop);
	init(&py, runtime_of(0, 0));
	cr_assert_eq(pyframes_stack(&py, tstate_of(1, loop, 0), f, 8, &complete), 1, "a frame before itself");
	cr_assert_not(complete);
	pyframes_frame_free(&f[0]);
	cr_assert_eq(pyframes_stack(&py, tstate_of(1, bad, 0), f, 8, &complete), 0, "not a code object");
	cr_assert_not(complete);
	cr_assert_eq(pyframes_stack(&py, tstate_of(1, wild, 0), f, 8, &complete), 1, "a previous frame unmapped");
	cr_assert_not(complete);
	pyframes_frame_free(&f[0]);
	cr_assert_eq(pyframes_stack(&py, tstate_of(1, past, 0), f, 8, &complete), 1);
	cr_assert_eq(f[0].line, -1, "an instruction past the code has no line");
	pyframes_frame_free(&f[0]);
	cr_assert_lt(pyframes_stack(&py, 0x10, f, 8, &complete), 0, "no thread state there");
	pyframes_free(&py);

	init(&py, 0x20);
	cr_assert_eq(pyframes_tstates(&py, (struct pyframes_tstate[1]){ { 0 } }, 1), -EFAULT);
	pyframes_free(&py);
}

LEAK_TEST(pyframes, a_long_name_is_cut_and_a_legacy_string_is_not_read)
{
	char longname[600];
	uint64_t legacy = ascii("legacy");
	uint32_t state = 1u << l->str_kind_shift; /* not compact */
	struct pyframes py;
	struct pyframes_frame f[2];
	bool complete;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	put(legacy + l->str_state, &state, sizeof(state));
	init(&py, 0);
	cr_assert_eq(pyframes_stack(&py, tstate_of(1, frame_of(code_of(ascii("n"), ascii(longname), ascii("f.py"), 1, 2),
								   0, true, 0), 0),
				    f, 2, &complete), 1);
	cr_assert_eq(strlen(f[0].function), 512);
	pyframes_frame_free(&f[0]);
	cr_assert_eq(pyframes_stack(&py, tstate_of(1, frame_of(code_of(ascii("n"), ascii("q"), legacy, 1, 2), 0, true, 0),
						0),
				    f, 2, &complete), 0, "a code object whose file cannot be read ends the walk");
	pyframes_free(&py);
}

/* place[] for native frames is_eval (1: an eval frame) and Python frames
 * entry (1: an entry frame). */
static void check_place(const char *is_eval, const char *entry, const int *want)
{
	int nn = (int)strlen(is_eval), np = (int)strlen(entry), place[16];
	bool ev[16] = { 0 }, en[16] = { 0 };

	for (int i = 0; i < nn; i++)
		ev[i] = is_eval[i] == '1';
	for (int i = 0; i < np; i++)
		en[i] = entry[i] == '1';
	pyframes_place(ev, nn, en, np, place);
	for (int i = 0; i <= nn; i++)
		cr_assert_eq(place[i], want[i], "%s / %s: place[%d] = %d", is_eval, entry, i, place[i]);
}

LEAK_TEST(pyframes, python_frames_go_before_the_eval_frame_that_runs_them)
{
	/* two eval loops: the inner runs three frames, the outer one */
	check_place("001001", "0011", (int[]){ 0, 0, 3, 0, 0, 1, 0 });
	/* the native stack ends before the outer loop: what is left goes last */
	check_place("001", "0011", (int[]){ 0, 0, 3, 1 });
	/* no eval frame named (no symbols): all of them first */
	check_place("000", "01", (int[]){ 2, 0, 0, 0 });
	check_place("", "1", (int[]){ 1 });
	/* no Python frame */
	check_place("010", "", (int[]){ 0, 0, 0, 0 });
	/* an eval loop with no entry frame seen takes the rest */
	check_place("0101", "000", (int[]){ 0, 3, 0, 0, 0 });
}
