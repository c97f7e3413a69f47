// SPDX-License-Identifier: MIT
/* The shared-memory transport: all-reduce among the ranks of one node
 * through one segment they all map (shm.h says how it is set up and shared;
 * shm_sched.h how the work is cut).
 *
 * Each rank posts three step counters in its control line: `in` (its
 * slot holds its copy of the step's pieces), `red` (it has reduced its own
 * piece into its slot) and `out` (it has copied the others' reduced pieces
 * out and no longer reads anyone's slot of that step).  A rank waits for the
 * counters of the others; data moves with plain memcpy and the reduction
 * kernels, straight from the peers' slots into the destination.  Counters
 * are stored with release and read with acquire semantics, so what was
 * written into a slot before a post is seen by whoever sees the post.
 *
 * Waiting: spin on the counter for SHM_SPIN_NS (with a pause per probe,
 * then yielding the core), then sleep on it with futex(2), the waiter
 * counting itself in the counter owner's wait line so that the owner makes
 * the wake-up system call only when somebody sleeps.  Sleeps last at most
 * SHM_SLICE_MS: between them a waiter looks at the segment's abort word, at
 * its sockets to the node's peers (a peer that died closed its end) and at
 * its control connections, and times out after SLOTRUN_TIMEOUT without
 * progress.  Progress is the counter waited on moving, or the waited-on
 * rank's `alive` tick: a leader ticks while its TCP ring across nodes
 * moves (shm_progress), so that its members, waiting for the broadcast,
 * do not take a slow network for a stuck leader.
 *
 * A failing rank (comm_fail and friends, through transport.broken) writes
 * its abort record into the segment, sets the abort word and wakes every
 * sleeper, so the node's ranks fail at once with its reason.
 *
 * Collectives are checked: each rank writes what it was called with (count,
 * type, op, sequence number) into its control line before its first post,
 * and the others compare it after their first wait on it. */
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "reduce.h"
#include "shm_sched.h"
#include "sock.h"

#define SHM_MAGIC 0x4d48534e524c53ull  /* "SLRNSHM" */
#define SHM_VERSION 2  /* 2: the alive tick */

/* Each rank's slots: SHM_DEPTH of SHM_SLOT_BYTES.  The pipeline runs each
 * rank two steps behind its copy-in (copy in t, reduce t-1, copy out t-2),
 * so it needs at least 3 slots; 4 leave a step of slack. */
#define SHM_DEPTH 4
#define SHM_SLOT_BYTES (256u << 10)

/* All-reduces of up to this many bytes take the small path (shm_sched.h). */
#define SHM_SMALL_MAX (32u << 10)

/* A piece is reduced a block of this size at a time, which stays in cache
 * from the first kernel to the copy of the result into the slot.  Reducing
 * in place in the buffer, a block at a time, halved the time of the reduce
 * phase against folding into the slot with d = a + b and copying back
 * (64 MiB, n = 2: 5.8 to 3.0 ms per all-reduce on the development machine). */
#define SHM_BLOCK (64u << 10)

/* Buffers of at least this many bytes are copied out of the slots with
 * streaming stores (reduce_copy_stream): they do not fit the caches anyway,
 * and the stores then skip reading every line of the destination first. */
#define SHM_STREAM_MIN (16u << 20)

/* Waiting: spin this long before sleeping; sleep at most this long before
 * looking around (README "nccl_worker" says why these numbers). */
#define SHM_SPIN_NS 20000
#define SHM_PAUSE_NS 2000
#define SHM_SLICE_MS 20

enum { CNT_IN, CNT_RED, CNT_OUT, CNT_N };

struct shm_hdr {
	uint64_t magic;
	uint32_t version, m;
	uint64_t size;
	uint64_t cookie;   /* the leader's random number: the probe */
	uint32_t abort;    /* 0, or 1 + the node index of the rank whose record tells why */
};

struct shm_desc {
	uint64_t seq, count;
	uint32_t dtype, op;
};

struct shm_ctl {
	uint32_t cnt[CNT_N];
	uint32_t alive;              /* ticks while this rank's TCP ring moves */
	uint64_t probe;              /* the leader's cookie, as this rank read it */
	struct shm_desc desc[2];     /* by collective sequence number parity */
};

struct shm_waitl {
	uint32_t sleepers[CNT_N];
};

struct shm_abort {
	int32_t origin, culprit;
	char reason[FRAME_REASON_MAX];
};

struct shm {
	int m, li;          /* ranks on this node, this rank's index */
	int *ranks;         /* their ranks in the communicator; ranks[0] leads */
	int *fd;            /* leader: fd[i] to member i; member: fd[0] to the leader */
	unsigned char *bye; /* the peer at fd[i] said it is leaving on purpose */
	struct pollfd *pfd; /* m + size entries */
	const uint8_t **src; /* m entries: the slots the small path reduces */
	struct shm_layout lay;
	uint8_t *base;
	struct shm_hdr *hdr;
	uint32_t step;      /* steps done: the value of every counter between collectives */
};

/* --- the segment's parts ------------------------------------------------- */

static struct shm_ctl *ctl_of(const struct shm *s, int i)
{
	return (struct shm_ctl *)(s->base + s->lay.ctl_off + (size_t)i * SHM_LINE);
}

static struct shm_waitl *wait_of(const struct shm *s, int i)
{
	return (struct shm_waitl *)(s->base + s->lay.wait_off + (size_t)i * SHM_LINE);
}

static struct shm_abort *abort_of(const struct shm *s, int i)
{
	return (struct shm_abort *)(s->base + s->lay.abort_off + (size_t)i * SHM_ABORT_BYTES);
}

static uint8_t *slot_of(const struct shm *s, int i, uint32_t step)
{
	return s->base + shm_slot_off(&s->lay, i, step);
}

/* --- node identity ------------------------------------------------------- */

void shm_node_key(char *buf, size_t len)
{
	char *boot = io_read_file("/proc/sys/kernel/random/boot_id", 128);
	struct stat st;

	buf[0] = '\0';
	if (boot && stat("/proc/self/ns/net", &st) == 0) {
		boot[strcspn(boot, "\n")] = '\0';
		if (boot[0])
			snprintf(buf, len, "%s/%llu:%llu", boot, (unsigned long long)st.st_dev,
				 (unsigned long long)st.st_ino);
	}
	free(boot);
}

static void hex(char *out, const uint8_t *in, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* An abstract Unix socket address (Linux: a leading NUL, no file). */
static socklen_t abstract_addr(const char *name, struct sockaddr_un *sun)
{
	size_t n = strlen(name);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path + 1, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

void shm_info_fill(struct slotcomm *c, struct shm_info *mine)
{
	uint8_t rnd[16];
	struct sockaddr_un sun;
	int fd;

	memset(mine, 0, sizeof(*mine));
	mine->transport = c->cfg.transport == SLOTCOMM_TRANSPORT_TCP ? 't' :
			  c->cfg.transport == SLOTCOMM_TRANSPORT_SHM ? 's' : 'a';
	shm_node_key(mine->key, sizeof(mine->key));
	if (getrandom(mine->token, sizeof(mine->token), 0) != (ssize_t)sizeof(mine->token))
		mine->key[0] = '\0';  /* no token, no sharing */
	if (mine->transport == 't' || !mine->key[0])
		return;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return;
	memcpy(mine->sock, "slotrun-", 8);
	hex(mine->sock + 8, rnd, sizeof(rnd));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, abstract_addr(mine->sock, &sun)) < 0 ||
	    listen(fd, 64) < 0) {
		if (fd >= 0)
			close(fd);
		mine->sock[0] = '\0';
		return;
	}
	c->shm_lfd = fd;
}

int shm_local_size(const struct slotcomm *c)
{
	return c->shm ? c->shm->m : 1;
}

/* --- waiting ------------------------------------------------------------- */

static long futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static uint32_t cnt_load(const struct shm *s, int i, int which)
{
	return __atomic_load_n(&ctl_of(s, i)->cnt[which], __ATOMIC_ACQUIRE);
}

/* Publishes this rank's counter and wakes whoever sleeps on it.  The store
 * and the load of the sleepers are sequentially consistent, as are the
 * waiter's increment and its load of the counter: either the waiter sees
 * the new value or we see the waiter. */
static void post(struct shm *s, int which, uint32_t v)
{
	uint32_t *w = &ctl_of(s, s->li)->cnt[which];

	__atomic_store_n(w, v, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&wait_of(s, s->li)->sleepers[which], __ATOMIC_SEQ_CST))
		(void)futex(w, FUTEX_WAKE, INT_MAX, NULL);
}

static void post_all(struct shm *s, uint32_t v)
{
	for (int k = 0; k < CNT_N; k++)
		if (cnt_load(s, s->li, k) != v)
			post(s, k, v);
}

static void wake_everyone(struct shm *s)
{
	for (int i = 0; i < s->m; i++)
		for (int k = 0; k < CNT_N; k++)
			(void)futex(&ctl_of(s, i)->cnt[k], FUTEX_WAKE, INT_MAX, NULL);
}

/* The others learn of this rank's failure from the segment (transport.h). */
void shm_transport_broken(struct slotcomm *c, const struct frame_abort *a)
{
	struct shm *s = c->shm;
	struct shm_abort *rec;
	uint32_t none = 0;

	if (!s || !s->base)
		return;
	rec = abort_of(s, s->li);
	rec->origin = a->origin;
	rec->culprit = a->culprit;
	snprintf(rec->reason, sizeof(rec->reason), "%s", a->reason);
	(void)__atomic_compare_exchange_n(&s->hdr->abort, &none, (uint32_t)s->li + 1, 0,
					  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	wake_everyone(s);
}

/* A node peer's socket has something: its goodbye, or its end closed. */
static int peer_sock(struct slotcomm *c, struct shm *s, int k, const char *what)
{
	int peer = s->ranks[k];
	char b[16];
	ssize_t n;

	for (;;) {
		n = recv(s->fd[k], b, sizeof(b), MSG_DONTWAIT);
		if (n > 0) {
			if (memchr(b, 'B', (size_t)n))
				s->bye[k] = 1;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	if (n < 0 && errno == EAGAIN)
		return 0;
	close(s->fd[k]);
	s->fd[k] = -1;
	if (s->bye[k])
		return comm_fail(c, -EPROTO, peer,
				 "peer rank %d has finished (it left the job) while this rank is in "
				 "%s #%llu: every rank must call the same collectives", peer, what,
				 (unsigned long long)c->seq);
	return comm_fail(c, n == 0 ? SOCK_EOF : -errno, peer,
			 "peer rank %d died during %s (its end of this node's shared memory "
			 "closed)", peer, what);
}

/* Between sleeps: has anything failed? */
static int look_around(struct slotcomm *c, struct shm *s, const char *what)
{
	uint32_t ab = __atomic_load_n(&s->hdr->abort, __ATOMIC_ACQUIRE);
	int np = 0, nw, r;

	if (ab && ab != (uint32_t)s->li + 1) {
		const struct shm_abort *rec = abort_of(s, (int)ab - 1);
		struct frame_abort a = { .origin = rec->origin, .culprit = rec->culprit };

		snprintf(a.reason, sizeof(a.reason), "%.*s", (int)sizeof(rec->reason) - 1, rec->reason);
		if (a.origin < 0 || a.origin >= c->size)
			a.origin = s->ranks[ab - 1];
		return comm_fail_abort(c, a.origin, &a, what);
	}
	for (int k = 0; k < s->m; k++)
		if (s->fd[k] >= 0)
			s->pfd[np++] = (struct pollfd){ .fd = s->fd[k], .events = POLLIN };
	nw = comm_watch_fill(c, s->pfd + np);
	r = poll(s->pfd, (nfds_t)(np + nw), 0);
	if (r <= 0)
		return 0;
	np = 0;
	for (int k = 0; k < s->m; k++) {
		if (s->fd[k] < 0)
			continue;
		if (s->pfd[np++].revents) {
			r = peer_sock(c, s, k, what);
			if (r < 0)
				return r;
		}
	}
	return comm_watch_check(c, s->pfd + np, nw, what);
}

/* Waits until counter `which` of the rank with index i reaches want,
 * spinning for spin_ns before sleeping. */
static int wait_one(struct slotcomm *c, struct shm *s, int i, int which, uint32_t want,
		    int64_t spin_ns, const char *what)
{
	uint32_t *w = &ctl_of(s, i)->cnt[which], v, alive;
	uint32_t *tick = &ctl_of(s, i)->alive;
	uint32_t *sleepers = &wait_of(s, i)->sleepers[which];
	struct timespec slice = { .tv_sec = 0, .tv_nsec = SHM_SLICE_MS * 1000000L };
	int64_t t0, now, deadline;
	int r;

	if (shm_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), want))
		return 0;
	t0 = sock_now_ns();
	for (unsigned k = 1;; k++) {
		cpu_relax();
		if (shm_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), want))
			return 0;
		if (k % 32)
			continue;
		now = sock_now_ns();
		if (now - t0 >= spin_ns)
			break;
		if (now - t0 >= SHM_PAUSE_NS)
			sched_yield();
	}
	deadline = t0 + c->timeout_ns;
	alive = __atomic_load_n(tick, __ATOMIC_RELAXED);
	for (;;) {
		__atomic_add_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
		v = __atomic_load_n(w, __ATOMIC_SEQ_CST);
		if (!shm_reached(v, want) && !__atomic_load_n(&s->hdr->abort, __ATOMIC_SEQ_CST))
			(void)futex(w, FUTEX_WAIT, v, &slice);
		__atomic_sub_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
		if (shm_reached(__atomic_load_n(w, __ATOMIC_ACQUIRE), want))
			return 0;
		r = look_around(c, s, what);
		if (r < 0)
			return r;
		now = sock_now_ns();
		v = __atomic_load_n(tick, __ATOMIC_RELAXED);
		if (v != alive) {
			alive = v;
			deadline = now + c->timeout_ns;
		}
		if (now >= deadline)
			return comm_fail_timeout(c, s->ranks[i], what,
						 "peer rank %d did not answer within %gs "
						 "(SLOTRUN_TIMEOUT) during %s", s->ranks[i],
						 c->cfg.timeout_s, what);
	}
}

/* Every other rank of the node. */
static int wait_all(struct slotcomm *c, struct shm *s, int which, uint32_t want, const char *what)
{
	for (int i = 0; i < s->m; i++) {
		int r;

		if (i == s->li)
			continue;
		r = wait_one(c, s, i, which, want, SHM_SPIN_NS, what);
		if (r < 0)
			return r;
	}
	return 0;
}

/* --- the collective ------------------------------------------------------ */

struct op {
	uint8_t *buf;
	struct shm_plan p;
	size_t esize;
	enum slotcomm_dtype dtype;
	enum slotcomm_op op;
	reduce_fn fn;
	reduce2_fn fn2;
	int avg_div;        /* divide the result by this (avg), or 0 */
	int out_all;        /* every rank copies the result out (else the leader only) */
	void (*copy)(void *restrict, const void *restrict, size_t);  /* out of the slots */
	uint32_t base;      /* the counters before this collective */
};

static void copy_plain(void *restrict dst, const void *restrict src, size_t n)
{
	memcpy(dst, src, n);
}

static int check_desc(struct slotcomm *c, struct shm *s, const struct op *o, const char *what)
{
	for (int i = 0; i < s->m; i++) {
		const struct shm_desc *d = &ctl_of(s, i)->desc[c->seq & 1];
		int peer = s->ranks[i];

		if (i == s->li)
			continue;
		if (d->seq != c->seq)
			return comm_fail(c, -EPROTO, peer,
					 "peer rank %d is in a different collective (its #%llu, this "
					 "rank's %s #%llu): collectives must be called in the same "
					 "order on every rank", peer, (unsigned long long)d->seq, what,
					 (unsigned long long)c->seq);
		if (d->count != o->p.bytes / o->esize || d->dtype != (uint32_t)o->dtype ||
		    d->op != (uint32_t)o->op)
			return comm_fail(c, -EPROTO, peer,
					 "peer rank %d called %s with %llu %s %s, this rank with %llu %s %s",
					 peer, what, (unsigned long long)d->count,
					 slotcomm_dtype_name((enum slotcomm_dtype)d->dtype),
					 slotcomm_op_name((enum slotcomm_op)d->op),
					 (unsigned long long)(o->p.bytes / o->esize),
					 slotcomm_dtype_name(o->dtype), slotcomm_op_name(o->op));
	}
	return 0;
}

static void write_desc(struct slotcomm *c, struct shm *s, const struct op *o)
{
	struct shm_desc *d = &ctl_of(s, s->li)->desc[c->seq & 1];

	d->seq = c->seq;
	d->count = o->p.bytes / o->esize;
	d->dtype = (uint32_t)o->dtype;
	d->op = (uint32_t)o->op;
}

/* dst = src[0] OP src[1] OP ... OP src[m-1] (m >= 2), n elements, in rank
 * order, so that every rank that computes it gets the same bits. */
static void fold(const struct op *o, int m, const uint8_t *const *src, uint8_t *dst, size_t n)
{
	o->fn2(dst, src[0], src[1], n);
	for (int i = 2; i < m; i++)
		o->fn(dst, src[i], n);
	if (o->avg_div)
		reduce_avg_finish(dst, n, o->dtype, o->avg_div);
}

/* The small path: every rank copies its buffer into its slot, and each
 * reduces all of them in rank order into its buffer. */
static int run_small(struct slotcomm *c, struct shm *s, const struct op *o, const char *what)
{
	uint32_t x = o->base;
	int r;

	/* Our slot for this step is free once every rank is done with the
	 * step `depth` before (always true here, but cheap to know). */
	r = wait_all(c, s, CNT_OUT, x + 1 - SHM_DEPTH, what);
	if (r < 0)
		return r;
	write_desc(c, s, o);
	if (o->p.bytes)
		memcpy(slot_of(s, s->li, x), o->buf, o->p.bytes);
	post(s, CNT_IN, x + 1);
	r = wait_all(c, s, CNT_IN, x + 1, what);
	if (r == 0)
		r = check_desc(c, s, o, what);
	if (r < 0)
		return r;
	for (int i = 0; i < s->m; i++)
		s->src[i] = slot_of(s, i, x);
	if (o->out_all || s->li == 0)
		fold(o, s->m, s->src, o->buf, o->p.bytes / o->esize);
	post(s, CNT_RED, x + 1);
	post(s, CNT_OUT, x + 1);
	return 0;
}

static void copy_in(struct shm *s, const struct op *o, uint64_t t)
{
	uint64_t woff, wlen, poff, plen;
	uint8_t *slot = slot_of(s, s->li, o->base + (uint32_t)t);

	shm_plan_step(&o->p, t, &woff, &wlen);
	shm_plan_piece(&o->p, t, s->li, &poff, &plen);
	/* Everything but our own piece, which we reduce from our buffer. */
	if (poff)
		memcpy(slot, o->buf + woff, poff);
	if (poff + plen < wlen)
		memcpy(slot + poff + plen, o->buf + woff + poff + plen, wlen - poff - plen);
}

/* Our piece of step t: the others' copies are reduced straight from their
 * slots into our buffer (ours first, then theirs in rank order), a block
 * at a time, and each reduced block is copied into our slot while in L1,
 * for the others to copy out. */
static void reduce_piece(struct shm *s, const struct op *o, uint64_t t)
{
	uint32_t x = o->base + (uint32_t)t;
	uint64_t woff, wlen, poff, plen;
	size_t per = SHM_BLOCK / o->esize, n;
	uint8_t *mine, *out;

	shm_plan_step(&o->p, t, &woff, &wlen);
	shm_plan_piece(&o->p, t, s->li, &poff, &plen);
	mine = o->buf + woff + poff;
	out = slot_of(s, s->li, x) + poff;
	n = plen / o->esize;
	for (size_t e = 0; e < n; e += per) {
		size_t k = n - e < per ? n - e : per, off = e * o->esize;

		for (int i = 0; i < s->m; i++)
			if (i != s->li)
				o->fn(mine + off, slot_of(s, i, x) + poff + off, k);
		if (o->avg_div)
			reduce_avg_finish(mine + off, k, o->dtype, o->avg_div);
		memcpy(out + off, mine + off, k * o->esize);
	}
}

static void copy_out(struct shm *s, const struct op *o, uint64_t t)
{
	uint32_t x = o->base + (uint32_t)t;
	uint64_t woff, wlen;

	shm_plan_step(&o->p, t, &woff, &wlen);
	for (int i = 0; i < s->m; i++) {
		uint64_t poff, plen;

		if (i == s->li)
			continue;
		shm_plan_piece(&o->p, t, i, &poff, &plen);
		if (plen)
			o->copy(o->buf + woff + poff, slot_of(s, i, x) + poff, plen);
	}
}

/* Reduce-scatter and all-gather through the slots, pipelined: at turn t a
 * rank copies step t in, reduces its piece of step t-1 and copies the
 * others' pieces of step t-2 out, so each wait is for work the others did a
 * turn earlier. */
static int run_steps(struct slotcomm *c, struct shm *s, const struct op *o, const char *what)
{
	uint64_t n = o->p.nsteps;
	int r = 0;

	write_desc(c, s, o);
	for (uint64_t t = 0; t < n + 2 && r == 0; t++) {
		if (t < n) {
			uint32_t x = o->base + (uint32_t)t;

			r = wait_all(c, s, CNT_OUT, x + 1 - SHM_DEPTH, what);
			if (r < 0)
				break;
			copy_in(s, o, t);
			post(s, CNT_IN, x + 1);
		}
		if (t >= 1 && t - 1 < n) {
			uint32_t x = o->base + (uint32_t)(t - 1);

			r = wait_all(c, s, CNT_IN, x + 1, what);
			if (r == 0 && t == 1)
				r = check_desc(c, s, o, what);
			if (r < 0)
				break;
			reduce_piece(s, o, t - 1);
			post(s, CNT_RED, x + 1);
		}
		if (t >= 2) {
			uint32_t x = o->base + (uint32_t)(t - 2);

			if (o->out_all || s->li == 0) {
				r = wait_all(c, s, CNT_RED, x + 1, what);
				if (r < 0)
					break;
				copy_out(s, o, t - 2);
			}
			post(s, CNT_OUT, x + 1);
		}
	}
	return r;
}

static int node_reduce(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype,
		       enum slotcomm_op op, int out_all, int avg_div)
{
	struct shm *s = c->shm;
	struct op o = { .buf = buf, .dtype = dtype, .op = op, .out_all = out_all,
			.avg_div = avg_div, .base = s->step };
	int r;

	o.esize = slotcomm_dtype_size(dtype);
	o.copy = (uint64_t)count * o.esize >= SHM_STREAM_MIN ? reduce_copy_stream : copy_plain;
	o.fn = reduce_get(dtype, op);
	o.fn2 = reduce2_get(dtype, op);
	shm_plan_make(&o.p, (uint64_t)count * o.esize, s->m, s->lay.slot_bytes, SHM_SMALL_MAX);
	comm_watch_init(c);
	r = o.p.small ? run_small(c, s, &o, "all-reduce") : run_steps(c, s, &o, "all-reduce");
	if (r < 0)
		return r;
	s->step += (uint32_t)o.p.nsteps;
	return 0;
}

int shm_reduce(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype, enum slotcomm_op op)
{
	return node_reduce(c, buf, count, dtype, op, 0, 0);
}

int shm_bcast(struct slotcomm *c, void *buf, size_t bytes)
{
	struct shm *s = c->shm;
	struct shm_plan p;
	uint32_t base = s->step;
	int r = 0;

	/* Whole slots at a time: the leader copies in, the others copy out. */
	shm_plan_make(&p, bytes, 1, s->lay.slot_bytes, 0);
	for (uint64_t t = 0; t < p.nsteps && r == 0; t++) {
		uint32_t x = base + (uint32_t)t;
		uint64_t off, len;

		shm_plan_step(&p, t, &off, &len);
		if (s->li == 0) {
			r = wait_all(c, s, CNT_OUT, x + 1 - SHM_DEPTH, "all-reduce");
			if (r == 0) {
				memcpy(slot_of(s, 0, x), (uint8_t *)buf + off, len);
				post(s, CNT_IN, x + 1);
			}
		} else {
			/* The first window comes once the leader is back from
			 * the TCP ring, which takes longer than any spin: sleep
			 * soon, and leave the cores to the leaders meanwhile. */
			r = wait_one(c, s, 0, CNT_IN, x + 1, t == 0 ? SHM_PAUSE_NS : SHM_SPIN_NS,
				     "all-reduce");
			if (r == 0) {
				(bytes >= SHM_STREAM_MIN ? reduce_copy_stream : copy_plain)(
					(uint8_t *)buf + off, slot_of(s, 0, x), len);
				post(s, CNT_OUT, x + 1);
			}
		}
	}
	if (r < 0)
		return r;
	s->step = base + (uint32_t)p.nsteps;
	post_all(s, s->step);
	return 0;
}

static int shm_allreduce(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype,
			 enum slotcomm_op op)
{
	return node_reduce(c, buf, count, dtype, op, 1, op == SLOTCOMM_AVG ? c->size : 0);
}

void shm_progress(struct slotcomm *c)
{
	struct shm *s = c->shm;

	if (s) {
		uint32_t *tick = &ctl_of(s, s->li)->alive;

		__atomic_store_n(tick, __atomic_load_n(tick, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	}
}

static void shm_describe(const struct slotcomm *c, char *buf, size_t len)
{
	snprintf(buf, len, "shared memory among %d ranks on one host (each reduces its piece of "
		 "every %u KiB window from the others' slots; up to %u KiB, every rank reduces the "
		 "whole buffers)", c->size, (unsigned)(c->shm->lay.slot_bytes >> 10),
		 SHM_SMALL_MAX >> 10);
}

static void shm_destroy(struct slotcomm *c)
{
	shm_free(c, 1);
}

const struct transport transport_shm = {
	.name = "shm",
	.allreduce = shm_allreduce,
	.describe = shm_describe,
	.broken = shm_transport_broken,
	.destroy = shm_destroy,
};

/* --- setup --------------------------------------------------------------- */

struct hello {
	uint32_t rank;
	uint8_t token[SHM_TOKEN_LEN];
};

static int setup_err(char *why, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int setup_err(char *why, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return rc;
}

/* Waits for fd to be ready for events until the deadline. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int ms = sock_poll_ms(deadline), r;

		if (ms == 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, ms);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int send_fd(int sock, int fd, const void *data, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)(uintptr_t)data, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -EIO;
}

/* Receives len bytes and one descriptor (CLOEXEC) in one message. */
static int recv_fd(int sock, int *fd, void *data, size_t len, int64_t deadline)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = data, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	ssize_t n;
	int r;

	*fd = -1;
	r = wait_fd(sock, POLLIN, deadline);
	if (r < 0)
		return r;
	n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(cm), sizeof(int));
	if ((size_t)n != len || *fd < 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return n == 0 ? SOCK_EOF : -EPROTO;
	}
	return 0;
}

static int map_segment(struct shm *s, int fd)
{
	void *p = mmap(NULL, s->lay.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	s->base = p;
	s->hdr = (struct shm_hdr *)s->base;
	return 0;
}

/* The leader: makes the segment, hands it to every member that proves its
 * token, and checks that each one's probe shows in its own mapping. */
static int lead(struct slotcomm *c, struct shm *s, const struct shm_info *all, int64_t deadline,
		char *why, size_t len)
{
	char name[64];
	uint64_t cookie;
	int mfd, r, left = s->m - 1;

	snprintf(name, sizeof(name), "slotrun-shm:%d", c->cfg.master_port);
	mfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return setup_err(why, len, -errno, "rank %d (node leader): memfd_create: %s", c->rank,
				 strerror(errno));
	if (ftruncate(mfd, (off_t)s->lay.total) < 0 ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		r = -errno;
		close(mfd);
		return setup_err(why, len, r, "rank %d (node leader): cannot size the segment "
				 "(%llu bytes): %s", c->rank, (unsigned long long)s->lay.total,
				 strerror(-r));
	}
	r = map_segment(s, mfd);
	if (r < 0) {
		close(mfd);
		return setup_err(why, len, r, "rank %d (node leader): mmap of %llu bytes: %s", c->rank,
				 (unsigned long long)s->lay.total, strerror(-r));
	}
	if (getrandom(&cookie, sizeof(cookie), 0) != (ssize_t)sizeof(cookie))
		cookie = (uint64_t)sock_now_ns() ^ ((uint64_t)getpid() << 32);
	cookie |= 1;  /* never 0, which a fresh segment reads */
	s->hdr->magic = SHM_MAGIC;
	s->hdr->version = SHM_VERSION;
	s->hdr->m = (uint32_t)s->m;
	s->hdr->size = s->lay.total;
	s->hdr->cookie = cookie;
	ctl_of(s, 0)->probe = cookie;

	while (left > 0) {
		struct hello h;
		int fd, k = -1;
		int64_t dl;

		r = wait_fd(c->shm_lfd, POLLIN, deadline);
		if (r < 0)
			break;
		fd = accept4(c->shm_lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		/* A stranger that says nothing costs at most 5 s. */
		dl = sock_now_ns() + 5000000000LL;
		if (dl > deadline)
			dl = deadline;
		if (sock_recv_all(fd, &h, sizeof(h), dl) == 0)
			for (int i = 1; i < s->m; i++)
				if (s->ranks[i] == (int)h.rank && s->fd[i] < 0 &&
				    memcmp(h.token, all[h.rank].token, SHM_TOKEN_LEN) == 0)
					k = i;
		if (k < 0 || send_fd(fd, mfd, &cookie, sizeof(cookie)) < 0) {
			close(fd);
			continue;
		}
		s->fd[k] = fd;
		left--;
	}
	close(mfd);
	if (left > 0) {
		for (int i = 1; i < s->m; i++)
			if (s->fd[i] < 0)
				return setup_err(why, len, -ETIMEDOUT, "rank %d did not come for this "
						 "node's shared memory within %gs", s->ranks[i],
						 c->cfg.timeout_s);
	}
	/* Each member answers one byte once it mapped the segment and wrote
	 * the cookie into its control line ('A'), or gave up ('N'). */
	for (int i = 1; i < s->m; i++) {
		char a = 0;

		r = sock_recv_all(s->fd[i], &a, 1, deadline);
		if (r < 0 || a != 'A')
			return setup_err(why, len, r < 0 ? r : -EPROTO, "rank %d could not map this "
					 "node's shared memory%s", s->ranks[i],
					 r == -ETIMEDOUT ? " in time" : "");
		if (__atomic_load_n(&ctl_of(s, i)->probe, __ATOMIC_ACQUIRE) != cookie)
			return setup_err(why, len, -EXDEV, "rank %d's writes do not show in rank %d's "
					 "mapping: the segment is not shared", s->ranks[i], c->rank);
	}
	return 0;
}

/* A member: connects to the leader, maps what it hands over, and checks
 * the probe. */
static int follow(struct slotcomm *c, struct shm *s, const struct shm_info *all, int64_t deadline,
		  char *why, size_t len)
{
	const struct shm_info *lead_info = &all[s->ranks[0]];
	struct hello h = { .rank = (uint32_t)c->rank };
	struct sockaddr_un sun;
	socklen_t sl = abstract_addr(lead_info->sock, &sun);
	uint64_t cookie = 0;
	struct stat st;
	int fd, mfd, r, seals;
	char answer = 'N';

	if (!lead_info->sock[0])
		return setup_err(why, len, -ENOTSUP, "rank %d (node leader) has no socket to hand "
				 "the segment over", s->ranks[0]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return setup_err(why, len, -errno, "rank %d: socket: %s", c->rank, strerror(errno));
	s->fd[0] = fd;
	if (connect(fd, (struct sockaddr *)&sun, sl) < 0)
		return setup_err(why, len, -errno, "rank %d cannot reach node leader rank %d's "
				 "socket: %s", c->rank, s->ranks[0], strerror(errno));
	memcpy(h.token, all[c->rank].token, SHM_TOKEN_LEN);
	r = sock_send_all(fd, &h, sizeof(h), deadline);
	if (r == 0)
		r = recv_fd(fd, &mfd, &cookie, sizeof(cookie), deadline);
	if (r < 0)
		return setup_err(why, len, r, "rank %d got no segment from node leader rank %d: %s",
				 c->rank, s->ranks[0], r == -ETIMEDOUT ? "timed out" :
				 r == SOCK_EOF ? "it closed the connection" : strerror(-r));
	seals = fcntl(mfd, F_GET_SEALS);
	if (fstat(mfd, &st) < 0 || (uint64_t)st.st_size != s->lay.total || seals < 0 ||
	    !(seals & F_SEAL_SHRINK)) {
		close(mfd);
		r = setup_err(why, len, -EPROTO, "rank %d: the segment from rank %d is not the "
			      "expected sealed %llu bytes", c->rank, s->ranks[0],
			      (unsigned long long)s->lay.total);
		goto answer;
	}
	r = map_segment(s, mfd);
	close(mfd);
	if (r < 0) {
		setup_err(why, len, r, "rank %d: mmap of %llu bytes: %s", c->rank,
			  (unsigned long long)s->lay.total, strerror(-r));
		goto answer;
	}
	if (s->hdr->magic != SHM_MAGIC || s->hdr->version != SHM_VERSION ||
	    s->hdr->m != (uint32_t)s->m || s->hdr->size != s->lay.total ||
	    s->hdr->cookie != cookie) {
		r = setup_err(why, len, -EXDEV, "rank %d does not see node leader rank %d's writes "
			      "in the segment: it is not shared", c->rank, s->ranks[0]);
		goto answer;
	}
	__atomic_store_n(&ctl_of(s, s->li)->probe, cookie, __ATOMIC_RELEASE);
	answer = 'A';
answer:
	if (sock_send_all(fd, &answer, 1, deadline) < 0 && r == 0)
		r = setup_err(why, len, -EPIPE, "node leader rank %d went away during the setup",
			      s->ranks[0]);
	return r;
}

int shm_attach(struct slotcomm *c, const struct shm_info *all, int64_t deadline, char *why,
	       size_t whylen)
{
	struct shm *s = calloc(1, sizeof(*s));
	char *keys = malloc((size_t)c->size * SHM_KEY_MAX);
	int r;

	why[0] = '\0';
	if (!s || !keys) {
		free(s);
		free(keys);
		return setup_err(why, whylen, -ENOMEM, "rank %d: out of memory", c->rank);
	}
	c->shm = s;
	for (int i = 0; i < c->size; i++)
		memcpy(keys + (size_t)i * SHM_KEY_MAX, all[i].key, SHM_KEY_MAX);
	s->ranks = malloc(sizeof(int) * (size_t)c->size);
	if (!s->ranks) {
		free(keys);
		return setup_err(why, whylen, -ENOMEM, "rank %d: out of memory", c->rank);
	}
	s->m = shm_node_members(keys, SHM_KEY_MAX, c->size, c->rank, s->ranks);
	free(keys);
	if (s->m <= 1) {
		shm_free(c, 0);
		return 0;
	}
	for (int i = 0; i < s->m; i++)
		if (s->ranks[i] == c->rank)
			s->li = i;
	s->fd = malloc(sizeof(int) * (size_t)s->m);
	s->bye = calloc((size_t)s->m, 1);
	s->pfd = calloc((size_t)(s->m + c->size), sizeof(*s->pfd));
	s->src = calloc((size_t)s->m, sizeof(*s->src));
	if (!s->fd || !s->bye || !s->pfd || !s->src)
		return setup_err(why, whylen, -ENOMEM, "rank %d: out of memory", c->rank);
	for (int i = 0; i < s->m; i++)
		s->fd[i] = -1;
	shm_layout_make(&s->lay, s->m, SHM_DEPTH, SHM_SLOT_BYTES);
	r = s->li == 0 ? lead(c, s, all, deadline, why, whylen)
		       : follow(c, s, all, deadline, why, whylen);
	if (c->shm_lfd >= 0) {
		close(c->shm_lfd);
		c->shm_lfd = -1;
	}
	if (r < 0)
		return r;
	for (int i = 0; i < s->m; i++)
		if (s->fd[i] >= 0)
			(void)sock_set_nonblock(s->fd[i], 1);
	return 0;
}

void shm_free(struct slotcomm *c, int bye)
{
	struct shm *s = c->shm;

	if (c->shm_lfd >= 0) {
		close(c->shm_lfd);
		c->shm_lfd = -1;
	}
	if (!s)
		return;
	for (int i = 0; s->fd && i < s->m; i++) {
		if (s->fd[i] < 0)
			continue;
		if (bye && !c->broken)
			(void)send(s->fd[i], "B", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		close(s->fd[i]);
	}
	if (s->base)
		munmap(s->base, s->lay.total);
	free(s->ranks);
	free(s->fd);
	free(s->bye);
	free(s->pfd);
	free(s->src);
	free(s);
	c->shm = NULL;
}
