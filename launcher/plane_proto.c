// SPDX-License-Identifier: MIT
/* The job plane's wire (plane_proto.h): every message encoded and checked,
 * the handshake's MACs, and where a connection comes from.  The chief's
 * decisions are in plane_coord.c. */
#include "plane_proto.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_info.h"

/* ---- Encoding ---- */

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	bool over;
};

static void put_bytes(struct wbuf *w, const void *b, size_t n)
{
	if (w->over || n > w->cap - w->len) {
		w->over = true;
		return;
	}
	memcpy(w->p + w->len, b, n);
	w->len += n;
}

static void put_u8(struct wbuf *w, unsigned v)
{
	unsigned char b = (unsigned char)v;
	put_bytes(w, &b, 1);
}

static void put_u64(struct wbuf *w, uint64_t v, int bytes)
{
	unsigned char b[8];

	for (int i = 0; i < bytes; i++)
		b[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
	put_bytes(w, b, (size_t)bytes);
}

static void put_i32(struct wbuf *w, int v)
{
	put_u64(w, (uint32_t)v, 4);
}

static void put_str(struct wbuf *w, const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n >= cap) { /* a field is NUL-terminated within its capacity */
		w->over = true;
		return;
	}
	put_u64(w, n, 2);
	put_bytes(w, s, n);
}

static void put_join(struct wbuf *w, const struct plane_join *j)
{
	put_i32(w, j->node_rank);
	put_i32(w, j->nnodes);
	put_i32(w, j->slots);
	put_i32(w, j->world_size);
	put_i32(w, j->max_restarts);
	put_i32(w, j->hb_timeout_ms);
	put_str(w, j->version, sizeof(j->version));
	put_str(w, j->host, sizeof(j->host));
	put_i32(w, j->nnodes_min);
	put_i32(w, j->settle_ms);
	put_u8(w, (unsigned)j->admit);
	put_bytes(w, j->id, PLANE_ID_LEN);
	put_i32(w, j->round);
	put_i32(w, j->restarts);
	put_i32(w, j->fanout);
	if (j->has_id)
		put_bytes(w, j->secret_id, AUTH_MAC_LEN);
}

static void put_round(struct wbuf *w, const struct plane_round_info *r)
{
	put_i32(w, r->round);
	put_i32(w, r->restarts);
	put_i32(w, r->nnodes);
	put_i32(w, r->node_rank);
	put_i32(w, r->rank_base);
	put_i32(w, r->world_size);
	put_str(w, r->master, sizeof(r->master));
	put_str(w, r->why, sizeof(r->why));
	if (r->ncand < 0 || r->ncand > PLANE_CANDIDATES) {
		w->over = true;
		return;
	}
	put_u8(w, (unsigned)r->ncand);
	for (int i = 0; i < r->ncand; i++) {
		put_i32(w, r->cand_rank[i]);
		put_str(w, r->cand_host[i], sizeof(r->cand_host[i]));
	}
}

static void put_cause(struct wbuf *w, const struct plane_cause *c)
{
	put_u8(w, c->kind);
	put_i32(w, c->node);
	put_i32(w, c->rank);
	put_i32(w, c->code);
	put_u64(w, (uint64_t)c->when_ms, 8);
	put_u64(w, (uint64_t)c->after_ms, 8);
	put_str(w, c->host, sizeof(c->host));
	put_str(w, c->text, sizeof(c->text));
	put_str(w, c->tail, sizeof(c->tail));
	put_str(w, c->message, sizeof(c->message));
	put_u8(w, c->blamed);
	put_i32(w, c->culprit);
	put_i32(w, c->culprit_node);
	put_str(w, c->culprit_host, sizeof(c->culprit_host));
}

static void put_fwd(struct wbuf *w, const struct plane_fwd *f)
{
	put_u64(w, f->id, 4);
	put_u64(w, f->except, 4);
	put_u8(w, f->flags);
	put_str(w, f->peer, sizeof(f->peer));
	put_bytes(w, f->frame, f->len);
}

/* The frame's length field, once its body is written. */
static int put_frame_len(struct wbuf *w)
{
	size_t body = w->len - 4;

	/* room for the tag: every frame may be sealed */
	if (w->over || body > PLANE_MAX_FRAME - AUTH_TAG_LEN)
		return -EMSGSIZE;
	for (int i = 0; i < 4; i++)
		w->p[i] = (unsigned char)(body >> (8 * (3 - i)));
	return (int)w->len;
}

int plane_encode_fwd(const struct plane_fwd *f, unsigned char *buf, size_t cap)
{
	struct wbuf w = { .p = buf, .cap = cap };

	put_u64(&w, 0, 4);
	put_u8(&w, PLANE_FWD);
	put_fwd(&w, f);
	return put_frame_len(&w);
}

int plane_encode(const struct plane_msg *m, unsigned char *buf, size_t cap)
{
	struct wbuf w = { .p = buf, .cap = cap };

	put_u64(&w, 0, 4); /* the length, filled in below */
	put_u8(&w, m->type);
	switch (m->type) {
	case PLANE_CHAL:
		put_bytes(&w, PLANE_MAGIC, PLANE_MAGIC_LEN);
		put_bytes(&w, m->nonce, AUTH_NONCE_LEN);
		break;
	case PLANE_JOIN:
		put_bytes(&w, m->nonce, AUTH_NONCE_LEN);
		put_bytes(&w, m->mac, AUTH_MAC_LEN);
		put_join(&w, &m->join);
		break;
	case PLANE_WELCOME:
		put_bytes(&w, m->mac, AUTH_MAC_LEN);
		break;
	case PLANE_REFUSE:
		put_str(&w, m->text, sizeof(m->text));
		break;
	case PLANE_ABORT:
		put_i32(&w, m->code);
		put_str(&w, m->text, sizeof(m->text));
		break;
	case PLANE_FAIL:
		put_cause(&w, &m->cause);
		break;
	case PLANE_STOP_REQ:
	case PLANE_SIGNAL_REQ:
		put_i32(&w, m->sig);
		put_str(&w, m->text, sizeof(m->text));
		break;
	case PLANE_PAUSE_REQ:
		put_i32(&w, m->sig);
		break;
	case PLANE_PAUSE:
		put_i32(&w, m->sig);
		put_i32(&w, m->node);
		break;
	case PLANE_RESUME:
	case PLANE_MISMATCH:
		put_i32(&w, m->node);
		break;
	case PLANE_QUERY:
	case PLANE_ASK:
		put_u64(&w, m->id, 4);
		put_u8(&w, m->flags);
		break;
	case PLANE_PART:
		put_u64(&w, m->id, 4);
		put_u8(&w, m->more);
		put_str(&w, m->data, sizeof(m->data));
		break;
	case PLANE_EVENT:
		put_str(&w, m->data, sizeof(m->data));
		break;
	case PLANE_FWD:
		put_fwd(&w, &m->fwd);
		break;
	case PLANE_GONE:
		put_u64(&w, m->fwd.id, 4);
		put_u8(&w, m->fwd.flags);
		put_cause(&w, &m->cause);
		break;
	case PLANE_STOP:
		put_i32(&w, m->sig);
		put_i32(&w, m->node);
		put_cause(&w, &m->cause);
		break;
	case PLANE_SIGNAL:
		put_i32(&w, m->sig);
		put_i32(&w, m->node);
		break;
	case PLANE_DONE:
		put_i32(&w, m->code);
		break;
	case PLANE_END:
		put_i32(&w, m->code);
		put_cause(&w, &m->cause);
		put_str(&w, m->text, sizeof(m->text));
		break;
	case PLANE_RESTART:
		put_i32(&w, m->code);
		put_i32(&w, m->delay_ms);
		put_cause(&w, &m->cause);
		break;
	case PLANE_START:
		put_round(&w, &m->round);
		break;
	case PLANE_PING:
	case PLANE_RESUME_REQ:
		break;
	default:
		return -EINVAL;
	}
	return put_frame_len(&w);
}

/* ---- Decoding ---- */

struct rbuf {
	const unsigned char *p;
	size_t len, off;
	bool bad;
};

static const unsigned char *take(struct rbuf *r, size_t n)
{
	const unsigned char *at;

	if (r->bad || n > r->len - r->off) {
		r->bad = true;
		return NULL;
	}
	at = r->p + r->off;
	r->off += n;
	return at;
}

static void get_bytes(struct rbuf *r, void *out, size_t n)
{
	const unsigned char *at = take(r, n);

	if (at)
		memcpy(out, at, n);
}

static uint64_t get_u64(struct rbuf *r, int bytes)
{
	const unsigned char *at = take(r, (size_t)bytes);
	uint64_t v = 0;

	for (int i = 0; at && i < bytes; i++)
		v = v << 8 | at[i];
	return v;
}

static int get_i32(struct rbuf *r)
{
	return (int)(int32_t)(uint32_t)get_u64(r, 4);
}

static void get_str(struct rbuf *r, char *out, size_t cap)
{
	size_t n = (size_t)get_u64(r, 2);
	const unsigned char *at;

	out[0] = '\0';
	if (r->bad)
		return;
	if (n >= cap) {
		r->bad = true;
		return;
	}
	at = take(r, n);
	if (!at)
		return;
	if (memchr(at, '\0', n)) {
		r->bad = true;
		return;
	}
	memcpy(out, at, n);
	out[n] = '\0';
}

static void get_join(struct rbuf *r, struct plane_join *j)
{
	j->node_rank = get_i32(r);
	j->nnodes = get_i32(r);
	j->slots = get_i32(r);
	j->world_size = get_i32(r);
	j->max_restarts = get_i32(r);
	j->hb_timeout_ms = get_i32(r);
	get_str(r, j->version, sizeof(j->version));
	get_str(r, j->host, sizeof(j->host));
	j->nnodes_min = get_i32(r);
	j->settle_ms = get_i32(r);
	j->admit = (int)get_u64(r, 1);
	if (j->admit > PLANE_ADMIT_NEXT_ROUND)
		r->bad = true;
	get_bytes(r, j->id, PLANE_ID_LEN);
	j->round = get_i32(r);
	j->restarts = get_i32(r);
	j->fanout = get_i32(r);
	if (j->fanout < 0)
		r->bad = true;
	/* the id ends the frame (a JOIN is decoded to its end) */
	j->has_id = !r->bad && r->off < r->len;
	if (j->has_id)
		get_bytes(r, j->secret_id, AUTH_MAC_LEN);
}

static void get_round(struct rbuf *r, struct plane_round_info *ri)
{
	ri->round = get_i32(r);
	ri->restarts = get_i32(r);
	ri->nnodes = get_i32(r);
	ri->node_rank = get_i32(r);
	ri->rank_base = get_i32(r);
	ri->world_size = get_i32(r);
	get_str(r, ri->master, sizeof(ri->master));
	get_str(r, ri->why, sizeof(ri->why));
	ri->ncand = (int)get_u64(r, 1);
	if (ri->ncand > PLANE_CANDIDATES) {
		r->bad = true;
		return;
	}
	for (int i = 0; i < ri->ncand && !r->bad; i++) {
		ri->cand_rank[i] = get_i32(r);
		get_str(r, ri->cand_host[i], sizeof(ri->cand_host[i]));
	}
}

static void get_cause(struct rbuf *r, struct plane_cause *c)
{
	unsigned kind = (unsigned)get_u64(r, 1), blamed;

	if (kind > PLANE_CAUSE_GROW)
		r->bad = true;
	c->kind = (enum plane_cause_kind)kind;
	c->node = get_i32(r);
	c->rank = get_i32(r);
	c->code = get_i32(r);
	c->when_ms = (int64_t)get_u64(r, 8);
	c->after_ms = (int64_t)get_u64(r, 8);
	get_str(r, c->host, sizeof(c->host));
	get_str(r, c->text, sizeof(c->text));
	get_str(r, c->tail, sizeof(c->tail));
	get_str(r, c->message, sizeof(c->message));
	blamed = (unsigned)get_u64(r, 1);
	if (blamed > 1)
		r->bad = true;
	c->blamed = blamed;
	c->culprit = get_i32(r);
	c->culprit_node = get_i32(r);
	get_str(r, c->culprit_host, sizeof(c->culprit_host));
}

double plane_retry_wait(double delay, uint32_t r)
{
	return delay * (0.5 + (double)r / 4294967296.0);
}

long plane_frame_size(const unsigned char *buf, size_t have)
{
	uint32_t body;

	if (have < 4)
		return 0;
	body = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 | buf[3];
	if (body == 0 || body > PLANE_MAX_FRAME)
		return -EMSGSIZE;
	return 4 + (long)body;
}

long plane_frame_len(const unsigned char *buf, size_t have)
{
	long size = plane_frame_size(buf, have);

	return size > 0 && have < (size_t)size ? 0 : size;
}

/* Reads the body of a message of this type into m: 0, or -EPROTO for an
 * unknown type or a field no sender writes.  A short body only marks r
 * bad. */
static int get_body(struct rbuf *r, unsigned type, struct plane_msg *m)
{
	unsigned char magic[PLANE_MAGIC_LEN];

	switch (type) {
	case PLANE_CHAL:
		get_bytes(r, magic, sizeof(magic));
		if (!r->bad && memcmp(magic, PLANE_MAGIC, PLANE_MAGIC_LEN) != 0)
			return -EPROTO;
		get_bytes(r, m->nonce, AUTH_NONCE_LEN);
		return 0;
	case PLANE_JOIN:
		get_bytes(r, m->nonce, AUTH_NONCE_LEN);
		get_bytes(r, m->mac, AUTH_MAC_LEN);
		get_join(r, &m->join);
		return 0;
	case PLANE_WELCOME:
		get_bytes(r, m->mac, AUTH_MAC_LEN);
		return 0;
	case PLANE_REFUSE:
		get_str(r, m->text, sizeof(m->text));
		return 0;
	case PLANE_ABORT:
		m->code = get_i32(r);
		get_str(r, m->text, sizeof(m->text));
		return 0;
	case PLANE_FAIL:
		get_cause(r, &m->cause);
		return 0;
	case PLANE_STOP_REQ:
	case PLANE_SIGNAL_REQ:
		m->sig = get_i32(r);
		get_str(r, m->text, sizeof(m->text));
		return 0;
	case PLANE_PAUSE_REQ:
		m->sig = get_i32(r);
		return 0;
	case PLANE_PAUSE:
		m->sig = get_i32(r);
		m->node = get_i32(r);
		return 0;
	case PLANE_RESUME:
	case PLANE_MISMATCH:
		m->node = get_i32(r);
		return 0;
	case PLANE_QUERY:
	case PLANE_ASK:
		m->id = (uint32_t)get_u64(r, 4);
		m->flags = (unsigned)get_u64(r, 1);
		return m->flags & ~PLANE_Q_STACKS ? -EPROTO : 0;
	case PLANE_PART: {
		unsigned more;

		m->id = (uint32_t)get_u64(r, 4);
		more = (unsigned)get_u64(r, 1);
		get_str(r, m->data, sizeof(m->data));
		m->more = more;
		return more > 1 ? -EPROTO : 0;
	}
	case PLANE_EVENT:
		get_str(r, m->data, sizeof(m->data));
		return 0;
	case PLANE_FWD:
		m->fwd.id = (uint32_t)get_u64(r, 4);
		m->fwd.except = (uint32_t)get_u64(r, 4);
		m->fwd.flags = (unsigned)get_u64(r, 1);
		get_str(r, m->fwd.peer, sizeof(m->fwd.peer));
		if (r->bad)
			return 0;
		/* the rest is one whole frame, of any type but these two */
		m->fwd.frame = r->p + r->off;
		m->fwd.len = r->len - r->off;
		r->off = r->len;
		if (m->fwd.len < 5 || plane_frame_len(m->fwd.frame, m->fwd.len) != (long)m->fwd.len ||
		    m->fwd.frame[4] == PLANE_FWD || m->fwd.frame[4] == PLANE_GONE || m->fwd.frame[4] == 0 ||
		    m->fwd.frame[4] > PLANE_TYPE_LAST)
			return -EPROTO;
		return m->fwd.flags & ~(PLANE_FWD_PROVED | PLANE_FWD_CLOSE) ? -EPROTO : 0;
	case PLANE_GONE:
		m->fwd.id = (uint32_t)get_u64(r, 4);
		m->fwd.flags = (unsigned)get_u64(r, 1);
		get_cause(r, &m->cause);
		return m->fwd.flags & ~PLANE_FWD_HOST_GONE ? -EPROTO : 0;
	case PLANE_STOP:
		m->sig = get_i32(r);
		m->node = get_i32(r);
		get_cause(r, &m->cause);
		return 0;
	case PLANE_SIGNAL:
		m->sig = get_i32(r);
		m->node = get_i32(r);
		return 0;
	case PLANE_DONE:
		m->code = get_i32(r);
		return 0;
	case PLANE_END:
		m->code = get_i32(r);
		get_cause(r, &m->cause);
		get_str(r, m->text, sizeof(m->text));
		return 0;
	case PLANE_RESTART:
		m->code = get_i32(r);
		m->delay_ms = get_i32(r);
		get_cause(r, &m->cause);
		return m->code < 0 || m->delay_ms < 0 ? -EPROTO : 0;
	case PLANE_START:
		get_round(r, &m->round);
		return 0;
	case PLANE_PING:
	case PLANE_RESUME_REQ:
		return 0;
	default:
		return -EPROTO;
	}
}

/* Signals and statuses are small; anything else is not ours.  0 or
 * -EPROTO. */
static int check_ranges(unsigned type, const struct plane_msg *m)
{
	if ((type == PLANE_STOP_REQ || type == PLANE_SIGNAL_REQ || type == PLANE_STOP ||
	     type == PLANE_SIGNAL) && (m->sig < 0 || m->sig >= NSIG))
		return -EPROTO;
	if ((type == PLANE_PAUSE_REQ || type == PLANE_PAUSE) && (m->sig < 1 || m->sig >= NSIG))
		return -EPROTO;
	if ((type == PLANE_PAUSE || type == PLANE_RESUME || type == PLANE_MISMATCH) && m->node < 0)
		return -EPROTO;
	if ((type == PLANE_ABORT || type == PLANE_DONE || type == PLANE_END) &&
	    (m->code < 0 || m->code > 255))
		return -EPROTO;
	if (type == PLANE_START) {
		const struct plane_round_info *ri = &m->round;

		if (ri->round < 1 || ri->restarts < 0 || ri->nnodes < 1 || ri->nnodes > CI_MAX_NODES ||
		    ri->node_rank < 0 || ri->node_rank >= ri->nnodes || ri->rank_base < 0 ||
		    ri->world_size < 1 || ri->rank_base >= ri->world_size)
			return -EPROTO;
		for (int i = 0; i < ri->ncand; i++)
			if (ri->cand_rank[i] < 1 || ri->cand_rank[i] >= ri->nnodes)
				return -EPROTO;
	}
	return 0;
}

int plane_decode(const unsigned char *frame, size_t len, struct plane_msg *m)
{
	struct rbuf r = { .p = frame, .len = len, .off = 4 };
	unsigned type;

	if (plane_frame_len(frame, len) != (long)len)
		return -EPROTO;
	memset(m, 0, sizeof(*m));
	type = (unsigned)get_u64(&r, 1);
	m->type = (enum plane_type)type;
	if (get_body(&r, type, m) < 0 || r.bad || r.off != len)
		return -EPROTO;
	return check_ranges(type, m);
}

/* ---- Handshake ---- */

#define JOIN_FIELDS_OFF (4 + 1 + AUTH_NONCE_LEN + AUTH_MAC_LEN)

int plane_join_fields(const unsigned char *frame, size_t len, const unsigned char **fields,
		      size_t *flen)
{
	if (len < JOIN_FIELDS_OFF || frame[4] != PLANE_JOIN)
		return -EPROTO;
	*fields = frame + JOIN_FIELDS_OFF;
	*flen = len - JOIN_FIELDS_OFF;
	return 0;
}

int plane_make_join(const char *secret, const unsigned char chief_nonce[AUTH_NONCE_LEN],
		    const unsigned char node_nonce[AUTH_NONCE_LEN], const struct plane_join *j,
		    unsigned char *buf, size_t cap)
{
	struct plane_msg m = { .type = PLANE_JOIN, .join = *j };
	const unsigned char *fields;
	size_t flen;
	int n;

	m.join.has_id = true;
	plane_secret_id(secret, m.join.secret_id);
	memcpy(m.nonce, node_nonce, AUTH_NONCE_LEN);
	n = plane_encode(&m, buf, cap);
	if (n < 0)
		return n;
	plane_join_fields(buf, (size_t)n, &fields, &flen);
	auth_mac(buf + 4 + 1 + AUTH_NONCE_LEN, secret, "slotrun-join", chief_nonce, node_nonce, fields,
		 flen);
	return n;
}

bool plane_check_join(const char *secret, const unsigned char chief_nonce[AUTH_NONCE_LEN],
		      const unsigned char *frame, size_t len, const struct plane_msg *m)
{
	const unsigned char *fields;
	size_t flen;

	if (m->type != PLANE_JOIN || plane_join_fields(frame, len, &fields, &flen) < 0)
		return false;
	return auth_check(m->mac, secret, "slotrun-join", chief_nonce, m->nonce, fields, flen);
}

void plane_welcome_mac(const char *secret, const unsigned char node_nonce[AUTH_NONCE_LEN],
		       const unsigned char chief_nonce[AUTH_NONCE_LEN], unsigned char mac[AUTH_MAC_LEN])
{
	auth_mac(mac, secret, "slotrun-welcome", node_nonce, chief_nonce, NULL, 0);
}

bool plane_check_welcome(const char *secret, const unsigned char node_nonce[AUTH_NONCE_LEN],
			 const unsigned char chief_nonce[AUTH_NONCE_LEN], const unsigned char mac[AUTH_MAC_LEN])
{
	return auth_check(mac, secret, "slotrun-welcome", node_nonce, chief_nonce, NULL, 0);
}

/* ---- Frames after the handshake ---- */

void plane_seal_init(struct plane_seal *s, const char *secret, const unsigned char nc[AUTH_NONCE_LEN],
		     const unsigned char nn[AUTH_NONCE_LEN], bool chief)
{
	*s = (struct plane_seal){ .out = chief ? 'C' : 'N', .in = chief ? 'N' : 'C' };
	auth_mac(s->key, secret, "slotrun-session", nc, nn, NULL, 0);
}

static void put_len(unsigned char *buf, size_t body)
{
	for (int i = 0; i < 4; i++)
		buf[i] = (unsigned char)(body >> (8 * (3 - i)));
}

int plane_seal(struct plane_seal *s, unsigned char *buf, size_t len, size_t cap)
{
	size_t body = len - 4 + AUTH_TAG_LEN;

	if (len < 5 || len + AUTH_TAG_LEN > cap || body > PLANE_MAX_FRAME)
		return -EMSGSIZE;
	put_len(buf, body);
	auth_tag(buf + len, s->key, s->out, s->sent++, buf, len);
	return (int)(len + AUTH_TAG_LEN);
}

long plane_open_frame(struct plane_seal *s, unsigned char *buf, size_t len)
{
	size_t plain = len - AUTH_TAG_LEN;

	if (len < 5 + AUTH_TAG_LEN || !auth_tag_check(buf + plain, s->key, s->in, s->opened, buf, plain))
		return -EBADMSG;
	s->opened++;
	put_len(buf, plain - 4);
	return (long)plain;
}

void plane_secret_id(const char *secret, unsigned char id[AUTH_MAC_LEN])
{
	static const unsigned char none[AUTH_NONCE_LEN];

	auth_mac(id, secret, "slotrun-secret-id", none, none, NULL, 0);
}

/* ---- Silence ---- */

enum plane_silence plane_silence(double silent, double host_ago, double hb)
{
	if (silent <= hb)
		return PLANE_HEARD;
	if (host_ago < 0 || host_ago > hb)
		return PLANE_LOST_SILENT;
	return silent > PLANE_STALL_BOUND * hb ? PLANE_LOST_STALLED : PLANE_WAIT;
}

bool plane_self_stalled(double gap, double hb)
{
	return gap > hb / 2;
}

bool plane_self_given_up(double gap, double hb)
{
	return gap > PLANE_STALL_BOUND * hb - hb / PLANE_HB_PER_TIMEOUT;
}
