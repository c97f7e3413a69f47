// SPDX-License-Identifier: MIT
/* The line splitter (common/line_splitter.h) that wrap_rank runs every
 * worker's output through, and slotrun its console.  Input: one byte for
 * the prefix length (0..69; 64 and more must be refused), one byte for the
 * size of the pieces the stream is fed in (1..256; 0: the rest at once),
 * one byte for the write that fails (0: none), then the stream.
 *
 * Checked against a plain model of the contract: each of "\n", "\r\n" and
 * "\r" ends one line, even when fed apart; every line goes out as prefix,
 * at most LS_WRITE_MAX - prefix - 1 bytes, "\n", a longer line as several
 * such pieces, none empty but for an empty line; an unfinished line at
 * ls_finish; every write is whole lines of at most LS_WRITE_MAX bytes; a
 * write error comes back from the call that met it. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "line_splitter.h"

struct sink {
	char *buf;
	size_t len;
	int writes, fail_at;
};

static int sink_write(void *ctx, const char *buf, size_t len)
{
	struct sink *s = ctx;

	FUZZ_CHECK(len > 0 && len <= LS_WRITE_MAX && buf[len - 1] == '\n');
	if (++s->writes == s->fail_at)
		return -EPIPE;
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
	return 0;
}

/* The model: prefix + piece + "\n" for each piece of each line. */
static size_t model(const char *prefix, const uint8_t *in, size_t n, char *out)
{
	size_t plen = strlen(prefix), piece = LS_WRITE_MAX - plen - 1, o = 0, i = 0;

	while (i < n) {
		size_t start = i, len, done = 0;

		while (i < n && in[i] != '\n' && in[i] != '\r')
			i++;
		len = i - start;
		if (i < n)
			i += (in[i] == '\r' && i + 1 < n && in[i + 1] == '\n') ? 2 : 1;
		do {
			size_t take = len - done < piece ? len - done : piece;

			memcpy(out + o, prefix, plen);
			memcpy(out + o + plen, in + start + done, take);
			o += plen + take;
			out[o++] = '\n';
			done += take;
		} while (done < len);
	}
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct line_splitter ls;
	char prefix[80];
	size_t plen, chunk, n, off = 0, cap;
	struct sink s = { 0 };
	char *want;
	int r = 0, fail_at;

	if (size < 3)
		return 0;
	plen = data[0] % 70;
	chunk = data[1];
	fail_at = data[2] % 8;
	data += 3;
	n = size - 3;
	memset(prefix, 'p', plen);
	prefix[plen] = '\0';
	if (plen > 0)
		prefix[plen - 1] = ' ';
	if (ls_init(&ls, prefix, sink_write, &s) < 0) {
		FUZZ_CHECK(plen >= LS_PREFIX_MAX);
		return 0;
	}
	FUZZ_CHECK(plen < LS_PREFIX_MAX);
	/* at worst every byte is a line of its own: prefix + byte + "\n" */
	cap = (n + 1) * (plen + 2) + LS_WRITE_MAX;
	s.buf = malloc(cap);
	want = malloc(cap);
	if (!s.buf || !want)
		goto out;
	s.fail_at = fail_at;
	while (off < n && r == 0) {
		size_t take = chunk == 0 || n - off < chunk ? n - off : chunk;

		r = ls_feed(&ls, (const char *)data + off, take);
		off += take;
	}
	if (r == 0)
		r = ls_finish(&ls);
	if (fail_at && fail_at <= s.writes) {
		FUZZ_CHECK(r == -EPIPE);
		goto out;
	}
	FUZZ_CHECK(r == 0);
	FUZZ_CHECK(s.len == model(prefix, data, n, want));
	FUZZ_CHECK(memcmp(s.buf, want, s.len) == 0);
out:
	free(s.buf);
	free(want);
	return 0;
}
