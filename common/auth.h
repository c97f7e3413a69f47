// SPDX-License-Identifier: MIT
/* Proof that both ends of a connection hold the job secret, without the
 * secret crossing the wire: an HMAC-SHA256 challenge-response (libsodium).
 *
 * Each side sends a fresh random nonce; each answers with a MAC, keyed by
 * the secret, over a label naming its role, both nonces and whatever else
 * it wants bound to the handshake.  A recorded answer is useless on a new
 * connection, where the other side's nonce differs, so a replayed handshake
 * fails.  One implementation for the job plane and the worker rendezvous. */
#ifndef SLOTRUN_AUTH_H
#define SLOTRUN_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_NONCE_LEN 32
#define AUTH_MAC_LEN 32
#define AUTH_DIGEST_LEN 32

/* Initialises libsodium (idempotent).  Returns 0 or -EIO. */
int auth_init(void);

/* Fills nonce with fresh random bytes.  auth_init first. */
void auth_nonce(unsigned char nonce[AUTH_NONCE_LEN]);

/* mac = HMAC-SHA256(secret; label, '\0', first, second, data[0..len)).
 * first and second are nonces (AUTH_NONCE_LEN bytes each); data may be
 * NULL when len is 0. */
void auth_mac(unsigned char mac[AUTH_MAC_LEN], const char *secret, const char *label,
	      const unsigned char *first, const unsigned char *second, const void *data, size_t len);

/* digest = SHA-256(data[0..len)): what a MAC may cover instead of data
 * when one sender seals the same large data for many receivers. */
void auth_digest(unsigned char digest[AUTH_DIGEST_LEN], const void *data, size_t len);

/* Whether mac is the MAC of those inputs; compared in constant time. */
bool auth_check(const unsigned char mac[AUTH_MAC_LEN], const char *secret, const char *label,
		const unsigned char *first, const unsigned char *second, const void *data, size_t len);

/* ---- Messages after the handshake ----
 *
 * Once both sides proved the secret, each message carries a tag: a MAC
 * under a key of that connection (auth_mac of the secret over a label and
 * both handshake nonces, so it is fresh per connection and never crosses
 * the wire), over the direction, the message's sequence number in that
 * direction and the message itself.  Numbers are implicit (each side
 * counts), so a replayed, reordered, dropped or injected message, or one
 * from the other direction, fails its tag. */

#define AUTH_KEY_LEN AUTH_MAC_LEN
#define AUTH_TAG_LEN 16   /* HMAC-SHA256 cut to 128 bits, as RFC 4868 does */

/* tag = HMAC-SHA256(key; dir, seq as 8 big-endian bytes, data[0..len))
 * cut to AUTH_TAG_LEN bytes. */
void auth_tag(unsigned char tag[AUTH_TAG_LEN], const unsigned char key[AUTH_KEY_LEN], unsigned char dir,
	      uint64_t seq, const void *data, size_t len);

/* Whether tag is that tag; compared in constant time. */
bool auth_tag_check(const unsigned char tag[AUTH_TAG_LEN], const unsigned char key[AUTH_KEY_LEN],
		    unsigned char dir, uint64_t seq, const void *data, size_t len);

#endif
