// SPDX-License-Identifier: MIT
/* Parsing helpers shared by the ClusterInfo sources: see ci_parse.h. */
#include "ci_parse.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "io.h"

/* ---- messages ---- */

int ci_fail(struct ci_ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int ci_oom(struct ci_ctx *c)
{
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "out of memory");
	return -ENOMEM;
}

void ci_name_it(char *what, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, CI_WHAT_MAX, fmt, ap);
	va_end(ap);
}

const char *ci_get(struct ci_ctx *c, const char *name)
{
	return c->env->getenv(c->env->ctx, name);
}

/* ---- values ---- */

/* io_parse_long, but a well-formed number outside [min, max] (a negative
 * one included) is -ERANGE, so messages can say "out of range". */
static int parse_long(const char *s, long min, long max, long *v)
{
	int r = io_parse_long(s, LONG_MIN, LONG_MAX, v);

	if (r == 0 && (*v < min || *v > max))
		return -ERANGE;
	return r;
}

int ci_parse_num(struct ci_ctx *c, struct ci_num *out, const char *name, const char *s,
		 long min, long max)
{
	struct ci_quoted q;
	long v;
	int r;

	if (!s)
		return 0;
	r = parse_long(s, min, max, &v);
	if (r == -ERANGE)
		return ci_fail(c, "%s '%s' is out of range: expected %ld..%ld", name, ci_quote(&q, s),
			       min, max);
	if (r < 0)
		return ci_fail(c, "%s '%s': expected an integer in %ld..%ld", name, ci_quote(&q, s),
			       min, max);
	out->set = true;
	out->v = out->lo = v;
	ci_name_it(out->what, "%s '%s'", name, ci_quote(&q, s));
	return 0;
}

bool ci_host_ok(const char *h, size_t len)
{
	if (len == 0 || len > CI_HOST_MAX || h[0] == '-')
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)h[i] <= 0x20 || (unsigned char)h[i] >= 0x7f || h[i] == '?')
			return false;
	return true;
}

/* Keeps a checked string value and the words that name it. */
static int keep_str(struct ci_ctx *c, struct ci_str *out, const char *name, const char *s)
{
	struct ci_quoted q;

	out->v = strdup(s);
	if (!out->v)
		return ci_oom(c);
	out->set = true;
	ci_name_it(out->what, "%s '%s'", name, ci_quote(&q, s));
	return 0;
}

int ci_parse_host(struct ci_ctx *c, struct ci_str *out, const char *name, const char *s)
{
	struct ci_quoted q;

	if (!s)
		return 0;
	if (!ci_host_ok(s, strlen(s)) || strchr(s, ','))
		return ci_fail(c, "%s '%s': expected the chief's host name or address (one: --addrs "
			       "takes the list)", name, ci_quote(&q, s));
	return keep_str(c, out, name, s);
}

int ci_parse_nnodes(struct ci_ctx *c, struct ci_num *out, const char *name, const char *s)
{
	struct ci_quoted q;
	const char *colon = s ? strchr(s, ':') : NULL;
	char lo[32];
	long a = 0, b = 0;
	bool ok;

	if (!colon)
		return ci_parse_num(c, out, name, s, 1, CI_MAX_NODES);
	ok = (size_t)(colon - s) < sizeof(lo);
	if (ok) {
		snprintf(lo, sizeof(lo), "%.*s", (int)(colon - s), s);
		ok = parse_long(lo, 1, CI_MAX_NODES, &a) == 0 &&
		     parse_long(colon + 1, 1, CI_MAX_NODES, &b) == 0;
	}
	if (!ok)
		return ci_fail(c, "%s '%s': expected a node count in 1..%d, or an elastic range MIN:MAX",
			       name, ci_quote(&q, s), CI_MAX_NODES);
	if (a > b)
		return ci_fail(c, "%s '%s': the elastic range's MIN is above its MAX: give MIN:MAX, "
			       "e.g. '%ld:%ld'", name, ci_quote(&q, s), b, a);
	out->set = true;
	out->v = b;
	out->lo = a;
	ci_name_it(out->what, "%s '%s'", name, ci_quote(&q, s));
	return 0;
}

/* What the kernel accepts as a new interface name (dev_valid_name). */
static bool iface_ok(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > CI_IFACE_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch <= 0x20 || ch == 0x7f || ch == '/' || ch == ':')
			return false;
	}
	return true;
}

int ci_parse_iface(struct ci_ctx *c, struct ci_str *out, const char *name, const char *s)
{
	struct ci_quoted q;

	if (!s)
		return 0;
	if (!iface_ok(s))
		return ci_fail(c, "%s '%s': expected a network interface name (1..%d characters, "
			       "no '/', ':' or whitespace)", name, ci_quote(&q, s), CI_IFACE_MAX);
	return keep_str(c, out, name, s);
}

/* ---- comma lists ---- */

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* Splits s at commas into trimmed copies.  Blanks around entries are
 * forgiven ("a, b" from a shell); empty entries are not. */
static int split(struct ci_ctx *c, const char *name, const char *s, int max, char ***out, int *n)
{
	struct ci_quoted q;
	int cnt = 1, i = 0;
	const char *p;
	char **v;

	for (p = s; *p; p++)
		cnt += *p == ',';
	if (cnt > max)
		return ci_fail(c, "%s '%s': more than %d entries", name, ci_quote(&q, s), max);
	v = calloc((size_t)cnt, sizeof(*v));
	if (!v)
		return ci_oom(c);
	for (p = s;; p++) {
		const char *end = strchr(p, ',');
		const char *b = p, *e = end ? end : p + strlen(p);
		while (b < e && blank(*b))
			b++;
		while (e > b && blank(e[-1]))
			e--;
		if (b == e) {
			ci_strv_free(v, i);
			return ci_fail(c, "%s '%s': entry %d is empty: expected a comma list", name,
				       ci_quote(&q, s), i);
		}
		v[i] = strndup(b, (size_t)(e - b));
		if (!v[i]) {
			ci_strv_free(v, i);
			return ci_oom(c);
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

int ci_parse_list(struct ci_ctx *c, struct ci_strlist *out, const char *name, const char *s,
		  int max, bool (*ok)(const char *), const char *complaint)
{
	struct ci_quoted q, q2;
	char **v;
	int n, r;

	r = split(c, name, s, max, &v, &n);
	if (r < 0)
		return r;
	for (int i = 0; i < n; i++) {
		if (!ok(v[i])) {
			ci_fail(c, "%s '%s': entry '%s'%s", name, ci_quote(&q, s), ci_quote(&q2, v[i]),
				complaint);
			ci_strv_free(v, n);
			return -EINVAL;
		}
	}
	out->set = true;
	out->v = v;
	out->n = n;
	ci_name_it(out->what, "%s '%s'", name, ci_quote(&q, s));
	return 0;
}

static bool addr_ok(const char *s)
{
	return ci_host_ok(s, strlen(s));
}

int ci_parse_addrs(struct ci_ctx *c, struct ci_strlist *out, const char *name, const char *s)
{
	struct ci_quoted q, q2;
	int r;

	if (!s)
		return 0;
	if (!strchr(s, '['))
		return ci_parse_list(c, out, name, s, CI_MAX_NODES, addr_ok,
				     " is not a host name or address");
	r = hostlist_parse(name, s, &out->v, &out->n, c->err, c->errlen);
	if (r == -ENOMEM)
		return ci_oom(c);
	if (r < 0)
		return r;
	for (int i = 0; i < out->n; i++)
		if (!addr_ok(out->v[i])) {
			ci_fail(c, "%s '%s': entry '%s' is not a host name or address", name,
				ci_quote(&q, s), ci_quote(&q2, out->v[i]));
			ci_strv_free(out->v, out->n);
			out->v = NULL;
			out->n = 0;
			return -EINVAL;
		}
	out->set = true;
	ci_name_it(out->what, "%s '%s'", name, ci_quote(&q, s));
	return 0;
}

int ci_parse_slots(struct ci_ctx *c, struct ci_slotspec *out, const char *name, const char *s)
{
	struct ci_quoted q, q2;
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
		ci_strv_free(v, n);
		return ci_oom(c);
	}
	for (int i = 0; i < n; i++) {
		r = parse_long(v[i], 1, CI_MAX_SLOTS, &x);
		if (r < 0) {
			ci_fail(c, "%s '%s': entry '%s' %s: expected a slot count in 1..%d%s", name,
				ci_quote(&q, s), ci_quote(&q2, v[i]),
				r == -ERANGE ? "is out of range" : "is not a number", CI_MAX_SLOTS,
				n > 1 ? " per node" : " (or a comma list, one per node)");
			ci_strv_free(v, n);
			free(out->v);
			out->v = NULL;
			return -EINVAL;
		}
		out->v[i] = (int)x;
	}
	ci_strv_free(v, n);
	out->set = true;
	out->per_node = n > 1;
	out->n = n;
	ci_name_it(out->what, "%s '%s'", name, ci_quote(&q, s));
	return 0;
}

int ci_parse_nproc(struct ci_ctx *c, struct ci_slotspec *out, const char *name, const char *s)
{
	struct ci_quoted q;

	if (s && (!strcmp(s, "auto") || !strcmp(s, "gpu")))
		return 0;
	if (s && !strcmp(s, "cpu"))
		return ci_fail(c, "%s '%s': slotrun does not start one worker per CPU: give a "
			       "count (CPU workers share the cores)", name, ci_quote(&q, s));
	return ci_parse_slots(c, out, name, s);
}

int ci_check_unique(struct ci_ctx *c, const struct ci_strlist *g)
{
	for (int i = 0; i < g->n; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(g->v[i], g->v[j])) {
				struct ci_quoted q;
				return ci_fail(c, "%s: GPU '%s' is listed twice", g->what,
					       ci_quote(&q, g->v[i]));
			}
	return 0;
}

bool ci_gpu_index_ok(const char *s)
{
	long x;

	return io_parse_long(s, 0, INT32_MAX, &x) == 0;
}
