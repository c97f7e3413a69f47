// SPDX-License-Identifier: MIT
/* stacks_text: a collection as lines (stacks.h).  Pure. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quote.h"
#include "stacks.h"

/* The most of a name or a path shown. */
#define SHOWN_NAME 200
#define SHOWN_PATH 400

struct text {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->failed = true;
		return;
	}
	if ((size_t)n >= t->cap - t->len) {
		size_t cap = t->cap;
		char *b;

		while (cap - t->len <= (size_t)n)
			cap *= 2;
		if (!(b = realloc(t->buf, cap))) {
			t->failed = true;
			return;
		}
		t->buf = b;
		t->cap = cap;
		va_start(ap, fmt);
		vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
	}
	t->len += (size_t)n;
}

/* "state S, waiting in hrtimer_nanosleep" */
static void put_state(struct text *t, char state, const char *wchan)
{
	char w[QUOTE_SIZE(64)];

	put(t, "state %c", state);
	if (wchan[0])
		put(t, ", waiting in %s", quote_ctl(w, sizeof(w), wchan, 64));
}

/* Why a thread has no stack, after its state. */
static void put_why(struct text *t, const struct stacks_thread *th)
{
	switch (th->why) {
	case STACKS_TAKEN:
		if (th->nframes == 0)
			put(t, ": no frames found");
		return;
	case STACKS_NOT_STOPPED:
		put(t, ": did not stop within %.1f s", th->waited);
		return;
	case STACKS_DENIED:
		put(t, ": cannot trace it: %s", strerror(th->error));
		return;
	case STACKS_GONE:
		put(t, ": exited");
		return;
	case STACKS_NO_TIME:
		put(t, ": not taken, out of time");
		return;
	case STACKS_UNSUPPORTED:
		if (th->nframes == 0)
			put(t, ": native stacks are taken on x86-64 only");
		return;
	}
}

static void put_frame(struct text *t, const char *indent, int i, const struct stacks_frame *f)
{
	char a[QUOTE_SIZE(SHOWN_NAME)], b[QUOTE_SIZE(SHOWN_PATH)];

	if (f->python) {
		put(t, "%s#%-2d %s (%s:", indent, i, f->function ? quote_ctl(a, sizeof(a), f->function, SHOWN_NAME) : "??",
		    f->file ? quote_ctl(b, sizeof(b), f->file, SHOWN_PATH) : "??");
		if (f->line >= 0)
			put(t, "%d)\n", f->line);
		else
			put(t, "?)\n");
		return;
	}
	put(t, "%s#%-2d 0x%016" PRIx64 " %s", indent, i, f->pc,
	    f->function ? quote_ctl(a, sizeof(a), f->function, SHOWN_NAME) : "??");
	if (f->function && f->offset)
		put(t, "+0x%" PRIx64, f->offset);
	if (f->module)
		put(t, " (%s)", quote_ctl(b, sizeof(b), f->module, SHOWN_NAME));
	put(t, "\n");
}

static void put_frames(struct text *t, const char *indent, const struct stacks_thread *th, int max)
{
	int n = max > 0 && max < th->nframes ? max : th->nframes;

	for (int i = 0; i < n; i++)
		put_frame(t, indent, i, &th->frames[i]);
	if (n < th->nframes)
		put(t, "%s... %d more frames%s\n", indent, th->nframes - n, th->cut ? " and more" : "");
	else if (th->cut && n > 0)
		put(t, "%s... more frames\n", indent);
}

static void put_proc(struct text *t, const struct stacks_proc *p, const struct stacks_text_opts *o)
{
	int shown = o->max_threads > 0 && o->max_threads < p->nthreads ? o->max_threads : p->nthreads;
	bool alone = p->nthreads == 1 && p->more_threads == 0 && p->threads[0].tid == p->pid;
	char name[QUOTE_SIZE(16)], note[QUOTE_SIZE(sizeof(p->note))];

	put(t, "pid %d (%s) ", (int)p->pid, quote_ctl(name, sizeof(name), p->name, 16));
	put_state(t, p->state, p->wchan);
	if (p->python[0])
		put(t, ", Python %s", p->python);
	if (p->note[0])
		put(t, "; %s", quote_ctl(note, sizeof(note), p->note, sizeof(p->note)));
	if (!p->stacks && p->nthreads == 0) {
		put(t, "%s\n", p->state == 'Z' ? "" : ": no stack, out of time");
		return;
	}
	if (alone) { /* one thread: its frames right under the process */
		if (p->threads[0].gil)
			put(t, ", holds the GIL");
		put_why(t, &p->threads[0]);
		put(t, "\n");
		put_frames(t, "  ", &p->threads[0], o->max_frames);
		return;
	}
	put(t, "\n");
	for (int i = 0; i < shown; i++) {
		const struct stacks_thread *th = &p->threads[i];

		put(t, "  thread %d (%s) ", (int)th->tid, quote_ctl(name, sizeof(name), th->name, 16));
		put_state(t, th->state, th->wchan);
		if (th->gil)
			put(t, ", holds the GIL");
		put_why(t, th);
		put(t, "\n");
		put_frames(t, "    ", th, o->max_frames);
	}
	if (p->nthreads - shown + p->more_threads > 0)
		put(t, "  and %d more threads\n", p->nthreads - shown + p->more_threads);
}

char *stacks_text(const struct stacks *s, const struct stacks_text_opts *o)
{
	struct text t = { .buf = malloc(256), .cap = 256 };

	if (!t.buf)
		return NULL;
	t.buf[0] = '\0';
	for (int i = 0; s && i < s->nprocs; i++)
		if (o->root < 0 || s->procs[i].root == o->root)
			put_proc(&t, &s->procs[i], o);
	if (t.failed) {
		free(t.buf);
		return NULL;
	}
	return t.buf;
}
