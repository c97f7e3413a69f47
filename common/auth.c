// SPDX-License-Identifier: MIT
#include "auth.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>

int auth_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

void auth_nonce(unsigned char nonce[AUTH_NONCE_LEN])
{
	randombytes_buf(nonce, AUTH_NONCE_LEN);
}

void auth_mac(unsigned char mac[AUTH_MAC_LEN], const char *secret, const char *label,
	      const unsigned char *first, const unsigned char *second, const void *data, size_t len)
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, (const unsigned char *)secret, strlen(secret));
	/* the label's NUL separates it from the nonces: no label is a
	 * prefix of another's input */
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)label, strlen(label) + 1);
	crypto_auth_hmacsha256_update(&st, first, AUTH_NONCE_LEN);
	crypto_auth_hmacsha256_update(&st, second, AUTH_NONCE_LEN);
	if (len)
		crypto_auth_hmacsha256_update(&st, data, len);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

void auth_digest(unsigned char digest[AUTH_DIGEST_LEN], const void *data, size_t len)
{
	crypto_hash_sha256(digest, data, len);
}

bool auth_check(const unsigned char mac[AUTH_MAC_LEN], const char *secret, const char *label,
		const unsigned char *first, const unsigned char *second, const void *data, size_t len)
{
	unsigned char want[AUTH_MAC_LEN];
	bool ok;

	auth_mac(want, secret, label, first, second, data, len);
	ok = sodium_memcmp(want, mac, AUTH_MAC_LEN) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}

void auth_tag(unsigned char tag[AUTH_TAG_LEN], const unsigned char key[AUTH_KEY_LEN], unsigned char dir,
	      uint64_t seq, const void *data, size_t len)
{
	crypto_auth_hmacsha256_state st;
	unsigned char head[9], mac[AUTH_MAC_LEN];

	head[0] = dir;
	for (int i = 0; i < 8; i++)
		head[1 + i] = (unsigned char)(seq >> (8 * (7 - i)));
	crypto_auth_hmacsha256_init(&st, key, AUTH_KEY_LEN);
	crypto_auth_hmacsha256_update(&st, head, sizeof(head));
	if (len)
		crypto_auth_hmacsha256_update(&st, data, len);
	crypto_auth_hmacsha256_final(&st, mac);
	memcpy(tag, mac, AUTH_TAG_LEN);
	sodium_memzero(&st, sizeof(st));
	sodium_memzero(mac, sizeof(mac));
}

bool auth_tag_check(const unsigned char tag[AUTH_TAG_LEN], const unsigned char key[AUTH_KEY_LEN],
		    unsigned char dir, uint64_t seq, const void *data, size_t len)
{
	unsigned char want[AUTH_TAG_LEN];
	bool ok;

	auth_tag(want, key, dir, seq, data, len);
	ok = sodium_memcmp(want, tag, AUTH_TAG_LEN) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}
