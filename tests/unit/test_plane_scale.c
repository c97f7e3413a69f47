// SPDX-License-Identifier: MIT
/* The job plane's chief (plane.c and its parts) against many fake nodes at
 * once on one libevent loop over loopback TCP: what a large job does to it
 * that two nodes do not.  A join storm past the old cap on handshakes, the
 * memory a node costs the chief, a frame larger than a read arriving in
 * pieces and going to every node, and the last words of an END to more
 * nodes than the chief used to wait for. */
#include <criterion/criterion.h>
#include <errno.h>
#include <event2/event.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster_info.h"
#include "leak_check.h"
#include "plane.h"
#include "sock.h"

#define SECRET "scale-test-secret"
#define WAIT 20.0      /* seconds: the deadline of every wait */
#define MAX_NODES 100  /* fake nodes, the chief not counted */

static struct {
	int started, stops, ended, code;
	struct plane_cause cause;
} rec;

static void h_start(void *arg, const struct plane_round_info *ri)
{
	(void)arg, (void)ri;
	rec.started++;
}

static void h_stop(void *arg, int sig)
{
	(void)arg, (void)sig;
	rec.stops++;
}

static void h_signal(void *arg, int sig)
{
	(void)arg, (void)sig;
}

static void h_restart(void *arg, int attempt, double delay, const struct plane_cause *cause)
{
	(void)arg, (void)attempt, (void)delay, (void)cause;
}

static void h_end(void *arg, int code, const struct plane_cause *cause)
{
	(void)arg;
	rec.ended++;
	rec.code = code;
	rec.cause = *cause;
}

static void h_say(void *arg, const char *line)
{
	(void)arg, (void)line;
}

static const struct plane_hooks hooks = {
	.start = h_start, .stop = h_stop, .signal = h_signal, .restart = h_restart, .end = h_end,
	.say = h_say,
};

/* ---- The loop and the fake nodes on it ---- */

static struct event_base *base;

/* Node k + 1 of the job, as a test socket: what it read, its seal. */
static struct fake {
	int fd;
	struct event *ev;
	unsigned char in[4 + PLANE_MAX_FRAME];
	size_t len;
	bool eof;
	int err;               /* the errno its read ended with, or 0 */
	struct plane_seal seal;
	bool sealed_in, sealed_out;
	unsigned char chief_nonce[AUTH_NONCE_LEN];
} fakes[MAX_NODES];
static int nfakes;

static void on_fake_read(evutil_socket_t fd, short what, void *arg)
{
	struct fake *f = arg;
	ssize_t n;

	(void)what;
	if (f->len == sizeof(f->in))
		return;
	n = read((int)fd, f->in + f->len, sizeof(f->in) - f->len);
	if (n > 0) {
		f->len += (size_t)n;
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		f->eof = true;
		f->err = n < 0 ? errno : 0;
		event_del(f->ev);
	}
}

static void setup(void)
{
	memset(&rec, 0, sizeof(rec));
	base = event_base_new();
	cr_assert_not_null(base);
}

static void teardown(void)
{
	for (int k = 0; k < nfakes; k++) {
		if (fakes[k].ev)
			event_free(fakes[k].ev);
		if (fakes[k].fd >= 0)
			close(fakes[k].fd);
		fakes[k] = (struct fake){ .fd = -1 };
	}
	event_base_free(base);
}

TestSuite(plane_scale, .init = setup, .fini = teardown, .timeout = 60);

static bool timed_out;

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	timed_out = true;
}

/* Runs the loop until cond(arg) holds; false at the deadline. */
static bool run_until(bool (*cond)(const void *), const void *arg)
{
	struct timeval tv = { .tv_sec = (time_t)WAIT };
	struct event *deadline = evtimer_new(base, on_deadline, NULL);

	cr_assert_not_null(deadline);
	timed_out = false;
	evtimer_add(deadline, &tv);
	while (!cond(arg) && !timed_out)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(deadline);
	return cond(arg);
}

static bool fake_has_frame(const void *arg)
{
	const struct fake *f = arg;

	return plane_frame_len(f->in, f->len) != 0 || f->eof;
}

static bool has_started(const void *arg)
{
	(void)arg;
	return rec.started > 0;
}

static bool has_ended(const void *arg)
{
	(void)arg;
	return rec.ended > 0;
}

/* The next frame the chief sent node k + 1, decoded. */
static struct plane_msg fake_next(int k)
{
	struct fake *f = &fakes[k];
	struct plane_msg m;
	long n, plain;

	cr_assert(run_until(fake_has_frame, f), "node %d heard nothing from the chief", k + 1);
	n = plane_frame_len(f->in, f->len);
	cr_assert_gt(n, 0, "the chief closed node %d's connection instead (%s)", k + 1, strerror(f->err));
	plain = f->sealed_in ? plane_open_frame(&f->seal, f->in, (size_t)n) : n;
	cr_assert_gt(plain, 0, "a frame to node %d failed its seal", k + 1);
	cr_assert_eq(plane_decode(f->in, (size_t)plain, &m), 0);
	memmove(f->in, f->in + n, f->len - (size_t)n);
	f->len -= (size_t)n;
	return m;
}

static struct plane_msg fake_next_but_pings(int k)
{
	struct plane_msg m;

	do
		m = fake_next(k);
	while (m.type == PLANE_PING);
	return m;
}

/* Sends m from node k + 1, sealed once its JOIN went out. */
static void fake_send(int k, const struct plane_msg *m)
{
	static unsigned char frame[4 + PLANE_MAX_FRAME];
	int n = plane_encode(m, frame, sizeof(frame));

	cr_assert_gt(n, 0);
	if (fakes[k].sealed_out)
		n = plane_seal(&fakes[k].seal, frame, (size_t)n, sizeof(frame));
	cr_assert_gt(n, 0);
	cr_assert_eq(sock_send_all(fakes[k].fd, frame, (size_t)n, sock_deadline_in(WAIT)), 0);
}

/* ---- A chief of n + 1 nodes under test ---- */

static int slot_counts[MAX_NODES + 1];
static char *addrs[MAX_NODES + 1];

static struct plane_cfg chief_cfg(int n, int port)
{
	addrs[0] = "127.0.0.1";
	for (int k = 0; k <= n; k++) {
		slot_counts[k] = 1;
		if (k)
			addrs[k] = CI_ADDR_UNKNOWN;
	}
	return (struct plane_cfg){ .nnodes = n + 1, .nnodes_min = n + 1, .node_rank = 0, .role = PLANE_CHIEF,
				   .slots = 1, .addrs = addrs, .slot_counts = slot_counts, .world_size = n + 1,
				   .control_port = port, .join_timeout = WAIT, .hb_timeout = 5.0,
				   .secret = SECRET };
}

/* A chief on a free port (another process may take the one we found
 * before the chief binds it: then another). */
static struct plane *open_chief(int n, struct plane_cfg *cfg)
{
	for (int i = 0; i < 20; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct plane *p;
		char err[256] = "";
		int fd, r;

		cr_assert_eq(sock_listen((struct sockaddr *)&a, sizeof(a), 1, 0, &fd), 0);
		*cfg = chief_cfg(n, sock_local_port(fd));
		close(fd);
		r = plane_open(&p, base, cfg, &hooks, NULL, err, sizeof(err));
		if (r == 0)
			return p;
		cr_assert_eq(r, -EADDRINUSE, "%s", err);
	}
	cr_assert_fail("no free port");
	return NULL;
}

/* n fake nodes' sockets and events, made before anything is measured. */
static void make_fakes(int n)
{
	cr_assert_leq(n, MAX_NODES);
	nfakes = n;
	for (int k = 0; k < n; k++) {
		struct fake *f = &fakes[k];

		*f = (struct fake){ .fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0) };
		cr_assert_geq(f->fd, 0);
		f->ev = event_new(base, f->fd, EV_READ | EV_PERSIST, on_fake_read, f);
		cr_assert_not_null(f->ev);
	}
}

/* Every fake node connects before the chief's loop runs once: the whole
 * storm waits in its backlog together. */
static void connect_all(const struct plane_cfg *cfg)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)cfg->control_port) };

	for (int k = 0; k < nfakes; k++) {
		int r = connect(fakes[k].fd, (struct sockaddr *)&a, sizeof(a));

		cr_assert(r == 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
		event_add(fakes[k].ev, NULL);
	}
}

/* Node k + 1 answers the chief's CHAL with its JOIN. */
static void fake_join(int k)
{
	struct fake *f = &fakes[k];
	struct plane_join j = { .node_rank = k + 1, .nnodes = nfakes + 1, .slots = 1, .world_size = nfakes + 1,
				.hb_timeout_ms = plane_hb_ms(5.0) };
	static unsigned char frame[4 + PLANE_MAX_FRAME];
	unsigned char nn[AUTH_NONCE_LEN];
	struct plane_msg chal = fake_next(k);
	int n;

	cr_assert_eq(chal.type, PLANE_CHAL);
	snprintf(j.version, sizeof(j.version), "%s", SLOTRUN_VERSION);
	strcpy(j.host, "127.0.0.1");
	auth_nonce(nn);
	n = plane_make_join(SECRET, chal.nonce, nn, &j, frame, sizeof(frame));
	cr_assert_gt(n, 0);
	cr_assert_eq(sock_send_all(f->fd, frame, (size_t)n, sock_deadline_in(WAIT)), 0);
	plane_seal_init(&f->seal, SECRET, chal.nonce, nn, false);
	f->sealed_out = true;
}

/* Every node joins, in turn, and hears START with its own place. */
static void join_all(void)
{
	for (int k = 0; k < nfakes; k++)
		fake_join(k);
	for (int k = 0; k < nfakes; k++) {
		struct plane_msg m = fake_next(k);

		cr_assert_eq(m.type, PLANE_WELCOME, "node %d: %d", k + 1, m.type);
		fakes[k].sealed_in = true;
	}
	cr_assert(run_until(has_started, NULL), "the chief did not start");
	for (int k = 0; k < nfakes; k++) {
		struct plane_msg m = fake_next_but_pings(k);

		cr_assert_eq(m.type, PLANE_START);
		cr_assert_eq(m.round.node_rank, k + 1);
		cr_assert_eq(m.round.rank_base, k + 1);
		cr_assert_eq(m.round.world_size, nfakes + 1);
	}
}

/* Every node is DONE, then the chief: END to every node. */
static void end_all(struct plane *p)
{
	for (int k = 0; k < nfakes; k++)
		fake_send(k, &(struct plane_msg){ .type = PLANE_DONE, .code = 0 });
	plane_local_done(p, 0);
	cr_assert(run_until(has_ended, NULL), "the chief did not end the job");
	cr_assert_eq(rec.code, 0);
}

/* Three times the old cap on handshakes connect at once: each is
 * challenged and joins (the cap closed those past it, and their nodes had
 * to retry), and the job starts. */
LEAK_TEST_OPTS(plane_scale, a_join_storm_past_the_old_cap_joins_every_node_at_once, .timeout = 60)
{
	struct plane_cfg cfg;
	struct plane *p;
	int n = 3 * PLANE_MAX_PENDING;

	make_fakes(n);
	p = open_chief(n, &cfg);
	connect_all(&cfg);
	join_all();
	cr_assert_eq(rec.started, 1);
	end_all(p);
	for (int k = 0; k < n; k++)
		cr_assert_eq(fake_next_but_pings(k).type, PLANE_END);
	plane_close(p);
}

/* The goal: the chief holds at most 10 KiB per node (it held a
 * 32 KiB input buffer per connection before). */
LEAK_TEST_OPTS(plane_scale, the_chief_holds_under_10_kib_a_node, .timeout = 60)
{
	struct plane_cfg cfg;
	struct plane *p;
	size_t before, after;
	int n = MAX_NODES;

#if defined(__SANITIZE_ADDRESS__)
	cr_skip_test("ASan's allocator is not what mallinfo2 counts");
#endif
	make_fakes(n);
	p = open_chief(n, &cfg);
	before = mallinfo2().uordblks;
	connect_all(&cfg);
	join_all();
	after = mallinfo2().uordblks;
	cr_assert_leq((after - before) / (size_t)n, 10 * 1024, "the chief holds %zu bytes a node",
		      (after - before) / (size_t)n);
	plane_close(p);
}

/* A FAIL whose stderr tail is larger than one read (and than the buffer a
 * connection starts with), arriving in pieces: taken whole, it is the
 * root cause that goes to every other node. */
LEAK_TEST_OPTS(plane_scale, a_large_frame_in_pieces_is_taken_whole_and_goes_to_every_node, .timeout = 60)
{
	static struct plane_cause f = { .kind = PLANE_CAUSE_RANK, .node = 3, .rank = 3, .code = 7 };
	static unsigned char frame[4 + PLANE_MAX_FRAME];
	struct plane_cfg cfg;
	struct plane *p;
	int n = 20, len;
	size_t cut[] = { 3, 1000, 5000 };

	memset(f.tail, 't', sizeof(f.tail) - 2);
	f.tail[sizeof(f.tail) - 2] = 'Z';
	make_fakes(n);
	p = open_chief(n, &cfg);
	connect_all(&cfg);
	join_all();
	len = plane_encode(&(struct plane_msg){ .type = PLANE_FAIL, .cause = f }, frame, sizeof(frame));
	cr_assert_gt(len, 5000 + 1024);
	len = plane_seal(&fakes[2].seal, frame, (size_t)len, sizeof(frame));
	cr_assert_gt(len, 0);
	for (size_t i = 0, at = 0; i <= sizeof(cut) / sizeof(cut[0]); i++) {
		size_t to = i < sizeof(cut) / sizeof(cut[0]) ? cut[i] : (size_t)len;

		cr_assert_eq(sock_send_all(fakes[2].fd, frame + at, to - at, sock_deadline_in(WAIT)), 0);
		at = to;
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	for (int k = 0; k < n; k++) {
		struct plane_msg m;

		if (k == 2)
			continue;
		m = fake_next_but_pings(k);
		cr_assert_eq(m.type, PLANE_STOP, "node %d: %d", k + 1, m.type);
		cr_assert_eq(m.node, 3);
		cr_assert_eq(m.cause.code, 7);
		cr_assert_eq(strlen(m.cause.tail), sizeof(f.tail) - 1);
		cr_assert_eq(m.cause.tail[sizeof(f.tail) - 2], 'Z');
	}
	cr_assert_eq(rec.stops, 1);
	plane_close(p);
}

static int pending_error(int fd)
{
	int e = 0;
	socklen_t el = sizeof(e);

	cr_assert_eq(getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el), 0);
	return e;
}

/* At its exit the chief reads what every node sent until each closes (or
 * a second passes) before it closes: a close with unread bytes resets the
 * connection, and a reset throws away what the node had not read yet of
 * the END.  It waited on the first 64 connections only. */
LEAK_TEST_OPTS(plane_scale, the_end_is_closed_without_a_reset_on_every_node, .timeout = 60)
{
	struct plane_cfg cfg;
	struct plane *p;
	int n = 80;

	make_fakes(n);
	p = open_chief(n, &cfg);
	connect_all(&cfg);
	join_all();
	end_all(p);
	for (int k = 0; k < n; k++) /* said after the END went out: the chief has not read it */
		fake_send(k, &(struct plane_msg){ .type = PLANE_PING });
	plane_close(p);
	for (int k = 0; k < n; k++) {
		cr_assert_eq(pending_error(fakes[k].fd), 0, "node %d's connection was reset", k + 1);
		cr_assert_eq(fake_next_but_pings(k).type, PLANE_END);
	}
}

/* Where a connection comes from, asked for every JOIN of a job of CI_MAX_NODES
 * nodes whose addresses are all known (a scheduler's list): one pass over
 * every node per JOIN made the join O(N^2), minutes of the chief's CPU at
 * this size (plane_where read every node's addresses for each JOIN).  The
 * index answers each in a binary search: within the suite's timeout, with
 * the same answers. */
Test(plane_scale, where_a_join_comes_from_is_not_a_pass_over_every_node, .timeout = 30)
{
	int n = CI_MAX_NODES;
	struct plane_node_addrs *nodes = calloc((size_t)n, sizeof(*nodes));
	struct plane_addr_index ix = { 0 };
	char from[48];
	int other = -1;

	cr_assert_not_null(nodes);
	for (int k = 0; k < n; k++) { /* 10.x.y.z, node k's own */
		nodes[k].n = 1;
		snprintf(nodes[k].addr[0], sizeof(nodes[k].addr[0]), "10.%d.%d.%d", (k >> 16) & 255, (k >> 8) & 255,
			 k & 255);
	}
	cr_assert_eq(plane_addr_index_build(&ix, nodes, n), 0);
	for (int k = 1; k < n; k++) {
		snprintf(from, sizeof(from), "10.%d.%d.%d", (k >> 16) & 255, (k >> 8) & 255, k & 255);
		cr_assert_eq(plane_where_indexed(&ix, k, from, &other), PLANE_FROM_CLAIMED, "node %d", k);
		/* the same address claiming the next node names this one */
		cr_assert_eq(plane_where_indexed(&ix, k % (n - 1) + 1, from, &other), PLANE_FROM_OTHER, "node %d", k);
		cr_assert_eq(other, k);
	}
	cr_assert_eq(plane_where_indexed(&ix, 1, "10.255.255.254", &other), PLANE_FROM_UNSURE);
	plane_addr_index_free(&ix);
	free(nodes);
}
