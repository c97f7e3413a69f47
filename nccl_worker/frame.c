// SPDX-License-Identifier: MIT
#include "frame.h"

#include <errno.h>
#include <string.h>

static const char *const type_names[FRAME_TYPE_END] = {
	[FRAME_REGISTER] = "register",
	[FRAME_TABLE] = "table",
	[FRAME_REJECT] = "reject",
	[FRAME_HELLO] = "hello",
	[FRAME_GATHER] = "gather",
	[FRAME_BCAST] = "broadcast",
	[FRAME_ALLREDUCE] = "all-reduce",
	[FRAME_ABORT] = "abort",
	[FRAME_BYE] = "bye",
	[FRAME_CHALLENGE] = "challenge",
	[FRAME_BUSY] = "busy",
};

static const char *const coll_names[FRAME_COLL_END] = {
	[FRAME_COLL_NONE] = "no collective",
	[FRAME_COLL_ALLREDUCE] = "all-reduce",
	[FRAME_COLL_GATHER] = "gather",
	[FRAME_COLL_BROADCAST] = "broadcast",
	[FRAME_COLL_ALLGATHER] = "allgather",
	[FRAME_COLL_BARRIER] = "barrier",
	[FRAME_COLL_PREEMPT] = "should_preempt",
};

const char *frame_coll_name(unsigned coll)
{
	return coll < FRAME_COLL_END ? coll_names[coll] : "unknown";
}

const char *frame_type_name(unsigned type)
{
	if (type == 0 || type >= FRAME_TYPE_END)
		return "unknown";
	return type_names[type];
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

void frame_encode_hdr(uint8_t out[FRAME_HDR_LEN], unsigned type, uint64_t seq, uint64_t len)
{
	frame_encode_coll_hdr(out, type, FRAME_COLL_NONE, seq, len);
}

void frame_encode_coll_hdr(uint8_t out[FRAME_HDR_LEN], unsigned type, unsigned coll, uint64_t seq,
			   uint64_t len)
{
	put_le(out, FRAME_MAGIC, 4);
	put_le(out + 4, FRAME_VERSION, 2);
	out[6] = (uint8_t)type;
	out[7] = (uint8_t)coll;
	put_le(out + 8, seq, 8);
	put_le(out + 16, len, 8);
}

int frame_decode_hdr(const uint8_t in[FRAME_HDR_LEN], uint64_t max_len, struct frame_hdr *h,
		     const char **why)
{
	if (get_le(in, 4) != FRAME_MAGIC) {
		*why = "bad magic (not a slotrun peer)";
		return -EPROTO;
	}
	if (get_le(in + 4, 2) != FRAME_VERSION) {
		*why = "unsupported protocol version";
		return -EPROTO;
	}
	h->type = in[6];
	h->coll = in[7];
	if (h->type == 0 || h->type >= FRAME_TYPE_END) {
		*why = "unknown message type";
		return -EPROTO;
	}
	if (h->coll >= FRAME_COLL_END) {
		*why = "unknown collective";
		return -EPROTO;
	}
	h->seq = get_le(in + 8, 8);
	h->len = get_le(in + 16, 8);
	if (h->len > max_len) {
		*why = "payload longer than allowed";
		return -EPROTO;
	}
	return 0;
}

/* --- writer -------------------------------------------------------------- */

static uint8_t *wr_take(struct frame_wr *w, size_t n)
{
	uint8_t *p;

	if (w->err || w->cap - w->pos < n) {
		w->err = -ENOSPC;
		return NULL;
	}
	p = w->p + w->pos;
	w->pos += n;
	return p;
}

void frame_put_u8(struct frame_wr *w, uint8_t v)
{
	uint8_t *p = wr_take(w, 1);
	if (p)
		*p = v;
}

void frame_put_u16(struct frame_wr *w, uint16_t v)
{
	uint8_t *p = wr_take(w, 2);
	if (p)
		put_le(p, v, 2);
}

void frame_put_u32(struct frame_wr *w, uint32_t v)
{
	uint8_t *p = wr_take(w, 4);
	if (p)
		put_le(p, v, 4);
}

void frame_put_str(struct frame_wr *w, const char *s)
{
	size_t n = strlen(s);
	uint8_t *p;

	if (n > UINT16_MAX) {
		w->err = -ENOSPC;
		return;
	}
	frame_put_u16(w, (uint16_t)n);
	p = wr_take(w, n);
	if (p)
		memcpy(p, s, n);
}

void frame_put_bytes(struct frame_wr *w, const uint8_t *p, size_t n)
{
	uint8_t *q = wr_take(w, n);
	if (q)
		memcpy(q, p, n);
}

/* --- reader -------------------------------------------------------------- */

static const uint8_t *rd_take(struct frame_rd *r, size_t n)
{
	const uint8_t *p;

	if (r->err)
		return NULL;
	if (r->len - r->pos < n) {
		r->err = -EPROTO;
		r->why = "truncated payload";
		return NULL;
	}
	p = r->p + r->pos;
	r->pos += n;
	return p;
}

uint8_t frame_get_u8(struct frame_rd *r)
{
	const uint8_t *p = rd_take(r, 1);
	return p ? *p : 0;
}

uint16_t frame_get_u16(struct frame_rd *r)
{
	const uint8_t *p = rd_take(r, 2);
	return p ? (uint16_t)get_le(p, 2) : 0;
}

uint32_t frame_get_u32(struct frame_rd *r)
{
	const uint8_t *p = rd_take(r, 4);
	return p ? (uint32_t)get_le(p, 4) : 0;
}

uint64_t frame_get_u64(struct frame_rd *r)
{
	const uint8_t *p = rd_take(r, 8);
	return p ? get_le(p, 8) : 0;
}

void frame_get_str(struct frame_rd *r, char *out, size_t outlen)
{
	size_t n = frame_get_u16(r);
	const uint8_t *p;

	out[0] = '\0';
	if (r->err)
		return;
	if (n >= outlen) {
		r->err = -EPROTO;
		r->why = "string too long";
		return;
	}
	p = rd_take(r, n);
	if (!p)
		return;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < 0x20 || p[i] == 0x7f) {
			r->err = -EPROTO;
			r->why = p[i] ? "string holds a control character" : "string holds a NUL byte";
			return;
		}
	}
	memcpy(out, p, n);
	out[n] = '\0';
}

void frame_get_bytes(struct frame_rd *r, uint8_t *out, size_t n)
{
	const uint8_t *p = rd_take(r, n);

	if (p)
		memcpy(out, p, n);
	else
		memset(out, 0, n);
}

int frame_get_end(struct frame_rd *r, const char **why)
{
	if (!r->err && r->pos != r->len) {
		r->err = -EPROTO;
		r->why = "trailing bytes after the payload";
	}
	if (r->err)
		*why = r->why;
	return r->err;
}

/* --- messages ------------------------------------------------------------ */

static long wr_done(struct frame_wr *w)
{
	return w->err ? w->err : (long)w->pos;
}

static void put_node(struct frame_wr *w, const struct frame_node *n)
{
	frame_put_u8(w, n->transport);
	frame_put_bytes(w, n->id, sizeof(n->id));
	frame_put_bytes(w, n->sock, sizeof(n->sock));
	frame_put_bytes(w, n->token, sizeof(n->token));
}

static void get_node(struct frame_rd *r, struct frame_node *n)
{
	n->transport = frame_get_u8(r);
	frame_get_bytes(r, n->id, sizeof(n->id));
	frame_get_bytes(r, n->sock, sizeof(n->sock));
	frame_get_bytes(r, n->token, sizeof(n->token));
	if (!r->err && n->transport != 'a' && n->transport != 't' && n->transport != 's') {
		r->err = -EPROTO;
		r->why = "unknown transport";
	}
}

long frame_register_encode(const struct frame_register *m, uint8_t *buf, size_t cap)
{
	struct frame_wr w = { .p = buf, .cap = cap };

	frame_put_u32(&w, m->rank);
	frame_put_u32(&w, m->size);
	frame_put_u32(&w, m->local_rank);
	frame_put_u32(&w, m->local_size);
	frame_put_str(&w, m->host);
	frame_put_str(&w, m->addr);
	frame_put_u16(&w, m->port);
	frame_put_bytes(&w, m->ring_nonce, sizeof(m->ring_nonce));
	put_node(&w, &m->node);
	frame_put_bytes(&w, m->nonce, sizeof(m->nonce));
	frame_put_bytes(&w, m->mac, sizeof(m->mac));
	return wr_done(&w);
}

int frame_register_decode(const uint8_t *buf, size_t len, struct frame_register *m,
			  const char **why)
{
	struct frame_rd r = { .p = buf, .len = len };

	m->rank = frame_get_u32(&r);
	m->size = frame_get_u32(&r);
	m->local_rank = frame_get_u32(&r);
	m->local_size = frame_get_u32(&r);
	frame_get_str(&r, m->host, sizeof(m->host));
	frame_get_str(&r, m->addr, sizeof(m->addr));
	m->port = frame_get_u16(&r);
	frame_get_bytes(&r, m->ring_nonce, sizeof(m->ring_nonce));
	get_node(&r, &m->node);
	frame_get_bytes(&r, m->nonce, sizeof(m->nonce));
	frame_get_bytes(&r, m->mac, sizeof(m->mac));
	if (!r.err && m->port == 0) {
		r.err = -EPROTO;
		r.why = "port 0";
	}
	return frame_get_end(&r, why);
}

long frame_table_encode(const struct frame_peer *peers, const char *strs, uint32_t n,
			const uint8_t mac[FRAME_MAC_LEN], uint8_t *buf, size_t cap)
{
	struct frame_wr w = { .p = buf, .cap = cap };

	frame_put_u32(&w, n);
	for (uint32_t i = 0; i < n; i++) {
		frame_put_str(&w, strs + peers[i].host);
		frame_put_str(&w, peers[i].addr);
		frame_put_u16(&w, peers[i].port);
		frame_put_bytes(&w, peers[i].ring_nonce, sizeof(peers[i].ring_nonce));
		put_node(&w, &peers[i].node);
	}
	frame_put_bytes(&w, mac, FRAME_MAC_LEN);
	return wr_done(&w);
}

int frame_table_decode(const uint8_t *buf, size_t len, uint32_t n, struct frame_peer *peers,
		       char *strs, size_t strcap, uint8_t mac[FRAME_MAC_LEN], const char **why)
{
	struct frame_rd r = { .p = buf, .len = len };
	uint32_t got = frame_get_u32(&r);
	size_t used = 0;

	if (!r.err && got != n) {
		*why = "table size differs from WORLD_SIZE";
		return -EPROTO;
	}
	for (uint32_t i = 0; i < n && !r.err; i++) {
		size_t room = strcap - used < FRAME_HOST_MAX ? strcap - used : FRAME_HOST_MAX;

		if (room == 0) {
			r.err = -EPROTO;
			r.why = "host names longer than the table";
			break;
		}
		peers[i].host = (uint32_t)used;
		frame_get_str(&r, strs + used, room);
		used += strlen(strs + used) + 1;
		frame_get_str(&r, peers[i].addr, sizeof(peers[i].addr));
		peers[i].port = frame_get_u16(&r);
		frame_get_bytes(&r, peers[i].ring_nonce, sizeof(peers[i].ring_nonce));
		get_node(&r, &peers[i].node);
		if (!r.err && peers[i].port == 0) {
			r.err = -EPROTO;
			r.why = "port 0";
		}
	}
	frame_get_bytes(&r, mac, FRAME_MAC_LEN);
	return frame_get_end(&r, why);
}

long frame_hello_encode(const struct frame_hello *m, uint8_t *buf, size_t cap)
{
	struct frame_wr w = { .p = buf, .cap = cap };

	frame_put_u32(&w, m->rank);
	frame_put_bytes(&w, m->nonce, sizeof(m->nonce));
	frame_put_bytes(&w, m->mac, sizeof(m->mac));
	return wr_done(&w);
}

int frame_hello_decode(const uint8_t *buf, size_t len, struct frame_hello *m, const char **why)
{
	struct frame_rd r = { .p = buf, .len = len };

	m->rank = frame_get_u32(&r);
	frame_get_bytes(&r, m->nonce, sizeof(m->nonce));
	frame_get_bytes(&r, m->mac, sizeof(m->mac));
	return frame_get_end(&r, why);
}

int frame_challenge_decode(const uint8_t *buf, size_t len, uint8_t nonce[FRAME_NONCE_LEN],
			   const char **why)
{
	struct frame_rd r = { .p = buf, .len = len };

	frame_get_bytes(&r, nonce, FRAME_NONCE_LEN);
	return frame_get_end(&r, why);
}

long frame_reason_encode(const char *reason, uint8_t *buf, size_t cap)
{
	struct frame_wr w = { .p = buf, .cap = cap };
	char cut[FRAME_REASON_MAX];
	size_t n = strnlen(reason, sizeof(cut) - 1);  /* long reasons are cut, not refused */

	memcpy(cut, reason, n);
	cut[n] = '\0';
	frame_put_str(&w, cut);
	return wr_done(&w);
}

int frame_reason_decode(const uint8_t *buf, size_t len, char *reason, size_t rlen,
			const char **why)
{
	struct frame_rd r = { .p = buf, .len = len };

	frame_get_str(&r, reason, rlen);
	return frame_get_end(&r, why);
}

long frame_abort_encode(const struct frame_abort *m, uint8_t *buf, size_t cap)
{
	struct frame_wr w = { .p = buf, .cap = cap };

	char cut[FRAME_REASON_MAX];
	size_t n = strnlen(m->reason, sizeof(cut) - 1);

	memcpy(cut, m->reason, n);
	cut[n] = '\0';
	frame_put_u32(&w, (uint32_t)m->origin);
	frame_put_u32(&w, (uint32_t)m->culprit);
	frame_put_u8(&w, m->flags);
	frame_put_str(&w, cut);
	return wr_done(&w);
}

int frame_abort_decode(const uint8_t *buf, size_t len, struct frame_abort *m, const char **why)
{
	struct frame_rd r = { .p = buf, .len = len };

	m->origin = (int32_t)frame_get_u32(&r);
	m->culprit = (int32_t)frame_get_u32(&r);
	m->flags = frame_get_u8(&r);
	frame_get_str(&r, m->reason, sizeof(m->reason));
	if (!r.err && (m->origin < 0 || m->culprit < -1)) {
		r.err = -EPROTO;
		r.why = "negative rank";
	}
	return frame_get_end(&r, why);
}

void frame_allreduce_encode(const struct frame_allreduce *m, uint8_t out[FRAME_ALLREDUCE_LEN])
{
	put_le(out, m->count, 8);
	out[8] = m->dtype;
	out[9] = m->op;
}

int frame_allreduce_decode(const uint8_t *buf, size_t len, struct frame_allreduce *m,
			   const char **why)
{
	struct frame_rd r = { .p = buf, .len = len };

	m->count = frame_get_u64(&r);
	m->dtype = frame_get_u8(&r);
	m->op = frame_get_u8(&r);
	return frame_get_end(&r, why);
}

/* --- seals --------------------------------------------------------------- */

void frame_seal(uint8_t *payload, size_t len, const char *secret, const char *label,
		const uint8_t *first, const uint8_t *second)
{
	size_t body = len - FRAME_MAC_LEN;

	auth_mac(payload + body, secret, label, first, second, payload, body);
}

bool frame_sealed(const uint8_t *payload, size_t len, const char *secret, const char *label,
		  const uint8_t *first, const uint8_t *second)
{
	size_t body;

	if (len < FRAME_MAC_LEN)
		return false;
	body = len - FRAME_MAC_LEN;
	return auth_check(payload + body, secret, label, first, second, payload, body);
}

void frame_digest(const uint8_t *payload, size_t len, uint8_t digest[FRAME_DIGEST_LEN])
{
	auth_digest(digest, payload, len);
}

void frame_seal_digest(uint8_t mac[FRAME_MAC_LEN], const uint8_t digest[FRAME_DIGEST_LEN],
		       const char *secret, const char *label, const uint8_t *first,
		       const uint8_t *second)
{
	auth_mac(mac, secret, label, first, second, digest, FRAME_DIGEST_LEN);
}

bool frame_sealed_digest(const uint8_t *payload, size_t len, const char *secret, const char *label,
			 const uint8_t *first, const uint8_t *second)
{
	uint8_t digest[FRAME_DIGEST_LEN];

	if (len < FRAME_MAC_LEN)
		return false;
	frame_digest(payload, len - FRAME_MAC_LEN, digest);
	return auth_check(payload + len - FRAME_MAC_LEN, secret, label, first, second, digest,
			  FRAME_DIGEST_LEN);
}
