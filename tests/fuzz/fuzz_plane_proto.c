// SPDX-License-Identifier: MIT
/* The job plane's wire format, as a node or the chief reads it off a
 * connection: plane_frame_len over the stream, plane_decode of each whole
 * frame.  Input: the bytes a peer sent.
 *
 * Checked: a length is 0 (wait for more), the whole frame (4 + 1..
 * PLANE_MAX_FRAME, within what we have) or -EMSGSIZE; a frame that decodes
 * encodes back to the same bytes (the format has one spelling per message,
 * so nothing a peer sends is read two ways); a JOIN's fields lie within it,
 * and its MAC check runs on whatever it holds; every frame is also opened
 * as a sealed one (plane_open_frame), which fails or leaves a frame 16
 * bytes shorter, and never reads outside it. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "plane_proto.h"

static unsigned char again[4 + PLANE_MAX_FRAME];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned char nonce[AUTH_NONCE_LEN] = { 1, 2, 3 };
	struct plane_msg *m = malloc(sizeof(*m));
	size_t off = 0;

	if (!m)
		return 0;
	while (off < size) {
		long len = plane_frame_len(data + off, size - off);

		if (len <= 0) {
			FUZZ_CHECK(len == 0 || len == -EMSGSIZE);
			break;
		}
		FUZZ_CHECK(len > 4 && len <= 4 + PLANE_MAX_FRAME && (size_t)len <= size - off);
		{
			struct plane_seal s;
			long plain;

			plane_seal_init(&s, "secret", nonce, nonce, false);
			memcpy(again, data + off, (size_t)len);
			plain = plane_open_frame(&s, again, (size_t)len);
			FUZZ_CHECK(plain == -EBADMSG || plain == len - AUTH_TAG_LEN);
		}
		if (plane_decode(data + off, (size_t)len, m) == 0) {
			int n = plane_encode(m, again, sizeof(again));

			FUZZ_CHECK(n == len && memcmp(again, data + off, (size_t)len) == 0);
			if (m->type == PLANE_JOIN) {
				const unsigned char *fields;
				size_t flen;

				FUZZ_CHECK(plane_join_fields(data + off, (size_t)len, &fields, &flen) == 0);
				FUZZ_CHECK(fields > data + off && fields + flen == data + off + len);
				(void)plane_check_join("secret", nonce, data + off, (size_t)len, m);
			}
		}
		off += (size_t)len;
	}
	free(m);
	return 0;
}
