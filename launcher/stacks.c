// SPDX-License-Identifier: MIT
#include "stacks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "procs.h"
#include "pyframes.h"
#include "stacks_grab.h"
#include "stacks_unwind.h"

/* Threads listed per process, at most. */
#define MAX_TASKS 8192
/* How long past a grab's own end, and the wait for its last thread, the
 * collector waits for it: the grab stops starting threads at its end, and
 * a grab still running then is blocked in the kernel. */
#define GRAB_SLACK 0.1

/* A collection, run by stacks_collect on the caller's thread or by
 * stacks_start on one of its own.  res is what the caller gets: built
 * under lock, so that stacks_end may take it at any time. */
struct stacks_job {
	pthread_mutex_t lock;
	pthread_t thread;
	bool threaded, ended, abandoned; /* under lock */
	atomic_bool stop;                /* abandoned, for a look without the lock */
	int fd[2];                       /* a byte in fd[1] when the collection has ended */
	pid_t *roots;
	int n;
	struct stacks_opts o;
	struct stacks *res;
};

/* ---- /proc ---- */

/* name, state and parent from /proc/PID/task/TID/stat (tid 0: the
 * process's own stat); the parent only for a process. */
static int read_stat(pid_t pid, pid_t tid, char name[16], char *state, pid_t *ppid)
{
	char path[48], buf[512], *open_paren, *close_paren;
	ssize_t n;

	if (tid)
		snprintf(path, sizeof(path), "task/%d/stat", (int)tid);
	n = procs_read(pid, tid ? path : "stat", buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren || close_paren[1] != ' ' || !close_paren[2])
		return -EIO;
	snprintf(name, 16, "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
	*state = close_paren[2];
	if (ppid)
		*ppid = (pid_t)strtol(close_paren + 4, NULL, 10);
	return 0;
}

static void read_wchan(pid_t pid, pid_t tid, char wchan[64])
{
	char path[48];

	if (tid)
		snprintf(path, sizeof(path), "task/%d/wchan", (int)tid);
	if (procs_read(pid, tid ? path : "wchan", wchan, 64) < 0 || !strcmp(wchan, "0"))
		wchan[0] = '\0';
}

static int by_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* The process's threads, ascending, malloc'd into *out; how many, or -errno. */
static int list_tasks(pid_t pid, pid_t **out)
{
	char path[32];
	struct dirent *e;
	pid_t *tids = NULL;
	int n = 0, cap = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return -errno;
	while ((e = readdir(d)) && n < MAX_TASKS) {
		long tid = strtol(e->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		if (n == cap) {
			pid_t *t = realloc(tids, (size_t)(cap = cap ? cap * 2 : 64) * sizeof(*t));

			if (!t) {
				free(tids);
				closedir(d);
				return -ENOMEM;
			}
			tids = t;
		}
		tids[n++] = (pid_t)tid;
	}
	closedir(d);
	qsort(tids, (size_t)n, sizeof(*tids), by_tid);
	*out = tids;
	return n;
}

/* ---- The result ---- */

static void free_frames(struct stacks_frame *f, int n)
{
	for (int i = 0; i < n; i++) {
		free(f[i].function);
		free(f[i].module);
		free(f[i].file);
	}
	free(f);
}

static void free_threads(struct stacks_thread *t, int n)
{
	for (int i = 0; t && i < n; i++)
		free_frames(t[i].frames, t[i].nframes);
	free(t);
}

void stacks_free(struct stacks *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nprocs; i++)
		free_threads(s->procs[i].threads, s->procs[i].nthreads);
	free(s->procs);
	free(s);
}

/* The processes, their state alone: every root's tree, in order. */
static int list_procs(struct stacks_job *j, struct stacks_proc **out)
{
	int per = j->o.max_procs > 0 ? j->o.max_procs : STACKS_MAX_PROCS, n = 0;
	struct stacks_proc *procs = calloc((size_t)(j->n > 0 ? j->n : 1) * (size_t)per, sizeof(*procs));
	pid_t *pids = calloc((size_t)per, sizeof(*pids));

	if (!procs || !pids) {
		free(procs);
		free(pids);
		return -ENOMEM;
	}
	for (int r = 0; r < j->n; r++) {
		int k = j->roots[r] <= 0 ? 0 : j->o.descendants ? procs_tree(j->roots[r], pids, per) : 1;

		if (!j->o.descendants)
			pids[0] = j->roots[r];
		for (int i = 0; i < k; i++) {
			struct stacks_proc *p = &procs[n];

			*p = (struct stacks_proc){ .root = r, .pid = pids[i] };
			if (read_stat(p->pid, 0, p->name, &p->state, &p->ppid) < 0)
				continue; /* gone */
			read_wchan(p->pid, 0, p->wchan);
			n++;
		}
	}
	free(pids);
	*out = procs;
	return n;
}

/* ---- CPython ---- */

static int read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return stacks_grab_read(*(const pid_t *)ctx, addr, buf, len);
}

/* PY_VERSION_HEX as Python writes it: 3.11.2, 3.12.0rc1, 3.13.0a4 */
static void version_text(unsigned long hex, char *buf, size_t len)
{
	unsigned long level = (hex >> 4) & 0xf;

	snprintf(buf, len, "%lu.%lu.%lu", hex >> 24 & 0xff, hex >> 16 & 0xff, hex >> 8 & 0xff);
	if (level >= 0xa && level <= 0xc)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%lu", level == 0xa ? "a" : level == 0xb ? "b" : "rc",
			 hex & 0xf);
}

/* What the process's CPython needs for its frames into *gpy, and its
 * thread states into *ts (malloc'd, *nts of them); or a note on p saying
 * why not. */
static void find_python(struct stacks_proc *p, pid_t mem, struct stacks_unwind *u, struct stacks_grab_py *gpy,
			struct pyframes_tstate **ts, int *nts)
{
	struct stacks_unwind_py up;
	struct pyframes py;
	uint64_t version = 0;
	char v[32];
	int n;

	*gpy = (struct stacks_grab_py){ NULL };
	*ts = NULL;
	*nts = 0;
	if (!u || stacks_unwind_python(u, &up) < 0)
		return;
	if (!up.version) { /* 3.10 or older: its version from the module's name */
		const char *at = strstr(up.module, "python");
		int len = at ? (int)strspn(at + 6, "0123456789.") : 0;

		while (len > 0 && at[6 + len - 1] == '.')
			len--;
		if (len > 0 && memchr(at + 6, '.', (size_t)len))
			snprintf(p->note, sizeof(p->note), "Python frames need CPython 3.11 (this is %.*s)", len, at + 6);
		else
			snprintf(p->note, sizeof(p->note), "Python frames need CPython 3.11 (this is an older one)");
		return;
	}
	if (read_mem(&mem, up.version, &version, sizeof(version)) < 0) {
		snprintf(p->note, sizeof(p->note), "Python frames: cannot read %s's Py_Version", up.module);
		return;
	}
	version_text((unsigned long)version, v, sizeof(v));
	if (!(gpy->layout = pyframes_layout((unsigned long)version))) {
		snprintf(p->note, sizeof(p->note), "Python frames need CPython 3.11 (this is %s)", v);
		return;
	}
	if (!up.runtime || !up.code_type || !up.str_type || !up.bytes_type) {
		snprintf(p->note, sizeof(p->note), "Python frames: %s lacks CPython's symbols", up.module);
		gpy->layout = NULL;
		return;
	}
	gpy->runtime = up.runtime;
	gpy->code_type = up.code_type;
	gpy->str_type = up.str_type;
	gpy->bytes_type = up.bytes_type;
	snprintf(p->python, sizeof(p->python), "%s", v);
	pyframes_init(&py, gpy->layout, read_mem, &mem, up.runtime, up.code_type, up.str_type, up.bytes_type);
	if (!(*ts = calloc(MAX_TASKS, sizeof(**ts))))
		return;
	n = pyframes_tstates(&py, *ts, MAX_TASKS);
	pyframes_free(&py);
	*nts = n > 0 ? n : 0;
}

static const struct pyframes_tstate *tstate_of(const struct pyframes_tstate *ts, int n, pid_t tid)
{
	for (int i = 0; i < n; i++)
		if (ts[i].tid == tid)
			return &ts[i];
	return NULL;
}

/* The order threads are taken and shown in: the main thread, the Python
 * threads (the GIL's holder first), the rest; lowest tid first in each. */
static int rank_of(pid_t pid, pid_t tid, const struct pyframes_tstate *ts, int nts)
{
	const struct pyframes_tstate *t = tstate_of(ts, nts, tid);

	return tid == pid ? 0 : t && t->gil ? 1 : t ? 2 : 3;
}

/* ---- One process ---- */

/* t's frames: the native ones with the Python ones placed among them. */
static void merge(struct stacks_thread *out, struct stacks_grab_thread *g, struct stacks_frame *nat, int nnat,
		  bool nat_cut, int max)
{
	int total = nnat + g->npy, k = 0, p = 0;
	bool *is_eval = calloc((size_t)nnat + 1, sizeof(bool)), *entry = calloc((size_t)g->npy + 1, sizeof(bool));
	int *place = calloc((size_t)nnat + 1, sizeof(int));
	struct stacks_frame *f = calloc((size_t)(total ? total : 1), sizeof(*f));

	if (!is_eval || !entry || !place || !f) {
		free(f);
		f = NULL;
		total = 0;
	}
	for (int i = 0; f && i < nnat; i++)
		is_eval[i] = stacks_unwind_is_eval(nat[i].function);
	for (int i = 0; f && i < g->npy; i++)
		entry[i] = g->py[i].entry;
	if (f)
		pyframes_place(is_eval, nnat, entry, g->npy, place);
	for (int i = 0; f && i <= nnat; i++) {
		for (int q = 0; q < place[i]; q++, p++) {
			f[k++] = (struct stacks_frame){ .python = true, .function = g->py[p].function,
							.file = g->py[p].file, .line = g->py[p].line };
			g->py[p].function = g->py[p].file = NULL;
		}
		if (i < nnat) {
			f[k++] = nat[i];
			nat[i] = (struct stacks_frame){ 0 };
		}
	}
	free(is_eval);
	free(entry);
	free(place);
	out->cut = nat_cut || (g->npy && !g->py_complete);
	if (k > max) {
		for (int i = max; i < k; i++) {
			free(f[i].function);
			free(f[i].module);
			free(f[i].file);
		}
		k = max;
		out->cut = true;
	}
	out->frames = f;
	out->nframes = k;
}

static void unwind_all(struct stacks_job *j, struct stacks_unwind *u, struct stacks_grab_thread *g,
		       struct stacks_thread *th, int n)
{
	int max = j->o.max_frames > 0 ? j->o.max_frames : STACKS_MAX_FRAMES;
	struct stacks_frame *nat = calloc((size_t)max, sizeof(*nat));

	for (int i = 0; i < n; i++) {
		int nnat = 0;
		bool cut = false;

		th[i].why = g[i].why;
		th[i].error = g[i].error;
		th[i].waited = g[i].waited;
		th[i].held = g[i].held;
		if (g[i].why != STACKS_TAKEN && g[i].why != STACKS_UNSUPPORTED)
			continue;
		if (atomic_load(&j->stop) || clock_mono() >= j->o.deadline) {
			th[i].why = STACKS_NO_TIME;
			continue;
		}
		if (nat && u && g[i].why == STACKS_TAKEN)
			nnat = stacks_unwind_thread(u, &g[i], nat, max, &cut);
		merge(&th[i], &g[i], nat, nnat, cut, max);
		for (int k = 0; k < nnat; k++) { /* what merge did not take */
			free(nat[k].function);
			free(nat[k].module);
			free(nat[k].file);
		}
	}
	free(nat);
}

/* Takes p's threads: lists them, stops each in turn on a grab thread,
 * unwinds them.  *done is p with its threads (malloc'd), its Python
 * version or the note saying why not. */
static int take_proc(struct stacks_job *j, struct stacks_proc *p, struct stacks_proc *done)
{
	double t0 = clock_mono(), until = j->o.deadline, wait = j->o.thread_wait > 0 ? j->o.thread_wait :
		STACKS_THREAD_WAIT;
	struct stacks_unwind *u = NULL;
	struct stacks_grab_py gpy;
	struct pyframes_tstate *ts;
	struct stacks_grab_thread *g = NULL;
	struct stacks_thread *th = NULL;
	struct stacks_grab *grab;
	pid_t *tids = NULL, mem = p->pid;
	int nts, n, shown, e;

	/* the last thread started is waited for by the deadline: what the
	 * grab took is then handed over, not abandoned with it */
	until -= wait + GRAB_SLACK;
	if (j->o.proc_time > 0 && t0 + j->o.proc_time < until)
		until = t0 + j->o.proc_time;
	*done = *p;
	if ((n = list_tasks(p->pid, &tids)) < 0) {
		snprintf(done->note, sizeof(done->note), "its threads cannot be listed: %s",
			 n == -ENOENT ? "it exited" : strerror(-n));
		done->stacks = true;
		return n;
	}
	/* its memory and maps through a thread that lives: a main thread that
	 * exited (pthread_exit) has none */
	for (int i = 0; i < n; i++) {
		char name[16], state = 'Z';

		if (read_stat(p->pid, tids[i], name, &state, NULL) == 0 && state != 'Z' && state != 'X') {
			mem = tids[i];
			break;
		}
	}
	(void)stacks_unwind_open(&u, mem);
	find_python(done, mem, u, &gpy, &ts, &nts);
	/* the order they are taken and shown in */
	for (int r = 1, k = 0; r <= 3; r++)
		for (int i = k; i < n; i++)
			if (rank_of(p->pid, tids[i], ts, nts) < r) {
				pid_t x = tids[i];

				memmove(tids + k + 1, tids + k, (size_t)(i - k) * sizeof(*tids));
				tids[k++] = x;
			}
	shown = j->o.max_threads > 0 && j->o.max_threads < n ? j->o.max_threads : n;
	done->more_threads = n - shown;
	g = calloc((size_t)(shown ? shown : 1), sizeof(*g));
	th = calloc((size_t)(shown ? shown : 1), sizeof(*th));
	e = g && th ? 0 : -ENOMEM;
	for (int i = 0; e == 0 && i < shown; i++) {
		const struct pyframes_tstate *t = tstate_of(ts, nts, tids[i]);

		g[i] = (struct stacks_grab_thread){ .tid = tids[i], .tstate = t ? t->addr : 0, .why = STACKS_NO_TIME };
		th[i] = (struct stacks_thread){ .tid = tids[i], .state = '?', .why = STACKS_NO_TIME,
						.python = t != NULL, .gil = t && t->gil };
		if (read_stat(p->pid, tids[i], th[i].name, &th[i].state, NULL) < 0 || th[i].state == 'Z' ||
		    th[i].state == 'X')
			th[i].why = g[i].why = STACKS_GONE; /* not tried */
		read_wchan(p->pid, tids[i], th[i].wchan);
	}
	free(tids);
	free(ts);
	if (e == 0 && !atomic_load(&j->stop) &&
	    stacks_grab_start(&grab, mem, g, shown, &gpy, wait, until,
			      j->o.max_frames > 0 ? j->o.max_frames : STACKS_MAX_FRAMES) == 0) {
		double give_up = until + wait + GRAB_SLACK;

		if (give_up > j->o.deadline)
			give_up = j->o.deadline;
		if (stacks_grab_wait(grab, give_up, g))
			unwind_all(j, u, g, th, shown);
		done->stacks = true;
	}
	for (int i = 0; g && i < shown; i++)
		stacks_grab_thread_free(&g[i]);
	free(g);
	stacks_unwind_close(u);
	done->threads = th;
	done->nthreads = th ? shown : 0;
	return e;
}

/* ---- The collection ---- */

static void collect(struct stacks_job *j)
{
	struct stacks_proc *procs;
	int n = list_procs(j, &procs);

	bool taken;

	if (n < 0)
		return;
	pthread_mutex_lock(&j->lock);
	if ((taken = j->res != NULL)) {
		j->res->procs = procs;
		j->res->nprocs = n;
	}
	pthread_mutex_unlock(&j->lock);
	if (!taken) {
		free(procs);
		return;
	}
	for (int i = 0; i < n; i++) {
		struct stacks_proc p, done;

		if (atomic_load(&j->stop) || clock_mono() >= j->o.deadline)
			break;
		pthread_mutex_lock(&j->lock);
		p = j->res ? j->res->procs[i] : (struct stacks_proc){ .pid = 0 };
		pthread_mutex_unlock(&j->lock);
		if (p.pid <= 0)
			break;
		(void)take_proc(j, &p, &done);
		pthread_mutex_lock(&j->lock);
		if (j->res) {
			j->res->procs[i] = done;
			done.threads = NULL;
			done.nthreads = 0;
		}
		pthread_mutex_unlock(&j->lock);
		free_threads(done.threads, done.nthreads);
	}
}

/* Whether everything was taken: every process's stacks, every thread's. */
static bool complete(const struct stacks *s)
{
	for (int i = 0; i < s->nprocs; i++) {
		if (!s->procs[i].stacks)
			return false;
		for (int k = 0; k < s->procs[i].nthreads; k++)
			if (s->procs[i].threads[k].why == STACKS_NO_TIME)
				return false;
	}
	return true;
}

static int job_new(struct stacks_job **jp, const pid_t *roots, int n, const struct stacks_opts *o)
{
	struct stacks_job *j = calloc(1, sizeof(*j));

	*jp = NULL;
	if (!j || !(j->roots = calloc((size_t)(n > 0 ? n : 1), sizeof(pid_t))) || !(j->res = calloc(1, sizeof(*j->res)))) {
		if (j)
			free(j->roots);
		free(j);
		return -ENOMEM;
	}
	memcpy(j->roots, roots, (size_t)(n > 0 ? n : 0) * sizeof(pid_t));
	j->n = n;
	j->o = *o;
	j->fd[0] = j->fd[1] = -1;
	pthread_mutex_init(&j->lock, NULL);
	atomic_init(&j->stop, false);
	*jp = j;
	return 0;
}

static void job_free(struct stacks_job *j)
{
	stacks_free(j->res);
	for (int i = 0; i < 2; i++)
		if (j->fd[i] >= 0)
			close(j->fd[i]);
	pthread_mutex_destroy(&j->lock);
	free(j->roots);
	free(j);
}

int stacks_collect(const pid_t *roots, int n, const struct stacks_opts *opts, struct stacks **out)
{
	struct stacks_job *j;
	int e = job_new(&j, roots, n, opts);

	*out = NULL;
	if (e < 0)
		return e;
	collect(j);
	j->res->cut = !complete(j->res);
	*out = j->res;
	j->res = NULL;
	job_free(j);
	return 0;
}

static void *job_main(void *arg)
{
	struct stacks_job *j = arg;
	bool abandoned;

	pthread_setname_np(pthread_self(), "slotrun-stacks");
	collect(j);
	pthread_mutex_lock(&j->lock);
	if (j->res)
		j->res->cut = !complete(j->res);
	j->ended = true;
	abandoned = j->abandoned;
	pthread_mutex_unlock(&j->lock);
	if (abandoned)
		job_free(j);
	else
		(void)!write(j->fd[1], "", 1);
	return NULL;
}

int stacks_start(struct stacks_job **jp, const pid_t *roots, int n, const struct stacks_opts *opts)
{
	struct stacks_job *j;
	sigset_t all, was;
	int e = job_new(&j, roots, n, opts);

	*jp = NULL;
	if (e < 0)
		return e;
	if (pipe2(j->fd, O_CLOEXEC | O_NONBLOCK) < 0) {
		e = -errno;
		job_free(j);
		return e;
	}
	/* no signal of the process's is handled on it */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	e = -pthread_create(&j->thread, NULL, job_main, j);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (e < 0) {
		job_free(j);
		return e;
	}
	j->threaded = true;
	*jp = j;
	return 0;
}

int stacks_fd(const struct stacks_job *j)
{
	return j->fd[0];
}

struct stacks *stacks_end(struct stacks_job *j)
{
	struct stacks *s;
	bool ended;

	pthread_mutex_lock(&j->lock);
	s = j->res;
	j->res = NULL;
	ended = j->ended;
	j->abandoned = !ended;
	atomic_store(&j->stop, true);
	pthread_mutex_unlock(&j->lock);
	if (s && !ended)
		s->cut = true;
	if (!ended) {
		pthread_detach(j->thread);
		return s;
	}
	pthread_join(j->thread, NULL);
	job_free(j);
	return s;
}

bool stacks_trace_stop(int status)
{
	int sig;

	if (!WIFSTOPPED(status))
		return false;
	sig = WSTOPSIG(status);
	return (status >> 16) != 0 ||
	       !(sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU);
}
