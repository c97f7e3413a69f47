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

/* Each node's address as cfg names it, ours to refine. */
static int copy_hosts(struct plane *p)
{
	p->hosts = calloc((size_t)p->cfg->nnodes, sizeof(char *));
	if (!p->hosts)
		return -ENOMEM;
	for (int k = 0; k < p->cfg->nnodes; k++)
		if (!(p->hosts[k] = strdup(p->cfg->addrs[k])))
			return -ENOMEM;
	return 0;
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
			     .chief = cfg->node_rank == 0, .retry_delay = 0.05 };
	p->side = p->chief ? &plane_chief_side : &plane_member_side;
	p->interval = cfg->hb_timeout / PLANE_HB_PER_TIMEOUT;
	if (copy_hosts(p) < 0 || plane_conn_start_tick(p) < 0) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	r = p->chief ? plane_chief_open(p, err, errlen) : plane_member_open(p, err, errlen);
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
	if (p->chief)
		plane_chief_close(p);
	else
		plane_member_close(p);
	for (int k = 0; p->hosts && k < p->cfg->nnodes; k++)
		free(p->hosts[k]);
	free(p->hosts);
	free(p);
}
