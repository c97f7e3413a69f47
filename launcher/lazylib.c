// SPDX-License-Identifier: MIT
#include "lazylib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static int try_load(struct lazylib *l)
{
	void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(l->err, sizeof(l->err), "cannot load %s (Debian: %s): %s", l->soname, l->package,
			 dlerror());
		return -ELIBACC;
	}
	for (const struct lazylib_sym *s = l->syms; s->name; s++) {
		void *f = dlsym(h, s->name);

		if (!f) {
			snprintf(l->err, sizeof(l->err), "%s has no %s (Debian: %s, a newer version)", l->soname,
				 s->name, l->package);
			dlclose(h);
			return -ELIBACC;
		}
		/* POSIX lets dlsym's object pointer stand for a function */
		memcpy((char *)l->fns + s->offset, &f, sizeof(f));
	}
	return 1;
}

int lazylib_load(struct lazylib *l)
{
	int state;

	pthread_mutex_lock(&l->lock);
	if (l->state == 0)
		l->state = try_load(l);
	state = l->state;
	pthread_mutex_unlock(&l->lock);
	return state < 0 ? state : 0;
}
