// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leak_check.h"
#include "plane_proto.h"

static unsigned char buf[4 + PLANE_MAX_FRAME];

static struct plane_msg roundtrip(const struct plane_msg *in)
{
	struct plane_msg out;
	int n = plane_encode(in, buf, sizeof(buf));

	cr_assert_gt(n, 0);
	cr_assert_eq(plane_frame_len(buf, (size_t)n), n);
	cr_assert_eq(plane_frame_len(buf, (size_t)n - 1), 0, "one byte short is not whole yet");
	cr_assert_eq(plane_decode(buf, (size_t)n, &out), 0);
	cr_assert_eq(out.type, in->type);
	return out;
}

static struct plane_cause sample_cause(void)
{
	struct plane_cause c = { .kind = PLANE_CAUSE_RANK, .node = 2, .rank = 5, .code = 4,
				 .when_ms = 1795000000123LL, .after_ms = 1234 };

	strcpy(c.host, "10.213.0.3");
	strcpy(c.text, "a note");
	strcpy(c.tail, "Traceback\nValueError: bad\n");
	strcpy(c.message, "peer rank 1 did not answer");
	c.blamed = true;
	c.culprit = 1;
	c.culprit_node = 0;
	strcpy(c.culprit_host, "10.213.0.1");
	return c;
}

Test(plane_codec, every_message_survives_the_wire)
{
	struct plane_msg m = { .type = PLANE_JOIN }, out;

	auth_nonce(m.nonce);
	memset(m.mac, 7, sizeof(m.mac));
	m.join = (struct plane_join){ .node_rank = 2, .nnodes = 3, .slots = 4, .world_size = 12, .nnodes_min = 2,
				      .settle_ms = 10000, .admit = PLANE_ADMIT_NEXT_ROUND, .round = 3, .restarts = 1 };
	memset(m.join.id, 9, PLANE_ID_LEN);
	strcpy(m.join.version, "0.1.0");
	strcpy(m.join.host, "gpu-07");
	out = roundtrip(&m);
	cr_assert_arr_eq(out.nonce, m.nonce, AUTH_NONCE_LEN);
	cr_assert_arr_eq(out.mac, m.mac, AUTH_MAC_LEN);
	cr_assert_eq(memcmp(&out.join, &m.join, sizeof(m.join)), 0);

	m = (struct plane_msg){ .type = PLANE_START, .round = { .round = 3, .restarts = 1, .nnodes = 3, .node_rank = 2,
								.rank_base = 6, .world_size = 10, .ncand = 2,
								.cand_rank = { 1, 2 } } };
	strcpy(m.round.master, "10.213.0.1");
	strcpy(m.round.why, "node 3 (10.213.0.4) lost: connection closed");
	strcpy(m.round.cand_host[0], "10.213.0.2");
	strcpy(m.round.cand_host[1], "10.213.0.3");
	out = roundtrip(&m);
	cr_assert_eq(memcmp(&out.round, &m.round, sizeof(m.round)), 0);
	m.round.node_rank = 3;
	cr_assert_eq(plane_decode(buf, (size_t)plane_encode(&m, buf, sizeof(buf)), &out), -EPROTO,
		     "a rank outside the round");
	m.round.node_rank = 2;
	m.round.cand_rank[1] = 0;
	cr_assert_eq(plane_decode(buf, (size_t)plane_encode(&m, buf, sizeof(buf)), &out), -EPROTO,
		     "the chief is no candidate");
	m.round.cand_rank[1] = 2;
	m.round.rank_base = 10;
	cr_assert_eq(plane_decode(buf, (size_t)plane_encode(&m, buf, sizeof(buf)), &out), -EPROTO,
		     "a first rank past the world");

	m = (struct plane_msg){ .type = PLANE_CHAL };
	auth_nonce(m.nonce);
	out = roundtrip(&m);
	cr_assert_arr_eq(out.nonce, m.nonce, AUTH_NONCE_LEN);
	cr_assert_arr_eq(buf + 5, PLANE_MAGIC, PLANE_MAGIC_LEN, "CHAL starts with the magic");

	m = (struct plane_msg){ .type = PLANE_END, .code = 137, .cause = sample_cause() };
	m.cause.code = -1; /* a never-reaped rank's code survives too */
	out = roundtrip(&m);
	cr_assert_eq(out.code, 137);
	cr_assert_eq(memcmp(&out.cause, &m.cause, sizeof(m.cause)), 0);

	m = (struct plane_msg){ .type = PLANE_STOP, .sig = SIGTERM, .node = 1, .cause = sample_cause() };
	out = roundtrip(&m);
	cr_assert_eq(out.sig, SIGTERM);
	cr_assert_eq(out.node, 1);
	cr_assert_str_eq(out.cause.tail, m.cause.tail);

	m = (struct plane_msg){ .type = PLANE_ABORT, .code = 2 };
	strcpy(m.text, "node 2 (h) says 3 slots, node 0 was told 2");
	out = roundtrip(&m);
	cr_assert_str_eq(out.text, m.text);

	m = (struct plane_msg){ .type = PLANE_END, .code = 1, .cause = sample_cause() };
	strcpy(m.text, "2 nodes left, fewer than --nnodes' MIN 3");
	out = roundtrip(&m);
	cr_assert_str_eq(out.text, m.text);

	int simple[] = { PLANE_PING, PLANE_DONE, PLANE_SIGNAL_REQ, PLANE_STOP_REQ, PLANE_SIGNAL };
	for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++) {
		m = (struct plane_msg){ .type = simple[i], .sig = SIGUSR1, .code = 3, .node = 2 };
		out = roundtrip(&m);
	}
	leak_check();
}

Test(plane_codec, strings_that_fill_their_field_do_not_encode)
{
	struct plane_msg m = { .type = PLANE_ABORT };

	memset(m.text, 'x', sizeof(m.text)); /* no NUL inside the field */
	cr_assert_eq(plane_encode(&m, buf, sizeof(buf)), -EMSGSIZE);
	memset(m.text, 0, sizeof(m.text));
	cr_assert_eq(plane_encode(&m, buf, 6), -EMSGSIZE, "a buffer too small");
	leak_check();
}

Test(plane_codec, lengths_are_checked_before_anything_is_kept)
{
	unsigned char huge[4] = { 0x80, 0, 0, 0 }, zero[5] = { 0, 0, 0, 0, 1 };
	unsigned char limit[4] = { 0, 0, (PLANE_MAX_FRAME + 1) >> 8, (PLANE_MAX_FRAME + 1) & 0xff };

	cr_assert_eq(plane_frame_len(huge, 4), -EMSGSIZE);
	cr_assert_eq(plane_frame_len(zero, 5), -EMSGSIZE);
	cr_assert_eq(plane_frame_len(limit, 4), -EMSGSIZE);
	cr_assert_eq(plane_frame_len(huge, 3), 0, "a header not yet whole");
	leak_check();
}

/* Nodes whose tries failed together spread their next ones over half to
 * one and a half times the backoff delay, evenly, whatever the delay. */
Test(plane_codec, a_retry_waits_the_delay_spread_at_random)
{
	double lo = 1e9, hi = 0, sum = 0;
	int below = 0;

	cr_assert_float_eq(plane_retry_wait(1.0, 0), 0.5, 1e-9);
	cr_assert_lt(plane_retry_wait(1.0, UINT32_MAX), 1.5);
	cr_assert_gt(plane_retry_wait(1.0, UINT32_MAX), 1.5 - 1e-6);
	cr_assert_float_eq(plane_retry_wait(0.05, 1u << 31), 0.05, 1e-9, "the middle is the delay");
	for (uint32_t i = 0; i < 1000; i++) {
		double w = plane_retry_wait(0.2, i * 4294967u);

		lo = w < lo ? w : lo;
		hi = w > hi ? w : hi;
		sum += w;
		below += w < 0.2;
	}
	cr_assert_geq(lo, 0.1);
	cr_assert_lt(hi, 0.3);
	cr_assert_float_eq(sum / 1000, 0.2, 0.001, "on average the delay");
	cr_assert(below > 450 && below < 550, "%d of 1000 below the delay", below);
}

/* What a reader must hold for the frame under way, known from its header
 * alone: a connection's buffer grows to it, and no further. */
Test(plane_codec, a_frame_s_size_is_known_from_its_header)
{
	unsigned char head[4] = { 0, 0, 0x40, 0 }, most[4] = { 0, 0, PLANE_MAX_FRAME >> 8, PLANE_MAX_FRAME & 0xff };
	unsigned char huge[4] = { 0x80, 0, 0, 0 }, zero[4] = { 0 };

	cr_assert_eq(plane_frame_size(head, 4), 4 + 0x4000);
	cr_assert_eq(plane_frame_size(head, 3), 0, "a header not yet whole");
	cr_assert_eq(plane_frame_size(most, 4), 4 + PLANE_MAX_FRAME);
	cr_assert_eq(plane_frame_size(huge, 4), -EMSGSIZE);
	cr_assert_eq(plane_frame_size(zero, 4), -EMSGSIZE);
	cr_assert_eq(plane_frame_len(head, 4), 0, "known, but not whole");
	leak_check();
}

static int decode_bytes(const char *bytes, size_t n)
{
	struct plane_msg m;
	unsigned char f[64];

	f[0] = 0;
	f[1] = 0;
	f[2] = (unsigned char)(n >> 8);
	f[3] = (unsigned char)n;
	memcpy(f + 4, bytes, n);
	return plane_decode(f, n + 4, &m);
}

Test(plane_codec, malformed_frames_are_refused)
{
	struct plane_msg m = { .type = PLANE_DONE, .code = 1 };
	int n;

	cr_assert_eq(decode_bytes("\x63", 1), -EPROTO, "unknown type");
	cr_assert_eq(decode_bytes("\x00", 1), -EPROTO, "type 0");
	cr_assert_eq(decode_bytes("GET / HTTP/1.1\r\n", 16), -EPROTO, "an HTTP request");
	cr_assert_eq(decode_bytes("\x0c\x00\x00", 3), -EPROTO, "DONE cut short");
	cr_assert_eq(decode_bytes("\x0c\x00\x00\x00\x01\x00", 6), -EPROTO, "DONE with a byte too many");
	cr_assert_eq(decode_bytes("\x0c\x00\x00\x01\x00", 5), -EPROTO, "a status above 255");
	cr_assert_eq(decode_bytes("\x08\x00\x00\x04\x00", 5), -EPROTO, "a signal out of range");
	cr_assert_eq(decode_bytes("\x04\x00\x03" "a\0b", 6), -EPROTO, "a NUL inside a string");
	cr_assert_eq(decode_bytes("\x04\x00\x05" "ab", 5), -EPROTO, "a string longer than the frame");
	cr_assert_eq(decode_bytes("\x04\xff\xff", 3), -EPROTO, "a string longer than its field");
	cr_assert_eq(decode_bytes("\x01" "slotrun-plane/2\0", 17), -EPROTO, "another magic");
	cr_assert_eq(decode_bytes("\x04\x00\x02" "ok", 5), 0, "and a good one decodes");
	n = plane_encode(&m, buf, sizeof(buf));
	cr_assert_eq(plane_decode(buf, (size_t)n + 1, &m), -EPROTO, "a length that disagrees");
	leak_check();
}

/* ---- Handshake ---- */

static struct plane_join sample_join(void)
{
	struct plane_join j = { .node_rank = 1, .nnodes = 3, .slots = 2, .world_size = 6 };

	strcpy(j.version, "0.1.0");
	strcpy(j.host, "10.213.0.2");
	return j;
}

Test(plane_handshake, a_join_proves_the_secret_for_this_chief_nonce_only)
{
	unsigned char nc[AUTH_NONCE_LEN], nc2[AUTH_NONCE_LEN], nn[AUTH_NONCE_LEN];
	struct plane_join j = sample_join();
	struct plane_msg m;
	int n;

	cr_assert_eq(auth_init(), 0);
	auth_nonce(nc);
	auth_nonce(nc2);
	auth_nonce(nn);
	n = plane_make_join("sekrit", nc, nn, &j, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(plane_decode(buf, (size_t)n, &m), 0);
	cr_assert_eq(m.join.slots, 2);
	cr_assert(plane_check_join("sekrit", nc, buf, (size_t)n, &m));
	cr_assert(!plane_check_join("other", nc, buf, (size_t)n, &m), "another secret");
	cr_assert(!plane_check_join("sekrit", nc2, buf, (size_t)n, &m), "replayed to another connection");
	/* the MAC covers the fields: a node cannot be made to claim more slots */
	buf[4 + 1 + AUTH_NONCE_LEN + AUTH_MAC_LEN + 8 + 3] ^= 1; /* slots' low byte */
	cr_assert_eq(plane_decode(buf, (size_t)n, &m), 0);
	cr_assert_eq(m.join.slots, 3);
	cr_assert(!plane_check_join("sekrit", nc, buf, (size_t)n, &m), "tampered fields");
	leak_check();
}

Test(plane_handshake, the_welcome_proves_the_chief_holds_the_secret_too)
{
	unsigned char nc[AUTH_NONCE_LEN], nn[AUTH_NONCE_LEN], nn2[AUTH_NONCE_LEN], mac[AUTH_MAC_LEN];

	cr_assert_eq(auth_init(), 0);
	auth_nonce(nc);
	auth_nonce(nn);
	auth_nonce(nn2);
	plane_welcome_mac("sekrit", nn, nc, mac);
	cr_assert(plane_check_welcome("sekrit", nn, nc, mac));
	cr_assert(!plane_check_welcome("other", nn, nc, mac));
	cr_assert(!plane_check_welcome("sekrit", nn2, nc, mac), "a recorded welcome for another node nonce");
	leak_check();
}

/* Sealed frames: what each side sends after the handshake. */
static int sealed_ping(struct plane_seal *s, unsigned char *out, size_t cap)
{
	int n = plane_encode(&(struct plane_msg){ .type = PLANE_PING }, out, cap);

	cr_assert_gt(n, 0);
	return plane_seal(s, out, (size_t)n, cap);
}

Test(plane_handshake, sealed_frames_open_in_order_on_the_same_connection_only)
{
	unsigned char nc[AUTH_NONCE_LEN], nn[AUTH_NONCE_LEN], f1[64], f2[64], copy[64];
	struct plane_seal chief, node, stranger, node2;
	struct plane_msg m = { .type = PLANE_STOP, .sig = 15, .node = 2 };
	long plain;
	int n1, n2;

	cr_assert_eq(auth_init(), 0);
	auth_nonce(nc);
	auth_nonce(nn);
	plane_seal_init(&chief, "sekrit", nc, nn, true);
	plane_seal_init(&node, "sekrit", nc, nn, false);
	n1 = sealed_ping(&chief, f1, sizeof(f1));
	cr_assert_gt(n1, 0);
	cr_assert_eq(plane_frame_len(f1, (size_t)n1), n1, "a sealed frame is measured as any other");
	n2 = plane_encode(&m, buf, sizeof(buf));
	cr_assert_gt(n2, 0);
	n2 = plane_seal(&chief, buf, (size_t)n2, sizeof(buf));
	cr_assert_gt(n2, 0);

	/* in order: both open, and what is left decodes as sent */
	memcpy(copy, f1, (size_t)n1);
	plain = plane_open_frame(&node, copy, (size_t)n1);
	cr_assert_eq(plain, n1 - AUTH_TAG_LEN);
	cr_assert_eq(plane_decode(copy, (size_t)plain, &m), 0);
	cr_assert_eq(m.type, PLANE_PING);
	memcpy(f2, buf, 64);
	plain = plane_open_frame(&node, buf, (size_t)n2);
	cr_assert_gt(plain, 0);
	cr_assert_eq(plane_decode(buf, (size_t)plain, &m), 0);
	cr_assert_eq(m.type, PLANE_STOP);
	cr_assert_eq(m.sig, 15);

	/* replayed: the first frame again, after the second */
	memcpy(copy, f1, (size_t)n1);
	cr_assert_eq(plane_open_frame(&node, copy, (size_t)n1), -EBADMSG, "a replayed frame opened");

	/* reordered: the second before the first */
	plane_seal_init(&node2, "sekrit", nc, nn, false);
	cr_assert_eq(plane_open_frame(&node2, f2, (size_t)n2), -EBADMSG, "a frame out of order opened");

	/* another connection's key, another secret, our own direction */
	auth_nonce(nn);
	plane_seal_init(&stranger, "sekrit", nc, nn, false);
	memcpy(copy, f1, (size_t)n1);
	cr_assert_eq(plane_open_frame(&stranger, copy, (size_t)n1), -EBADMSG, "another connection's frame");
	plane_seal_init(&stranger, "other", nc, nn, false);
	memcpy(copy, f1, (size_t)n1);
	cr_assert_eq(plane_open_frame(&stranger, copy, (size_t)n1), -EBADMSG, "another secret's frame");
	plane_seal_init(&stranger, "sekrit", nc, nn, true);
	memcpy(copy, f1, (size_t)n1);
	cr_assert_eq(plane_open_frame(&stranger, copy, (size_t)n1), -EBADMSG, "a frame of our own direction");

	/* injected or tampered: a flipped bit anywhere, a plain frame, a cut one */
	plane_seal_init(&chief, "sekrit", nc, nn, true);
	for (int i = 0; i < n1; i++) {
		plane_seal_init(&node, "sekrit", nc, nn, false);
		memcpy(copy, f1, (size_t)n1);
		copy[i] ^= 0x10;
		cr_assert_eq(plane_open_frame(&node, copy, (size_t)n1), -EBADMSG, "bit flipped in byte %d", i);
	}
	n1 = plane_encode(&(struct plane_msg){ .type = PLANE_PING }, copy, sizeof(copy));
	cr_assert_eq(plane_open_frame(&node, copy, (size_t)n1), -EBADMSG, "a plain frame opened");
	cr_assert_eq(plane_open_frame(&node, copy, 3), -EBADMSG, "a cut frame opened");
	leak_check();
}

Test(plane_handshake, a_frame_too_large_to_seal_is_refused)
{
	struct plane_seal s;
	unsigned char nc[AUTH_NONCE_LEN] = { 0 }, nn[AUTH_NONCE_LEN] = { 1 };
	struct plane_msg m = { .type = PLANE_ABORT, .code = 2 };
	int n;

	plane_seal_init(&s, "sekrit", nc, nn, true);
	n = plane_encode(&m, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(plane_seal(&s, buf, (size_t)n, (size_t)n + AUTH_TAG_LEN - 1), -EMSGSIZE, "no room for the tag");
	cr_assert_gt(plane_seal(&s, buf, (size_t)n, (size_t)n + AUTH_TAG_LEN), 0);
}

Test(plane_silence, a_silent_peer_whose_host_answers_is_waited_for_up_to_the_bound)
{
	cr_assert_eq(plane_silence(4.9, 10, 5), PLANE_HEARD);
	cr_assert_eq(plane_silence(5.1, 0.2, 5), PLANE_WAIT, "its host ACKed our heartbeat");
	cr_assert_eq(plane_silence(14.9, 0.2, 5), PLANE_WAIT);
	cr_assert_eq(plane_silence(15.1, 0.2, 5), PLANE_LOST_STALLED, "past 3 heartbeat timeouts");
	cr_assert_eq(plane_silence(5.1, 5.1, 5), PLANE_LOST_SILENT, "its host is silent too: a cut or a dead host");
	cr_assert_eq(plane_silence(5.1, -1, 5), PLANE_LOST_SILENT, "nothing known of its host");
}

Test(plane_silence, a_node_knows_its_own_stall_and_when_its_peers_gave_it_up)
{
	cr_assert(!plane_self_stalled(0.5, 5), "a tick late by half a second is no stall");
	cr_assert(plane_self_stalled(2.6, 5));
	cr_assert(!plane_self_given_up(10, 5), "twice the timeout: the peers still wait");
	cr_assert(plane_self_given_up(14.5, 5), "within a heartbeat of the bound: they may have");
}

/* ---- The chief's decisions ---- */

static int slots3[] = { 2, 2, 2 };
static char *addrs3[] = { "10.213.0.1", "10.213.0.2", "10.213.0.3" };
static struct plane_coord_cfg cfg3 = { .nnodes = 3, .slot_counts = slots3, .world_size = 6,
				       .version = "0.1.0", .addrs = addrs3, .join_timeout = 300 };
static struct plane_coord co;

static void coord_setup(void)
{
	cr_assert_eq(plane_coord_init(&co, &cfg3), 0);
}

static void coord_teardown(void)
{
	plane_coord_free(&co);
}

TestSuite(plane_coord, .init = coord_setup, .fini = coord_teardown);

static struct plane_acts join(int node, int slots)
{
	struct plane_join j = sample_join();

	j.node_rank = node;
	j.slots = slots;
	strcpy(j.host, addrs3[node < 3 && node >= 0 ? node : 0]);
	return plane_coord_join(&co, &j);
}

static void all_in(void)
{
	cr_assert(!join(1, 2).start);
	cr_assert(join(2, 2).start);
	cr_assert_eq(co.phase, PLANE_RUNNING);
}

Test(plane_coord, start_only_when_every_node_is_in)
{
	all_in();
}

Test(plane_coord, a_node_joining_once_the_job_runs_is_refused_alone)
{
	struct plane_acts a;

	all_in();
	a = join(1, 2); /* node 1's command run a second time */
	cr_assert(a.refuse && !a.abort && !a.exit && !a.stop, "refused alone, nothing else");
	cr_assert_eq(a.code, 2);
	cr_assert(strstr(a.text, "node 1 (10.213.0.2) joined after the job had started: not joined, "
			  "the job runs on without it"), "%s", a.text);
	cr_assert_eq(co.phase, PLANE_RUNNING, "the job runs on");
	cr_assert_eq(co.cause.kind, PLANE_CAUSE_NONE);
	cr_assert(plane_coord_done(&co, 1, 0).end == false);
	cr_assert(plane_coord_done(&co, 2, 0).end == false);
	cr_assert(plane_coord_done(&co, 0, 0).end, "its end is every original node's");
	cr_assert_eq(co.code, 0);
}

struct mismatch {
	int field; /* 0 slots, 1 nnodes, 2 world, 3 version, 4 rank, 5 rank 0, 6 restarts, 7 heartbeat */
	char want[128]; /* inline: the test runs in another process */
};

static struct plane_acts join_with(int field)
{
	struct plane_join j = sample_join();

	j.node_rank = 2;
	strcpy(j.host, "10.213.0.3");
	switch (field) {
	case 0: j.slots = 3; break;
	case 1: j.nnodes = 4; break;
	case 2: j.world_size = 7; break;
	case 3: strcpy(j.version, "0.2.0"); break;
	case 4: j.node_rank = 3; break;
	case 5: j.node_rank = 0; break;
	case 6: j.max_restarts = 3; break;
	case 7: j.hb_timeout_ms = 10500; break;
	}
	return plane_coord_join(&co, &j);
}

ParameterizedTestParameters(plane_coord, a_disagreement_aborts_naming_node_and_field)
{
	static struct mismatch cases[] = {
		{ 0, "node 2 (10.213.0.3) says 3 slots, node 0 was told 2" },
		{ 1, "node 2 (10.213.0.3) says 4 nodes, node 0 was told 3" },
		{ 2, "node 2 (10.213.0.3) says world size 7, node 0 was told 6" },
		{ 3, "node 2 (10.213.0.3) runs slotrun 0.2.0, node 0 runs 0.1.0" },
		{ 4, "a node at 10.213.0.3 says it is node 3, but the job's other nodes are 1..2" },
		{ 5, "a node at 10.213.0.3 says it is node 0, but the job's other nodes are 1..2" },
		{ 6, "node 2 (10.213.0.3) says --max-restarts 3, node 0 was told 0" },
		{ 7, "node 2 (10.213.0.3) says --heartbeat-timeout 10.5, node 0 was told 0" },
	};
	return cr_make_param_array(struct mismatch, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct mismatch *m, plane_coord, a_disagreement_aborts_naming_node_and_field)
{
	struct plane_acts a = join_with(m->field);

	cr_assert(a.abort);
	cr_assert(!a.start);
	cr_assert_str_eq(a.text, m->want, "the line names the node and the field");
	cr_assert_eq(a.code, 2);
	cr_assert_str_eq(a.text, m->want);
	cr_assert_eq(co.phase, PLANE_ABORTING);
	cr_assert(!a.exit, "node 1 has not heard it yet");
}

Test(plane_coord, after_an_abort_the_chief_stays_until_every_node_was_told)
{
	struct plane_acts a;

	cr_assert(!join(1, 2).abort);
	a = join(2, 3);
	cr_assert(a.abort && a.first);
	cr_assert(a.exit, "nodes 1 and 2 have both heard it");

	plane_coord_free(&co);
	coord_setup();
	a = join(2, 3);
	cr_assert(a.abort && a.first && !a.exit);
	a = join(1, 2);
	cr_assert(a.abort, "a node that comes later hears the same");
	cr_assert(!a.first, "said once");
	cr_assert_str_eq(a.text, "node 2 (10.213.0.3) says 3 slots, node 0 was told 2");
	cr_assert(a.exit);

	plane_coord_free(&co);
	coord_setup();
	join(2, 3);
	a = plane_coord_join_timeout(&co);
	cr_assert(a.exit, "those that never come are not waited for past the timeout");
	cr_assert_eq(a.code, 2);
}

Test(plane_coord, a_node_rank_given_twice_aborts)
{
	struct plane_acts a;

	cr_assert(!join(1, 2).abort);
	a = join(1, 2);
	cr_assert(a.abort);
	cr_assert_eq(a.code, 2);
	cr_assert(strstr(a.text, "node 1 joined twice"), "%s", a.text);
}

Test(plane_coord, the_join_timeout_names_every_missing_node)
{
	struct plane_acts a = plane_coord_join_timeout(&co);

	cr_assert(a.abort);
	cr_assert(a.exit);
	cr_assert_eq(a.code, 2);
	cr_assert_str_eq(a.text, "node 1 (10.213.0.2), node 2 (10.213.0.3) did not join within 300 s");
	plane_coord_free(&co);
	coord_setup();
	join(1, 2);
	a = plane_coord_join_timeout(&co);
	cr_assert_str_eq(a.text, "node 2 (10.213.0.3) did not join within 300 s");
}

Test(plane_coord, the_join_timeout_after_the_start_changes_nothing)
{
	all_in();
	cr_assert(!plane_coord_join_timeout(&co).abort);
}

static struct plane_cause rank_fail(int rank, int code)
{
	struct plane_cause f = { .kind = PLANE_CAUSE_RANK, .rank = rank, .code = code };
	return f;
}

Test(plane_coord, the_first_failure_stops_every_node_and_decides_the_status)
{
	struct plane_cause f = rank_fail(5, 4);
	struct plane_acts a;

	all_in();
	a = plane_coord_fail(&co, 2, &f, 10.0);
	cr_assert(a.stop);
	cr_assert_eq(a.stop_sig, 0);
	cr_assert_eq(a.origin, 2, "the failing node is stopping already");
	f = rank_fail(0, 1);
	a = plane_coord_fail(&co, 0, &f, 11.0);
	cr_assert(!a.stop, "a consequence, reported late");
	cr_assert(!plane_coord_done(&co, 0, 143).end);
	cr_assert(!plane_coord_done(&co, 2, 4).end);
	a = plane_coord_done(&co, 1, 143);
	cr_assert(a.end, "every node is done");
	cr_assert_eq(co.code, 4);
	cr_assert_eq(co.cause.rank, 5);
	cr_assert_eq(co.cause.node, 2);
}

Test(plane_coord, the_chief_places_a_rank_named_at_fault_on_its_node)
{
	struct plane_cause f = rank_fail(0, 1);

	all_in();
	f.blamed = true;
	f.culprit = 3;          /* nodes hold ranks 0-1, 2-3, 4-5 */
	f.culprit_node = -1;
	plane_coord_fail(&co, 0, &f, 10.0);
	cr_assert(co.cause.blamed);
	cr_assert_eq(co.cause.culprit, 3);
	cr_assert_eq(co.cause.culprit_node, 1);
	cr_assert_str_eq(co.cause.culprit_host, "10.213.0.2");

	f.culprit = 6;          /* outside the job: nobody is blamed */
	f.culprit_node = 2;
	strcpy(f.culprit_host, "forged");
	plane_coord_fail(&co, 0, &f, 10.1); /* the node refines its own cause */
	cr_assert(!co.cause.blamed);
	cr_assert_eq(co.cause.culprit_node, -1);
	cr_assert_str_eq(co.cause.culprit_host, "");
	cr_assert_eq(co.cause.rank, 0);
}

Test(plane_coord, a_crash_soon_after_beats_a_peer_that_merely_exited)
{
	struct plane_cause first = rank_fail(1, 1), crash = rank_fail(4, 137), late = rank_fail(3, 139);

	all_in();
	plane_coord_fail(&co, 0, &first, 10.0);
	plane_coord_fail(&co, 2, &crash, 10.0 + PLANE_ROOT_WINDOW / 2);
	cr_assert_eq(co.cause.rank, 4);
	cr_assert_eq(co.cause.node, 2);
	plane_coord_fail(&co, 1, &late, 10.0 + PLANE_ROOT_WINDOW * 3);
	cr_assert_eq(co.cause.rank, 4, "outside the window nothing replaces it");
	for (int k = 0; k < 3; k++)
		plane_coord_done(&co, k, 1);
	cr_assert_eq(co.code, 137);
}

Test(plane_coord, a_crash_long_after_does_not_replace_the_root_cause)
{
	struct plane_cause first = rank_fail(1, 1), crash = rank_fail(4, 137);

	all_in();
	plane_coord_fail(&co, 0, &first, 10.0);
	plane_coord_fail(&co, 2, &crash, 10.0 + PLANE_ROOT_WINDOW * 2);
	cr_assert_eq(co.cause.rank, 1);
}

Test(plane_coord, success_is_the_jobs_only_when_every_node_is_done)
{
	all_in();
	cr_assert(!plane_coord_done(&co, 1, 0).end);
	cr_assert(!plane_coord_done(&co, 0, 0).end);
	cr_assert(plane_coord_done(&co, 2, 0).end);
	cr_assert_eq(co.code, 0);
	cr_assert_eq(co.cause.kind, PLANE_CAUSE_NONE);
}

Test(plane_coord, a_stop_signal_anywhere_stops_everywhere_with_128_plus_n)
{
	struct plane_acts a;
	char line[256];

	all_in();
	a = plane_coord_signal(&co, 1, SIGTERM, true);
	cr_assert(a.stop);
	cr_assert_eq(a.stop_sig, SIGTERM);
	cr_assert_eq(a.origin, 1);
	a = plane_coord_signal(&co, 2, SIGINT, true);
	cr_assert(a.stop, "a later stop is still passed on (a second SIGINT escalates)");
	for (int k = 0; k < 3; k++)
		a = plane_coord_done(&co, k, 143);
	cr_assert(a.end);
	cr_assert_eq(co.code, 143, "the first stop decides");
	plane_cause_line(&co.cause, line, sizeof(line));
	cr_assert_str_eq(line, "SIGTERM to node 1 (10.213.0.2)");
}

Test(plane_coord, a_node_that_stops_the_job_for_a_reason_of_its_own_is_named_with_it)
{
	struct plane_msg m = { .type = PLANE_STOP_REQ, .sig = SIGHUP }, out;
	struct plane_acts a;
	char line[256];

	snprintf(m.text, sizeof(m.text), "the session that started it ended");
	out = roundtrip(&m);
	cr_assert_eq(out.sig, SIGHUP);
	cr_assert_str_eq(out.text, m.text, "STOP_REQ carries the reason");
	all_in();
	a = plane_coord_signal_why(&co, 1, out.sig, true, out.text);
	cr_assert(a.stop);
	cr_assert_eq(a.stop_sig, SIGHUP);
	plane_cause_line(&co.cause, line, sizeof(line));
	cr_assert_str_eq(line, "node 1 (10.213.0.2): the session that started it ended (SIGHUP)");
	m.text[0] = '\0';
	cr_assert_str_eq(roundtrip(&m).text, "", "no reason: the signal alone");
}

Test(plane_coord, a_preemption_signal_reaches_every_other_node)
{
	struct plane_acts a;

	all_in();
	a = plane_coord_signal(&co, 0, SIGUSR1, false);
	cr_assert_eq(a.signal, SIGUSR1);
	cr_assert_eq(a.origin, 0);
	cr_assert(!a.stop);
	cr_assert_eq(co.cause.kind, PLANE_CAUSE_NONE);
}

Test(plane_coord, a_stop_before_the_start_aborts_with_128_plus_n)
{
	struct plane_acts a;

	join(1, 2);
	cr_assert(!plane_coord_signal(&co, 1, SIGUSR1, false).abort, "nothing to tell yet");
	a = plane_coord_signal(&co, 1, SIGTERM, true);
	cr_assert(a.abort);
	cr_assert(a.exit, "told to stop: node 2 is not waited for");
	cr_assert_eq(a.code, 143);
	cr_assert_str_eq(a.text, "job stopped before it started: SIGTERM to node 1 (10.213.0.2)");
}

Test(plane_coord, a_lost_node_fails_the_job_with_status_1)
{
	struct plane_acts a;
	char line[256];

	all_in();
	a = plane_coord_lost(&co, 2, "no heartbeat for 5 s");
	cr_assert(a.stop);
	cr_assert(!a.end);
	plane_cause_line(&co.cause, line, sizeof(line));
	cr_assert_str_eq(line, "node 2 (10.213.0.3) lost: no heartbeat for 5 s");
	plane_coord_done(&co, 0, 143);
	a = plane_coord_done(&co, 1, 143);
	cr_assert(a.end, "a lost node is not waited for");
	cr_assert_eq(co.code, 1);
}

Test(plane_coord, a_node_lost_before_the_start_aborts)
{
	struct plane_acts a;

	join(1, 2);
	a = plane_coord_lost(&co, 1, "connection closed");
	cr_assert(a.abort);
	cr_assert_eq(a.code, 2);
	cr_assert_str_eq(a.text, "node 1 (10.213.0.2) left before the job started: connection closed");
}

Test(plane_coord, a_node_gone_after_it_was_done_is_no_failure)
{
	all_in();
	plane_coord_done(&co, 1, 0);
	cr_assert(!plane_coord_lost(&co, 1, "connection closed").stop);
	plane_coord_done(&co, 0, 0);
	cr_assert(plane_coord_done(&co, 2, 0).end);
	cr_assert_eq(co.code, 0);
}

Test(plane_coord, node_indexes_from_outside_are_range_checked)
{
	struct plane_cause f = rank_fail(1, 1);

	all_in();
	cr_assert(!plane_coord_fail(&co, 3, &f, 1.0).stop);
	cr_assert(!plane_coord_fail(&co, -1, &f, 1.0).stop);
	cr_assert(!plane_coord_done(&co, 7, 0).end);
	cr_assert(!plane_coord_lost(&co, 9, "x").stop);
	cr_assert(!plane_coord_signal(&co, 5, SIGTERM, true).stop);
}

Test(plane_coord, cause_lines)
{
	struct plane_cause c = sample_cause();
	char line[256];

	plane_cause_line(&c, line, sizeof(line));
	cr_assert_str_eq(line, "rank 1 on node 0 (10.213.0.1), named by rank 5 on node 2 (10.213.0.3) (exit 4)");
	c.culprit_node = -1;
	plane_cause_line(&c, line, sizeof(line));
	cr_assert_str_eq(line, "rank 1 on node ? (?), named by rank 5 on node 2 (10.213.0.3) (exit 4)");
	c.blamed = false;
	plane_cause_line(&c, line, sizeof(line));
	cr_assert_str_eq(line, "rank 5 on node 2 (10.213.0.3) exit 4");
	c.code = 137;
	plane_cause_line(&c, line, sizeof(line));
	cr_assert_str_eq(line, "rank 5 on node 2 (10.213.0.3) exit 137 (SIGKILL)");
	cr_assert_eq(plane_cause_code(&c), 137);
}

/* ---- Restarts ---- */

#include "restart.h"

static struct restart_policy policy;
static struct plane_coord_cfg cfg_r;

static void restart_setup(void)
{
	restart_init(&policy);
	policy.max_restarts = 2;
	cfg_r = cfg3;
	cfg_r.restart = &policy;
	cfg_r.max_restarts = 0; /* join() presents 0: the count is checked, not used here */
	cr_assert_eq(plane_coord_init(&co, &cfg_r), 0);
	cr_assert(!join(1, 2).start);
	cr_assert(join(2, 2).start);
}

TestSuite(plane_restart, .init = restart_setup, .fini = coord_teardown);

static struct plane_acts fail_and_finish(int node, int code)
{
	struct plane_cause f = rank_fail(2 * node + 1, code);
	struct plane_acts a;

	f.when_ms = 1000;
	plane_coord_fail(&co, node, &f, 1.0);
	for (int k = 0; k < 3; k++)
		a = plane_coord_done(&co, k, k == node ? code : 143);
	return a;
}

Test(plane_restart, a_failure_restarts_every_node_once_all_are_done)
{
	struct plane_acts a = fail_and_finish(2, 1);

	cr_assert(a.restart);
	cr_assert(!a.end);
	cr_assert_eq(co.phase, PLANE_RESTARTING);
	cr_assert_eq(co.restarts, 1);
	cr_assert_eq(co.ended.rank, 5);
	cr_assert_float_eq(co.delay, 1.0, 1e-9);
	cr_assert_eq(co.cause.kind, PLANE_CAUSE_NONE, "the next attempt starts clean");
	cr_assert(!plane_coord_done(&co, 1, 0).end, "a stale report between attempts changes nothing");
	a = plane_coord_restart_now(&co);
	cr_assert(a.start);
	cr_assert_eq(co.phase, PLANE_RUNNING);
	/* attempt 2 succeeds on every node */
	plane_coord_done(&co, 0, 0);
	plane_coord_done(&co, 1, 0);
	a = plane_coord_done(&co, 2, 0);
	cr_assert(a.end);
	cr_assert_eq(co.code, 0);
}

Test(plane_restart, a_crash_loop_stops_after_the_limit_with_doubling_delays)
{
	struct plane_acts a = fail_and_finish(1, 3);

	cr_assert(a.restart);
	plane_coord_restart_now(&co);
	a = fail_and_finish(1, 3);
	cr_assert(a.restart);
	cr_assert_float_eq(co.delay, 2.0, 1e-9);
	plane_coord_restart_now(&co);
	a = fail_and_finish(1, 3);
	cr_assert(a.end, "two restarts were allowed");
	cr_assert(!a.restart);
	cr_assert_eq(co.code, 3);
}

Test(plane_restart, a_stop_during_the_backoff_ends_the_job_at_once)
{
	struct plane_acts a;

	fail_and_finish(0, 1);
	a = plane_coord_signal(&co, 2, SIGUSR1, false);
	cr_assert(!a.signal && !a.end, "no worker to tell");
	a = plane_coord_signal(&co, 2, SIGTERM, true);
	cr_assert(a.end);
	cr_assert_eq(co.code, 143);
	cr_assert(!plane_coord_restart_now(&co).start, "too late");
}

Test(plane_restart, a_stop_while_a_failed_attempt_stops_does_not_restart)
{
	struct plane_cause f = { .kind = PLANE_CAUSE_RANK, .rank = 1, .code = 1, .when_ms = 1 };
	struct plane_acts a;

	a = plane_coord_fail(&co, 0, &f, 0.0);
	cr_assert(a.stop);
	a = plane_coord_signal(&co, 1, SIGTERM, true); /* the user's Ctrl-C during the grace */
	cr_assert(a.stop);
	plane_coord_done(&co, 0, 1);
	plane_coord_done(&co, 1, 143);
	a = plane_coord_done(&co, 2, 143);
	cr_assert(a.end && !a.restart, "the user asked the job to stop");
	cr_assert_eq(co.code, 1, "the root cause is still the failure");
}

Test(plane_restart, a_node_lost_during_the_backoff_ends_the_job)
{
	struct plane_acts a;

	fail_and_finish(0, 1);
	a = plane_coord_lost(&co, 1, "connection closed");
	cr_assert(a.end);
	cr_assert_eq(co.code, 1);
	cr_assert_eq(co.cause.kind, PLANE_CAUSE_LOST);
}

Test(plane_restart, what_does_not_restart)
{
	struct plane_acts a;

	a = plane_coord_signal(&co, 1, SIGTERM, true);
	for (int k = 0; k < 3; k++)
		a = plane_coord_done(&co, k, 143);
	cr_assert(a.end && !a.restart, "a stop by signal");

	plane_coord_free(&co);
	restart_setup();
	plane_coord_lost(&co, 1, "no heartbeat for 5 s");
	plane_coord_done(&co, 0, 143);
	a = plane_coord_done(&co, 2, 143);
	cr_assert(a.end && !a.restart, "a lost node");

	plane_coord_free(&co);
	restart_setup();
	a = fail_and_finish(1, 127);
	cr_assert(a.end && !a.restart, "command not found");
}

Test(plane_codec, restart_survives_the_wire)
{
	struct plane_msg m = { .type = PLANE_RESTART, .code = 2, .delay_ms = 4000, .cause = sample_cause() }, out;

	out = roundtrip(&m);
	cr_assert_eq(out.code, 2);
	cr_assert_eq(out.delay_ms, 4000);
	cr_assert_str_eq(out.cause.host, "10.213.0.3");
	m.code = 0; /* an elastic re-form for a new node counts no restart */
	cr_assert_eq(plane_decode(buf, (size_t)plane_encode(&m, buf, sizeof(buf)), &out), 0);
	m.code = -1;
	cr_assert_eq(plane_decode(buf, (size_t)plane_encode(&m, buf, sizeof(buf)), &out), -EPROTO);
	leak_check();
}

/* ---- A large job ----
 * Every event is decided from counts of the nodes in each state, not a pass
 * over every node: the counts must stay true through joins in any order, a
 * restart, a node lost after it was done and one lost before. */

#define BIG 4096

LEAK_TEST(plane_coord_memory, a_job_of_4096_nodes_counts_its_nodes_through_a_restart)
{
	static int slots[BIG];
	static char *addrs[BIG];
	struct plane_coord_cfg cfg = { .nnodes = BIG, .slot_counts = slots, .world_size = BIG,
				       .version = "0.1.0", .addrs = addrs, .join_timeout = 300,
				       .restart = &policy };
	struct plane_join j = sample_join();
	struct plane_cause f = rank_fail(7, 3);
	struct plane_coord c;
	struct plane_acts a;

	restart_init(&policy);
	policy.max_restarts = 1;
	for (int k = 0; k < BIG; k++) {
		slots[k] = 1;
		addrs[k] = "10.0.0.1";
	}
	f.when_ms = 1000; /* it ran: it may be restarted */
	cr_assert_eq(plane_coord_init(&c, &cfg), 0);
	j.world_size = BIG;
	j.nnodes = BIG;
	j.slots = 1;
	for (int k = BIG - 1; k >= 1; k--) { /* in any order */
		j.node_rank = k;
		a = plane_coord_join(&c, &j);
		cr_assert_eq(a.start, k == 1, "node %d", k);
	}
	cr_assert(plane_coord_fail(&c, 7, &f, 1.0).stop);
	for (int k = 0; k < BIG; k++) {
		a = plane_coord_done(&c, k, k == 7 ? 3 : 143);
		cr_assert_eq(a.restart, k == BIG - 1, "node %d", k);
	}
	cr_assert(plane_coord_restart_now(&c).start);
	/* attempt 2: node 5 is lost after it was done (nothing lost), the
	 * rest succeed: the job ends with the last of them, 0 */
	cr_assert(!plane_coord_done(&c, 5, 0).end);
	cr_assert(!plane_coord_lost(&c, 5, "connection closed").stop);
	for (int k = 0; k < BIG; k++) {
		if (k == 5)
			continue;
		a = plane_coord_done(&c, k, 0);
		cr_assert_eq(a.end, k == BIG - 1, "node %d", k);
	}
	cr_assert_eq(c.code, 0);
	plane_coord_free(&c);
}

/* ---- What a coordinator holds, from init to free ----
 * The fixtures above keep theirs in a global, where a leak would look
 * reachable: these make and free their own inside the test. */

static struct plane_acts join_on(struct plane_coord *c, int node, int slots)
{
	struct plane_join j = sample_join();

	j.node_rank = node;
	j.slots = slots;
	strcpy(j.host, addrs3[node]);
	return plane_coord_join(c, &j);
}

LEAK_TEST(plane_coord_memory, a_whole_job_from_join_to_end)
{
	struct plane_coord c;
	struct plane_cause f = rank_fail(3, 4);
	struct plane_acts a;

	cr_assert_eq(plane_coord_init(&c, &cfg3), 0);
	join_on(&c, 1, 2);
	cr_assert(join_on(&c, 2, 2).start);
	plane_coord_signal(&c, 2, SIGUSR1, false);
	cr_assert(plane_coord_fail(&c, 1, &f, 1.0).stop);
	plane_coord_lost(&c, 2, "connection closed");
	plane_coord_done(&c, 0, 143);
	a = plane_coord_done(&c, 1, 4);
	cr_assert(a.end);
	cr_assert_eq(c.code, 4);
	plane_coord_free(&c);
}

LEAK_TEST(plane_coord_memory, joins_that_abort)
{
	struct plane_coord c;

	cr_assert_eq(plane_coord_init(&c, &cfg3), 0);
	cr_assert(join_on(&c, 2, 3).abort);
	cr_assert(join_on(&c, 1, 2).abort);
	plane_coord_free(&c);

	cr_assert_eq(plane_coord_init(&c, &cfg3), 0);
	join_on(&c, 1, 2);
	cr_assert(join_on(&c, 1, 2).abort, "twice");
	plane_coord_free(&c);

	cr_assert_eq(plane_coord_init(&c, &cfg3), 0);
	cr_assert(plane_coord_join_timeout(&c).exit);
	plane_coord_free(&c);

	cr_assert_eq(plane_coord_init(&c, &cfg3), 0);
	cr_assert(plane_coord_signal(&c, 0, SIGTERM, true).abort);
	plane_coord_free(&c);
}

LEAK_TEST(plane_coord_memory, restarts_up_to_the_limit)
{
	struct restart_policy rp;
	struct plane_coord_cfg rc = cfg3;
	struct plane_coord c;
	struct plane_acts a = { 0 };

	restart_init(&rp);
	rp.max_restarts = 2;
	rc.restart = &rp;
	cr_assert_eq(plane_coord_init(&c, &rc), 0);
	join_on(&c, 1, 2);
	cr_assert(join_on(&c, 2, 2).start);
	for (int attempt = 0; attempt < 3; attempt++) {
		struct plane_cause f = rank_fail(5, 1);

		f.when_ms = 1000; /* it ran: a rank that never started is not restarted */
		plane_coord_fail(&c, 2, &f, attempt);
		for (int k = 0; k < 3; k++)
			a = plane_coord_done(&c, k, k == 2 ? 1 : 143);
		if (a.restart)
			cr_assert(plane_coord_restart_now(&c).start);
	}
	cr_assert(a.end, "the third failure is past the limit");
	plane_coord_free(&c);
}

/* ---- A terminal stop pauses the job ---- */

Test(plane_codec, pause_and_resume_survive_the_wire)
{
	struct plane_msg m = { .type = PLANE_PAUSE, .sig = SIGTSTP, .node = 2 }, out;

	out = roundtrip(&m);
	cr_assert_eq(out.sig, SIGTSTP);
	cr_assert_eq(out.node, 2);
	m = (struct plane_msg){ .type = PLANE_PAUSE_REQ, .sig = SIGTSTP };
	cr_assert_eq(roundtrip(&m).sig, SIGTSTP);
	m = (struct plane_msg){ .type = PLANE_RESUME, .node = 1 };
	cr_assert_eq(roundtrip(&m).node, 1);
	m = (struct plane_msg){ .type = PLANE_RESUME_REQ };
	roundtrip(&m);

	m = (struct plane_msg){ .type = PLANE_PAUSE, .sig = 0, .node = 1 };
	cr_assert_eq(plane_decode(buf, (size_t)plane_encode(&m, buf, sizeof(buf)), &out), -EPROTO,
		     "a pause names its signal");
	m = (struct plane_msg){ .type = PLANE_RESUME, .node = -1 };
	cr_assert_eq(plane_decode(buf, (size_t)plane_encode(&m, buf, sizeof(buf)), &out), -EPROTO,
		     "and a node");
	leak_check();
}

Test(plane_coord, a_stopped_node_pauses_every_other_and_its_continuation_resumes_all)
{
	struct plane_acts a;

	all_in();
	a = plane_coord_pause(&co, 1, SIGTSTP);
	cr_assert_eq(a.pause, SIGTSTP);
	cr_assert_eq(a.pause_node, 1);
	cr_assert_eq(a.origin, 1, "every node but the stopped one, which paused already");
	cr_assert(!a.still && !a.resume && !a.stop);
	a = plane_coord_resume(&co, 1);
	cr_assert(a.resume);
	cr_assert_eq(a.origin, 1);
	cr_assert(!a.pause);
	cr_assert(!plane_coord_resume(&co, 1).resume, "once");
	cr_assert_eq(co.cause.kind, PLANE_CAUSE_NONE, "a pause is no failure");
}

Test(plane_coord, the_job_resumes_once_no_node_is_stopped)
{
	struct plane_acts a;

	all_in();
	plane_coord_pause(&co, 1, SIGTSTP);
	a = plane_coord_pause(&co, 0, SIGTSTP);
	cr_assert_eq(a.pause_node, 0);
	a = plane_coord_resume(&co, 1);
	cr_assert(!a.resume);
	cr_assert(a.still, "node 1 hears that the job stays paused");
	cr_assert_eq(a.pause_node, 0);
	cr_assert_eq(a.origin, 1);
	a = plane_coord_resume(&co, 0);
	cr_assert(a.resume);
	cr_assert_eq(a.origin, 0);
}

Test(plane_coord, a_stopped_node_that_is_lost_holds_no_pause)
{
	struct plane_acts a;

	all_in();
	plane_coord_pause(&co, 1, SIGTSTP);
	plane_coord_pause(&co, 2, SIGTSTP);
	a = plane_coord_lost(&co, 2, "connection closed");
	cr_assert(a.stop, "a paused node that dies is lost like any other");
	cr_assert_eq(co.cause.kind, PLANE_CAUSE_LOST);
	cr_assert(plane_coord_resume(&co, 1).resume);
}

Test(plane_coord, only_a_running_job_pauses)
{
	join(1, 2);
	cr_assert(!plane_coord_pause(&co, 1, SIGTSTP).pause, "joining: no worker to stop");
	cr_assert(!plane_coord_resume(&co, 1).resume);
	join(2, 2);
	cr_assert(!plane_coord_pause(&co, 3, SIGTSTP).pause, "range checked");
	cr_assert(!plane_coord_pause(&co, -1, SIGTSTP).pause);
	cr_assert(!plane_coord_resume(&co, 7).resume);
	cr_assert(!plane_coord_resume(&co, 2).resume, "not stopped");
}

LEAK_TEST(plane_coord_memory, a_paused_job)
{
	struct plane_coord c;

	cr_assert_eq(plane_coord_init(&c, &cfg3), 0);
	join_on(&c, 1, 2);
	cr_assert(join_on(&c, 2, 2).start);
	cr_assert(plane_coord_pause(&c, 2, SIGTSTP).pause);
	cr_assert(plane_coord_resume(&c, 2).resume);
	plane_coord_free(&c);
}

/* ---- Another job secret at the join ---- */

Test(plane_codec, mismatch_and_the_secret_id_survive_the_wire)
{
	unsigned char nc[AUTH_NONCE_LEN] = { 1 }, nn[AUTH_NONCE_LEN] = { 2 }, id[AUTH_MAC_LEN], id2[AUTH_MAC_LEN];
	struct plane_join j = sample_join();
	struct plane_msg m = { .type = PLANE_MISMATCH, .node = 2 }, out;
	int n;

	out = roundtrip(&m);
	cr_assert_eq(out.node, 2);
	m.node = -1;
	n = plane_encode(&m, buf, sizeof(buf));
	cr_assert_eq(plane_decode(buf, (size_t)n, &out), -EPROTO, "a negative node");

	cr_assert_eq(auth_init(), 0);
	plane_secret_id("sekrit", id);
	plane_secret_id("sekrit", id2);
	cr_assert_arr_eq(id, id2, AUTH_MAC_LEN, "one secret, one id");
	plane_secret_id("other", id2);
	cr_assert(memcmp(id, id2, AUTH_MAC_LEN) != 0);
	n = plane_make_join("sekrit", nc, nn, &j, buf, sizeof(buf));
	cr_assert_eq(plane_decode(buf, (size_t)n, &out), 0);
	cr_assert(out.join.has_id);
	cr_assert_arr_eq(out.join.secret_id, id, AUTH_MAC_LEN);
	cr_assert(plane_check_join("sekrit", nc, buf, (size_t)n, &out));
	/* the id is covered by the MAC */
	buf[n - 1] ^= 1;
	cr_assert_eq(plane_decode(buf, (size_t)n, &out), 0);
	cr_assert(!plane_check_join("sekrit", nc, buf, (size_t)n, &out));
	/* a JOIN that ends before the id decodes without one */
	m = (struct plane_msg){ .type = PLANE_JOIN, .join = j };
	n = plane_encode(&m, buf, sizeof(buf));
	cr_assert_eq(plane_decode(buf, (size_t)n, &out), 0);
	cr_assert(!out.join.has_id);
	leak_check();
}

/* A node list for plane_where: entries of up to three addresses; "-" an
 * entry that did not resolve. */
struct where_case {
	const char *nodes[4][3];
	int claimed;
	const char *from;
	enum plane_from want;
	int other;
};

static enum plane_from where(const struct where_case *w, int *other)
{
	struct plane_node_addrs nodes[4];
	int n = 0;

	memset(nodes, 0, sizeof(nodes));
	for (; n < 4 && w->nodes[n][0]; n++) {
		if (strcmp(w->nodes[n][0], "-") == 0) {
			nodes[n].n = -1;
			continue;
		}
		for (int i = 0; i < 3 && w->nodes[n][i]; i++)
			snprintf(nodes[n].addr[nodes[n].n++], sizeof(nodes[n].addr[0]), "%s", w->nodes[n][i]);
	}
	return plane_where(nodes, n, w->claimed, w->from, other);
}

Test(plane_where, only_unambiguous_evidence_names_another_node)
{
	static const struct where_case cases[] = {
		/* the claimed node's address, either spelling */
		{ { { "10.0.0.1" }, { "10.0.0.2" }, { "10.0.0.3" } }, 2, "10.0.0.3", PLANE_FROM_CLAIMED, -1 },
		{ { { "10.0.0.1" }, { "10.0.0.2" }, { "10.0.0.3" } }, 2, "::ffff:10.0.0.3", PLANE_FROM_CLAIMED, -1 },
		{ { { "10.0.0.1" }, { "10.0.0.2" }, { "fd00::3", "10.0.0.3" } }, 2, "fd00::3", PLANE_FROM_CLAIMED, -1 },
		/* node 1's address, claiming node 2; the chief's, claiming node 1 */
		{ { { "10.0.0.1" }, { "10.0.0.2" }, { "10.0.0.3" } }, 2, "10.0.0.2", PLANE_FROM_OTHER, 1 },
		{ { { "10.0.0.1" }, { "10.0.0.2" }, { "10.0.0.3" } }, 1, "::ffff:10.0.0.1", PLANE_FROM_OTHER, 0 },
		/* an unlisted address (NAT, a multi-homed node) */
		{ { { "10.0.0.1" }, { "10.0.0.2" }, { "10.0.0.3" } }, 2, "192.0.2.9", PLANE_FROM_UNSURE, -1 },
		/* two entries hold it (nodes sharing a host) */
		{ { { "10.0.0.1" }, { "10.0.0.2" }, { "10.0.0.2" }, { "10.0.0.4" } }, 3, "10.0.0.2",
		  PLANE_FROM_UNSURE, -1 },
		/* an entry that did not resolve could be it too */
		{ { { "10.0.0.1" }, { "10.0.0.2" }, { "-" } }, 2, "10.0.0.2", PLANE_FROM_UNSURE, -1 },
		/* loopback anywhere is no evidence */
		{ { { "127.0.0.1" }, { "10.0.0.2" }, { "10.0.0.3" } }, 2, "10.0.0.2", PLANE_FROM_UNSURE, -1 },
		{ { { "10.0.0.1" }, { "::1" }, { "10.0.0.3" } }, 2, "::1", PLANE_FROM_UNSURE, -1 },
		/* ... but a loopback list still ties a node to its own entry */
		{ { { "127.0.0.1" }, { "127.0.0.1" } }, 1, "127.0.0.1", PLANE_FROM_CLAIMED, -1 },
		/* not an address, a claim outside the list */
		{ { { "10.0.0.1" }, { "10.0.0.2" } }, 1, "node1", PLANE_FROM_UNSURE, -1 },
		{ { { "10.0.0.1" }, { "10.0.0.2" } }, 5, "10.0.0.1", PLANE_FROM_OTHER, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int other = -1;

		cr_assert_eq(where(&cases[i], &other), cases[i].want, "case %zu", i);
		cr_assert_eq(other, cases[i].other, "case %zu", i);
	}
}

static unsigned char id_a[AUTH_MAC_LEN] = { 'a' }, id_b[AUTH_MAC_LEN] = { 'b' };

Test(plane_coord, another_secret_beside_a_node_that_proved_ours_ends_the_join_naming_it)
{
	struct plane_acts a;

	cr_assert(!join(1, 2).abort);
	a = plane_coord_secret(&co, 2, id_a);
	cr_assert(a.held, "its connection hears the verdict");
	cr_assert(a.abort && a.first && a.exit, "node 1 is told, node 2 hears it on its connection");
	cr_assert_eq(a.code, 2);
	cr_assert_str_eq(a.text, "node 2 (10.213.0.3) presented another job secret: give every node the "
			 "same --secret-file / SLOTRUN_JOB_SECRET");
	cr_assert_eq(plane_coord_odd(&co, 2), 2);
}

Test(plane_coord, another_secret_first_waits_for_a_second_opinion)
{
	struct plane_acts a = plane_coord_secret(&co, 2, id_a);

	cr_assert(a.held && !a.abort, "node 0 alone cannot tell whose secret is odd");
	a = join(1, 2);
	cr_assert(a.abort && a.exit);
	cr_assert(!a.start);
	cr_assert(strstr(a.text, "node 2 (10.213.0.3) presented another job secret"), "%s", a.text);
	cr_assert_eq(plane_coord_odd(&co, 2), 2);
}

Test(plane_coord, two_nodes_with_the_same_other_secret_name_the_chief)
{
	struct plane_acts a = plane_coord_secret(&co, 1, id_a);

	cr_assert(a.held && !a.abort);
	a = plane_coord_secret(&co, 2, id_a);
	cr_assert(a.held && a.abort && a.exit);
	cr_assert_str_eq(a.text, "node 0 (10.213.0.1), the chief, holds another job secret than the other "
			 "nodes: give every node the same --secret-file / SLOTRUN_JOB_SECRET");
	cr_assert_eq(plane_coord_odd(&co, 1), 0);
	cr_assert_eq(plane_coord_odd(&co, 2), 0);
}

Test(plane_coord, every_node_with_its_own_secret_names_them_all)
{
	struct plane_acts a;

	plane_coord_secret(&co, 1, id_a);
	a = plane_coord_secret(&co, 2, id_b);

	cr_assert(a.abort && a.exit);
	cr_assert(strstr(a.text, "node 1 (10.213.0.2), node 2 (10.213.0.3) presented other job secrets"),
		  "%s", a.text);
	cr_assert_eq(plane_coord_odd(&co, 1), 1);
}

Test(plane_coord, the_join_timeout_names_a_node_with_another_secret)
{
	struct plane_acts a;

	plane_coord_secret(&co, 2, id_a);
	a = plane_coord_join_timeout(&co);
	cr_assert(a.abort && a.exit);
	cr_assert(strstr(a.text, "node 2 (10.213.0.3) presented another job secret"), "%s", a.text);
}

Test(plane_coord, another_secret_is_refused_alone_outside_the_join)
{
	struct plane_acts a;

	all_in();
	a = plane_coord_secret(&co, 2, id_a);
	cr_assert(!a.held && !a.abort && !a.exit, "a running job goes on");

	plane_coord_free(&co);
	coord_setup();
	cr_assert(!join(1, 2).abort);
	a = plane_coord_secret(&co, 1, id_a);
	cr_assert(!a.held && !a.abort, "node 1 joined already: this is not node 1");
	a = plane_coord_secret(&co, 3, id_a);
	cr_assert(!a.held && !a.abort, "no node 3");
	cr_assert_eq(co.phase, PLANE_JOINING);
}

Test(plane_coord, a_node_joining_from_another_node_s_address_ends_the_join_naming_both)
{
	struct plane_acts a;

	cr_assert(!join(1, 2).abort);
	a = plane_coord_misplaced(&co, 2, 1, "10.213.0.2");
	cr_assert(a.abort && a.exit);
	cr_assert_eq(a.code, 2);
	cr_assert_str_eq(a.text, "node 2 joined from 10.213.0.2, which the node list gives node 1 (10.213.0.2), "
			 "not node 2 (10.213.0.3): check the node rank given to the slotrun on 10.213.0.2 "
			 "(--node-rank)");

	plane_coord_free(&co);
	coord_setup();
	all_in();
	a = plane_coord_misplaced(&co, 2, 1, "10.213.0.2");
	cr_assert(!a.abort, "after the start, nothing");
}

/* ---- The relay tree's frames ----
 * A relay carries a node's frame to the chief whole, header and all, inside
 * a FWD; GONE tells of a connection behind it that ended. */

static unsigned char inner[4 + PLANE_MAX_FRAME];

static int encode_inner(const struct plane_msg *m)
{
	int n = plane_encode(m, inner, sizeof(inner));

	cr_assert_gt(n, 0);
	return n;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* f carried by plane_encode_fwd, decoded: 0 or -EPROTO (the encoding must
 * succeed). */
static int fwd_decode(const struct plane_fwd *f, struct plane_msg *out)
{
	int n = plane_encode_fwd(f, buf, sizeof(buf));

	cr_assert_gt(n, 0);
	return plane_decode(buf, (size_t)n, out);
}

Test(plane_codec, fwd_carries_a_whole_frame_either_way)
{
	struct plane_msg m = { .type = PLANE_FWD }, in = { .type = PLANE_DONE, .code = 3 }, out, got;
	unsigned char copy[sizeof(buf)];
	int n, len = encode_inner(&in), n2;

	m.fwd = (struct plane_fwd){ .id = 0x01020304u, .except = 0xa0b0c0d0u,
				    .flags = PLANE_FWD_PROVED | PLANE_FWD_CLOSE, .frame = inner, .len = (size_t)len };
	strcpy(m.fwd.peer, "10.213.0.9");
	out = roundtrip(&m);
	cr_assert_eq(out.fwd.id, 0x01020304u);
	cr_assert_eq(out.fwd.except, 0xa0b0c0d0u);
	cr_assert_eq(out.fwd.flags, PLANE_FWD_PROVED | PLANE_FWD_CLOSE);
	cr_assert_str_eq(out.fwd.peer, "10.213.0.9");
	cr_assert_eq(out.fwd.len, (size_t)len);
	cr_assert_arr_eq(out.fwd.frame, inner, (size_t)len, "the inner frame, header and all");
	n = plane_encode(&m, buf, sizeof(buf));
	cr_assert(out.fwd.frame >= buf && out.fwd.frame + out.fwd.len == buf + n,
		  "it points into the decoded buffer, at its end");
	cr_assert_eq(plane_decode(out.fwd.frame, out.fwd.len, &got), 0);
	cr_assert_eq(got.type, PLANE_DONE);
	cr_assert_eq(got.code, 3);

	/* the wire: id, except, flags, peer, then the frame */
	cr_assert_eq(buf[4], PLANE_FWD);
	cr_assert_eq(be32(buf + 5), 0x01020304u);
	cr_assert_eq(be32(buf + 9), 0xa0b0c0d0u);
	cr_assert_eq(buf[13], PLANE_FWD_PROVED | PLANE_FWD_CLOSE);
	cr_assert_eq(buf[14] << 8 | buf[15], (int)strlen("10.213.0.9"));
	cr_assert_arr_eq(buf + 16, "10.213.0.9", strlen("10.213.0.9"));
	cr_assert_eq(n, 16 + (int)strlen("10.213.0.9") + len);

	/* plane_encode_fwd writes the same bytes, without a plane_msg */
	memcpy(copy, buf, (size_t)n);
	memset(buf, 0xee, sizeof(buf));
	n2 = plane_encode_fwd(&m.fwd, buf, sizeof(buf));
	cr_assert_eq(n2, n);
	cr_assert_arr_eq(buf, copy, (size_t)n);
	cr_assert_eq(plane_encode_fwd(&m.fwd, buf, (size_t)n), n, "exactly the room it needs");
	cr_assert_eq(plane_encode_fwd(&m.fwd, buf, (size_t)n - 1), -EMSGSIZE, "a byte short");

	/* to every node behind the relay but one, no peer, no flags */
	m.fwd = (struct plane_fwd){ .id = PLANE_FWD_ALL, .except = 5, .frame = inner, .len = (size_t)len };
	cr_assert_eq(fwd_decode(&m.fwd, &out), 0);
	cr_assert_eq(out.type, PLANE_FWD);
	cr_assert_eq(out.fwd.id, PLANE_FWD_ALL);
	cr_assert_eq(out.fwd.except, 5);
	cr_assert_eq(out.fwd.flags, 0);
	cr_assert_str_eq(out.fwd.peer, "");
	cr_assert_arr_eq(out.fwd.frame, inner, (size_t)len);
	leak_check();
}

/* A node's JOIN, as its relay passes it on: the chief checks its MAC on
 * the inner frame, byte for byte as the node sent it. */
Test(plane_codec, fwd_carries_a_join_that_still_proves_the_secret)
{
	unsigned char nc[AUTH_NONCE_LEN] = { 3 }, nn[AUTH_NONCE_LEN] = { 4 };
	struct plane_join j = sample_join();
	struct plane_fwd f = { .id = 17, .flags = PLANE_FWD_PROVED };
	struct plane_msg out, got;
	int len;

	cr_assert_eq(auth_init(), 0);
	j.fanout = 4;
	len = plane_make_join("sekrit", nc, nn, &j, inner, sizeof(inner));
	cr_assert_gt(len, 0);
	f.frame = inner;
	f.len = (size_t)len;
	strcpy(f.peer, "fd00::17");
	cr_assert_eq(fwd_decode(&f, &out), 0);
	cr_assert_eq(out.fwd.id, 17);
	cr_assert_eq(out.fwd.flags, PLANE_FWD_PROVED);
	cr_assert_str_eq(out.fwd.peer, "fd00::17");
	cr_assert_eq(out.fwd.len, (size_t)len);
	cr_assert_arr_eq(out.fwd.frame, inner, (size_t)len);
	cr_assert_eq(plane_decode(out.fwd.frame, out.fwd.len, &got), 0);
	cr_assert_eq(got.type, PLANE_JOIN);
	cr_assert_eq(got.join.fanout, 4);
	cr_assert_eq(got.join.node_rank, 1);
	cr_assert(plane_check_join("sekrit", nc, out.fwd.frame, out.fwd.len, &got));
	leak_check();
}

Test(plane_codec, fwd_refuses_what_no_relay_sends)
{
	struct plane_msg in = { .type = PLANE_DONE, .code = 1 }, out;
	struct plane_fwd f = { .id = 2, .frame = inner };
	unsigned char nested[64], odd[8] = { 0, 0, 0, 1 };
	int len = encode_inner(&in), n;

	f.len = (size_t)len;
	cr_assert_eq(fwd_decode(&f, &out), 0, "the good one, for comparison");

	/* a FWD inside a FWD */
	n = plane_encode_fwd(&f, nested, sizeof(nested));
	cr_assert_gt(n, 0);
	f.frame = nested;
	f.len = (size_t)n;
	cr_assert_eq(fwd_decode(&f, &out), -EPROTO, "a FWD inside a FWD");

	/* a GONE inside a FWD */
	in = (struct plane_msg){ .type = PLANE_GONE, .fwd = { .id = 3 } };
	f.frame = inner;
	f.len = (size_t)encode_inner(&in);
	cr_assert_eq(fwd_decode(&f, &out), -EPROTO, "a GONE inside a FWD");

	/* types that no frame has */
	odd[4] = 0;
	f.frame = odd;
	f.len = 5;
	cr_assert_eq(fwd_decode(&f, &out), -EPROTO, "an inner frame of type 0");
	odd[4] = PLANE_TYPE_LAST + 1;
	cr_assert_eq(fwd_decode(&f, &out), -EPROTO, "an inner frame of an unknown type");
	odd[4] = PLANE_PING;
	cr_assert_eq(fwd_decode(&f, &out), 0, "a PING's bare header is a whole frame");

	/* an inner frame whose header disagrees with the bytes that follow */
	in = (struct plane_msg){ .type = PLANE_DONE, .code = 1 };
	len = encode_inner(&in);
	f.frame = inner;
	f.len = (size_t)len - 1;
	cr_assert_eq(fwd_decode(&f, &out), -EPROTO, "an inner frame cut short");
	inner[len] = 0;
	f.len = (size_t)len + 1;
	cr_assert_eq(fwd_decode(&f, &out), -EPROTO, "an inner frame with a byte after it");
	f.len = 3;
	cr_assert_eq(fwd_decode(&f, &out), -EPROTO, "less than an inner header");
	f.len = 4;
	cr_assert_eq(fwd_decode(&f, &out), -EPROTO, "an inner header alone");

	/* unknown flags, and GONE's flag */
	f.len = (size_t)len;
	f.flags = 8;
	cr_assert_eq(fwd_decode(&f, &out), -EPROTO, "an unknown flag");
	f.flags = 0x80;
	cr_assert_eq(fwd_decode(&f, &out), -EPROTO, "the top flag");
	f.flags = PLANE_FWD_HOST_GONE;
	cr_assert_eq(fwd_decode(&f, &out), -EPROTO, "GONE's flag on a FWD");
	f.flags = PLANE_FWD_PROVED | PLANE_FWD_CLOSE;
	cr_assert_eq(fwd_decode(&f, &out), 0);
	leak_check();
}

/* A FWD that ends with its peer carries nothing: refused, however the
 * bytes after it in the reader's buffer look. */
Test(plane_codec, fwd_with_nothing_inside_is_refused)
{
	struct plane_msg in = { .type = PLANE_DONE, .code = 1 }, out;
	struct plane_fwd f = { .id = 2, .frame = inner, .len = 0 };
	unsigned char *exact;
	int n;

	encode_inner(&in);
	strcpy(f.peer, "10.0.0.1");
	n = plane_encode_fwd(&f, buf, sizeof(buf));
	cr_assert_eq(n, 4 + 1 + 4 + 4 + 1 + 2 + 8, "the header, the fields and nothing else");
	/* alone in memory: nothing past the frame is read (the sanitizer's
	 * build sees a read past it) */
	exact = malloc((size_t)n);
	cr_assert_not_null(exact);
	memcpy(exact, buf, (size_t)n);
	cr_assert_eq(plane_decode(exact, (size_t)n, &out), -EPROTO, "an empty inner frame, alone in memory");
	free(exact);

	/* what lies past the frame in the reader's buffer looks like a DONE */
	memset(buf + n, 0, 16);
	buf[n + 3] = 5;
	buf[n + 4] = PLANE_DONE;
	cr_assert_eq(plane_decode(buf, (size_t)n, &out), -EPROTO, "an empty inner frame");
	leak_check();
}

/* Every frame leaves room for the seal's tag: a FWD too. */
Test(plane_codec, a_fwd_too_large_for_a_sealed_frame_does_not_encode)
{
	struct plane_msg m = { .type = PLANE_FWD }, out;
	struct plane_fwd f = { .id = 9, .frame = inner };
	/* the body: type, id, except, flags, the peer's length (peer "") */
	size_t most = PLANE_MAX_FRAME - AUTH_TAG_LEN - (1 + 4 + 4 + 1 + 2);

	/* an inner PING padded to fill what is left: a whole frame by its header */
	memset(inner, 0, sizeof(inner));
	inner[0] = (unsigned char)((most - 4) >> 24);
	inner[1] = (unsigned char)((most - 4) >> 16);
	inner[2] = (unsigned char)((most - 4) >> 8);
	inner[3] = (unsigned char)(most - 4);
	inner[4] = PLANE_PING;
	f.len = most;
	cr_assert_eq(plane_encode_fwd(&f, buf, sizeof(buf)), (int)(4 + PLANE_MAX_FRAME - AUTH_TAG_LEN),
		     "the largest FWD");
	cr_assert_eq(plane_decode(buf, 4 + PLANE_MAX_FRAME - AUTH_TAG_LEN, &out), 0);
	cr_assert_eq(out.fwd.len, most);
	m.fwd = f;
	cr_assert_eq(plane_encode(&m, buf, sizeof(buf)), (int)(4 + PLANE_MAX_FRAME - AUTH_TAG_LEN));

	f.len = most + 1;
	cr_assert_eq(plane_encode_fwd(&f, buf, sizeof(buf)), -EMSGSIZE, "a byte past room for the tag");
	m.fwd = f;
	cr_assert_eq(plane_encode(&m, buf, sizeof(buf)), -EMSGSIZE);
	f.len = most;
	strcpy(f.peer, "x");
	cr_assert_eq(plane_encode_fwd(&f, buf, sizeof(buf)), -EMSGSIZE, "the peer counts too");
	f.len = PLANE_MAX_FRAME;
	f.peer[0] = '\0';
	cr_assert_eq(plane_encode_fwd(&f, buf, sizeof(buf)), -EMSGSIZE, "an inner frame of the most a frame holds");

	f.len = 5;
	memset(f.peer, 'p', sizeof(f.peer));
	cr_assert_eq(plane_encode_fwd(&f, buf, sizeof(buf)), -EMSGSIZE, "a peer that fills its field");
	leak_check();
}

Test(plane_codec, gone_survives_the_wire)
{
	struct plane_msg m = { .type = PLANE_GONE, .fwd = { .id = 0xfffffffeu, .flags = PLANE_FWD_HOST_GONE } }, out;
	int n;

	m.cause = (struct plane_cause){ .kind = PLANE_CAUSE_LOST, .node = 5, .rank = -1, .code = -1 };
	strcpy(m.cause.host, "10.213.0.6");
	strcpy(m.cause.text, "connection reset by peer");
	out = roundtrip(&m);
	cr_assert_eq(out.fwd.id, 0xfffffffeu);
	cr_assert_eq(out.fwd.flags, PLANE_FWD_HOST_GONE);
	cr_assert_str_eq(out.cause.text, "connection reset by peer");
	cr_assert_eq(memcmp(&out.cause, &m.cause, sizeof(m.cause)), 0);
	n = plane_encode(&m, buf, sizeof(buf));
	cr_assert_eq(buf[4], PLANE_GONE);
	cr_assert_eq(be32(buf + 5), 0xfffffffeu, "the connection's id first");
	cr_assert_eq(buf[9], PLANE_FWD_HOST_GONE, "then the flags");
	cr_assert_gt(n, 10);

	m.fwd.flags = 0; /* the chief's "close it", or the relay's loss of the chief */
	m.cause = sample_cause();
	out = roundtrip(&m);
	cr_assert_eq(out.fwd.flags, 0);
	cr_assert_eq(memcmp(&out.cause, &m.cause, sizeof(m.cause)), 0);

	unsigned bad[] = { PLANE_FWD_PROVED, PLANE_FWD_CLOSE, 8, 0x80, PLANE_FWD_HOST_GONE | PLANE_FWD_PROVED };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m.fwd.flags = bad[i];
		n = plane_encode(&m, buf, sizeof(buf));
		cr_assert_gt(n, 0);
		cr_assert_eq(plane_decode(buf, (size_t)n, &out), -EPROTO, "GONE with flags %#x", bad[i]);
	}
	leak_check();
}

/* The fan-out each node was started with travels in its JOIN, after the
 * restarts and before the secret's id, under the MAC. */
Test(plane_codec, join_carries_the_fanout)
{
	unsigned char nc[AUTH_NONCE_LEN] = { 5 }, nn[AUTH_NONCE_LEN] = { 6 };
	struct plane_msg m = { .type = PLANE_JOIN }, out;
	int n;

	cr_assert_eq(auth_init(), 0);
	m.join = sample_join();
	m.join.restarts = 0x0a0b0c0d;
	m.join.fanout = 64;
	out = roundtrip(&m);
	cr_assert_eq(out.join.fanout, 64);
	cr_assert_eq(out.join.restarts, 0x0a0b0c0d);
	cr_assert(!out.join.has_id);
	n = plane_encode(&m, buf, sizeof(buf));
	cr_assert_eq(be32(buf + n - 4), 64u, "the fan-out ends a JOIN without the id");
	cr_assert_eq(be32(buf + n - 8), 0x0a0b0c0du, "right after the restarts");

	m.join.fanout = 0;
	cr_assert_eq(roundtrip(&m).join.fanout, 0, "a star");
	m.join.fanout = 0x7fffffff;
	cr_assert_eq(roundtrip(&m).join.fanout, 0x7fffffff);

	/* with the secret's id, made and checked as a node's */
	m.join.fanout = 3;
	n = plane_make_join("sekrit", nc, nn, &m.join, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(plane_decode(buf, (size_t)n, &out), 0);
	cr_assert(out.join.has_id);
	cr_assert_eq(out.join.fanout, 3);
	cr_assert_eq(out.join.restarts, 0x0a0b0c0d);
	cr_assert_eq(be32(buf + n - AUTH_MAC_LEN - 4), 3u, "then the id");
	cr_assert(plane_check_join("sekrit", nc, buf, (size_t)n, &out));
	buf[n - AUTH_MAC_LEN - 1] ^= 1; /* the fan-out's low byte */
	cr_assert_eq(plane_decode(buf, (size_t)n, &out), 0);
	cr_assert_eq(out.join.fanout, 2);
	cr_assert(!plane_check_join("sekrit", nc, buf, (size_t)n, &out), "the MAC covers the fan-out");

	/* a negative fan-out, with and without the id */
	m.join.fanout = -1;
	n = plane_encode(&m, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(plane_decode(buf, (size_t)n, &out), -EPROTO, "a negative fan-out");
	n = plane_make_join("sekrit", nc, nn, &m.join, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(plane_decode(buf, (size_t)n, &out), -EPROTO, "a negative fan-out before the id");
	m.join.fanout = (int)0x80000000u;
	n = plane_encode(&m, buf, sizeof(buf));
	cr_assert_eq(plane_decode(buf, (size_t)n, &out), -EPROTO, "the most negative");
	leak_check();
}

/* Every node must run the same tree: a node that would join another
 * relay than the chief expects (another --fanout, or another view of the
 * addresses) ends the join. */
static struct plane_coord_cfg cfg_tree;

Test(plane_coord, a_node_with_another_fanout_aborts_the_join)
{
	struct plane_join j = sample_join();
	struct plane_acts a;

	j.node_rank = 2;
	strcpy(j.host, "10.213.0.3");
	j.fanout = 64;
	a = plane_coord_join(&co, &j);
	cr_assert(a.abort && a.first && !a.start);
	cr_assert_eq(a.code, 2);
	cr_assert(strstr(a.text, "joins a relay tree of fan-out"), "%s", a.text);
	cr_assert_str_eq(a.text, "node 2 (10.213.0.3) joins a relay tree of fan-out 64, node 0 one of 0 (0: a "
			 "star): give every node the same --fanout and the same node addresses");
	cr_assert_eq(co.phase, PLANE_ABORTING);
	cr_assert(!a.exit, "node 1 has not heard it yet");
	a = join(1, 2);
	cr_assert(a.abort && !a.first && a.exit, "node 1 hears the same, and the chief goes");
	cr_assert(strstr(a.text, "fan-out 64"), "%s", a.text);

	/* a chief of a tree, and a node of a star */
	plane_coord_free(&co);
	cfg_tree = cfg3;
	cfg_tree.fanout = 2;
	cr_assert_eq(plane_coord_init(&co, &cfg_tree), 0);
	j.fanout = 2;
	cr_assert(!plane_coord_join(&co, &j).abort, "the same fan-out joins");
	j.node_rank = 1;
	strcpy(j.host, "10.213.0.2");
	j.fanout = 0;
	a = plane_coord_join(&co, &j);
	cr_assert(a.abort && !a.start);
	cr_assert_eq(a.code, 2);
	cr_assert(strstr(a.text, "node 1 (10.213.0.2) joins a relay tree of fan-out 0, node 0 one of 2"),
		  "%s", a.text);
	cr_assert(a.exit, "both nodes have heard it");
}

Test(plane_coord, nodes_with_the_chief_s_fanout_start)
{
	struct plane_join j = sample_join();

	plane_coord_free(&co);
	cfg_tree = cfg3;
	cfg_tree.fanout = 2;
	cr_assert_eq(plane_coord_init(&co, &cfg_tree), 0);
	j.fanout = 2;
	j.node_rank = 1;
	cr_assert(!plane_coord_join(&co, &j).start);
	j.node_rank = 2;
	strcpy(j.host, "10.213.0.3");
	cr_assert(plane_coord_join(&co, &j).start);
	cr_assert_eq(co.phase, PLANE_RUNNING);
}
