// SPDX-License-Identifier: MIT
/* The shared-memory transport's counters and how a rank waits on them
 * (shm.c says what the counters mean).
 *
 * A waiter spins on the counter for SHM_SPIN_NS (with a pause per probe,
 * then yielding the core), then sleeps on it with futex(2), the waiter
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
 * sleeper, so the node's ranks fail at once with its reason. */
#include "shm_internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sock.h"

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
void shm_post(struct shm *s, int which, uint32_t v)
{
	uint32_t *w = &ctl_of(s, s->li)->cnt[which];

	__atomic_store_n(w, v, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&wait_of(s, s->li)->sleepers[which], __ATOMIC_SEQ_CST))
		(void)futex(w, FUTEX_WAKE, INT_MAX, NULL);
}

void shm_post_all(struct shm *s, uint32_t v)
{
	for (int k = 0; k < CNT_N; k++)
		if (cnt_load(s, s->li, k) != v)
			shm_post(s, k, v);
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

int shm_check_peers(struct slotcomm *c)
{
	struct shm *s = c->shm;

	for (int i = 0; s && s->base && i < s->m; i++) {
		struct shm_ctl *p = ctl_of(s, i);
		uint64_t ended = __atomic_load_n(&p->ended, __ATOMIC_ACQUIRE);
		struct shm_desc *d = &p->desc[c->seq & 1];

		if (i == s->li)
			continue;
		if (ended && ended - 1 < c->seq) {
			struct comm_pos t = { .ended = 1, .seq = ended - 1 };

			return comm_diverged(c, s->ranks[i], &t);
		}
		if (c->cur.kind != FRAME_COLL_ALLREDUCE &&
		    __atomic_load_n(&d->seq, __ATOMIC_ACQUIRE) == c->seq) {
			struct comm_pos t = { .kind = FRAME_COLL_ALLREDUCE, .seq = c->seq,
					      .shaped = 1, .count = d->count,
					      .dtype = (uint8_t)d->dtype, .op = (uint8_t)d->op };

			return comm_diverged(c, s->ranks[i], &t);
		}
	}
	return 0;
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
		return shm_check_peers(c);  /* fine if it finished this collective too */
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
	r = shm_check_peers(c);
	if (r < 0)
		return r;
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
int shm_wait_one(struct slotcomm *c, struct shm *s, int i, int which, uint32_t want,
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
int shm_wait_all(struct slotcomm *c, struct shm *s, int which, uint32_t want, const char *what)
{
	for (int i = 0; i < s->m; i++) {
		int r;

		if (i == s->li)
			continue;
		r = shm_wait_one(c, s, i, which, want, SHM_SPIN_NS, what);
		if (r < 0)
			return r;
	}
	return 0;
}

void shm_progress(struct slotcomm *c)
{
	struct shm *s = c->shm;

	if (s) {
		uint32_t *tick = &ctl_of(s, s->li)->alive;

		__atomic_store_n(tick, __atomic_load_n(tick, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	}
}
