/* ClusterInfo: the sources, their order and the rules are in cluster_info.h.
 *
 * Shape: each source is parsed on its own into a struct source (values plus
 * the words that name them in messages) and checked for agreement within
 * itself; then every field takes the first source that has it, and the
 * chosen values are checked against each other.  Only at the very end is
 * anything moved into the caller's struct, so an error leaves nothing
 * behind. */
#include "cluster_info.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"

#define HOST_MAX 253        /* longest DNS name; also our cap for any address */
#define IFACE_MAX 15        /* IFNAMSIZ - 1 */
#define QUOTE_MAX 64        /* bytes of a value shown in a message */
#define WHAT_MAX 320        /* "SLURM_JOB_NODELIST 'gpu[01-04,07],...'" */
#define HL_DIGITS_MAX 9     /* digits of a hostlist number: fits any long */

/* ---- messages ---- */

struct ctx {
	const struct ci_env *env;
	char *err;
	size_t errlen;
};

/* Every rejection goes through here: one line in err, -EINVAL. */
static int fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int oom(struct ctx *c)
{
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "out of memory");
	return -ENOMEM;
}

/* A value as it may appear in a one-line message: control bytes escaped (an
 * environment variable can hold a newline), long values cut. */
struct quoted {
	char s[QUOTE_MAX * 4 + sizeof("...")];    /* every byte may become \xNN */
};

static const char *quote(struct quoted *q, const char *s)
{
	size_t o = 0, i;

	for (i = 0; s[i] && i < QUOTE_MAX; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch == 0x7f)
			o += (size_t)snprintf(q->s + o, sizeof(q->s) - o, "\\x%02x", ch);
		else
			q->s[o++] = (char)ch;
	}
	if (s[i])
		o += (size_t)snprintf(q->s + o, sizeof(q->s) - o, "...");
	q->s[o] = '\0';
	return q->s;
}

static void name_it(char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void name_it(char *what, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, WHAT_MAX, fmt, ap);
	va_end(ap);
}

/* ---- values as one source gives them ---- */

struct num {
	bool set;
	long v;
	char what[WHAT_MAX];    /* "--node-rank '5'", "rendezvous.json container_rank 5" */
};

struct strlist {
	bool set;
	char **v;
	int n;
	char what[WHAT_MAX];
};

struct slotspec {
	bool set;
	bool per_node;          /* one count per node; else v[0] for every node */
	int *v;
	int n;
	char what[WHAT_MAX];
};

struct str {
	bool set;
	char *v;
	char what[WHAT_MAX];
};

struct source {
	enum ci_source src;
	struct num nnodes;      /* an explicit count */
	struct num node_rank;
	struct strlist addrs;
	struct slotspec slots;
	struct num port;
	struct str iface;
	struct strlist gpus;    /* set with n == 0: the source says "no GPUs" */
	struct num nn;          /* the node count this source implies (see header) */
};

static void strv_free(char **v, int n)
{
	if (!v)
		return;
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void source_free(struct source *s)
{
	strv_free(s->addrs.v, s->addrs.n);
	strv_free(s->gpus.v, s->gpus.n);
	free(s->slots.v);
	free(s->iface.v);
}

static const char *get(struct ctx *c, const char *name)
{
	return c->env->getenv(c->env->ctx, name);
}

/* ---- scalar checks ---- */

/* io_parse_long, but a well-formed number outside [min, max] (a negative
 * one included) is -ERANGE, so messages can say "out of range". */
static int parse_long(const char *s, long min, long max, long *v)
{
	int r = io_parse_long(s, LONG_MIN, LONG_MAX, v);

	if (r == 0 && (*v < min || *v > max))
		return -ERANGE;
	return r;
}

static int parse_num(struct ctx *c, struct num *out, const char *name, const char *s,
		     long min, long max)
{
	struct quoted q;
	long v;
	int r;

	if (!s)
		return 0;
	r = parse_long(s, min, max, &v);
	if (r == -ERANGE)
		return fail(c, "%s '%s' is out of range: expected %ld..%ld", name, quote(&q, s),
			    min, max);
	if (r < 0)
		return fail(c, "%s '%s': expected an integer in %ld..%ld", name, quote(&q, s),
			    min, max);
	out->set = true;
	out->v = v;
	name_it(out->what, "%s '%s'", name, quote(&q, s));
	return 0;
}

/* A name a resolver or a socket call could take: printable ASCII without
 * blanks, not an option look-alike. */
static bool host_ok(const char *h, size_t len)
{
	if (len == 0 || len > HOST_MAX || h[0] == '-')
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)h[i] <= 0x20 || (unsigned char)h[i] >= 0x7f)
			return false;
	return true;
}

/* What the kernel accepts as a new interface name (dev_valid_name). */
static bool iface_ok(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > IFACE_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch <= 0x20 || ch == 0x7f || ch == '/' || ch == ':')
			return false;
	}
	return true;
}

static int parse_iface(struct ctx *c, struct str *out, const char *name, const char *s)
{
	struct quoted q;

	if (!s)
		return 0;
	if (!iface_ok(s))
		return fail(c, "%s '%s': expected a network interface name (1..%d characters, "
			    "no '/', ':' or whitespace)", name, quote(&q, s), IFACE_MAX);
	out->v = strdup(s);
	if (!out->v)
		return oom(c);
	out->set = true;
	name_it(out->what, "%s '%s'", name, quote(&q, s));
	return 0;
}

/* ---- comma lists ---- */

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* Splits s at commas into trimmed copies.  Blanks around entries are
 * forgiven ("a, b" from a shell); empty entries are not. */
static int split(struct ctx *c, const char *name, const char *s, int max, char ***out, int *n)
{
	struct quoted q;
	int cnt = 1, i = 0;
	const char *p;
	char **v;

	for (p = s; *p; p++)
		cnt += *p == ',';
	if (cnt > max)
		return fail(c, "%s '%s': more than %d entries", name, quote(&q, s), max);
	v = calloc((size_t)cnt, sizeof(*v));
	if (!v)
		return oom(c);
	for (p = s;; p++) {
		const char *end = strchr(p, ',');
		const char *b = p, *e = end ? end : p + strlen(p);
		while (b < e && blank(*b))
			b++;
		while (e > b && blank(e[-1]))
			e--;
		if (b == e) {
			strv_free(v, i);
			return fail(c, "%s '%s': entry %d is empty: expected a comma list", name,
				    quote(&q, s), i);
		}
		v[i] = strndup(b, (size_t)(e - b));
		if (!v[i]) {
			strv_free(v, i);
			return oom(c);
		}
		i++;
		if (!end)
			break;
		p = end;
	}
	*out = v;
	*n = cnt;
	return 0;
}

/* A comma list of at most max entries, each of which ok() accepts; how an
 * entry fails is said by complaint (" is not ...", or ": expected ...").
 * Fills out, or fails naming the first bad entry. */
static int parse_list(struct ctx *c, struct strlist *out, const char *name, const char *s,
		      int max, bool (*ok)(const char *), const char *complaint)
{
	struct quoted q, q2;
	char **v;
	int n, r;

	r = split(c, name, s, max, &v, &n);
	if (r < 0)
		return r;
	for (int i = 0; i < n; i++) {
		if (!ok(v[i])) {
			fail(c, "%s '%s': entry '%s'%s", name, quote(&q, s), quote(&q2, v[i]), complaint);
			strv_free(v, n);
			return -EINVAL;
		}
	}
	out->set = true;
	out->v = v;
	out->n = n;
	name_it(out->what, "%s '%s'", name, quote(&q, s));
	return 0;
}

static bool addr_ok(const char *s)
{
	return host_ok(s, strlen(s));
}

static int parse_addrs(struct ctx *c, struct strlist *out, const char *name, const char *s)
{
	if (!s)
		return 0;
	return parse_list(c, out, name, s, CI_MAX_NODES, addr_ok, " is not a host name or address");
}

/* "N" (every node has N slots) or "N0,N1,..." (one count per node). */
static int parse_slots(struct ctx *c, struct slotspec *out, const char *name, const char *s)
{
	struct quoted q, q2;
	char **v;
	int n, r;
	long x;

	if (!s)
		return 0;
	r = split(c, name, s, CI_MAX_NODES, &v, &n);
	if (r < 0)
		return r;
	out->v = calloc((size_t)n, sizeof(*out->v));
	if (!out->v) {
		strv_free(v, n);
		return oom(c);
	}
	for (int i = 0; i < n; i++) {
		r = parse_long(v[i], 1, CI_MAX_SLOTS, &x);
		if (r < 0) {
			fail(c, "%s '%s': entry '%s' %s: expected a slot count in 1..%d%s", name,
			     quote(&q, s), quote(&q2, v[i]),
			     r == -ERANGE ? "is out of range" : "is not a number", CI_MAX_SLOTS,
			     n > 1 ? " per node" : " (or a comma list, one per node)");
			strv_free(v, n);
			free(out->v);
			out->v = NULL;
			return -EINVAL;
		}
		out->v[i] = (int)x;
	}
	strv_free(v, n);
	out->set = true;
	out->per_node = n > 1;
	out->n = n;
	name_it(out->what, "%s '%s'", name, quote(&q, s));
	return 0;
}

/* Rejects a GPU named twice: two slots on one device is never what a
 * scheduler meant. */
static int check_unique(struct ctx *c, const struct strlist *g)
{
	for (int i = 0; i < g->n; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(g->v[i], g->v[j])) {
				struct quoted q;
				return fail(c, "%s: GPU '%s' is listed twice", g->what,
					    quote(&q, g->v[i]));
			}
	return 0;
}

static bool gpu_index_ok(const char *s)
{
	long x;

	return io_parse_long(s, 0, INT32_MAX, &x) == 0;
}

/* Slurm's GPU variables: comma lists of device indices. */
static int parse_slurm_gpus(struct ctx *c, struct strlist *out, const char *name, const char *s)
{
	int r;

	if (!s || !*s)
		return 0;
	r = parse_list(c, out, name, s, CI_MAX_SLOTS, gpu_index_ok,
		       ": expected a comma list of GPU indices");
	return r < 0 ? r : check_unique(c, out);
}

static bool cuda_id_ok(const char *s)
{
	if (!strncmp(s, "GPU-", 4) || !strncmp(s, "MIG-", 4))
		return host_ok(s, strlen(s));
	return gpu_index_ok(s);
}

/* CUDA_VISIBLE_DEVICES as CUDA reads it: "", "-1" and Slurm's "NoDevFiles"
 * hide every GPU; otherwise indices or GPU-/MIG- UUIDs, kept as written. */
static int parse_cuda_visible(struct ctx *c, struct strlist *out, const char *s)
{
	static const char name[] = "CUDA_VISIBLE_DEVICES";
	struct quoted q;
	int r;

	if (!s)
		return 0;
	if (!*s || !strcmp(s, "-1") || !strcmp(s, "NoDevFiles")) {
		name_it(out->what, "%s '%s'", name, quote(&q, s));
		out->set = true;
		return 0;
	}
	r = parse_list(c, out, name, s, CI_MAX_SLOTS, cuda_id_ok,
		       " is neither a device index nor a GPU-/MIG- UUID");
	return r < 0 ? r : check_unique(c, out);
}

/* ---- Slurm hostlists ---- */

struct hl_range {
	unsigned long lo, hi;
	int width;
};

/* One bracket and the text before it. */
struct hl_group {
	const char *lit;
	size_t litlen;
	struct hl_range *r;
	int nr;
};

/* One comma-separated name pattern: groups, then a tail of text. */
struct hl_expr {
	struct hl_group *g;
	int ng;
	const char *tail;
	size_t taillen;
	unsigned long count;
	size_t maxlen;           /* longest name it expands to */
};

static void hl_expr_free(struct hl_expr *e)
{
	for (int i = 0; i < e->ng; i++)
		free(e->g[i].r);
	free(e->g);
	memset(e, 0, sizeof(*e));
}

static bool hl_lit_ok(char ch)
{
	return (unsigned char)ch > 0x20 && (unsigned char)ch < 0x7f && ch != ',' && ch != '['
		&& ch != ']';
}

static int hl_err(char *err, size_t errlen, const char *label, const char *all,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int hl_err(char *err, size_t errlen, const char *label, const char *all,
		  const char *fmt, ...)
{
	struct quoted q;
	char why[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (err && errlen)
		snprintf(err, errlen, "%s '%s': %s", label, quote(&q, all), why);
	return -EINVAL;
}

/* A decimal number of at most HL_DIGITS_MAX digits at *p; advances *p. */
static bool hl_number(const char **p, const char *end, unsigned long *v, int *width)
{
	const char *s = *p;
	unsigned long x = 0;

	while (*p < end && **p >= '0' && **p <= '9') {
		if (*p - s >= HL_DIGITS_MAX)
			return false;
		x = x * 10 + (unsigned long)(**p - '0');
		(*p)++;
	}
	*v = x;
	*width = (int)(*p - s);
	return *width > 0;
}

static int hl_digits(unsigned long v)
{
	int d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

/* Parses the inside of one bracket, [b, e), into g. */
static int hl_parse_group(const char *label, const char *all, const char *b, const char *e,
			  struct hl_group *g, unsigned long *count, size_t *maxw, char *err,
			  size_t errlen)
{
	struct quoted q;
	const char *p = b;
	int cap = 1;
	char inside[QUOTE_MAX + 1];

	*count = 0;
	*maxw = 0;
	snprintf(inside, sizeof(inside), "%.*s", (int)(e - b) > QUOTE_MAX ? QUOTE_MAX : (int)(e - b), b);
	if (b == e)
		return hl_err(err, errlen, label, all, "empty '[]'");
	for (const char *x = b; x < e; x++)
		cap += *x == ',';
	g->r = calloc((size_t)cap, sizeof(*g->r));
	if (!g->r)
		return -ENOMEM;
	for (;;) {
		struct hl_range *r = &g->r[g->nr];
		int w2;

		if (!hl_number(&p, e, &r->lo, &r->width))
			goto bad;
		r->hi = r->lo;
		if (p < e && *p == '-') {
			p++;
			if (!hl_number(&p, e, &r->hi, &w2))
				goto bad;
			if (r->hi < r->lo)
				return hl_err(err, errlen, label, all,
					      "reversed range '%lu-%lu' in '[%s]'", r->lo, r->hi,
					      quote(&q, inside));
		}
		if (p < e && *p != ',')
			goto bad;
		g->nr++;
		*count += r->hi - r->lo + 1;
		if (*count > CI_MAX_NODES)
			return hl_err(err, errlen, label, all, "expands to more than %d hosts",
				      CI_MAX_NODES);
		{
			size_t w = (size_t)hl_digits(r->hi);
			if (w < (size_t)r->width)
				w = (size_t)r->width;
			if (w > *maxw)
				*maxw = w;
		}
		if (p == e)
			return 0;
		p++;    /* ',' */
	}
bad:
	return hl_err(err, errlen, label, all,
		      "'[%s]': expected numbers or ranges like 01-04 separated by ','",
		      quote(&q, inside));
}

/* Parses the pattern [p, end), with no top-level comma inside. */
static int hl_parse_expr(const char *label, const char *all, const char *p, const char *end,
			 struct hl_expr *x, char *err, size_t errlen)
{
	const char *lit = p;
	int r;

	memset(x, 0, sizeof(*x));
	if (p == end) {
		return hl_err(err, errlen, label, all,
			      p == all && !*end ? "empty host list" : "empty host name");
	}
	x->count = 1;
	while (p < end) {
		if (*p == '[') {
			const char *close = p + 1;
			struct hl_group *ng;
			unsigned long cnt;
			size_t maxw;

			while (close < end && *close != ']' && *close != '[')
				close++;
			if (close == end) {
				hl_expr_free(x);
				return hl_err(err, errlen, label, all, "unclosed '['");
			}
			if (*close == '[') {
				hl_expr_free(x);
				return hl_err(err, errlen, label, all, "'[' inside '[...]'");
			}
			ng = realloc(x->g, (size_t)(x->ng + 1) * sizeof(*x->g));
			if (!ng) {
				hl_expr_free(x);
				return -ENOMEM;
			}
			x->g = ng;
			memset(&x->g[x->ng], 0, sizeof(x->g[x->ng]));
			x->g[x->ng].lit = lit;
			x->g[x->ng].litlen = (size_t)(p - lit);
			x->ng++;
			r = hl_parse_group(label, all, p + 1, close, &x->g[x->ng - 1], &cnt, &maxw,
					   err, errlen);
			if (r < 0) {
				hl_expr_free(x);
				return r;
			}
			x->maxlen += (size_t)(p - lit) + maxw;
			/* cnt and x->count are both <= CI_MAX_NODES: no overflow */
			x->count *= cnt;
			if (x->count > CI_MAX_NODES) {
				hl_expr_free(x);
				return hl_err(err, errlen, label, all, "expands to more than %d hosts",
					      CI_MAX_NODES);
			}
			p = close + 1;
			lit = p;
		} else if (*p == ']') {
			hl_expr_free(x);
			return hl_err(err, errlen, label, all, "']' without '['");
		} else if (!hl_lit_ok(*p)) {
			struct quoted q;
			char ch[2] = { *p, '\0' };
			hl_expr_free(x);
			return hl_err(err, errlen, label, all, "unexpected character '%s'",
				      quote(&q, ch));
		} else {
			p++;
		}
	}
	x->tail = lit;
	x->taillen = (size_t)(end - lit);
	x->maxlen += x->taillen;
	if (x->maxlen > HOST_MAX) {
		hl_expr_free(x);
		return hl_err(err, errlen, label, all, "a host name longer than %d characters",
			      HOST_MAX);
	}
	return 0;
}

/* The end of the pattern starting at p: the next comma outside brackets. */
static const char *hl_expr_end(const char *p)
{
	bool in = false;

	for (; *p; p++) {
		if (*p == '[')
			in = true;
		else if (*p == ']')
			in = false;
		else if (*p == ',' && !in)
			break;
	}
	return p;
}

/* Writes every name of x into out[0..count), last bracket fastest: an
 * odometer over (range, offset) per group. */
static int hl_expand(const struct hl_expr *x, char **out)
{
	int *ri = calloc((size_t)x->ng + 1, sizeof(int));
	unsigned long *off = calloc((size_t)x->ng + 1, sizeof(unsigned long));
	unsigned long k;

	if (!ri || !off) {
		free(ri);
		free(off);
		return -ENOMEM;
	}
	for (k = 0; k < x->count; k++) {
		char *s = malloc(x->maxlen + 1), *o = s;
		int g;

		if (!s) {
			free(ri);
			free(off);
			return -ENOMEM;
		}
		for (g = 0; g < x->ng; g++) {
			const struct hl_range *r = &x->g[g].r[ri[g]];
			memcpy(o, x->g[g].lit, x->g[g].litlen);
			o += x->g[g].litlen;
			o += sprintf(o, "%0*lu", r->width, r->lo + off[g]);
		}
		memcpy(o, x->tail, x->taillen);
		o[x->taillen] = '\0';
		out[k] = s;
		for (g = x->ng - 1; g >= 0; g--) {
			const struct hl_range *r = &x->g[g].r[ri[g]];
			if (r->lo + ++off[g] <= r->hi)
				break;
			off[g] = 0;
			if (++ri[g] < x->g[g].nr)
				break;
			ri[g] = 0;
		}
	}
	free(ri);
	free(off);
	return 0;
}

static int hostlist(const char *label, const char *s, char ***hosts, int *n, char *err,
		    size_t errlen)
{
	unsigned long total = 0;
	struct hl_expr x;
	const char *p, *end;
	char **v;
	int r, k = 0;

	*hosts = NULL;
	*n = 0;
	/* First pass: syntax and size, so nothing is allocated for an absurd
	 * list; the second expands. */
	for (p = s;; p = end + 1) {
		end = hl_expr_end(p);
		r = hl_parse_expr(label, s, p, end, &x, err, errlen);
		if (r < 0)
			goto failed;
		total += x.count;
		hl_expr_free(&x);
		if (total > CI_MAX_NODES)
			return hl_err(err, errlen, label, s, "expands to more than %d hosts",
				      CI_MAX_NODES);
		if (!*end)
			break;
	}
	v = calloc(total, sizeof(*v));
	if (!v) {
		r = -ENOMEM;
		goto failed;
	}
	for (p = s;; p = end + 1) {
		end = hl_expr_end(p);
		r = hl_parse_expr(label, s, p, end, &x, err, errlen);
		if (r == 0) {
			r = hl_expand(&x, v + k);
			k += (int)x.count;
		}
		hl_expr_free(&x);
		if (r < 0) {
			strv_free(v, (int)total);
			goto failed;
		}
		if (!*end)
			break;
	}
	*hosts = v;
	*n = (int)total;
	return 0;
failed:
	if (r == -ENOMEM && err && errlen)
		snprintf(err, errlen, "out of memory");
	return r;
}

int ci_parse_hostlist(const char *s, char ***hosts, int *n, char *err, size_t errlen)
{
	return hostlist("hostlist", s ? s : "", hosts, n, err, errlen);
}

/* ---- JSON (Determined) ---- */

static const char *json_kind(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "unknown";
}

/* An integer member in [min, max]; absent or null leaves out unset (Go
 * writes nil values as null). */
static int json_num(struct ctx *c, json_t *obj, const char *file, const char *key, long min,
		    long max, struct num *out)
{
	json_t *j = json_object_get(obj, key);
	json_int_t v;

	if (!j || json_is_null(j))
		return 0;
	if (!json_is_integer(j))
		return fail(c, "%s: %s must be an integer, got %s", file, key, json_kind(j));
	v = json_integer_value(j);
	if (v < min || v > max)
		return fail(c, "%s: %s %lld is out of range: expected %ld..%ld", file, key,
			    (long long)v, min, max);
	out->set = true;
	out->v = (long)v;
	name_it(out->what, "%s %s %lld", file, key, (long long)v);
	return 0;
}

/* An array member, checked for kind and size; *arr NULL when absent/null. */
static int json_list(struct ctx *c, json_t *obj, const char *file, const char *key, int max,
		     json_t **arr)
{
	json_t *j = json_object_get(obj, key);

	*arr = NULL;
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_array(j))
		return fail(c, "%s: %s must be a list, got %s", file, key, json_kind(j));
	/* [] says nothing about the job: the same as absent */
	if (json_array_size(j) == 0)
		return 0;
	if (json_array_size(j) > (size_t)max)
		return fail(c, "%s: %s has %zu entries: at most %d", file, key,
			    json_array_size(j), max);
	*arr = j;
	return 0;
}

/* A list of integers in [min, max] as decimal strings (GPU ids) or ints. */
static int json_int_list(struct ctx *c, json_t *arr, const char *what, long min, long max,
			 char ***strs, int **ints)
{
	size_t n = json_array_size(arr), i;
	char **s = NULL;
	int *v = NULL;

	if (strs && !(s = calloc(n + 1, sizeof(*s))))
		return oom(c);
	if (ints && !(v = calloc(n + 1, sizeof(*v)))) {
		free(s);
		return oom(c);
	}
	for (i = 0; i < n; i++) {
		json_t *e = json_array_get(arr, i);
		json_int_t x;

		if (!json_is_integer(e)) {
			fail(c, "%s: entry %zu must be an integer, got %s", what, i, json_kind(e));
			goto bad;
		}
		x = json_integer_value(e);
		if (x < min || x > max) {
			fail(c, "%s: entry %zu (%lld) is out of range: expected %ld..%ld", what, i,
			     (long long)x, min, max);
			goto bad;
		}
		if (v)
			v[i] = (int)x;
		if (s && asprintf(&s[i], "%lld", (long long)x) < 0) {
			s[i] = NULL;
			strv_free(s, (int)i);
			free(v);
			return oom(c);
		}
	}
	if (strs)
		*strs = s;
	if (ints)
		*ints = v;
	return 0;
bad:
	strv_free(s, (int)n);
	free(v);
	return -EINVAL;
}

/* jansson 2.14 reports most allocation failures with no position and no
 * text rather than json_error_out_of_memory; a syntax error always has a
 * line. */
static bool json_oom(const json_error_t *je)
{
	return json_error_code(je) == json_error_out_of_memory || je->line < 0;
}

/* Reads and parses dir/name; *root NULL when the file is absent. */
static int json_file(struct ctx *c, const char *dir, const char *name, json_t **root)
{
	json_error_t je;
	char *path, *text;
	int e;

	*root = NULL;
	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return oom(c);
	errno = 0;
	text = c->env->read_file(c->env->ctx, path);
	if (!text) {
		e = errno;
		if (e == ENOENT) {
			free(path);
			return 0;
		}
		if (e == ENOMEM) {
			free(path);
			return oom(c);
		}
		if (e == EFBIG)
			fail(c, "%s: cannot read: larger than %d bytes", path, CI_MAX_FILE_SIZE);
		else if (e == EINVAL)
			fail(c, "%s: cannot read: not a regular file", path);
		else
			fail(c, "%s: cannot read: %s", path, strerror(e ? e : EIO));
		free(path);
		return -EINVAL;
	}
	*root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!*root && json_oom(&je)) {
		free(path);
		return oom(c);
	}
	if (!*root) {
		fail(c, "%s: invalid JSON at line %d column %d: %s", path, je.line, je.column,
		     je.text);
		free(path);
		return -EINVAL;
	}
	if (!json_is_object(*root)) {
		fail(c, "%s: expected a JSON object, got %s", path, json_kind(*root));
		free(path);
		json_decref(*root);
		*root = NULL;
		return -EINVAL;
	}
	free(path);
	return 0;
}

static int load_rendezvous(struct ctx *c, struct source *d, const char *dir)
{
	static const char file[] = "rendezvous.json";
	json_t *root, *addrs, *counts;
	int r;

	r = json_file(c, dir, file, &root);
	if (r < 0 || !root)
		return r;
	r = json_num(c, root, file, "container_rank", 0, CI_MAX_NODES - 1, &d->node_rank);
	if (r == 0)
		r = json_list(c, root, file, "container_addrs", CI_MAX_NODES, &addrs);
	if (r == 0 && addrs) {
		size_t n = json_array_size(addrs);
		d->addrs.v = calloc(n, sizeof(char *));
		if (!d->addrs.v)
			r = oom(c);
		for (size_t i = 0; r == 0 && i < n; i++) {
			json_t *e = json_array_get(addrs, i);
			struct quoted q;
			if (!json_is_string(e))
				r = fail(c, "%s: container_addrs entry %zu must be a string, got %s",
					 file, i, json_kind(e));
			else if (!host_ok(json_string_value(e), json_string_length(e)))
				r = fail(c, "%s: container_addrs entry %zu '%s' is not a host name "
					 "or address", file, i, quote(&q, json_string_value(e)));
			else if (!(d->addrs.v[i] = strdup(json_string_value(e))))
				r = oom(c);
			else
				d->addrs.n++;
		}
		d->addrs.set = true;
		name_it(d->addrs.what, "%s container_addrs", file);
	}
	if (r == 0)
		r = json_list(c, root, file, "container_slot_counts", CI_MAX_NODES, &counts);
	if (r == 0 && counts) {
		char what[WHAT_MAX];
		name_it(what, "%s container_slot_counts", file);
		r = json_int_list(c, counts, what, 1, CI_MAX_SLOTS, NULL, &d->slots.v);
		if (r == 0) {
			d->slots.set = d->slots.per_node = true;
			d->slots.n = (int)json_array_size(counts);
			memcpy(d->slots.what, what, sizeof(what));
		}
	}
	json_decref(root);
	return r;
}

static int load_cluster_json(struct ctx *c, struct source *d, const char *dir)
{
	static const char file[] = "cluster.json";
	json_t *root, *j;
	int r;

	r = json_file(c, dir, file, &root);
	if (r < 0 || !root)
		return r;
	j = json_object_get(root, "slot_ids");
	if (j && !json_is_null(j)) {
		name_it(d->gpus.what, "%s slot_ids", file);
		if (!json_is_array(j))
			r = fail(c, "%s: slot_ids must be a list of integers, got %s", file,
				 json_kind(j));
		else if (json_array_size(j) > CI_MAX_SLOTS)
			r = fail(c, "%s: slot_ids has %zu entries: at most %d", file,
				 json_array_size(j), CI_MAX_SLOTS);
		else
			r = json_int_list(c, j, d->gpus.what, 0, INT32_MAX, &d->gpus.v, NULL);
		if (r == 0) {
			d->gpus.set = true;
			d->gpus.n = (int)json_array_size(j);
			r = check_unique(c, &d->gpus);
		}
	}
	json_decref(root);
	return r;
}

/* DET_SLOT_IDS: a JSON list of integers ("[0,1]", "[0, 1]"). */
static int load_det_slot_ids(struct ctx *c, struct strlist *out, const char *s)
{
	struct quoted q;
	json_error_t je;
	json_t *j;
	int r;

	name_it(out->what, "DET_SLOT_IDS '%s'", quote(&q, s));
	j = json_loads(s, JSON_DECODE_ANY, &je);
	if (!j && json_oom(&je))
		return oom(c);
	if (!j || !json_is_array(j) || json_array_size(j) > CI_MAX_SLOTS) {
		json_decref(j);
		return fail(c, "%s: expected a JSON list of integers (at most %d)", out->what,
			    CI_MAX_SLOTS);
	}
	r = json_int_list(c, j, out->what, 0, INT32_MAX, &out->v, NULL);
	if (r == 0) {
		out->set = true;
		out->n = (int)json_array_size(j);
		r = check_unique(c, out);
	}
	json_decref(j);
	return r;
}

/* ---- the sources ---- */

static int load_flags(struct ctx *c, struct source *f, const struct ci_flags *fl)
{
	int r;

	if (!fl)
		return 0;
	if ((r = parse_num(c, &f->nnodes, "--nnodes", fl->nnodes, 1, CI_MAX_NODES)) < 0 ||
	    (r = parse_num(c, &f->node_rank, "--node-rank", fl->node_rank, 0, CI_MAX_NODES - 1)) < 0 ||
	    (r = parse_addrs(c, &f->addrs, "--addrs", fl->addrs)) < 0 ||
	    (r = parse_slots(c, &f->slots, "--slots", fl->slots)) < 0 ||
	    (r = parse_num(c, &f->port, "--master-port", fl->master_port, 1, 65535)) < 0 ||
	    (r = parse_iface(c, &f->iface, "--iface", fl->iface)) < 0)
		return r;
	return 0;
}

static int load_determined(struct ctx *c, struct source *d)
{
	const char *dir = get(c, "SLOTRUN_DET_INFO_DIR");
	const char *s;
	struct strlist env_ids = { 0 };
	int r;

	if (!dir)
		dir = CI_DEFAULT_DET_INFO_DIR;
	else if (!*dir)
		return fail(c, "SLOTRUN_DET_INFO_DIR '': expected a directory (default %s)",
			    CI_DEFAULT_DET_INFO_DIR);
	if ((r = load_rendezvous(c, d, dir)) < 0 || (r = load_cluster_json(c, d, dir)) < 0)
		return r;
	if ((s = get(c, "DET_SLOT_IDS"))) {
		r = load_det_slot_ids(c, &env_ids, s);
		if (r < 0) {
			strv_free(env_ids.v, env_ids.n);
			return r;
		}
		/* DET_SLOT_IDS is the container's own view: it beats cluster.json */
		strv_free(d->gpus.v, d->gpus.n);
		d->gpus = env_ids;
	}
	s = get(c, "DET_INTER_NODE_NETWORK_INTERFACE");
	/* Determined exports it empty when no interface is configured */
	if (s && *s && (r = parse_iface(c, &d->iface, "DET_INTER_NODE_NETWORK_INTERFACE", s)) < 0)
		return r;
	return parse_num(c, &d->port, "C10D_PORT", get(c, "C10D_PORT"), 1, 65535);
}

static int load_slurm(struct ctx *c, struct source *s)
{
	const char *list = get(c, "SLURM_JOB_NODELIST");
	const char *id = get(c, "SLURM_NODEID");
	int r;

	/* Only a Slurm job or step sets these two; other SLURM_* variables
	 * can leak from an outer shell and must not make Slurm a source. */
	if (!list && !id)
		return 0;
	if (list) {
		struct quoted q;
		r = hostlist("SLURM_JOB_NODELIST", list, &s->addrs.v, &s->addrs.n, c->err,
			     c->errlen);
		if (r < 0)
			return r;
		s->addrs.set = true;
		name_it(s->addrs.what, "SLURM_JOB_NODELIST '%s'", quote(&q, list));
	}
	if ((r = parse_num(c, &s->nnodes, "SLURM_NNODES", get(c, "SLURM_NNODES"), 1,
			   CI_MAX_NODES)) < 0 ||
	    (r = parse_num(c, &s->node_rank, "SLURM_NODEID", id, 0, CI_MAX_NODES - 1)) < 0)
		return r;
	r = parse_slurm_gpus(c, &s->gpus, "SLURM_STEP_GPUS", get(c, "SLURM_STEP_GPUS"));
	if (r == 0) {
		/* SLURM_JOB_GPUS is checked too, but the step's list wins */
		struct strlist job = { 0 };
		r = parse_slurm_gpus(c, &job, "SLURM_JOB_GPUS", get(c, "SLURM_JOB_GPUS"));
		if (r == 0 && !s->gpus.set)
			s->gpus = job;
		else
			strv_free(job.v, job.n);
	}
	return r;
}

static int load_env(struct ctx *c, struct source *e)
{
	int r;

	if ((r = parse_num(c, &e->nnodes, "SLOTRUN_NNODES", get(c, "SLOTRUN_NNODES"), 1,
			   CI_MAX_NODES)) < 0 ||
	    (r = parse_num(c, &e->node_rank, "SLOTRUN_NODE_RANK", get(c, "SLOTRUN_NODE_RANK"), 0,
			   CI_MAX_NODES - 1)) < 0 ||
	    (r = parse_addrs(c, &e->addrs, "SLOTRUN_ADDRS", get(c, "SLOTRUN_ADDRS"))) < 0 ||
	    (r = parse_slots(c, &e->slots, "SLOTRUN_SLOTS", get(c, "SLOTRUN_SLOTS"))) < 0 ||
	    (r = parse_num(c, &e->port, "SLOTRUN_MASTER_PORT", get(c, "SLOTRUN_MASTER_PORT"), 1,
			   65535)) < 0 ||
	    (r = parse_iface(c, &e->iface, "SLOTRUN_IFACE", get(c, "SLOTRUN_IFACE"))) < 0 ||
	    (r = parse_cuda_visible(c, &e->gpus, get(c, "CUDA_VISIBLE_DEVICES"))) < 0)
		return r;
	return 0;
}

/* The node count a source implies, and its own agreement: explicit count,
 * address list and per-node slot list name the same number, and its node
 * rank is inside it. */
static int settle(struct ctx *c, struct source *s)
{
	if (s->nnodes.set)
		s->nn = s->nnodes;
	if (s->addrs.set) {
		if (s->nn.set && s->nn.v != s->addrs.n)
			return fail(c, "%s (%d addresses) disagrees with %s (%ld nodes)",
				    s->addrs.what, s->addrs.n, s->nn.what, s->nn.v);
		if (!s->nn.set) {
			s->nn.set = true;
			s->nn.v = s->addrs.n;
			memcpy(s->nn.what, s->addrs.what, WHAT_MAX);
		}
	}
	if (s->slots.set && s->slots.per_node) {
		if (s->nn.set && s->nn.v != s->slots.n)
			return fail(c, "%s has %d entries, but %s gives %ld nodes", s->slots.what,
				    s->slots.n, s->nn.what, s->nn.v);
		if (!s->nn.set) {
			s->nn.set = true;
			s->nn.v = s->slots.n;
			memcpy(s->nn.what, s->slots.what, WHAT_MAX);
		}
	}
	if (s->node_rank.set && s->nn.set && s->node_rank.v >= s->nn.v)
		return fail(c, "%s is out of range: %s names %ld nodes (0..%ld)", s->node_rank.what,
			    s->nn.what, s->nn.v, s->nn.v - 1);
	return 0;
}

/* ---- putting it together ---- */

enum { NSRC = 4 };

static int resolve(struct ctx *c, struct source *src, int visible_gpus, struct cluster_info *out)
{
	struct source *nn = NULL, *rk = NULL, *ad = NULL, *sl = NULL, *pt = NULL, *ifc = NULL,
		*gp = NULL;
	long nnodes;
	const char *nn_what;
	int i, this_slots;

	for (i = NSRC - 1; i >= 0; i--) {    /* lowest first: the last set wins */
		struct source *s = &src[i];
		nn = s->nn.set ? s : nn;
		rk = s->node_rank.set ? s : rk;
		ad = s->addrs.set ? s : ad;
		sl = s->slots.set ? s : sl;
		pt = s->port.set ? s : pt;
		ifc = s->iface.set ? s : ifc;
		gp = s->gpus.set ? s : gp;
	}

	nnodes = nn ? nn->nn.v : 1;
	nn_what = nn ? nn->nn.what : "the default";
	out->src_nnodes = nn ? nn->src : CI_SRC_DEFAULT;

	if (ad && ad->addrs.n != nnodes)
		return fail(c, "%s (%d addresses) disagrees with %s (%ld nodes)", ad->addrs.what,
			    ad->addrs.n, nn_what, nnodes);
	if (!ad && nnodes > 1)
		return fail(c, "%s gives %ld nodes but no source names their addresses: pass "
			    "--addrs host0,host1,... (chief first) or set SLOTRUN_ADDRS",
			    nn_what, nnodes);
	if (rk && rk->node_rank.v >= nnodes)
		return fail(c, "%s is out of range: %s names %ld nodes (0..%ld)",
			    rk->node_rank.what, nn_what, nnodes, nnodes - 1);
	if (!rk && nnodes > 1)
		return fail(c, "%s gives %ld nodes but no source names this node's rank: pass "
			    "--node-rank or set SLOTRUN_NODE_RANK", nn_what, nnodes);
	out->nnodes = (int)nnodes;
	out->node_rank = rk ? (int)rk->node_rank.v : 0;
	out->src_node_rank = rk ? rk->src : CI_SRC_DEFAULT;
	out->src_addrs = ad ? ad->src : CI_SRC_DEFAULT;

	if (gp) {
		out->src_gpus = gp->src;
		out->ngpus = gp->gpus.n;
		out->gpus_none = gp->gpus.n == 0;
	} else {
		out->src_gpus = CI_SRC_DEFAULT;
	}

	if (sl && sl->slots.per_node && sl->slots.n != nnodes)
		return fail(c, "%s has %d entries, but %s gives %ld nodes", sl->slots.what,
			    sl->slots.n, nn_what, nnodes);
	if (sl) {
		this_slots = sl->slots.v[sl->slots.per_node ? out->node_rank : 0];
		if (gp && gp->gpus.n > 0 && gp->gpus.n != this_slots)
			return fail(c, "%s gives this node %d slots, but %s names %d GPUs",
				    sl->slots.what, this_slots, gp->gpus.what, gp->gpus.n);
		out->src_slots = sl->src;
	} else if (gp && gp->gpus.n > 0) {
		this_slots = gp->gpus.n;
		out->src_slots = gp->src;
	} else {
		/* gpus_none: the source hid the GPUs, so the topology's count
		 * would be wrong */
		this_slots = visible_gpus > 0 && !out->gpus_none ? visible_gpus : 1;
		if (this_slots > CI_MAX_SLOTS)
			this_slots = CI_MAX_SLOTS;
		out->src_slots = CI_SRC_DEFAULT;
	}
	out->slots = this_slots;

	out->master_port = pt ? (int)pt->port.v : CI_DEFAULT_MASTER_PORT;
	out->src_master_port = pt ? pt->src : CI_SRC_DEFAULT;
	out->src_iface = ifc ? ifc->src : CI_SRC_DEFAULT;

	/* Everything is checked: allocate and move.  Only ENOMEM can fail now. */
	out->slot_counts = calloc((size_t)nnodes, sizeof(int));
	if (!out->slot_counts)
		return oom(c);
	for (i = 0; i < nnodes; i++) {
		int n = sl && sl->slots.per_node ? sl->slots.v[i] : this_slots;
		if (i < out->node_rank)
			out->rank_base += n;
		out->world_size += n;
		out->slot_counts[i] = n;
	}
	if (ad) {
		out->addrs = ad->addrs.v;
		ad->addrs.v = NULL;
		ad->addrs.n = 0;
	} else {
		out->addrs = calloc(1, sizeof(char *));
		if (!out->addrs || !(out->addrs[0] = strdup("127.0.0.1")))
			return oom(c);
	}
	if (gp && gp->gpus.n > 0) {
		out->gpus = gp->gpus.v;
		gp->gpus.v = NULL;
		gp->gpus.n = 0;
	}
	if (ifc) {
		out->iface = ifc->iface.v;
		ifc->iface.v = NULL;
	}
	return 0;
}

int ci_load(const struct ci_flags *flags, const struct ci_env *env, int visible_gpus,
	    struct cluster_info *ci, char *err, size_t errlen)
{
	struct ctx c = { .env = env, .err = err, .errlen = errlen };
	struct source *src;
	struct cluster_info out = { 0 };
	int r, i;

	memset(ci, 0, sizeof(*ci));
	if (err && errlen)
		err[0] = '\0';
	/* ~10 KiB of message buffers: keep them off the stack */
	src = calloc(NSRC, sizeof(*src));
	if (!src)
		return oom(&c);
	/* in order of precedence */
	src[0].src = CI_SRC_FLAG;
	src[1].src = CI_SRC_DETERMINED;
	src[2].src = CI_SRC_SLURM;
	src[3].src = CI_SRC_SLOTRUN_ENV;

	r = load_flags(&c, &src[0], flags);
	if (r == 0)
		r = load_determined(&c, &src[1]);
	if (r == 0)
		r = load_slurm(&c, &src[2]);
	if (r == 0)
		r = load_env(&c, &src[3]);
	for (i = 0; r == 0 && i < NSRC; i++)
		r = settle(&c, &src[i]);
	if (r == 0)
		r = resolve(&c, src, visible_gpus, &out);
	for (i = 0; i < NSRC; i++)
		source_free(&src[i]);
	free(src);
	if (r < 0) {
		ci_free(&out);
		return r;
	}
	*ci = out;
	return 0;
}

void ci_free(struct cluster_info *ci)
{
	if (!ci)
		return;
	strv_free(ci->addrs, ci->nnodes);
	strv_free(ci->gpus, ci->ngpus);
	free(ci->slot_counts);
	free(ci->iface);
	memset(ci, 0, sizeof(*ci));
}

const char *ci_source_name(enum ci_source s)
{
	switch (s) {
	case CI_SRC_DEFAULT: return "default";
	case CI_SRC_SLOTRUN_ENV: return "env";
	case CI_SRC_SLURM: return "slurm";
	case CI_SRC_DETERMINED: return "determined";
	case CI_SRC_FLAG: return "flag";
	}
	return "unknown";
}

/* ---- the real world ---- */

static const char *process_getenv(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

static char *process_read_file(void *ctx, const char *path)
{
	(void)ctx;
	return io_read_file(path, CI_MAX_FILE_SIZE);
}

const struct ci_env ci_process_env = {
	.getenv = process_getenv,
	.read_file = process_read_file,
};
