// SPDX-License-Identifier: MIT
/* A shared library loaded on first use instead of at exec: libdw (stacks)
 * and libevent_extra (--metrics-port) are six of the libraries slotrun
 * would otherwise map at every start, and most runs never use them (a
 * node's start is part of every job's launch; bench/README.md has the
 * figures).  The user keeps a struct of typed function pointers and lists
 * each one's symbol and place in it:
 *
 *   static struct { __typeof__(dwfl_begin) *begin; } dw;
 *   static const struct lazylib_sym dw_syms[] = {
 *           { "dwfl_begin", offsetof(__typeof__(dw), begin) }, { NULL, 0 } };
 *   static struct lazylib dw_lib = LAZYLIB_INIT("libdw.so.1", "libdw1", dw_syms, &dw);
 *
 *   if (lazylib_load(&dw_lib) < 0) ... dw_lib.err says why ...
 *
 * Safe from any thread; the library stays loaded. */
#ifndef SLOTRUN_LAZYLIB_H
#define SLOTRUN_LAZYLIB_H

#include <pthread.h>
#include <stddef.h>

struct lazylib_sym {
	const char *name;
	size_t offset;      /* of its function pointer in the user's struct */
};

struct lazylib {
	const char *soname;            /* "libdw.so.1" */
	const char *package;           /* the Debian package that has it */
	const struct lazylib_sym *syms; /* ends with a NULL name */
	void *fns;                     /* the user's struct */
	pthread_mutex_t lock;
	int state;                     /* 0: not tried, 1: loaded, -errno: failed */
	char err[256];                 /* the failure, one line */
};

#define LAZYLIB_INIT(soname, package, syms, fns) \
	{ (soname), (package), (syms), (fns), PTHREAD_MUTEX_INITIALIZER, 0, "" }

/* Loads it and every symbol the first time (later calls say what the
 * first found).  0, or -ELIBACC with l->err: "cannot load libdw.so.1
 * (Debian: libdw1): <why>". */
int lazylib_load(struct lazylib *l);

#endif
