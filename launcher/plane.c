// SPDX-License-Identifier: MIT
/* The job plane's entry points: the state both sides share, and each call
 * handed to the side this node plays.  The connections are plane_conn.c's,
 * the chief's side plane_chief.c's, another node's plane_member.c's. */
#include "plane.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plane_chief.h"
#include "plane_conn.h"
#include "plane_int.h"
#include "plane_member.h"
#include "plane_query.h"
#include "plane_relay.h"
#include "plane_tree.h"

#include <sodium.h>

static void free_hosts(struct plane *p)
{
	for (int k = 0; p->hosts && k < p->nnodes; k++)
		free(p->hosts[k]);
	free(p->hosts);
	p->hosts = NULL;
}

int plane_set_hosts(struct plane *p, int n, char *const *hosts)
{
	char **h = calloc((size_t)n, sizeof(char *));

	for (int k = 0; h && k < n; k++)
		if (!(h[k] = strdup(hosts[k] ? hosts[k] : CI_ADDR_UNKNOWN))) {
			while (k--)
				free(h[k]);
			free(h);
			h = NULL;
		}
	if (!h)
		return -ENOMEM;
	free_hosts(p);
	p->hosts = h;
	p->nnodes = n;
	return 0;
}

/* Whether cfg names a known address beside the chief's. */
static bool has_others(const struct plane_cfg *cfg)
{
	for (int k = 1; k < cfg->nnodes; k++)
		if (ci_addr_known(cfg->addrs[k]))
			return true;
	return false;
}

int plane_open(struct plane **pp, struct event_base *base, const struct plane_cfg *cfg,
	       const struct plane_hooks *hooks, void *arg, char *err, size_t errlen)
{
	struct plane *p = calloc(1, sizeof(*p));
	int r;

	*pp = NULL;
	if (!p || auth_init() < 0) {
		free(p);
		snprintf(err, errlen, "%s", p ? "cannot initialise libsodium" : "out of memory");
		return p ? -EIO : -ENOMEM;
	}
	*p = (struct plane){ .base = base, .cfg = cfg, .h = hooks, .arg = arg, .lfd = -1,
			     .chief = cfg->role != PLANE_MEMBER, .rank = cfg->node_rank, .retry_delay = 0.05 };
	p->side = p->chief ? &plane_chief_side : &plane_member_side;
	p->interval = cfg->hb_timeout / PLANE_HB_PER_TIMEOUT;
	randombytes_buf(p->id, sizeof(p->id));
	if (plane_set_hosts(p, cfg->nnodes, cfg->addrs) < 0 || plane_conn_start_tick(p) < 0) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* an elastic node that may be the chief looks for a running job at the
	 * other addresses it was given first (plane_seek.c, seek_list) */
	if (p->chief && plane_elastic(cfg) && has_others(cfg)) {
		p->chief = false;
		p->side = &plane_member_side;
	}
	r = p->chief ? plane_chief_open(p, err, errlen) : -EAGAIN;
	if (r == -EADDRINUSE && cfg->role == PLANE_MAYBE_CHIEF) {
		/* another slotrun on this host is the chief: join it */
		plane_chief_close(p);
		p->chief = false;
		p->side = &plane_member_side;
		r = -EAGAIN;
	}
	if (r == -EAGAIN && !plane_elastic(cfg)) { /* the relay tree (plane_tree.h) */
		p->up = plane_tree_up(cfg->fanout, cfg->node_rank);
		r = plane_tree_relays(cfg->fanout, cfg->nnodes, cfg->node_rank) ? plane_relay_open(p, err, errlen) :
										    -EAGAIN;
		r = r == 0 ? -EAGAIN : r;
	}
	if (r == -EAGAIN)
		r = plane_member_open(p, err, errlen);
	if (r < 0)
		goto fail;
	*pp = p;
	return 0;
fail:
	plane_close(p);
	return r;
}

void plane_local_fail(struct plane *p, const struct plane_cause *f)
{
	if (p->ended)
		return;
	if (p->chief)
		plane_chief_local_fail(p, f);
	else
		plane_member_local_fail(p, f);
}

void plane_local_signal(struct plane *p, int sig, bool stops, const char *why)
{
	if (p->ended)
		return;
	if (p->chief)
		plane_chief_local_signal(p, sig, stops, why);
	else
		plane_member_local_signal(p, sig, stops, why);
}

void plane_local_pause(struct plane *p, int sig)
{
	if (p->ended)
		return;
	if (p->chief)
		plane_chief_local_pause(p, sig);
	else
		plane_member_local_pause(p, sig);
	plane_conn_flush_now(p, PLANE_PAUSE_FLUSH);
}

void plane_local_resume(struct plane *p)
{
	plane_conn_woke(p);
	if (p->ended) { /* the job is over: our workers go on to their end */
		if (p->h->pause)
			(void)p->h->pause(p->arg, false);
		return;
	}
	if (p->chief)
		plane_chief_local_resume(p);
	else
		plane_member_local_resume(p);
}

void plane_local_done(struct plane *p, int code)
{
	if (p->ended)
		return;
	p->local_done = true;
	if (p->chief)
		plane_chief_local_done(p, code);
	else
		plane_member_local_done(p, code);
}

void plane_close(struct plane *p)
{
	if (!p)
		return;
	plane_conn_close_all(p);
	plane_query_close(p);
	plane_chief_close(p);   /* a node may have been both: it took over */
	plane_member_close(p);
	free_hosts(p);
	free(p);
}
