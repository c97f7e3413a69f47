// SPDX-License-Identifier: MIT
/* nccl_worker's rendezvous and control wire format (nccl_worker/frame.h),
 * as a rank reads it from a peer.  Input: a 24-byte header and the payload
 * after it; the header's type picks the payload decoder (the table's size
 * is what its first word says, at most 64).
 *
 * Checked: a refusal comes with a reason; a payload that decodes encodes
 * back to the same bytes (one spelling per message); decoded strings hold
 * no control character, so that they can be printed in a one-line
 * diagnostic. */
#include <errno.h>
#include <string.h>

#include "frame.h"
#include "fuzz.h"

#define TABLE_MAX 64

static uint8_t out[FRAME_REGISTER_MAX + FRAME_TABLE_MAX(TABLE_MAX)];

static void printable(const char *s)
{
	for (; *s; s++)
		FUZZ_CHECK((unsigned char)*s >= 0x20 && *s != 0x7f);
}

static void same(long n, const uint8_t *p, size_t len)
{
	FUZZ_CHECK(n == (long)len && memcmp(out, p, len) == 0);
}

static void payload(unsigned type, const uint8_t *p, size_t len)
{
	const char *why = NULL;
	int r = -EPROTO;

	switch (type) {
	case FRAME_REGISTER: {
		struct frame_register m;

		if ((r = frame_register_decode(p, len, &m, &why)) == 0) {
			printable(m.host);
			printable(m.addr);
			same(frame_register_encode(&m, out, sizeof(out)), p, len);
		}
		break;
	}
	case FRAME_TABLE: {
		static struct frame_peer peers[TABLE_MAX];
		static char hosts[sizeof(out)];
		uint8_t mac[FRAME_MAC_LEN];
		uint32_t n = len >= 4 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
					(uint32_t)p[3] << 24 : 0;

		n = n > TABLE_MAX ? TABLE_MAX : n;
		if ((r = frame_table_decode(p, len, n, peers, hosts, len, mac, &why)) == 0) {
			for (uint32_t i = 0; i < n; i++) {
				FUZZ_CHECK(peers[i].host < len);
				printable(hosts + peers[i].host);
				printable(peers[i].addr);
			}
			same(frame_table_encode(peers, hosts, n, mac, out, sizeof(out)), p, len);
		}
		break;
	}
	case FRAME_HELLO: {
		struct frame_hello m;

		if ((r = frame_hello_decode(p, len, &m, &why)) == 0)
			same(frame_hello_encode(&m, out, sizeof(out)), p, len);
		break;
	}
	case FRAME_CHALLENGE: {
		uint8_t nonce[FRAME_NONCE_LEN];

		if ((r = frame_challenge_decode(p, len, nonce, &why)) == 0) {
			memcpy(out, nonce, sizeof(nonce));
			same(FRAME_CHALLENGE_LEN, p, len);
		}
		break;
	}
	case FRAME_REJECT: {
		char reason[FRAME_REASON_MAX];

		if ((r = frame_reason_decode(p, len, reason, sizeof(reason), &why)) == 0) {
			printable(reason);
			same(frame_reason_encode(reason, out, sizeof(out)), p, len);
		}
		break;
	}
	case FRAME_ABORT: {
		struct frame_abort m;

		if ((r = frame_abort_decode(p, len, &m, &why)) == 0) {
			printable(m.reason);
			FUZZ_CHECK(m.origin >= 0 && m.culprit >= -1);
			same(frame_abort_encode(&m, out, sizeof(out)), p, len);
		}
		break;
	}
	case FRAME_ALLREDUCE: {
		struct frame_allreduce m;

		if ((r = frame_allreduce_decode(p, len, &m, &why)) == 0) {
			frame_allreduce_encode(&m, out);
			same(FRAME_ALLREDUCE_LEN, p, len);
		}
		break;
	}
	default: /* GATHER, BCAST, BYE, BUSY: bytes for the caller */
		return;
	}
	FUZZ_CHECK(r == 0 || (r == -EPROTO && why && *why));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct frame_hdr h;
	const char *why = NULL;
	uint8_t hdr[FRAME_HDR_LEN];

	if (size < FRAME_HDR_LEN)
		return 0;
	if (frame_decode_hdr(data, size - FRAME_HDR_LEN, &h, &why) < 0) {
		FUZZ_CHECK(why && *why);
		return 0;
	}
	FUZZ_CHECK(h.type > 0 && h.type < FRAME_TYPE_END && h.len <= size - FRAME_HDR_LEN);
	frame_encode_coll_hdr(hdr, h.type, h.coll, h.seq, h.len);
	FUZZ_CHECK(memcmp(hdr, data, FRAME_HDR_LEN) == 0);
	payload(h.type, data + FRAME_HDR_LEN, (size_t)h.len);
	return 0;
}
