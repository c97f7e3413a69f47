// SPDX-License-Identifier: MIT
/* What a rank's processes are doing, from /proc/PID/stat: pure parsing and
 * folding, so every branch is tested on text.  sampler.c reads the files.
 *
 * A rank's processes are its command and what that started: below the
 * worker (wrap_rank), less wrap_rank itself and its guard (the command's
 * parent).  Processes the command left behind, reparented to the guard,
 * still count. */
#ifndef SLOTRUN_SAMPLE_H
#define SLOTRUN_SAMPLE_H

#include <stdbool.h>
#include <sys/types.h>

/* A rank's state: the most active of its processes' (each process's main
 * thread, as /proc/PID/stat says), in this order of precedence, highest
 * last: a rank with one running process is running. */
enum sample_state {
	SAMPLE_GONE,        /* no process (not started, or exited) */
	SAMPLE_ZOMBIE,      /* only zombies: exited, not yet reaped */
	SAMPLE_SLEEPING,    /* S, I, P: waiting for something */
	SAMPLE_STOPPED,     /* T, t: stopped by a signal or a tracer */
	SAMPLE_DISK,        /* D: uninterruptible, most often disk or a driver */
	SAMPLE_RUNNING,     /* R, W */
};

/* "running", "sleeping", "uninterruptible", "stopped", "zombie", "gone". */
const char *sample_state_name(enum sample_state s);

/* The state named name (as sample_state_name writes it): 0, or -EINVAL. */
int sample_state_parse(const char *name, enum sample_state *s);

/* A process's state letter as a rank state. */
enum sample_state sample_state_of(char letter);

/* One process, from its /proc/PID/stat. */
struct sample_proc {
	pid_t pid, ppid;
	char state;                     /* the letter: R S D T t Z X I W P ... */
	unsigned long long cpu_ticks;   /* utime + stime + cutime + cstime, clock ticks */
	long threads;
	long long rss_pages;
};

/* Parses the text of /proc/PID/stat ("pid (comm) S ppid ..."; comm may
 * hold spaces and ')', so fields are counted from the last ')').  Returns
 * 0, or -EINVAL when the text is cut short or malformed. */
int sample_parse_stat(const char *text, struct sample_proc *p);

/* Sorts procs by parent, as sample_fold needs them. */
void sample_sort(struct sample_proc *procs, int n);

/* A rank's processes taken together. */
struct sample_rank {
	pid_t pid;                      /* the command's, else the worker's */
	int procs;                      /* how many processes it has */
	enum sample_state state;
	unsigned long long cpu_ticks;   /* summed */
	unsigned long long rss_bytes;   /* summed (shared pages count in each) */
	long threads;                   /* summed */
};

/* Folds the processes of the rank whose worker is `worker` out of procs
 * (n entries sorted by sample_sort): with wrapped (the worker is
 * wrap_rank), its descendants but not the worker nor the command's
 * ancestors below it (the guard); cmd is the command's pid (0: not known
 * yet: then the worker's children are left out instead, wrap_rank's guard
 * being its only child).  Without wrapped the worker is the command:
 * itself and its descendants.  page_size converts RSS pages to bytes. */
void sample_fold(const struct sample_proc *procs, int n, pid_t worker, pid_t cmd, bool wrapped, long page_size,
		 struct sample_rank *out);

/* CPU use between two samples dt seconds apart, as a percentage of one
 * CPU (a rank busy on 4 cores shows 400); hz: clock ticks per second.
 * Ticks that went back (a process exited and its time left the tree)
 * count as none.  A dt <= 0 gives -1: unknown. */
double sample_cpu_pct(unsigned long long prev, unsigned long long cur, double dt, long hz);

#endif
