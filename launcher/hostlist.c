// SPDX-License-Identifier: MIT
/* Slurm hostlists: see hostlist.h.  Two passes over the text, the first
 * checking syntax and counting, the second expanding, so that an absurd
 * list is refused before anything is allocated for it. */
#include "hostlist.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ci_util.h"
#include "cluster_info.h"

#define HL_DIGITS_MAX 9     /* digits of a hostlist number: fits any long */

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
	struct ci_quoted q;
	char why[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (err && errlen)
		snprintf(err, errlen, "%s '%s': %s", label, ci_quote(&q, all), why);
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
	struct ci_quoted q;
	const char *p = b;
	int cap = 1;
	char inside[CI_QUOTE_MAX + 1];

	*count = 0;
	*maxw = 0;
	snprintf(inside, sizeof(inside), "%.*s", (int)(e - b) > CI_QUOTE_MAX ? CI_QUOTE_MAX : (int)(e - b), b);
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
					      ci_quote(&q, inside));
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
		      ci_quote(&q, inside));
}

/* The bracket at p, after the literal [lit, p): appends its group to x
 * and sets *next past the ']'.  Returns 0 or a negative errno; x is the
 * caller's to free either way. */
static int hl_add_group(const char *label, const char *all, const char *lit, const char *p,
			const char *end, struct hl_expr *x, const char **next, char *err,
			size_t errlen)
{
	const char *close = p + 1;
	struct hl_group *ng;
	unsigned long cnt;
	size_t maxw;
	int r;

	while (close < end && *close != ']' && *close != '[')
		close++;
	if (close == end)
		return hl_err(err, errlen, label, all, "unclosed '['");
	if (*close == '[')
		return hl_err(err, errlen, label, all, "'[' inside '[...]'");
	ng = realloc(x->g, (size_t)(x->ng + 1) * sizeof(*x->g));
	if (!ng)
		return -ENOMEM;
	x->g = ng;
	memset(&x->g[x->ng], 0, sizeof(x->g[x->ng]));
	x->g[x->ng].lit = lit;
	x->g[x->ng].litlen = (size_t)(p - lit);
	x->ng++;
	r = hl_parse_group(label, all, p + 1, close, &x->g[x->ng - 1], &cnt, &maxw, err, errlen);
	if (r < 0)
		return r;
	x->maxlen += (size_t)(p - lit) + maxw;
	/* cnt and x->count are both <= CI_MAX_NODES: no overflow */
	x->count *= cnt;
	if (x->count > CI_MAX_NODES)
		return hl_err(err, errlen, label, all, "expands to more than %d hosts", CI_MAX_NODES);
	*next = close + 1;
	return 0;
}

/* Parses the pattern [p, end), with no top-level comma inside. */
static int hl_parse_expr(const char *label, const char *all, const char *p, const char *end,
			 struct hl_expr *x, char *err, size_t errlen)
{
	const char *lit = p;
	struct ci_quoted q;
	int r = 0;

	memset(x, 0, sizeof(*x));
	if (p == end) {
		return hl_err(err, errlen, label, all,
			      p == all && !*end ? "empty host list" : "empty host name");
	}
	x->count = 1;
	while (p < end && r == 0) {
		if (*p == '[') {
			r = hl_add_group(label, all, lit, p, end, x, &p, err, errlen);
			lit = p;
		} else if (*p == ']') {
			r = hl_err(err, errlen, label, all, "']' without '['");
		} else if (!hl_lit_ok(*p)) {
			char ch[2] = { *p, '\0' };
			r = hl_err(err, errlen, label, all, "unexpected character '%s'", ci_quote(&q, ch));
		} else {
			p++;
		}
	}
	if (r == 0) {
		x->tail = lit;
		x->taillen = (size_t)(end - lit);
		x->maxlen += x->taillen;
		if (x->maxlen > CI_HOST_MAX)
			r = hl_err(err, errlen, label, all, "a host name longer than %d characters",
				   CI_HOST_MAX);
	}
	if (r < 0)
		hl_expr_free(x);
	return r;
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

int hostlist_parse(const char *label, const char *s, char ***hosts, int *n, char *err,
		   size_t errlen)
{
	unsigned long total = 0;
	struct hl_expr x;
	const char *p, *end;
	char **v;
	int r, k = 0;

	*hosts = NULL;
	*n = 0;
	if (!s)
		s = "";
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
			ci_strv_free(v, (int)total);
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
