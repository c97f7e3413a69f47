// SPDX-License-Identifier: MIT
/* Message framing: round trips, and every kind of malformed input is
 * refused with -EPROTO (never read past the buffer, never accepted). */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "frame.h"
#include "leak_check.h"

LEAK_TEST(frame, header_round_trip)
{
	uint8_t b[FRAME_HDR_LEN];
	struct frame_hdr h;
	const char *why = NULL;

	frame_encode_hdr(b, FRAME_GATHER, 0x0102030405060708ull, 77);
	cr_assert_eq(frame_decode_hdr(b, 100, &h, &why), 0);
	cr_assert_eq(h.type, FRAME_GATHER);
	cr_assert_eq(h.seq, 0x0102030405060708ull);
	cr_assert_eq(h.len, 77);
	/* little-endian on the wire, whatever the host */
	cr_assert(b[0] == 'S' && b[1] == 'L' && b[2] == 'R' && b[3] == 'N');
	cr_assert_eq(b[8], 0x08);
}

LEAK_TEST(frame, header_carries_the_collective)
{
	uint8_t b[FRAME_HDR_LEN];
	struct frame_hdr h;
	const char *why = NULL;

	frame_encode_coll_hdr(b, FRAME_GATHER, FRAME_COLL_BARRIER, 6, 0);
	cr_assert_eq(frame_decode_hdr(b, 100, &h, &why), 0);
	cr_assert_eq(h.type, FRAME_GATHER);
	cr_assert_eq(h.coll, FRAME_COLL_BARRIER);
	cr_assert_eq(h.seq, 6);
	cr_assert(b[6] == FRAME_GATHER && b[7] == FRAME_COLL_BARRIER);

	/* outside collectives the byte is 0, as before it carried anything */
	frame_encode_hdr(b, FRAME_BYE, 5, 0);
	cr_assert_eq(frame_decode_hdr(b, 100, &h, &why), 0);
	cr_assert_eq(h.coll, FRAME_COLL_NONE);
	cr_assert_eq(b[7], 0);

	frame_encode_coll_hdr(b, FRAME_GATHER, FRAME_COLL_END, 6, 0);
	cr_assert_eq(frame_decode_hdr(b, 100, &h, &why), -EPROTO);
	cr_assert_str_eq(why, "unknown collective");
	b[7] = 0xff;
	cr_assert_eq(frame_decode_hdr(b, 100, &h, &why), -EPROTO);
}

LEAK_TEST(frame, header_rejections)
{
	uint8_t b[FRAME_HDR_LEN];
	struct frame_hdr h;
	const char *why;

	frame_encode_hdr(b, FRAME_BCAST, 1, 10);
	b[0] ^= 1;
	cr_assert_eq(frame_decode_hdr(b, 100, &h, &why), -EPROTO);
	cr_assert_str_eq(why, "bad magic (not a slotrun peer)");

	frame_encode_hdr(b, FRAME_BCAST, 1, 10);
	b[4] = FRAME_VERSION - 1;  /* a peer from before nonces replaced the secret */
	cr_assert_eq(frame_decode_hdr(b, 100, &h, &why), -EPROTO);
	cr_assert_str_eq(why, "unsupported protocol version");

	frame_encode_hdr(b, 0, 1, 10);
	cr_assert_eq(frame_decode_hdr(b, 100, &h, &why), -EPROTO);
	frame_encode_hdr(b, FRAME_TYPE_END, 1, 10);
	cr_assert_eq(frame_decode_hdr(b, 100, &h, &why), -EPROTO);
	cr_assert_str_eq(why, "unknown message type");

	frame_encode_hdr(b, FRAME_BCAST, 1, 101);
	cr_assert_eq(frame_decode_hdr(b, 100, &h, &why), -EPROTO);
	cr_assert_str_eq(why, "payload longer than allowed");
	frame_encode_hdr(b, FRAME_BCAST, 1, UINT64_MAX);
	cr_assert_eq(frame_decode_hdr(b, 100, &h, &why), -EPROTO);

	/* "GET / HTTP/1.1\r\n..." is not a frame */
	memcpy(b, "GET / HTTP/1.1\r\nHost: xxxx", FRAME_HDR_LEN);
	cr_assert_eq(frame_decode_hdr(b, UINT64_MAX, &h, &why), -EPROTO);
}

LEAK_TEST(frame, type_names)
{
	cr_assert_str_eq(frame_type_name(FRAME_ALLREDUCE), "all-reduce");
	cr_assert_str_eq(frame_type_name(0), "unknown");
	cr_assert_str_eq(frame_type_name(999), "unknown");
	cr_assert_str_eq(frame_coll_name(FRAME_COLL_ALLREDUCE), "all-reduce");
	cr_assert_str_eq(frame_coll_name(FRAME_COLL_PREEMPT), "should_preempt");
	cr_assert_str_eq(frame_coll_name(FRAME_COLL_END), "unknown");
}

static struct frame_register sample_register(void)
{
	struct frame_register m = { .rank = 3, .size = 5, .local_rank = 1, .local_size = 2,
				    .port = 4242 };

	strcpy(m.host, "node-7");
	strcpy(m.addr, "10.0.0.7");
	memset(m.ring_nonce, 0xa1, sizeof(m.ring_nonce));
	m.node.transport = 'a';
	memset(m.node.id, 0xd4, sizeof(m.node.id));
	memset(m.node.sock, 0xe5, sizeof(m.node.sock));
	memset(m.node.token, 0xf6, sizeof(m.node.token));
	memset(m.nonce, 0xb2, sizeof(m.nonce));
	memset(m.mac, 0xc3, sizeof(m.mac));
	return m;
}

LEAK_TEST(frame, register_round_trip_and_every_truncation_fails)
{
	struct frame_register m = sample_register(), got;
	uint8_t buf[FRAME_REGISTER_MAX];
	const char *why;
	long n = frame_register_encode(&m, buf, sizeof(buf));

	cr_assert_gt(n, 0);
	cr_assert_eq(frame_register_decode(buf, (size_t)n, &got, &why), 0);
	cr_assert_eq(got.rank, 3);
	cr_assert_eq(got.size, 5);
	cr_assert_eq(got.local_rank, 1);
	cr_assert_eq(got.local_size, 2);
	cr_assert_eq(got.port, 4242);
	cr_assert_str_eq(got.host, "node-7");
	cr_assert_str_eq(got.addr, "10.0.0.7");
	cr_assert_arr_eq(got.ring_nonce, m.ring_nonce, sizeof(m.ring_nonce));
	cr_assert_eq(got.node.transport, 'a');
	cr_assert_arr_eq(got.node.id, m.node.id, sizeof(m.node.id));
	cr_assert_arr_eq(got.node.sock, m.node.sock, sizeof(m.node.sock));
	cr_assert_arr_eq(got.node.token, m.node.token, sizeof(m.node.token));
	cr_assert_arr_eq(got.nonce, m.nonce, sizeof(m.nonce));
	cr_assert_arr_eq(got.mac, m.mac, sizeof(m.mac));

	for (long cut = 0; cut < n; cut++) {
		cr_assert_eq(frame_register_decode(buf, (size_t)cut, &got, &why), -EPROTO, "cut %ld", cut);
		cr_assert_str_eq(why, "truncated payload");
	}
	buf[n] = 0;
	cr_assert_eq(frame_register_decode(buf, (size_t)n + 1, &got, &why), -EPROTO);
	cr_assert_str_eq(why, "trailing bytes after the payload");
}

LEAK_TEST(frame, register_rejects_bad_strings_and_port_0)
{
	struct frame_register m = sample_register(), got;
	uint8_t buf[FRAME_REGISTER_MAX];
	const char *why;
	long n;

	strcpy(m.host, "evil\nhost");
	n = frame_register_encode(&m, buf, sizeof(buf));
	cr_assert_eq(frame_register_decode(buf, (size_t)n, &got, &why), -EPROTO);
	cr_assert_str_eq(why, "string holds a control character");

	m = sample_register();
	m.port = 0;
	n = frame_register_encode(&m, buf, sizeof(buf));
	cr_assert_eq(frame_register_decode(buf, (size_t)n, &got, &why), -EPROTO);
	cr_assert_str_eq(why, "port 0");

	m = sample_register();
	m.node.transport = 'x';
	n = frame_register_encode(&m, buf, sizeof(buf));
	cr_assert_eq(frame_register_decode(buf, (size_t)n, &got, &why), -EPROTO);
	cr_assert_str_eq(why, "unknown transport");

	/* A host string claiming 0xffff bytes. */
	m = sample_register();
	n = frame_register_encode(&m, buf, sizeof(buf));
	buf[16] = 0xff;
	buf[17] = 0xff;
	cr_assert_eq(frame_register_decode(buf, (size_t)n, &got, &why), -EPROTO);
	cr_assert_str_eq(why, "string too long");

	/* A NUL inside a string. */
	m = sample_register();
	n = frame_register_encode(&m, buf, sizeof(buf));
	buf[18 + 2] = 0;  /* inside "node-7" */
	cr_assert_eq(frame_register_decode(buf, (size_t)n, &got, &why), -EPROTO);
	cr_assert_str_eq(why, "string holds a NUL byte");
}

LEAK_TEST(frame, encoder_reports_no_room)
{
	struct frame_register m = sample_register();
	uint8_t buf[20];

	cr_assert_eq(frame_register_encode(&m, buf, sizeof(buf)), -ENOSPC);
}

LEAK_TEST(frame, table_round_trip_and_size_check)
{
	static const char strs[] = "\0a\0b\0c";
	struct frame_peer p[3] = { { 1, "127.0.0.1", 1, { 1 }, { 't', { 4 }, { 0 }, { 7 } } },
				   { 3, "::1", 2, { 2 }, { 'a', { 5 }, { 8 }, { 9 } } },
				   { 5, "10.1.1.1", 3, { 3 }, { 's', { 0 }, { 6 }, { 1 } } } };
	struct frame_peer got[3];
	uint8_t buf[FRAME_TABLE_MAX(3)], mac[FRAME_MAC_LEN], gmac[FRAME_MAC_LEN];
	char hosts[sizeof(buf)];
	const char *why;
	long n;

	memset(mac, 0x5a, sizeof(mac));
	n = frame_table_encode(p, strs, 3, mac, buf, sizeof(buf));
	/* the count, three (host, addr, port, nonce, node) and the MAC */
	cr_assert_eq(n, 4 + (6 + 1 + 9 + 32 + 49) + (6 + 1 + 3 + 32 + 49) + (6 + 1 + 8 + 32 + 49) + 32);
	cr_assert_eq(frame_table_decode(buf, (size_t)n, 3, got, hosts, (size_t)n, gmac, &why), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_str_eq(hosts + got[i].host, strs + p[i].host);
		cr_assert_str_eq(got[i].addr, p[i].addr);
		cr_assert_eq(got[i].port, p[i].port);
		cr_assert_arr_eq(got[i].ring_nonce, p[i].ring_nonce, FRAME_NONCE_LEN);
		cr_assert_eq(memcmp(&got[i].node, &p[i].node, sizeof(p[i].node)), 0, "peer %d's node", i);
	}
	/* the host names, one after the other */
	cr_assert(got[0].host == 0 && got[1].host == 2 && got[2].host == 4);
	cr_assert_arr_eq(gmac, mac, sizeof(mac));
	cr_assert_eq(frame_table_decode(buf, (size_t)n, 4, got, hosts, (size_t)n, gmac, &why), -EPROTO);
	cr_assert_str_eq(why, "table size differs from WORLD_SIZE");
	cr_assert_eq(frame_table_decode(buf, (size_t)n - 1, 3, got, hosts, (size_t)n, gmac, &why),
		     -EPROTO);
	cr_assert_str_eq(why, "truncated payload");
	/* no room for the names: refused, never written past */
	memset(hosts, 0x7f, sizeof(hosts));
	cr_assert_eq(frame_table_decode(buf, (size_t)n, 3, got, hosts, 3, gmac, &why), -EPROTO);
	cr_assert_str_eq(why, "string too long");
	for (size_t i = 3; i < sizeof(hosts); i++)
		cr_assert_eq(hosts[i], 0x7f, "byte %zu written", i);
	cr_assert_eq(frame_table_decode(buf, (size_t)n, 3, got, hosts, 2, gmac, &why), -EPROTO);
	cr_assert_str_eq(why, "host names longer than the table");
}

LEAK_TEST(frame, hello_abort_reason_allreduce_round_trips)
{
	uint8_t buf[FRAME_ABORT_MAX + FRAME_HELLO_LEN], nonce[FRAME_NONCE_LEN];
	const char *why;
	struct frame_hello h = { .rank = 9 }, hg;
	struct frame_abort a = { .origin = 2, .culprit = -1, .flags = FRAME_ABORT_TIMEOUT }, ag;
	struct frame_allreduce r = { .count = 1ull << 40, .dtype = 4, .op = 3 }, rg;
	char reason[FRAME_REASON_MAX];
	long n;

	memset(h.nonce, 7, sizeof(h.nonce));
	memset(h.mac, 8, sizeof(h.mac));
	n = frame_hello_encode(&h, buf, sizeof(buf));
	cr_assert_eq(n, FRAME_HELLO_LEN);
	cr_assert_eq(frame_hello_decode(buf, (size_t)n, &hg, &why), 0);
	cr_assert(hg.rank == 9 && memcmp(hg.nonce, h.nonce, sizeof(h.nonce)) == 0 &&
		  memcmp(hg.mac, h.mac, sizeof(h.mac)) == 0);
	cr_assert_eq(frame_hello_decode(buf, (size_t)n - 1, &hg, &why), -EPROTO);

	/* The challenge is exactly one nonce. */
	memset(buf, 0x42, FRAME_CHALLENGE_LEN + 1);
	cr_assert_eq(frame_challenge_decode(buf, FRAME_CHALLENGE_LEN, nonce, &why), 0);
	cr_assert_eq(nonce[0], 0x42);
	cr_assert_eq(frame_challenge_decode(buf, FRAME_CHALLENGE_LEN - 1, nonce, &why), -EPROTO);
	cr_assert_eq(frame_challenge_decode(buf, FRAME_CHALLENGE_LEN + 1, nonce, &why), -EPROTO);
	cr_assert_str_eq(frame_type_name(FRAME_CHALLENGE), "challenge");

	strcpy(a.reason, "peer rank 1 closed the connection");
	n = frame_abort_encode(&a, buf, sizeof(buf));
	cr_assert_eq(frame_abort_decode(buf, (size_t)n, &ag, &why), 0);
	cr_assert(ag.origin == 2 && ag.culprit == -1 && ag.flags == FRAME_ABORT_TIMEOUT);
	cr_assert_str_eq(ag.reason, a.reason);
	buf[0] = 0xff, buf[1] = 0xff, buf[2] = 0xff, buf[3] = 0xff;  /* origin -1 */
	cr_assert_eq(frame_abort_decode(buf, (size_t)n, &ag, &why), -EPROTO);

	n = frame_reason_encode("wrong job secret", buf, sizeof(buf));
	cr_assert_eq(frame_reason_decode(buf, (size_t)n, reason, sizeof(reason), &why), 0);
	cr_assert_str_eq(reason, "wrong job secret");
	cr_assert_eq(frame_reason_decode(buf, (size_t)n, reason, 5, &why), -EPROTO);

	frame_allreduce_encode(&r, buf);
	cr_assert_eq(frame_allreduce_decode(buf, FRAME_ALLREDUCE_LEN, &rg, &why), 0);
	cr_assert(rg.count == r.count && rg.dtype == 4 && rg.op == 3);
	cr_assert_eq(frame_allreduce_decode(buf, FRAME_ALLREDUCE_LEN - 1, &rg, &why), -EPROTO);
}

LEAK_TEST(frame, long_reasons_are_cut_not_refused)
{
	char big[2000];
	uint8_t buf[FRAME_REJECT_MAX];
	char reason[FRAME_REASON_MAX];
	const char *why;
	long n;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	n = frame_reason_encode(big, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(frame_reason_decode(buf, (size_t)n, reason, sizeof(reason), &why), 0);
	cr_assert_eq(strlen(reason), FRAME_REASON_MAX - 1);
}

/* Decoders on arbitrary bytes: never crash (ASan watches), accept or refuse. */
LEAK_TEST(frame, random_bytes_never_crash_the_decoders)
{
	uint8_t buf[600];
	uint32_t x = 1;

	for (int round = 0; round < 3000; round++) {
		struct frame_register m;
		struct frame_peer p[4];
		char hosts[sizeof(buf)];
		struct frame_hello h;
		struct frame_abort a;
		struct frame_hdr hd;
		uint8_t mac[FRAME_MAC_LEN];
		const char *why;
		size_t len = (size_t)(round % 600);

		for (size_t i = 0; i < len; i++) {
			x = x * 1664525u + 1013904223u;
			buf[i] = (uint8_t)(x >> 24);
		}
		if (len >= FRAME_HDR_LEN)
			(void)frame_decode_hdr(buf, 1000, &hd, &why);
		(void)frame_register_decode(buf, len, &m, &why);
		(void)frame_table_decode(buf, len, 4, p, hosts, sizeof(hosts), mac, &why);
		(void)frame_challenge_decode(buf, len, mac, &why);
		(void)frame_hello_decode(buf, len, &h, &why);
		(void)frame_abort_decode(buf, len, &a, &why);
	}
}

/* A sealed payload: its MAC binds the secret, the label, both nonces in
 * their order, and every byte before it. */
LEAK_TEST(frame, sealed_payload_binds_secret_label_nonces_and_bytes)
{
	uint8_t a[FRAME_NONCE_LEN], b[FRAME_NONCE_LEN], p[40 + FRAME_MAC_LEN], q[sizeof(p)];

	cr_assert_eq(auth_init(), 0);
	memset(a, 1, sizeof(a));
	memset(b, 2, sizeof(b));
	memset(p, 'x', sizeof(p));
	frame_seal(p, sizeof(p), "s3cret", "label", a, b);
	cr_assert(frame_sealed(p, sizeof(p), "s3cret", "label", a, b));
	cr_assert_not(frame_sealed(p, sizeof(p), "s3cres", "label", a, b));
	cr_assert_not(frame_sealed(p, sizeof(p), "s3cret", "other", a, b));
	cr_assert_not(frame_sealed(p, sizeof(p), "s3cret", "label", b, a));
	for (size_t i = 0; i < sizeof(p); i++) {
		memcpy(q, p, sizeof(p));
		q[i] ^= 0x01;
		cr_assert_not(frame_sealed(q, sizeof(q), "s3cret", "label", a, b), "byte %zu", i);
	}
	cr_assert_not(frame_sealed(p, FRAME_MAC_LEN - 1, "s3cret", "label", a, b));
	/* The empty secret is a key too (an unset SLOTRUN_JOB_SECRET). */
	frame_seal(p, sizeof(p), "", "label", a, b);
	cr_assert(frame_sealed(p, sizeof(p), "", "label", a, b));
	cr_assert_not(frame_sealed(p, sizeof(p), "s3cret", "label", a, b));
}

/* The table's seal covers the digest of every byte before it, so one hash
 * serves every rank's seal, and binds the secret, the label and the nonces
 * as frame_seal does. */
LEAK_TEST(frame, digest_seal_binds_secret_label_nonces_and_bytes)
{
	uint8_t a[FRAME_NONCE_LEN], b[FRAME_NONCE_LEN], p[300 + FRAME_MAC_LEN], q[sizeof(p)];
	uint8_t d[FRAME_DIGEST_LEN];

	cr_assert_eq(auth_init(), 0);
	memset(a, 1, sizeof(a));
	memset(b, 2, sizeof(b));
	for (size_t i = 0; i < sizeof(p); i++)
		p[i] = (uint8_t)(i * 7);
	frame_digest(p, sizeof(p) - FRAME_MAC_LEN, d);
	frame_seal_digest(p + sizeof(p) - FRAME_MAC_LEN, d, "s3cret", "label", a, b);
	cr_assert(frame_sealed_digest(p, sizeof(p), "s3cret", "label", a, b));
	cr_assert_not(frame_sealed_digest(p, sizeof(p), "s3cres", "label", a, b));
	cr_assert_not(frame_sealed_digest(p, sizeof(p), "s3cret", "other", a, b));
	cr_assert_not(frame_sealed_digest(p, sizeof(p), "s3cret", "label", b, a));
	cr_assert_not(frame_sealed(p, sizeof(p), "s3cret", "label", a, b),
		      "a seal over the digest is not one over the bytes");
	for (size_t i = 0; i < sizeof(p); i++) {
		memcpy(q, p, sizeof(p));
		q[i] ^= 0x80;
		cr_assert_not(frame_sealed_digest(q, sizeof(q), "s3cret", "label", a, b), "byte %zu", i);
	}
	cr_assert_not(frame_sealed_digest(p, FRAME_MAC_LEN - 1, "s3cret", "label", a, b));
	/* what a peer computes: HMAC(secret; label, nonces, SHA-256(bytes)) */
	auth_mac(q, "s3cret", "label", a, b, d, sizeof(d));
	cr_assert_eq(memcmp(q, p + sizeof(p) - FRAME_MAC_LEN, FRAME_MAC_LEN), 0);
}
