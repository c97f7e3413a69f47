// SPDX-License-Identifier: MIT
/* ClusterInfo: the sources, their order and the rules are in cluster_info.h.
 *
 * Shape: each source (ci_<name>.c, see ci_source.h) is parsed on its own
 * into a struct ci_found (values plus the words that name them in
 * messages); here each is checked for agreement within itself, then every
 * field takes the first source that has it, and the chosen values are
 * checked against each other.  Only at the very end is anything moved into
 * the caller's struct, so an error leaves nothing behind. */
#include "cluster_info.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ci_source.h"
#include "io.h"

/* The sources in order of precedence: for each field the first that sets
 * it wins.  The default is what remains when none does. */
static const struct ci_source_def sources[] = {
	{ CI_SRC_FLAG, "flag", ci_load_flags },
	{ CI_SRC_DETERMINED, "determined", ci_load_determined },
	{ CI_SRC_SLURM, "slurm", ci_load_slurm },
	{ CI_SRC_TORCHRUN, "torchrun", ci_load_torchrun },
	{ CI_SRC_INDEXED_JOB, "indexed-job", ci_load_indexed_job },
	{ CI_SRC_SLOTRUN_ENV, "env", ci_load_slotrun_env },
};

#define NSOURCES ((int)(sizeof(sources) / sizeof(sources[0])))

/* One source's findings, and the node count they imply. */
struct source {
	const struct ci_source_def *def;
	struct ci_found f;
	struct ci_num nn;
};

static void found_free(struct ci_found *f)
{
	ci_strv_free(f->addrs.v, f->addrs.n);
	ci_strv_free(f->gpus.v, f->gpus.n);
	free(f->slots.v);
	free(f->iface.v);
	free(f->chief.v);
}

/* An elastic range's address list names at most MAX nodes. */
static int too_many_addrs(struct ci_ctx *c, const struct ci_strlist *a, const struct ci_num *nn)
{
	return ci_fail(c, "%s (%d addresses) names more nodes than %s allows (at most %ld)", a->what, a->n,
		       nn->what, nn->v);
}

/* A per-node slot list in an elastic job cannot say whose count is whose. */
static int per_node_slots(struct ci_ctx *c, const struct ci_slotspec *sl, const struct ci_num *nn)
{
	return ci_fail(c, "%s gives one count per node, which needs a fixed node count, not %s: in an "
		       "elastic job each node gives its own count, e.g. --slots %d", sl->what, nn->what,
		       sl->v[0]);
}

/* The node count a source implies, and its own agreement: explicit count,
 * address list and per-node slot list name the same number, and its node
 * rank is inside it. */
static int settle(struct ci_ctx *c, struct source *s)
{
	if (s->f.nnodes.set)
		s->nn = s->f.nnodes;
	if (s->f.addrs.set) {
		if (s->nn.set && s->nn.lo < s->nn.v && s->f.addrs.n > s->nn.v)
			return too_many_addrs(c, &s->f.addrs, &s->nn);
		if (s->nn.set && s->nn.lo == s->nn.v && s->nn.v != s->f.addrs.n)
			return ci_fail(c, "%s (%d addresses) disagrees with %s (%ld nodes)",
				       s->f.addrs.what, s->f.addrs.n, s->nn.what, s->nn.v);
		if (!s->nn.set) {
			s->nn.set = true;
			s->nn.v = s->nn.lo = s->f.addrs.n;
			memcpy(s->nn.what, s->f.addrs.what, CI_WHAT_MAX);
		}
	}
	if (s->f.slots.set && s->f.slots.per_node) {
		if (s->nn.set && s->nn.lo < s->nn.v)
			return per_node_slots(c, &s->f.slots, &s->nn);
		if (s->nn.set && s->nn.v != s->f.slots.n)
			return ci_fail(c, "%s has %d entries, but %s gives %ld nodes", s->f.slots.what,
				       s->f.slots.n, s->nn.what, s->nn.v);
		if (!s->nn.set) {
			s->nn.set = true;
			s->nn.v = s->nn.lo = s->f.slots.n;
			memcpy(s->nn.what, s->f.slots.what, CI_WHAT_MAX);
		}
	}
	if (s->f.node_rank.set && s->nn.set && s->f.node_rank.v >= s->nn.v)
		return ci_fail(c, "%s is out of range: %s %s %ld nodes (0..%ld)", s->f.node_rank.what,
			       s->nn.what, s->nn.lo < s->nn.v ? "allows at most" : "names", s->nn.v,
			       s->nn.v - 1);
	if (s->f.chief.set && s->f.addrs.set && strcmp(s->f.chief.v, s->f.addrs.v[0]) != 0)
		return ci_fail(c, "%s disagrees with %s, whose first entry '%s' is the chief: give "
			       "one of them, or the same chief in both", s->f.chief.what, s->f.addrs.what,
			       s->f.addrs.v[0]);
	return 0;
}

/* ---- putting it together ---- */

/* The node rank: the first source that names one, passing over a rank
 * that counts only in a job of several nodes when there is one node. */
static struct source *rank_source(struct source *src, long nnodes)
{
	for (int i = 0; i < NSOURCES; i++)
		if (src[i].f.node_rank.set && !(src[i].f.rank_needs_nodes && nnodes == 1))
			return &src[i];
	return NULL;
}

/* The addresses: the list that won, with its first entry replaced by a
 * chief address from a source at least as high; else the chief alone and
 * CI_ADDR_UNKNOWN for the others; else the default.  Only ENOMEM fails. */
static int take_addrs(struct ci_ctx *c, struct source *ad, struct source *ch, long nnodes,
		      struct cluster_info *out)
{
	if (ad && ad->f.addrs.n < nnodes) { /* an elastic job's list: padded */
		char **v = realloc(ad->f.addrs.v, (size_t)nnodes * sizeof(char *));

		if (!v)
			return ci_oom(c);
		ad->f.addrs.v = v;
		for (; ad->f.addrs.n < nnodes; ad->f.addrs.n++)
			if (!(v[ad->f.addrs.n] = strdup(CI_ADDR_UNKNOWN)))
				return ci_oom(c);
	}
	if (ad) {
		out->addrs = ad->f.addrs.v;
		ad->f.addrs.v = NULL;
		ad->f.addrs.n = 0;
		if (ch) {
			free(out->addrs[0]);
			out->addrs[0] = ch->f.chief.v;
			ch->f.chief.v = NULL;
		}
		return 0;
	}
	out->addrs = calloc((size_t)nnodes, sizeof(char *));
	if (!out->addrs)
		return ci_oom(c);
	if (ch) {
		out->addrs[0] = ch->f.chief.v;
		ch->f.chief.v = NULL;
	} else if (!(out->addrs[0] = strdup("127.0.0.1"))) {
		return ci_oom(c);
	}
	for (long i = 1; i < nnodes; i++)
		if (!(out->addrs[i] = strdup(CI_ADDR_UNKNOWN)))
			return ci_oom(c);
	return 0;
}

/* For each field, the source that gives it (NULL: none does). */
struct winners {
	struct source *nn, *rk, *ad, *ch, *sl, *pt, *ifc, *gp;
};

static void pick(struct source *src, struct winners *w)
{
	*w = (struct winners){ 0 };
	for (int i = NSOURCES - 1; i >= 0; i--) {    /* lowest first: the last set wins */
		struct source *s = &src[i];
		w->nn = s->nn.set ? s : w->nn;
		w->ad = s->f.addrs.set ? s : w->ad;
		w->ch = s->f.chief.set ? s : w->ch;
		w->sl = s->f.slots.set ? s : w->sl;
		w->pt = s->f.port.set ? s : w->pt;
		w->ifc = s->f.iface.set ? s : w->ifc;
		w->gp = s->f.gpus.set ? s : w->gp;
	}
	if (w->ch && w->ad && w->ch > w->ad)    /* the table is in precedence order */
		w->ch = NULL;          /* a lower source's chief: the list wins */
}

/* No source names the rank: this node's place in the address list, whose
 * first entry is the chief's address that wins.  0 when found, 1 when it
 * cannot be looked for (no list, no way to look), or the lookup's error. */
static int find_self(struct ci_ctx *c, const struct winners *w, struct cluster_info *out)
{
	char **list;
	int rank, r;

	if (!w->ad || !c->env->self_rank)
		return 1;
	list = calloc((size_t)w->ad->f.addrs.n, sizeof(char *));
	if (!list)
		return ci_oom(c);
	memcpy(list, w->ad->f.addrs.v, (size_t)w->ad->f.addrs.n * sizeof(char *));
	if (w->ch)
		list[0] = w->ch->f.chief.v;
	r = c->env->self_rank(c->env->ctx, list, w->ad->f.addrs.n, w->ad->f.addrs.what, &rank, c->err,
			      c->errlen);
	free(list);
	if (r < 0)
		return r;
	out->node_rank = rank;
	out->src_node_rank = CI_SRC_SELF;
	return 0;
}

/* An elastic range: the chief's address is what counts, the rank a
 * source names is a preference (none is looked for), and a per-node slot
 * list cannot say whose count is whose. */
static int resolve_elastic(struct ci_ctx *c, struct source *src, struct winners *w,
			   struct cluster_info *out)
{
	long nnodes = w->nn->nn.v;
	const struct source *sl = w->sl;

	if (w->ad && w->ad->f.addrs.n > nnodes)
		return too_many_addrs(c, &w->ad->f.addrs, &w->nn->nn);
	if (!w->ad && !w->ch)
		return ci_fail(c, "%s is an elastic job, but no source names the chief's address: pass "
			       "--master-addr (or --addrs with the nodes that may be the chief, chief "
			       "first) or set SLOTRUN_MASTER_ADDR", w->nn->nn.what);
	if (sl && sl->f.slots.per_node)
		return per_node_slots(c, &sl->f.slots, &w->nn->nn);
	w->rk = rank_source(src, nnodes);
	if (w->rk && w->rk->f.node_rank.v >= nnodes)
		return ci_fail(c, "%s is out of range: %s allows at most %ld nodes (0..%ld)",
			       w->rk->f.node_rank.what, w->nn->nn.what, nnodes, nnodes - 1);
	out->nnodes = (int)nnodes;
	out->nnodes_min = (int)w->nn->nn.lo;
	out->rank_given = w->rk != NULL;
	out->node_rank = w->rk ? (int)w->rk->f.node_rank.v : 0;
	out->src_node_rank = w->rk ? w->rk->def->id : CI_SRC_DEFAULT;
	out->src_addrs = w->ad ? w->ad->def->id : w->ch->def->id;
	return 0;
}

/* The node count, the addresses' agreement with it, and this node's rank. */
static int resolve_nodes(struct ci_ctx *c, struct source *src, struct winners *w,
			 struct cluster_info *out)
{
	long nnodes = w->nn ? w->nn->nn.v : 1;
	const char *nn_what = w->nn ? w->nn->nn.what : "the default";

	out->src_nnodes = w->nn ? w->nn->def->id : CI_SRC_DEFAULT;
	if (w->nn && w->nn->nn.lo < nnodes)
		return resolve_elastic(c, src, w, out);
	out->nnodes_min = (int)nnodes;
	out->rank_given = true;
	if (w->ad && w->ad->f.addrs.n != nnodes)
		return ci_fail(c, "%s (%d addresses) disagrees with %s (%ld nodes)", w->ad->f.addrs.what,
			       w->ad->f.addrs.n, nn_what, nnodes);
	if (!w->ad && !w->ch && nnodes > 1)
		return ci_fail(c, "%s gives %ld nodes but no source names their addresses: pass "
			       "--addrs host0,host1,... (chief first) or set SLOTRUN_ADDRS, or name "
			       "the chief alone with --master-addr", nn_what, nnodes);
	w->rk = rank_source(src, nnodes);
	if (w->rk && w->rk->f.node_rank.v >= nnodes)
		return ci_fail(c, "%s is out of range: %s names %ld nodes (0..%ld)",
			       w->rk->f.node_rank.what, nn_what, nnodes, nnodes - 1);
	out->nnodes = (int)nnodes;
	out->node_rank = w->rk ? (int)w->rk->f.node_rank.v : 0;
	out->src_node_rank = w->rk ? w->rk->def->id : CI_SRC_DEFAULT;
	if (!w->rk && nnodes > 1) {
		int r = find_self(c, w, out);

		if (r <= 0)
			return r;
		return ci_fail(c, "%s gives %ld nodes but no source names this node's rank: pass "
			       "--node-rank or set SLOTRUN_NODE_RANK", nn_what, nnodes);
	}
	out->src_addrs = w->ad ? w->ad->def->id : w->ch ? w->ch->def->id : CI_SRC_DEFAULT;
	return 0;
}

/* The GPUs and this node's slot count, which must agree. */
static int resolve_slots(struct ci_ctx *c, const struct winners *w, int visible_gpus,
			 struct cluster_info *out)
{
	const struct source *sl = w->sl, *gp = w->gp;
	const char *nn_what = w->nn ? w->nn->nn.what : "the default";

	if (gp) {
		out->src_gpus = gp->def->id;
		out->ngpus = gp->f.gpus.n;
		out->gpus_none = gp->f.gpus.n == 0;
	} else {
		out->src_gpus = CI_SRC_DEFAULT;
	}
	if (sl && sl->f.slots.per_node && sl->f.slots.n != out->nnodes)
		return ci_fail(c, "%s has %d entries, but %s gives %d nodes", sl->f.slots.what,
			       sl->f.slots.n, nn_what, out->nnodes);
	if (sl) {
		out->slots = sl->f.slots.v[sl->f.slots.per_node ? out->node_rank : 0];
		if (gp && gp->f.gpus.n > 0 && gp->f.gpus.n != out->slots)
			return ci_fail(c, "%s gives this node %d slots, but %s names %d GPUs",
				       sl->f.slots.what, out->slots, gp->f.gpus.what, gp->f.gpus.n);
		out->src_slots = sl->def->id;
	} else if (gp && gp->f.gpus.n > 0) {
		out->slots = gp->f.gpus.n;
		out->src_slots = gp->def->id;
	} else {
		/* gpus_none: the source hid the GPUs, so the topology's count
		 * would be wrong */
		out->slots = visible_gpus > 0 && !out->gpus_none ? visible_gpus : 1;
		if (out->slots > CI_MAX_SLOTS)
			out->slots = CI_MAX_SLOTS;
		out->src_slots = CI_SRC_DEFAULT;
	}
	return 0;
}

/* Everything is checked: allocate and move.  Only ENOMEM can fail now. */
static int take(struct ci_ctx *c, const struct winners *w, struct cluster_info *out)
{
	const struct source *sl = w->sl;

	out->slot_counts = calloc((size_t)out->nnodes, sizeof(int));
	if (!out->slot_counts)
		return ci_oom(c);
	for (int i = 0; i < out->nnodes; i++) {
		int n = sl && sl->f.slots.per_node ? sl->f.slots.v[i] : out->slots;
		if (i < out->node_rank)
			out->rank_base += n;
		out->world_size += n;
		out->slot_counts[i] = n;
	}
	if (take_addrs(c, w->ad, w->ch, out->nnodes, out) < 0)
		return -ENOMEM;
	if (w->gp && w->gp->f.gpus.n > 0) {
		out->gpus = w->gp->f.gpus.v;
		w->gp->f.gpus.v = NULL;
		w->gp->f.gpus.n = 0;
	}
	if (w->ifc) {
		out->iface = w->ifc->f.iface.v;
		w->ifc->f.iface.v = NULL;
	}
	return 0;
}

static int resolve(struct ci_ctx *c, struct source *src, int visible_gpus, struct cluster_info *out)
{
	struct winners w;
	int r;

	pick(src, &w);
	r = resolve_nodes(c, src, &w, out);
	if (r == 0)
		r = resolve_slots(c, &w, visible_gpus, out);
	if (r < 0)
		return r;
	out->master_port = w.pt ? (int)w.pt->f.port.v : CI_DEFAULT_MASTER_PORT;
	out->src_master_port = w.pt ? w.pt->def->id : CI_SRC_DEFAULT;
	out->src_iface = w.ifc ? w.ifc->def->id : CI_SRC_DEFAULT;
	return take(c, &w, out);
}

int ci_load(const struct ci_flags *flags, const struct ci_env *env, int visible_gpus,
	    struct cluster_info *ci, char *err, size_t errlen)
{
	struct ci_ctx c = { .env = env, .flags = flags, .err = err, .errlen = errlen };
	struct source *src;
	struct cluster_info out = { 0 };
	int r, i;

	memset(ci, 0, sizeof(*ci));
	if (err && errlen)
		err[0] = '\0';
	/* ~10 KiB of message buffers: keep them off the stack */
	src = calloc(NSOURCES, sizeof(*src));
	if (!src)
		return ci_oom(&c);
	/* every source is read and checked, even one that a higher one
	 * overrides: a malformed value is an error wherever it is */
	r = 0;
	for (i = 0; r == 0 && i < NSOURCES; i++) {
		src[i].def = &sources[i];
		r = sources[i].load(&c, &src[i].f);
	}
	for (i = 0; r == 0 && i < NSOURCES; i++)
		r = settle(&c, &src[i]);
	if (r == 0)
		r = resolve(&c, src, visible_gpus, &out);
	for (i = 0; i < NSOURCES; i++)
		found_free(&src[i].f);
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
	ci_strv_free(ci->addrs, ci->nnodes);
	ci_strv_free(ci->gpus, ci->ngpus);
	free(ci->slot_counts);
	free(ci->iface);
	memset(ci, 0, sizeof(*ci));
}

bool ci_addr_known(const char *addr)
{
	return addr && strcmp(addr, CI_ADDR_UNKNOWN) != 0;
}

const char *ci_source_name(enum ci_source s)
{
	if (s == CI_SRC_DEFAULT)
		return "default";
	if (s == CI_SRC_SELF)
		return "self";
	for (int i = 0; i < NSOURCES; i++)
		if (sources[i].id == s)
			return sources[i].name;
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

