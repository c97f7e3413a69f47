// SPDX-License-Identifier: MIT
#include "stacks_unwind.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "lazylib.h"

struct stacks_unwind {
	Dwfl_Callbacks callbacks;               /* dwfl's for its life */
	Dwfl *dwfl;
	pid_t pid;
	bool attached;                          /* dwfl_attach_state done */
	const struct stacks_grab_thread *now;  /* the thread being unwound */
};

/* libdwfl, loaded when the first stacks are taken (lazylib.h): each
 * function named once, its pointer and its symbol made from that */
#define DW_FNS(X) \
	X(addrmodule) \
	X(attach_state) \
	X(begin) \
	X(build_id_find_debuginfo) \
	X(end) \
	X(frame_pc) \
	X(getmodules) \
	X(getthread_frames) \
	X(linux_proc_report) \
	X(module_addrinfo) \
	X(module_getsym_info) \
	X(module_getsymtab) \
	X(module_info) \
	X(report_begin) \
	X(report_end) \
	X(thread_state_registers) \
	X(linux_proc_find_elf)
#define DW_FIELD(f) __typeof__(dwfl_##f) *f;
#define DW_SYM(f) { "dwfl_" #f, offsetof(struct dw_fns, f) },
static struct dw_fns {
	DW_FNS(DW_FIELD)
} dw;
static const struct lazylib_sym dw_syms[] = { DW_FNS(DW_SYM) { NULL, 0 } };
static struct lazylib dw_lib = LAZYLIB_INIT(SLOTRUN_SONAME_DW, "libdw1", dw_syms, &dw);

/* Debug files by build ID under /usr/lib/debug: dwfl_standard_find_debuginfo
 * would go on to debuginfod (DEBUGINFOD_URLS), a download no deadline of
 * ours bounds. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	return dw.build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
					    debuginfo_file_name);
}

/* Whether libdwfl is loaded; the first failure is said once (every
 * stacks request would say it again). */
static bool dw_loaded(void)
{
	static atomic_bool said;

	if (lazylib_load(&dw_lib) == 0)
		return true;
	if (!atomic_exchange(&said, true))
		fprintf(stderr, "slotrun: native frames left out of stacks: %s\n", dw_lib.err);
	return false;
}

int stacks_unwind_open(struct stacks_unwind **up, pid_t pid)
{
	struct stacks_unwind *u = calloc(1, sizeof(*u));
	int e;

	*up = NULL;
	if (!dw_loaded()) {
		free(u);
		return -ELIBACC;
	}
	if (u)
		u->callbacks = (Dwfl_Callbacks){ .find_elf = dw.linux_proc_find_elf, .find_debuginfo = find_debuginfo };
	if (!u || !(u->dwfl = dw.begin(&u->callbacks))) {
		free(u);
		return -ENOMEM;
	}
	u->pid = pid;
	dw.report_begin(u->dwfl);
	e = dw.linux_proc_report(u->dwfl, pid);
	if (dw.report_end(u->dwfl, NULL, NULL) != 0 && e == 0)
		e = -1;
	if (e != 0) {
		dw.end(u->dwfl);
		free(u);
		return e > 0 ? -e : -ENOENT;
	}
	*up = u;
	return 0;
}

void stacks_unwind_close(struct stacks_unwind *u)
{
	if (!u)
		return;
	dw.end(u->dwfl);
	free(u);
}

/* ---- CPython's symbols ---- */

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path ? path : "";
}

/* python3.11, python3, libpython3.11.so.1.0 (python3.11-dbg's too) */
static bool cpython_module(const char *name)
{
	const char *b = base_name(name);

	if (!strncmp(b, "lib", 3))
		b += 3;
	return !strncmp(b, "python3", 7);
}

struct py_find {
	Dwfl_Module *mod;
};

static int find_py_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start, void *arg)
{
	struct py_find *f = arg;

	if (!cpython_module(name))
		return DWARF_CB_OK;
	/* the module holding _PyRuntime: a program named python3 that only
	 * loads libpython has none */
	for (int i = 0, n = dw.module_getsymtab(mod); i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dw.module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);

		if (s && !strcmp(s, "_PyRuntime") && sym.st_shndx != SHN_UNDEF) {
			f->mod = mod;
			return DWARF_CB_ABORT;
		}
	}
	return DWARF_CB_OK;
}

int stacks_unwind_python(struct stacks_unwind *u, struct stacks_unwind_py *py)
{
	static const struct {
		const char *name;
		size_t at;
	} wanted[] = {
		{ "Py_Version", offsetof(struct stacks_unwind_py, version) },
		{ "_PyRuntime", offsetof(struct stacks_unwind_py, runtime) },
		{ "PyCode_Type", offsetof(struct stacks_unwind_py, code_type) },
		{ "PyUnicode_Type", offsetof(struct stacks_unwind_py, str_type) },
		{ "PyBytes_Type", offsetof(struct stacks_unwind_py, bytes_type) },
	};
	struct py_find f = { NULL };
	const char *name;

	memset(py, 0, sizeof(*py));
	dw.getmodules(u->dwfl, find_py_module, &f, 0);
	if (!f.mod)
		return -ENOENT;
	name = dw.module_info(f.mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	snprintf(py->module, sizeof(py->module), "%s", base_name(name));
	for (int i = 0, n = dw.module_getsymtab(f.mod); i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dw.module_getsym_info(f.mod, i, &sym, &addr, NULL, NULL, NULL);

		if (!s || sym.st_shndx == SHN_UNDEF)
			continue;
		for (size_t k = 0; k < sizeof(wanted) / sizeof(wanted[0]); k++)
			if (!strcmp(s, wanted[k].name))
				*(uint64_t *)((char *)py + wanted[k].at) = addr;
	}
	return 0;
}

/* ---- Unwinding from the copy ---- */

#if STACKS_GRAB_NATIVE
static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct stacks_unwind *u = arg;

	/* one thread at a time: the one stacks_unwind_thread names */
	if (*thread_argp || !u->now)
		return 0;
	*thread_argp = (void *)u->now;
	return u->now->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct stacks_unwind *u = arg;

	if (!u->now || u->now->tid != tid)
		return false;
	*thread_argp = (void *)u->now;
	return true;
}

/* A word of the copy, or of the process as it is now: past the copy are
 * the callers' frames, which a thread that runs again leaves alone until
 * it returns to them. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct stacks_unwind *u = arg;
	const struct stacks_grab_thread *t = u->now;
	struct iovec local = { result, sizeof(*result) }, remote = { (void *)(uintptr_t)addr, sizeof(*result) };

	if (t && t->stack && addr >= t->stack_at && addr - t->stack_at + sizeof(*result) <= t->stack_len) {
		memcpy(result, t->stack + (addr - t->stack_at), sizeof(*result));
		return true;
	}
	return process_vm_readv(u->pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(*result);
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct stacks_grab_thread *t = arg;
	const struct user_regs_struct *r = &t->regs;
	/* x86-64's DWARF numbering: rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp,
	 * r8-r15, the return address (rip) */
	Dwarf_Word regs[17] = { r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp, r->r8,
				r->r9,  r->r10, r->r11, r->r12, r->r13, r->r14, r->r15, r->rip };

	return dw.thread_state_registers(thread, 0, 17, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct walk {
	struct stacks_unwind *u;
	struct stacks_frame *out;
	int n, max;
	bool cut;
};

static int on_frame(Dwfl_Frame *frame, void *arg)
{
	struct walk *w = arg;
	struct stacks_frame *f;
	Dwarf_Addr pc, at;
	bool activation;
	Dwfl_Module *mod;

	if (!dw.frame_pc(frame, &pc, &activation))
		return DWARF_CB_ABORT;
	if (w->n == w->max) {
		w->cut = true;
		return DWARF_CB_ABORT;
	}
	f = &w->out[w->n++];
	*f = (struct stacks_frame){ .pc = pc };
	/* a return address is past its call: look the call up */
	at = activation || pc == 0 ? pc : pc - 1;
	if ((mod = dw.addrmodule(w->u->dwfl, at))) {
		GElf_Off off = 0;
		GElf_Sym sym;
		const char *name = dw.module_addrinfo(mod, at, &off, &sym, NULL, NULL, NULL);

		f->module = strdup(base_name(dw.module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL)));
		if (name) {
			/* clock_nanosleep@GLIBC_2.2.5: the version says nothing here */
			f->function = strndup(name, strcspn(name, "@"));
			f->offset = off + (pc - at);
		}
	}
	return DWARF_CB_OK;
}

int stacks_unwind_thread(struct stacks_unwind *u, const struct stacks_grab_thread *t, struct stacks_frame *out,
			 int max, bool *cut)
{
	struct walk w = { .u = u, .out = out, .max = max };

	*cut = false;
	if (!u->attached && !(u->attached = dw.attach_state(u->dwfl, NULL, u->pid, &thread_callbacks, u)))
		return 0;
	u->now = t;
	/* an error at the end of the stack is how some unwinds end */
	(void)dw.getthread_frames(u->dwfl, t->tid, on_frame, &w);
	u->now = NULL;
	*cut = w.cut;
	return w.n;
}
#else
int stacks_unwind_thread(struct stacks_unwind *u, const struct stacks_grab_thread *t, struct stacks_frame *out,
			 int max, bool *cut)
{
	*cut = false;
	return 0;
}
#endif

bool stacks_unwind_is_eval(const char *function)
{
	static const char eval[] = "_PyEval_EvalFrameDefault";
	size_t n = sizeof(eval) - 1;

	return function && !strncmp(function, eval, n) && (function[n] == '\0' || function[n] == '.');
}
