// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <string.h>

#include "auth.h"
#include "leak_check.h"

static unsigned char n1[AUTH_NONCE_LEN], n2[AUTH_NONCE_LEN];

static void setup(void)
{
	cr_assert_eq(auth_init(), 0);
	auth_nonce(n1);
	auth_nonce(n2);
}

TestSuite(auth, .init = setup);

LEAK_TEST(auth, nonces_are_fresh)
{
	cr_assert_neq(memcmp(n1, n2, AUTH_NONCE_LEN), 0);
}

LEAK_TEST(auth, the_mac_checks_with_the_same_inputs_only)
{
	unsigned char mac[AUTH_MAC_LEN];

	auth_mac(mac, "s3cret", "label", n1, n2, "data", 4);
	cr_assert(auth_check(mac, "s3cret", "label", n1, n2, "data", 4));
	cr_assert(!auth_check(mac, "s3cret!", "label", n1, n2, "data", 4), "another secret");
	cr_assert(!auth_check(mac, "s3cret", "label2", n1, n2, "data", 4), "another label");
	cr_assert(!auth_check(mac, "s3cret", "label", n2, n1, "data", 4), "nonces swapped");
	cr_assert(!auth_check(mac, "s3cret", "label", n1, n2, "datA", 4), "other data");
	cr_assert(!auth_check(mac, "s3cret", "label", n1, n2, "data", 3), "shorter data");
	mac[AUTH_MAC_LEN - 1] ^= 1;
	cr_assert(!auth_check(mac, "s3cret", "label", n1, n2, "data", 4), "one bit flipped");
}

LEAK_TEST(auth, a_known_hmac_sha256_vector)
{
	/* HMAC-SHA256(key "k"; "l\0" || 32 x 0x00 || 32 x 0x01), computed
	 * independently with Python's hmac module */
	static const unsigned char want[AUTH_MAC_LEN] = {
		0x7c, 0xbc, 0x87, 0xe7, 0x00, 0x5e, 0xa9, 0xa6, 0xb8, 0x70, 0x86, 0xda, 0x65, 0xa9, 0x0e, 0xd5,
		0x0e, 0x22, 0xbe, 0x3c, 0x6d, 0x59, 0x8f, 0x22, 0xe2, 0xdd, 0x49, 0xde, 0xab, 0x56, 0x15, 0xcd,
	};
	unsigned char a[AUTH_NONCE_LEN], b[AUTH_NONCE_LEN], mac[AUTH_MAC_LEN];

	memset(a, 0, sizeof(a));
	memset(b, 1, sizeof(b));
	auth_mac(mac, "k", "l", a, b, NULL, 0);
	cr_assert_arr_eq(mac, want, AUTH_MAC_LEN);
}

LEAK_TEST(auth, a_tag_checks_for_its_key_direction_number_and_bytes_only)
{
	unsigned char key[AUTH_KEY_LEN], other[AUTH_KEY_LEN], tag[AUTH_TAG_LEN];

	auth_mac(key, "s3cret", "session", n1, n2, NULL, 0);
	auth_mac(other, "s3cret", "session", n2, n1, NULL, 0);
	auth_tag(tag, key, 'C', 7, "frame", 5);
	cr_assert(auth_tag_check(tag, key, 'C', 7, "frame", 5));
	cr_assert(!auth_tag_check(tag, other, 'C', 7, "frame", 5), "another connection's key");
	cr_assert(!auth_tag_check(tag, key, 'N', 7, "frame", 5), "the other direction");
	cr_assert(!auth_tag_check(tag, key, 'C', 6, "frame", 5), "a replayed number");
	cr_assert(!auth_tag_check(tag, key, 'C', 8, "frame", 5), "a later number");
	cr_assert(!auth_tag_check(tag, key, 'C', 7, "framE", 5), "other bytes");
	cr_assert(!auth_tag_check(tag, key, 'C', 7, "fram", 4), "fewer bytes");
	tag[0] ^= 0x80;
	cr_assert(!auth_tag_check(tag, key, 'C', 7, "frame", 5), "one bit flipped");
}

LEAK_TEST(auth, a_known_tag_vector)
{
	/* HMAC-SHA256(key 32 x 0x02; "C" || 00 00 00 00 00 00 01 02 || "abc")
	 * cut to 16 bytes, computed independently with Python's hmac module */
	static const unsigned char want[AUTH_TAG_LEN] = {
		0x96, 0x29, 0xa0, 0x73, 0x39, 0xbb, 0xcf, 0x1e, 0x0d, 0x9c, 0xd2, 0x1d, 0xea, 0xac, 0x76, 0x19,
	};
	unsigned char key[AUTH_KEY_LEN], tag[AUTH_TAG_LEN];

	memset(key, 2, sizeof(key));
	auth_tag(tag, key, 'C', 0x102, "abc", 3);
	cr_assert_arr_eq(tag, want, AUTH_TAG_LEN);
}
