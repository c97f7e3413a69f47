// SPDX-License-Identifier: MIT
#include "plan.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

struct envb {
	char **v;
	int n;
	bool oom;
};

__attribute__((format(printf, 3, 4)))
static void put(struct envb *b, const char *name, const char *fmt, ...)
{
	char *s = NULL, *val = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&val, fmt, ap) < 0)
		val = NULL;
	va_end(ap);
	if (!val || asprintf(&s, "%s=%s", name, val) < 0)
		s = NULL;
	free(val);
	if (!s) {
		b->oom = true;
		return;
	}
	b->v[b->n++] = s;
	b->v[b->n] = NULL;
}

static bool user_set(const struct ci_env *env, const char *name)
{
	const char *v = env->getenv(env->ctx, name);
	return v && *v;
}

#define PLAN_MAX_VARS 24

static int slot_env(const struct cluster_info *ci, const struct plan_slot *s,
		    const struct plan_opts *po, const struct ci_env *env, char ***out)
{
	struct envb b = { .v = calloc(PLAN_MAX_VARS + 1, sizeof(char *)) };
	const char *chief = ci->addrs[0];

	if (!b.v)
		return -ENOMEM;
	put(&b, "RANK", "%d", s->rank);
	put(&b, "WORLD_SIZE", "%d", ci->world_size);
	put(&b, "LOCAL_RANK", "%d", s->local_rank);
	put(&b, "LOCAL_WORLD_SIZE", "%d", ci->slots);
	put(&b, "LOCAL_SIZE", "%d", ci->slots);
	put(&b, "GROUP_RANK", "%d", ci->node_rank);
	put(&b, "NODE_RANK", "%d", ci->node_rank);
	put(&b, "CROSS_RANK", "%d", ci->node_rank);
	put(&b, "GROUP_WORLD_SIZE", "%d", ci->nnodes);
	put(&b, "CROSS_SIZE", "%d", ci->nnodes);
	put(&b, "MASTER_ADDR", "%s", chief);
	put(&b, "MASTER_PORT", "%d", ci->master_port);
	put(&b, "DET_CHIEF_IP", "%s", chief);
	if (s->place.gpu) {
		put(&b, "CUDA_VISIBLE_DEVICES", "%s", s->place.gpu);
		if (po->pci_order)
			put(&b, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
	}
	if (s->place.ncpus > 0 && !user_set(env, "OMP_NUM_THREADS"))
		put(&b, "OMP_NUM_THREADS", "%d", s->place.ncpus);
	if (po->iface && !user_set(env, "NCCL_SOCKET_IFNAME"))
		put(&b, "NCCL_SOCKET_IFNAME", "%s", po->iface);
	if (po->iface && !user_set(env, "GLOO_SOCKET_IFNAME"))
		put(&b, "GLOO_SOCKET_IFNAME", "%s", po->iface);
	put(&b, PLAN_SECRET_VAR, "%s", po->secret ? po->secret : "");
	if (b.oom) {
		for (int i = 0; i < b.n; i++)
			free(b.v[i]);
		free(b.v);
		return -ENOMEM;
	}
	*out = b.v;
	return 0;
}

/* See plan.h.  ci->gpus is set only when a source named the GPUs, and then
 * every slot got one of them for its placement. */
static int cuda_numbering(const struct cluster_info *ci, const struct ci_env *env,
			  struct plan *p)
{
	const char *inh = env->getenv(env->ctx, "CUDA_VISIBLE_DEVICES");
	char *list = NULL, *entries[CI_MAX_SLOTS], *save = NULL;
	int n = 0;

	if (!ci->gpus || (ci->src_gpus != CI_SRC_DETERMINED && ci->src_gpus != CI_SRC_SLURM))
		return 0;
	if (inh && *inh && strcmp(inh, "-1") != 0 && strcmp(inh, "NoDevFiles") != 0) {
		list = strdup(inh);
		if (!list)
			return -ENOMEM;
		for (char *t = strtok_r(list, ",", &save); t && n < CI_MAX_SLOTS; t = strtok_r(NULL, ",", &save))
			entries[n++] = t;
	} else if (ci->src_gpus == CI_SRC_SLURM) {
		return 0; /* bare metal: Slurm's ids are CUDA's */
	}
	for (int i = 0; i < p->nslots; i++) {
		struct topo_slot *ts = &p->slots[i].place;
		char pos[16], *v;

		snprintf(pos, sizeof(pos), "%d", i % ci->ngpus);
		v = strdup(n > 0 ? entries[(i % ci->ngpus) % n] : pos);
		if (!v) {
			free(list);
			return -ENOMEM;
		}
		free(ts->gpu);
		ts->gpu = v;
	}
	free(list);
	return 0;
}

int plan_build(const struct cluster_info *ci, struct topo_slot *tslots,
	       const struct plan_opts *po, const struct ci_env *env, struct plan *p)
{
	p->slots = calloc((size_t)ci->slots, sizeof(*p->slots));
	if (!p->slots) {
		for (int i = 0; tslots && i < ci->slots; i++)
			topo_slot_free(&tslots[i]);
		p->nslots = 0;
		return -ENOMEM;
	}
	p->nslots = ci->slots;
	p->node_rank = ci->node_rank;
	for (int i = 0; i < ci->slots; i++) {
		struct plan_slot *s = &p->slots[i];

		s->rank = ci->rank_base + i;
		s->local_rank = i;
		s->shown = true;
		if (tslots) {
			s->place = tslots[i];
			memset(&tslots[i], 0, sizeof(tslots[i]));
		} else {
			s->place.gpu_index = -1;
		}
	}
	if (tslots && cuda_numbering(ci, env, p) < 0)
		goto oom;
	for (int i = 0; i < p->nslots; i++)
		if (slot_env(ci, &p->slots[i], po, env, &p->slots[i].env) < 0)
			goto oom;
	return 0;
oom:
	plan_free(p);
	return -ENOMEM;
}

/* env's "NAME=..." entry replaced by one with this value: 0 or -ENOMEM.
 * An entry that is not there is left out (the plan names them all). */
static int replace_var(char **env, const char *name, char **fresh)
{
	size_t len = strlen(name);

	for (char **e = env; *e; e++)
		if (!strncmp(*e, name, len) && (*e)[len] == '=') {
			free(*e);
			*e = *fresh;
			*fresh = NULL;
			return 0;
		}
	return 0;
}

/* *out = the formatted string: true, or false with *out NULL. */
__attribute__((format(printf, 2, 3)))
static bool fmt_var(char **out, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(out, fmt, ap);
	va_end(ap);
	if (n < 0)
		*out = NULL;
	return n >= 0;
}

int plan_round(struct plan *p, const struct plan_round *r)
{
	static const char *const names[] = { "RANK", "WORLD_SIZE", "GROUP_RANK", "NODE_RANK", "CROSS_RANK",
					     "GROUP_WORLD_SIZE", "CROSS_SIZE", "MASTER_ADDR", "DET_CHIEF_IP" };
	enum { NV = sizeof(names) / sizeof(names[0]) };
	char **fresh = calloc((size_t)p->nslots * NV, sizeof(char *));
	bool oom = !fresh;

	/* everything is made first, so that nothing changes on ENOMEM */
	for (int i = 0; !oom && i < p->nslots; i++) {
		char **f = fresh + (size_t)i * NV;

		oom = !fmt_var(&f[0], "RANK=%d", r->rank_base + p->slots[i].local_rank) ||
		      !fmt_var(&f[1], "WORLD_SIZE=%d", r->world_size) ||
		      !fmt_var(&f[2], "GROUP_RANK=%d", r->node_rank) ||
		      !fmt_var(&f[3], "NODE_RANK=%d", r->node_rank) ||
		      !fmt_var(&f[4], "CROSS_RANK=%d", r->node_rank) ||
		      !fmt_var(&f[5], "GROUP_WORLD_SIZE=%d", r->nnodes) ||
		      !fmt_var(&f[6], "CROSS_SIZE=%d", r->nnodes) ||
		      (r->master && (!fmt_var(&f[7], "MASTER_ADDR=%s", r->master) ||
				     !fmt_var(&f[8], "DET_CHIEF_IP=%s", r->master)));
	}
	if (!oom) {
		for (int i = 0; i < p->nslots; i++) {
			for (int v = 0; v < NV; v++)
				if (fresh[(size_t)i * NV + v])
					replace_var(p->slots[i].env, names[v], &fresh[(size_t)i * NV + v]);
			p->slots[i].rank = r->rank_base + p->slots[i].local_rank;
		}
		p->node_rank = r->node_rank;
	}
	for (size_t k = 0; fresh && k < (size_t)p->nslots * NV; k++)
		free(fresh[k]);
	free(fresh);
	return oom ? -ENOMEM : 0;
}

void plan_free(struct plan *p)
{
	for (int i = 0; p->slots && i < p->nslots; i++) {
		for (char **e = p->slots[i].env; e && *e; e++)
			free(*e);
		free(p->slots[i].env);
		topo_slot_free(&p->slots[i].place);
	}
	free(p->slots);
	p->slots = NULL;
	p->nslots = 0;
}

int plan_secret_given(struct plan_secret *out, const char *text, size_t len)
{
	if (len == 0)
		return -EINVAL;
	if (len >= sizeof(out->value))
		return -E2BIG;
	memcpy(out->value, text, len);
	out->value[len] = '\0';
	out->kind = PLAN_SECRET_GIVEN;
	return 0;
}

int plan_job_secret(const struct cluster_info *ci, const struct ci_env *env,
		    struct plan_secret *out)
{
	static const char *const ids[] = { "DET_ALLOCATION_ID", "SLURM_JOB_ID", "DET_TRIAL_ID" };
	const char *v = env->getenv(env->ctx, PLAN_SECRET_VAR);
	unsigned char rnd[16];
	unsigned long h = 5381;
	char seed[512];

	if (v && *v)
		return plan_secret_given(out, v, strlen(v));
	if (ci->nnodes == 1 && getrandom(rnd, sizeof(rnd), 0) == (ssize_t)sizeof(rnd)) {
		for (size_t i = 0; i < sizeof(rnd); i++)
			snprintf(out->value + 2 * i, sizeof(out->value) - 2 * i, "%02x", rnd[i]);
		out->kind = PLAN_SECRET_RANDOM;
		return 0;
	}
	snprintf(seed, sizeof(seed), "%s:%d", ci->addrs[0], ci->master_port);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if ((v = env->getenv(env->ctx, ids[i])) && *v) {
			snprintf(seed, sizeof(seed), "%s=%s", ids[i], v);
			break;
		}
	for (const char *q = seed; *q; q++)
		h = h * 33 + (unsigned char)*q;
	snprintf(out->value, sizeof(out->value), "derived-%016lx", h);
	out->kind = PLAN_SECRET_DERIVED;
	return 0;
}

char *plan_slot_json(const struct plan *p, int i, char *const *cmd)
{
	const struct plan_slot *s = &p->slots[i];
	json_t *env = json_object(), *row, *argv = NULL;
	char *out;

	for (char **e = s->env; *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[64];

		snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
		json_object_set_new(env, name, json_string(strcmp(name, PLAN_SECRET_VAR) == 0 ?
							   "<secret>" : eq + 1));
	}
	if (cmd) {
		argv = json_array();
		for (; *cmd; cmd++) {
			json_t *a = json_string(*cmd);
			json_array_append_new(argv, a ? a : json_string("<not UTF-8>"));
		}
	}
	row = json_pack("{s:i, s:i, s:i, s:s?, s:s, s:s, s:o, s:o*}", "rank", s->rank, "local_rank",
			s->local_rank, "node_rank", p->node_rank, "gpu", s->place.gpu,
			"cpus", s->place.cpus ? s->place.cpus : "",
			"numa", s->place.numa ? s->place.numa : "", "env", env, "command", argv);
	if (!row)
		return NULL;
	out = json_dumps(row, JSON_COMPACT);
	json_decref(row);
	return out;
}

static bool same_name(const char *a, const char *b)
{
	while (*a && *a != '=' && *a == *b) {
		a++;
		b++;
	}
	return *a == '=' && *b == '=';
}

static bool overridden(const char *var, char *const *over)
{
	for (int j = 0; over && over[j]; j++)
		if (same_name(var, over[j]))
			return true;
	return false;
}

char **plan_envp(const struct plan_slot *s, char *const *base, char *const *extra)
{
	int nb = 0, ns = 0, nx = 0, n = 0;
	char **out;

	while (base && base[nb])
		nb++;
	while (s->env[ns])
		ns++;
	while (extra && extra[nx])
		nx++;
	out = calloc((size_t)(nb + ns + nx + 1), sizeof(char *));
	if (!out)
		return NULL;
	for (int i = 0; i < nb; i++)
		if (!overridden(base[i], s->env) && !overridden(base[i], extra))
			out[n++] = base[i];
	for (int j = 0; j < ns; j++)
		if (!overridden(s->env[j], extra))
			out[n++] = s->env[j];
	for (int j = 0; j < nx; j++)
		out[n++] = extra[j];
	out[n] = NULL;
	return out;
}
