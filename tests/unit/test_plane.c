// SPDX-License-Identifier: MIT
/* The job plane's glue (plane.c and its parts) on a libevent loop, against
 * a fake peer on the same loop over loopback TCP: a fake chief for a node
 * under test, a fake node for a chief under test.  Each case checks what
 * the plane does (its hooks) and says (its say hook), and that
 * plane_close leaves nothing behind. */
#include <criterion/criterion.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "leak_check.h"
#include "plane.h"
#include "sock.h"

#define SECRET "glue-test-secret"
#define WAIT 10.0   /* seconds: the deadline of every wait */

/* ---- What the plane under test did ---- */

static struct {
	int started, stops, stop_sig, signals, sig, restarts, pauses, resumes;
	bool ended;
	int code;
	struct plane_cause cause;
	struct plane_round_info round;
	int nsaid;
	char said[16][PLANE_TEXT_MAX + 64];
} rec;

static void h_start(void *arg, const struct plane_round_info *ri)
{
	rec.round = *ri;
	(void)arg;
	rec.started++;
}

static void h_stop(void *arg, int sig)
{
	(void)arg;
	rec.stops++;
	rec.stop_sig = sig;
}

static void h_signal(void *arg, int sig)
{
	(void)arg;
	rec.signals++;
	rec.sig = sig;
}

static void h_restart(void *arg, int attempt, double delay, const struct plane_cause *cause)
{
	(void)arg, (void)attempt, (void)delay, (void)cause;
	rec.restarts++;
}

static void h_end(void *arg, int code, const struct plane_cause *cause)
{
	(void)arg;
	rec.ended = true;
	rec.code = code;
	rec.cause = *cause;
}

static int h_pause(void *arg, bool pause)
{
	(void)arg;
	if (pause)
		rec.pauses++;
	else
		rec.resumes++;
	return 2;
}

static void h_say(void *arg, const char *line)
{
	(void)arg;
	if (rec.nsaid < 16)
		snprintf(rec.said[rec.nsaid++], sizeof(rec.said[0]), "%s", line);
}

static const struct plane_hooks hooks = {
	.start = h_start, .stop = h_stop, .signal = h_signal, .restart = h_restart, .end = h_end,
	.pause = h_pause, .say = h_say,
};

static bool said(const char *text)
{
	for (int i = 0; i < rec.nsaid; i++)
		if (strstr(rec.said[i], text))
			return true;
	return false;
}

static void assert_said(const char *text)
{
	cr_assert(said(text), "no line with \"%s\" (%d said, first: \"%s\")", text, rec.nsaid,
		  rec.nsaid ? rec.said[0] : "");
}

/* ---- The loop and the fake peer on it ---- */

static struct event_base *base;
static double hb_timeout;  /* the planes' --heartbeat-timeout */

/* The peer's end: a listener (fake chief) and one connection. */
static struct {
	int lfd, fd;
	struct event *ev_accept, *ev_read;
	unsigned char in[4 + PLANE_MAX_FRAME];
	size_t len;
	bool eof;
	const void *greet;  /* when set, every connection gets this and is closed */
	size_t greet_len;
	/* the handshake's seal (plane_seal): a fake chief seals after its
	 * WELCOME and opens after the JOIN; a fake node seals after its JOIN
	 * and opens after the WELCOME */
	struct plane_seal seal;
	bool chief, keyed, sealed_in, sealed_out;
} peer = { .lfd = -1, .fd = -1 };

static void on_peer_read(evutil_socket_t fd, short what, void *arg)
{
	ssize_t n;

	(void)what, (void)arg;
	if (peer.len == sizeof(peer.in))
		return;
	n = read((int)fd, peer.in + peer.len, sizeof(peer.in) - peer.len);
	if (n > 0) {
		peer.len += (size_t)n;
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		peer.eof = true;
		event_del(peer.ev_read);
	}
}

static void peer_watch(int fd)
{
	peer.fd = fd;
	peer.len = 0;
	peer.eof = false;
	peer.keyed = peer.sealed_in = peer.sealed_out = false;
	cr_assert_eq(sock_set_nonblock(fd, 1), 0);
	peer.ev_read = event_new(base, fd, EV_READ | EV_PERSIST, on_peer_read, NULL);
	cr_assert_not_null(peer.ev_read);
	event_add(peer.ev_read, NULL);
}

static void on_peer_accept(evutil_socket_t lfd, short what, void *arg)
{
	int fd = accept4((int)lfd, NULL, NULL, SOCK_CLOEXEC);

	(void)what, (void)arg;
	if (fd < 0)
		return;
	if (peer.greet) {
		(void)sock_send_all(fd, peer.greet, peer.greet_len, sock_deadline_in(WAIT));
		close(fd);
	} else if (peer.fd < 0) {
		peer_watch(fd);
	} else {
		close(fd);
	}
}

static void peer_hangup(void)
{
	if (peer.ev_read) {
		event_free(peer.ev_read);
		peer.ev_read = NULL;
	}
	if (peer.fd >= 0)
		close(peer.fd);
	peer.fd = -1;
}

static void setup(void)
{
	memset(&rec, 0, sizeof(rec));
	hb_timeout = 5;
	base = event_base_new();
	cr_assert_not_null(base);
}

static void teardown(void)
{
	peer_hangup();
	if (peer.ev_accept)
		event_free(peer.ev_accept);
	if (peer.lfd >= 0)
		close(peer.lfd);
	event_base_free(base);
}

TestSuite(plane_member, .init = setup, .fini = teardown, .timeout = 30);
TestSuite(plane_chief, .init = setup, .fini = teardown, .timeout = 30);

static bool timed_out;

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	timed_out = true;
}

/* Runs the loop until cond() holds; false at the deadline. */
static bool run_until(bool (*cond)(void), double seconds)
{
	struct timeval tv = { .tv_sec = (time_t)seconds, .tv_usec = (suseconds_t)((seconds - (time_t)seconds) * 1e6) };
	struct event *deadline = evtimer_new(base, on_deadline, NULL);

	cr_assert_not_null(deadline);
	timed_out = false;
	evtimer_add(deadline, &tv);
	while (!cond() && !timed_out)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(deadline);
	return cond();
}

static bool have_frame(void)
{
	return plane_frame_len(peer.in, peer.len) != 0 || peer.eof;
}

/* The next frame the plane sent the peer, decoded; raw and its length
 * when asked for. */
static struct plane_msg next_msg(unsigned char *raw, size_t *rawlen)
{
	struct plane_msg m;
	long n;

	long plain;

	cr_assert(run_until(have_frame, WAIT), "no message from the plane");
	n = plane_frame_len(peer.in, peer.len);
	cr_assert_gt(n, 0, "the plane closed the connection instead");
	plain = n;
	if (peer.sealed_in) {
		plain = plane_open_frame(&peer.seal, peer.in, (size_t)n);
		cr_assert_gt(plain, 0, "a frame from the plane failed its seal");
	}
	cr_assert_eq(plane_decode(peer.in, (size_t)plain, &m), 0);
	if (raw) {
		memcpy(raw, peer.in, (size_t)plain);
		*rawlen = (size_t)plain;
	}
	memmove(peer.in, peer.in + n, peer.len - (size_t)n);
	peer.len -= (size_t)n;
	/* a fake node opens what comes after a WELCOME */
	if (m.type == PLANE_WELCOME && peer.keyed && !peer.chief)
		peer.sealed_in = true;
	return m;
}

static struct plane_msg next_but_pings(void)
{
	struct plane_msg m;

	do
		m = next_msg(NULL, NULL);
	while (m.type == PLANE_PING);
	return m;
}

static void peer_send_raw(const void *buf, size_t n)
{
	cr_assert_eq(sock_send_all(peer.fd, buf, n, sock_deadline_in(WAIT)), 0);
}

/* Sealed once the handshake says so. */
static void peer_send(const struct plane_msg *m)
{
	unsigned char frame[4 + PLANE_MAX_FRAME];
	int n = plane_encode(m, frame, sizeof(frame));

	cr_assert_gt(n, 0);
	if (peer.sealed_out)
		n = plane_seal(&peer.seal, frame, (size_t)n, sizeof(frame));
	cr_assert_gt(n, 0);
	peer_send_raw(frame, (size_t)n);
	/* a fake chief seals what comes after its WELCOME */
	if (m->type == PLANE_WELCOME && peer.keyed && peer.chief)
		peer.sealed_out = true;
}

static bool peer_closed(void)
{
	return peer.eof;
}

static bool has_ended(void)
{
	return rec.ended;
}

static bool has_started(void)
{
	return rec.started > 0;
}

static bool has_stopped(void)
{
	return rec.stops > 0;
}

static bool peer_connected(void)
{
	return peer.fd >= 0;
}

/* ---- A node under test, against a fake chief ---- */

static int slots2[] = { 1, 1 };
static char *addrs2[] = { "127.0.0.1", "127.0.0.1" };

static struct plane_cfg node_cfg(int port, double join_timeout)
{
	return (struct plane_cfg){ .nnodes = 2, .nnodes_min = 2, .node_rank = 1, .role = PLANE_MEMBER, .slots = 1,
				   .addrs = addrs2, .slot_counts = slots2,
				   .world_size = 2, .control_port = port, .join_timeout = join_timeout,
				   .hb_timeout = hb_timeout, .secret = SECRET };
}

/* What a chief of two nodes tells node 1 (one slot each). */
static const struct plane_msg START1 = {
	.type = PLANE_START,
	.round = { .round = 1, .nnodes = 2, .node_rank = 1, .rank_base = 1, .world_size = 2 },
};

/* The fake chief listens; returns its port. */
static int fake_chief(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	cr_assert_eq(sock_listen((struct sockaddr *)&a, sizeof(a), 8, 0, &peer.lfd), 0);
	peer.ev_accept = event_new(base, peer.lfd, EV_READ | EV_PERSIST, on_peer_accept, NULL);
	cr_assert_not_null(peer.ev_accept);
	event_add(peer.ev_accept, NULL);
	return sock_local_port(peer.lfd);
}

static struct plane *open_plane(const struct plane_cfg *cfg)
{
	struct plane *p;
	char err[256] = "";

	cr_assert_eq(plane_open(&p, base, cfg, &hooks, NULL, err, sizeof(err)), 0, "%s", err);
	return p;
}

/* The handshake as the chief plays it, up to the node's JOIN (checked
 * with secret); returns the chief's nonce. */
static void chief_hello(unsigned char chief_nonce[AUTH_NONCE_LEN], struct plane_msg *join,
			unsigned char *raw, size_t *rawlen)
{
	struct plane_msg chal = { .type = PLANE_CHAL };

	cr_assert(run_until(peer_connected, WAIT), "the node did not connect");
	auth_nonce(chal.nonce);
	memcpy(chief_nonce, chal.nonce, AUTH_NONCE_LEN);
	peer_send(&chal);
	*join = next_msg(raw, rawlen);
	cr_assert_eq(join->type, PLANE_JOIN);
	/* what the node sends after its JOIN is sealed */
	plane_seal_init(&peer.seal, SECRET, chief_nonce, join->nonce, true);
	peer.chief = peer.keyed = peer.sealed_in = true;
}

/* A chief that holds the secret lets the node in. */
static void chief_welcome(void)
{
	unsigned char cn[AUTH_NONCE_LEN], raw[4 + PLANE_MAX_FRAME];
	struct plane_msg join, welcome = { .type = PLANE_WELCOME };
	size_t rawlen;

	chief_hello(cn, &join, raw, &rawlen);
	cr_assert(plane_check_join(SECRET, cn, raw, rawlen, &join), "the node's JOIN does not prove the secret");
	cr_assert_eq(join.join.node_rank, 1);
	cr_assert_eq(join.join.slots, 1);
	cr_assert_str_eq(join.join.host, "127.0.0.1");
	plane_welcome_mac(SECRET, join.nonce, cn, welcome.mac);
	peer_send(&welcome);
}

/* A fake chief that answers every connection with greet and closes it:
 * no slotrun speaks so, and no retry would find one on that port, so the
 * node gives up at once (long before its join timeout), showing what it
 * heard. */
static void gives_up_showing(const void *greet, size_t len, const char *shown)
{
	struct plane_cfg cfg;
	struct plane *p;
	char line[256];

	peer.greet = greet;
	peer.greet_len = len;
	cfg = node_cfg(fake_chief(), 60.0);
	p = open_plane(&cfg);
	cr_assert(run_until(has_ended, WAIT), "the node did not give up before its join timeout");
	cr_assert_eq(rec.code, 2);
	cr_assert_eq(rec.started, 0);
	snprintf(line, sizeof(line), "slotrun: the chief's control port 127.0.0.1:%d answered with something "
		 "that is not slotrun (it sent \"%s\")", cfg.control_port, shown);
	assert_said(line);
	cr_assert_eq(rec.nsaid, 1);
	plane_close(p);
}

LEAK_TEST_OPTS(plane_member, garbage_from_the_chief_port_ends_the_join_showing_it, .timeout = 30)
{
	static const unsigned char garbage[] = { 0xff, 0xff, 0xff, 0xff, 'G', 'E', 'T', ' ', '/', '\n' };

	gives_up_showing(garbage, sizeof(garbage), "\\xff\\xff\\xff\\xffGET /\\x0a");
}

LEAK_TEST_OPTS(plane_member, a_banner_longer_than_shown_is_cut, .timeout = 30)
{
	static const char banner[] = "SSH-2.0-OpenSSH_9.6p1 Debian-3 with a long tail\r\n";

	gives_up_showing(banner, sizeof(banner) - 1, "SSH-2.0-OpenSSH_9.6p1 Debian-3 w...");
}

LEAK_TEST_OPTS(plane_member, zero_bytes_are_shown, .timeout = 30)
{
	static const unsigned char zeros[] = { 0, 0, 0, 0 };

	gives_up_showing(zeros, sizeof(zeros), "\\x00\\x00\\x00\\x00");
}

LEAK_TEST_OPTS(plane_member, a_message_other_than_chal_is_not_a_slotrun_chief, .timeout = 30)
{
	unsigned char ping[16];
	int n = plane_encode(&(struct plane_msg){ .type = PLANE_PING }, ping, sizeof(ping));
	char shown[64] = "";

	cr_assert_gt(n, 0);
	for (int i = 0; i < n; i++)
		snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), "\\x%02x", ping[i]);
	gives_up_showing(ping, (size_t)n, shown);
}

/* A listener that accepts and never speaks: the join timeout, shorter
 * than a handshake's own deadline, ends the join. */
LEAK_TEST_OPTS(plane_member, a_silent_listener_ends_the_join_at_the_join_timeout, .timeout = 30)
{
	struct plane_cfg cfg = node_cfg(fake_chief(), 0.5);
	struct plane *p = open_plane(&cfg);
	char line[256];

	cr_assert(run_until(has_ended, PLANE_AUTH_DEADLINE - 2), "the handshake outlived the join timeout");
	cr_assert_eq(rec.code, 2);
	snprintf(line, sizeof(line), "slotrun: could not join the chief at 127.0.0.1:%d within 0.5 s: "
		 "no answer to the handshake", cfg.control_port);
	assert_said(line);
	plane_close(p);
}

LEAK_TEST_OPTS(plane_member, a_chief_with_another_secret_refuses_and_the_node_ends, .timeout = 30)
{
	struct plane_cfg cfg = node_cfg(fake_chief(), 10.0);
	struct plane *p = open_plane(&cfg);
	unsigned char cn[AUTH_NONCE_LEN], raw[4 + PLANE_MAX_FRAME];
	struct plane_msg join, refuse = { .type = PLANE_REFUSE };
	size_t rawlen;

	chief_hello(cn, &join, raw, &rawlen);
	cr_assert(!plane_check_join("another secret", cn, raw, rawlen, &join));
	strcpy(refuse.text, "wrong job secret");
	peer_send(&refuse);
	peer_hangup();
	cr_assert(run_until(has_ended, WAIT / 2), "the node waited for its join timeout");
	cr_assert_eq(rec.code, 2);
	cr_assert_eq(rec.started, 0);
	assert_said("refused our job secret");
	plane_close(p);
}

/* A refused node that the chief tells whose secret is the odd one says
 * that line, at once. */
static void refused_then_told(int odd, const char *line)
{
	struct plane_cfg cfg = node_cfg(fake_chief(), 60.0);
	struct plane *p = open_plane(&cfg);
	unsigned char cn[AUTH_NONCE_LEN], raw[4 + PLANE_MAX_FRAME];
	struct plane_msg join;
	size_t rawlen;

	chief_hello(cn, &join, raw, &rawlen);
	peer_send(&(struct plane_msg){ .type = PLANE_REFUSE });
	cr_assert(!run_until(has_ended, 0.3), "a refused node must wait to hear whose secret is odd");
	peer_send(&(struct plane_msg){ .type = PLANE_MISMATCH, .node = odd });
	cr_assert(run_until(has_ended, WAIT));
	cr_assert_eq(rec.code, 2);
	cr_assert_eq(rec.started, 0);
	assert_said(line);
	cr_assert_eq(rec.nsaid, 1);
	plane_close(p);
}

LEAK_TEST_OPTS(plane_member, a_node_told_its_secret_is_the_odd_one_names_itself, .timeout = 30)
{
	refused_then_told(1, "slotrun: node 1 (127.0.0.1) presented another job secret: give every node "
			  "the same --secret-file / SLOTRUN_JOB_SECRET");
}

LEAK_TEST_OPTS(plane_member, a_node_told_the_chief_s_secret_is_the_odd_one_names_the_chief, .timeout = 30)
{
	refused_then_told(0, "slotrun: node 0 (127.0.0.1), the chief, holds another job secret than the "
			  "other nodes");
}

LEAK_TEST_OPTS(plane_member, a_mismatch_naming_a_third_node_names_this_one, .timeout = 30)
{
	refused_then_told(7, "slotrun: node 1 (127.0.0.1) presented another job secret");
}

LEAK_TEST_OPTS(plane_member, a_welcome_without_the_secret_is_not_trusted, .timeout = 30)
{
	struct plane_cfg cfg = node_cfg(fake_chief(), 10.0);
	struct plane *p = open_plane(&cfg);
	unsigned char cn[AUTH_NONCE_LEN], raw[4 + PLANE_MAX_FRAME];
	struct plane_msg join, welcome = { .type = PLANE_WELCOME };
	size_t rawlen;

	chief_hello(cn, &join, raw, &rawlen);
	plane_welcome_mac("another secret", join.nonce, cn, welcome.mac);
	peer_send(&welcome);
	peer_send(&START1);
	cr_assert(run_until(has_ended, WAIT));
	cr_assert_eq(rec.code, 2);
	cr_assert_eq(rec.started, 0, "a START from a chief that did not prove the secret");
	assert_said("did not prove it holds the job secret");
	plane_close(p);
}

LEAK_TEST_OPTS(plane_member, start_stop_and_end_from_the_chief, .timeout = 30)
{
	struct plane_cfg cfg = node_cfg(fake_chief(), 10.0);
	struct plane *p = open_plane(&cfg);
	struct plane_msg stop = { .type = PLANE_STOP, .node = 0,
				  .cause = { .kind = PLANE_CAUSE_RANK, .node = 0, .rank = 0, .code = 3,
					     .host = "127.0.0.1" } };
	struct plane_msg m;

	chief_welcome();
	peer_send(&START1);
	cr_assert(run_until(has_started, WAIT));
	cr_assert_eq(rec.nsaid, 0, "a start says nothing");

	plane_local_signal(p, SIGUSR1, false, NULL);
	m = next_but_pings();
	cr_assert_eq(m.type, PLANE_SIGNAL_REQ);
	cr_assert_eq(m.sig, SIGUSR1);

	peer_send(&stop);
	cr_assert(run_until(has_stopped, WAIT));
	cr_assert_eq(rec.stop_sig, 0);
	assert_said("slotrun: stopping this node's workers: rank 0 on node 0 (127.0.0.1) exit 3");

	plane_local_done(p, 143);
	m = next_but_pings();
	cr_assert_eq(m.type, PLANE_DONE);
	cr_assert_eq(m.code, 143);
	peer_send(&(struct plane_msg){ .type = PLANE_END, .code = 3, .cause = stop.cause });
	cr_assert(run_until(has_ended, WAIT));
	cr_assert_eq(rec.code, 3);
	cr_assert_eq(rec.cause.rank, 0);
	plane_close(p);
}

LEAK_TEST_OPTS(plane_member, a_chief_gone_after_the_start_stops_the_workers, .timeout = 30)
{
	struct plane_cfg cfg = node_cfg(fake_chief(), 10.0);
	struct plane *p = open_plane(&cfg);

	chief_welcome();
	peer_send(&START1);
	cr_assert(run_until(has_started, WAIT));
	peer_hangup();
	cr_assert(run_until(has_stopped, WAIT));
	cr_assert_eq(rec.stop_sig, 0);
	assert_said("slotrun: stopping this node's workers: node 0 (127.0.0.1) lost: connection closed");
	cr_assert(!rec.ended, "the node's status waits for its workers");
	plane_local_done(p, 143);
	cr_assert(rec.ended);
	cr_assert_eq(rec.code, 1);
	cr_assert_eq(rec.cause.kind, PLANE_CAUSE_LOST);
	plane_close(p);
}

/* After the handshake every frame is sealed: one that fails its seal (a
 * replay of the last one here) loses the chief, as a close would. */
LEAK_TEST_OPTS(plane_member, a_replayed_frame_from_the_chief_drops_it, .timeout = 30)
{
	struct plane_cfg cfg = node_cfg(fake_chief(), 10.0);
	struct plane *p = open_plane(&cfg);
	unsigned char frame[4 + PLANE_MAX_FRAME];
	int n;

	chief_welcome();
	n = plane_encode(&START1, frame, sizeof(frame));
	n = plane_seal(&peer.seal, frame, (size_t)n, sizeof(frame));
	cr_assert_gt(n, 0);
	peer_send_raw(frame, (size_t)n);
	cr_assert(run_until(has_started, WAIT));
	peer_send_raw(frame, (size_t)n); /* the same START again */
	cr_assert(run_until(has_stopped, WAIT), "the node obeyed a replayed frame");
	assert_said("slotrun: stopping this node's workers: node 0 (127.0.0.1) lost: it sent a message that "
		    "failed authentication (forged, replayed or reordered)");
	cr_assert_eq(rec.started, 1);
	cr_assert(run_until(peer_closed, WAIT), "the node kept the connection");
	plane_local_done(p, 143);
	cr_assert_eq(rec.code, 1);
	plane_close(p);
}

/* ---- A chief under test, against a fake node ---- */

/* The node list of the chief under test (each case runs in its own
 * process). */
static char **chief_addrs = addrs2;

static struct plane_cfg chief_cfg(int port)
{
	struct plane_cfg c = node_cfg(port, 10.0);

	c.node_rank = 0;
	c.role = PLANE_CHIEF;
	c.addrs = chief_addrs;
	return c;
}

/* A chief on a free port (another process may take the one we found
 * before the chief binds it: then another). */
static struct plane *open_chief(struct plane_cfg *cfg)
{
	for (int i = 0; i < 20; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct plane *p;
		char err[256] = "";
		int fd, r;

		cr_assert_eq(sock_listen((struct sockaddr *)&a, sizeof(a), 1, 0, &fd), 0);
		*cfg = chief_cfg(sock_local_port(fd));
		close(fd);
		r = plane_open(&p, base, cfg, &hooks, NULL, err, sizeof(err));
		if (r == 0)
			return p;
		cr_assert_eq(r, -EADDRINUSE, "%s", err);
	}
	cr_assert_fail("no free port");
	return NULL;
}

/* The fake node connects; returns the chief's CHAL. */
static struct plane_msg node_connect(const struct plane_cfg *cfg)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)cfg->control_port) };
	struct plane_msg chal;
	int fd;

	peer_hangup();
	cr_assert_eq(sock_connect((struct sockaddr *)&a, sizeof(a), 0, sock_deadline_in(WAIT), &fd), 0);
	peer_watch(fd);
	chal = next_msg(NULL, NULL);
	cr_assert_eq(chal.type, PLANE_CHAL);
	return chal;
}

static void node_join(const struct plane_msg *chal, const char *secret)
{
	struct plane_join j = { .node_rank = 1, .nnodes = 2, .slots = 1, .world_size = 2,
				.hb_timeout_ms = plane_hb_ms(hb_timeout) };
	unsigned char nn[AUTH_NONCE_LEN], frame[4 + PLANE_MAX_FRAME];
	int n;

	snprintf(j.version, sizeof(j.version), "%s", SLOTRUN_VERSION);
	strcpy(j.host, "127.0.0.1");
	auth_nonce(nn);
	n = plane_make_join(secret, chal->nonce, nn, &j, frame, sizeof(frame));
	cr_assert_gt(n, 0);
	peer_send_raw(frame, (size_t)n);
	plane_seal_init(&peer.seal, secret, chal->nonce, nn, false);
	peer.chief = false;
	peer.keyed = peer.sealed_out = true;
}

LEAK_TEST_OPTS(plane_chief, a_stranger_s_garbage_is_dropped_and_the_job_goes_on, .timeout = 30)
{
	struct plane_cfg cfg;
	struct plane *p = open_chief(&cfg);
	static const unsigned char garbage[] = { 0, 0, 0, 2, 99, 1 };
	struct plane_msg chal;

	node_connect(&cfg);
	peer_send_raw(garbage, sizeof(garbage));
	cr_assert(run_until(peer_closed, WAIT), "the chief kept a connection that sent garbage");
	cr_assert_eq(rec.nsaid, 0, "garbage is not worth a line");
	cr_assert(!rec.ended);

	chal = node_connect(&cfg);
	node_join(&chal, SECRET);
	cr_assert_eq(next_msg(NULL, NULL).type, PLANE_WELCOME);
	cr_assert_eq(next_but_pings().type, PLANE_START);
	cr_assert_eq(rec.started, 1);
	plane_close(p);
}

LEAK_TEST_OPTS(plane_chief, a_listed_node_with_another_secret_ends_the_join, .timeout = 30)
{
	struct plane_cfg cfg;
	struct plane *p = open_chief(&cfg);
	struct plane_msg chal = node_connect(&cfg), m;

	node_join(&chal, "another secret");
	m = next_msg(NULL, NULL);
	cr_assert_eq(m.type, PLANE_REFUSE);
	m = next_msg(NULL, NULL);
	cr_assert_eq(m.type, PLANE_MISMATCH, "the node is not told whose secret is odd");
	cr_assert_eq(m.node, 1);
	cr_assert(run_until(has_ended, WAIT), "the chief waited for its join timeout");
	cr_assert_eq(rec.code, 2);
	cr_assert_eq(rec.started, 0);
	assert_said("slotrun: node 1 (127.0.0.1) presented another job secret: give every node the same "
		    "--secret-file / SLOTRUN_JOB_SECRET");
	cr_assert_eq(rec.nsaid, 1);
	plane_close(p);
}

/* Node 1 is listed at an address the test does not connect from. */
static char *addrs_far[] = { "127.0.0.1", "192.0.2.7" };

LEAK_TEST_OPTS(plane_chief, another_secret_from_another_address_is_refused_alone, .timeout = 30)
{
	struct plane_cfg cfg;
	struct plane *p;
	struct plane_msg chal, m;

	chief_addrs = addrs_far;
	p = open_chief(&cfg);
	chal = node_connect(&cfg);
	node_join(&chal, "another secret");
	m = next_msg(NULL, NULL);
	cr_assert_eq(m.type, PLANE_REFUSE);
	cr_assert(run_until(peer_closed, WAIT));
	assert_said("127.0.0.1 presented another job secret: not joined");
	cr_assert(!rec.ended, "a stray connection ended the join");
	cr_assert_eq(rec.started, 0);
	plane_close(p);
}

LEAK_TEST_OPTS(plane_chief, a_join_for_another_challenge_is_refused_alone, .timeout = 30)
{
	struct plane_cfg cfg;
	struct plane *p = open_chief(&cfg);
	struct plane_msg chal = node_connect(&cfg), m;

	chal.nonce[0] ^= 1; /* made with our secret for another connection's challenge */
	node_join(&chal, SECRET);
	m = next_msg(NULL, NULL);
	cr_assert_eq(m.type, PLANE_REFUSE);
	cr_assert(run_until(peer_closed, WAIT));
	assert_said("127.0.0.1 did not prove the job secret");
	cr_assert(!rec.ended, "a replayed or forged join ended the join");
	plane_close(p);
}

LEAK_TEST_OPTS(plane_chief, a_whole_job_ends_on_both_nodes_with_one_status, .timeout = 30)
{
	struct plane_cfg cfg;
	struct plane *p = open_chief(&cfg);
	struct plane_msg chal = node_connect(&cfg), m;
	struct plane_cause f = { .kind = PLANE_CAUSE_RANK, .node = 1, .rank = 1, .code = 5 };

	node_join(&chal, SECRET);
	cr_assert_eq(next_msg(NULL, NULL).type, PLANE_WELCOME);
	cr_assert_eq(next_but_pings().type, PLANE_START);
	cr_assert_eq(rec.started, 1);

	peer_send(&(struct plane_msg){ .type = PLANE_FAIL, .cause = f });
	cr_assert(run_until(has_stopped, WAIT));
	cr_assert_eq(rec.stop_sig, 0);
	assert_said("slotrun: stopping this node's workers: rank 1 on node 1 (127.0.0.1) exit 5");
	plane_local_done(p, 143);
	cr_assert(!rec.ended, "node 1 is not done yet");
	peer_send(&(struct plane_msg){ .type = PLANE_DONE, .code = 5 });
	cr_assert(run_until(has_ended, WAIT));
	cr_assert_eq(rec.code, 5);
	m = next_but_pings();
	cr_assert_eq(m.type, PLANE_END);
	cr_assert_eq(m.code, 5);
	cr_assert_eq(m.cause.rank, 1);
	plane_close(p);
}

/* A frame injected into a proved connection (plain, with no seal) loses
 * the node. */
LEAK_TEST_OPTS(plane_chief, an_injected_frame_from_a_node_drops_it, .timeout = 30)
{
	struct plane_cfg cfg;
	struct plane *p = open_chief(&cfg);
	struct plane_msg chal = node_connect(&cfg);
	unsigned char frame[64];
	int n;

	node_join(&chal, SECRET);
	cr_assert_eq(next_msg(NULL, NULL).type, PLANE_WELCOME);
	cr_assert_eq(next_but_pings().type, PLANE_START);
	n = plane_encode(&(struct plane_msg){ .type = PLANE_DONE, .code = 0 }, frame, sizeof(frame));
	peer_send_raw(frame, (size_t)n);
	cr_assert(run_until(has_stopped, WAIT), "the chief took an unsealed frame");
	assert_said("slotrun: stopping this node's workers: node 1 (127.0.0.1) lost: it sent a message that "
		    "failed authentication (forged, replayed or reordered)");
	cr_assert(run_until(peer_closed, WAIT), "the chief kept the connection");
	plane_local_done(p, 143);
	cr_assert(run_until(has_ended, WAIT));
	cr_assert_eq(rec.code, 1);
	plane_close(p);
}

LEAK_TEST_OPTS(plane_chief, a_node_lost_after_the_start_stops_the_chief_s_workers, .timeout = 30)
{
	struct plane_cfg cfg;
	struct plane *p = open_chief(&cfg);
	struct plane_msg chal = node_connect(&cfg);

	node_join(&chal, SECRET);
	cr_assert_eq(next_msg(NULL, NULL).type, PLANE_WELCOME);
	cr_assert_eq(next_but_pings().type, PLANE_START);
	peer_hangup();
	cr_assert(run_until(has_stopped, WAIT));
	assert_said("slotrun: stopping this node's workers: node 1 (127.0.0.1) lost: connection closed");
	plane_local_done(p, 143);
	cr_assert(rec.ended);
	cr_assert_eq(rec.code, 1);
	cr_assert_eq(rec.cause.kind, PLANE_CAUSE_LOST);
	plane_close(p);
}

LEAK_TEST_OPTS(plane_chief, a_port_in_use_is_named, .timeout = 30)
{
	struct plane_cfg cfg, again;
	struct plane *p = open_chief(&cfg), *q = NULL;
	char err[256] = "";

	again = cfg;
	cr_assert_eq(plane_open(&q, base, &again, &hooks, NULL, err, sizeof(err)), -EADDRINUSE);
	cr_assert_null(q);
	cr_assert(strstr(err, "choose another with --control-port"), "%s", err);
	plane_close(p);
}

/* ---- A terminal stop pauses the job ---- */

#define SHORT_HB 0.5

static bool never(void)
{
	return rec.ended || rec.stops > 0;
}

static bool has_resumed(void)
{
	return rec.resumes > 0;
}

LEAK_TEST_OPTS(plane_chief, a_paused_node_is_not_lost_while_silent_and_its_continuation_resumes_the_job,
	       .timeout = 30)
{
	struct plane_cfg cfg;
	struct plane *p;
	struct plane_msg chal, m;

	hb_timeout = SHORT_HB;
	p = open_chief(&cfg);
	chal = node_connect(&cfg);
	node_join(&chal, SECRET);
	cr_assert_eq(next_msg(NULL, NULL).type, PLANE_WELCOME);
	cr_assert_eq(next_but_pings().type, PLANE_START);
	peer_send(&(struct plane_msg){ .type = PLANE_PAUSE_REQ, .sig = SIGTSTP });
	/* silent for several heartbeat timeouts: the case itself */
	cr_assert(!run_until(never, 6 * SHORT_HB), "a paused node was taken for lost");
	cr_assert_eq(rec.pauses, 1);
	assert_said("slotrun: job paused: SIGTSTP to node 1 (127.0.0.1): 2 ranks stopped here until it is continued");
	while (plane_frame_len(peer.in, peer.len) > 0)
		cr_assert_neq(next_msg(NULL, NULL).type, PLANE_PING, "a ping to a stopped node");

	peer_send(&(struct plane_msg){ .type = PLANE_RESUME_REQ });
	cr_assert(run_until(has_resumed, WAIT));
	assert_said("slotrun: job resumed: node 1 (127.0.0.1) was continued: 2 ranks continued here");
	m = next_but_pings();
	cr_assert_eq(m.type, PLANE_RESUME);
	cr_assert_eq(m.node, 1, "the node continued last resumes too");
	/* continued, its silence counts again (its host, ours, answers: after
	 * PLANE_STALL_BOUND heartbeat timeouts) */
	cr_assert(run_until(has_stopped, WAIT));
	assert_said("lost: it did not answer for");
	plane_close(p);
}

LEAK_TEST_OPTS(plane_member, a_paused_chief_is_not_lost_and_a_local_stop_is_told_to_it, .timeout = 30)
{
	struct plane_cfg cfg;
	struct plane *p;
	struct plane_msg m;

	hb_timeout = SHORT_HB;
	cfg = node_cfg(fake_chief(), 10.0);
	p = open_plane(&cfg);
	chief_welcome();
	peer_send(&START1);
	cr_assert(run_until(has_started, WAIT));
	peer_send(&(struct plane_msg){ .type = PLANE_PAUSE, .sig = SIGTSTP, .node = 0 });
	cr_assert(!run_until(never, 6 * SHORT_HB), "a paused chief was taken for lost");
	cr_assert_eq(rec.pauses, 1);
	assert_said("slotrun: job paused: SIGTSTP to node 0 (127.0.0.1): 2 ranks stopped here until it is continued");

	plane_local_pause(p, SIGTSTP);
	m = next_but_pings();
	cr_assert_eq(m.type, PLANE_PAUSE_REQ);
	cr_assert_eq(m.sig, SIGTSTP);
	plane_local_resume(p);
	cr_assert_eq(next_but_pings().type, PLANE_RESUME_REQ);
	cr_assert_eq(rec.resumes, 0, "the chief resumes the job");
	peer_send(&(struct plane_msg){ .type = PLANE_RESUME, .node = 1 });
	cr_assert(run_until(has_resumed, WAIT));
	assert_said("slotrun: continued: the job resumes: 2 ranks continued here");
	cr_assert(run_until(has_stopped, WAIT), "a chief silent after the pause is lost");
	plane_close(p);
}
