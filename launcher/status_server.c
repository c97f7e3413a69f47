// SPDX-License-Identifier: MIT
#include "status_server.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"

struct conn {
	struct status_server *s;
	struct bufferevent *bev;     /* NULL once closed */
	bool pending;                /* the status hook owes a reply */
	bool stranger;               /* not the job's owner: every request is refused */
};

struct status_server {
	struct event_base *base;
	int lfd;
	char *path;
	struct event *accept_ev;
	const struct status_server_hooks *hooks;
	void *arg;
	struct conn *conns[STATUS_CONNS];
};

static void conn_close(struct conn *c)
{
	if (c->bev) {
		bufferevent_free(c->bev);
		c->bev = NULL;
	}
	if (c->pending) /* freed when the reply comes */
		return;
	for (int k = 0; k < STATUS_CONNS; k++)
		if (c->s->conns[k] == c)
			c->s->conns[k] = NULL;
	free(c);
}

static void on_written(struct bufferevent *bev, void *arg)
{
	conn_close(arg);
}

/* Sends reply and closes once it is written (or the deadline passes). */
static void send_reply(struct conn *c, json_t *reply)
{
	char *text = NULL;

	if (reply)
		json_object_set_new(reply, "v", json_integer(1));
	if (!c->bev || !reply || !(text = json_dumps(reply, JSON_COMPACT)) ||
	    bufferevent_write(c->bev, text, strlen(text)) < 0 || bufferevent_write(c->bev, "\n", 1) < 0) {
		free(text);
		json_decref(reply);
		conn_close(c);
		return;
	}
	free(text);
	json_decref(reply);
	bufferevent_disable(c->bev, EV_READ);
	bufferevent_setcb(c->bev, NULL, on_written, NULL, c);
}

/* "bad request: " and why (what, when not NULL, after it). */
static void send_error(struct conn *c, const char *why, const char *what)
{
	char text[512];

	snprintf(text, sizeof(text), "bad request: %s%s%s", why, what ? ": " : "", what ? what : "");
	send_reply(c, json_pack("{s:s}", "error", text));
}

static void on_reply(void *ctx, json_t *reply)
{
	struct conn *c = ctx;

	c->pending = false;
	if (!c->bev) { /* the client went away meanwhile */
		json_decref(reply);
		conn_close(c);
		return;
	}
	send_reply(c, reply);
}

static void handle(struct conn *c, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *req = json_loadb(line, len, 0, &jerr), *job;
	const char *want = json_string_value(json_object_get(req, "want"));
	struct status_server *s = c->s;

	bufferevent_disable(c->bev, EV_READ);
	if (c->stranger) {
		char text[160];

		snprintf(text, sizeof(text), "refused: only the user who started the job (uid %u) may ask for its status",
			 (unsigned)geteuid());
		send_reply(c, json_pack("{s:s}", "error", text));
	} else if (!want) {
		send_error(c, req ? "no \"want\"" : "not JSON", req ? NULL : jerr.text);
	} else if (strcmp(want, "hello") == 0) {
		job = s->hooks->hello(s->arg);
		send_reply(c, job ? json_pack("{s:o}", "job", job) : NULL);
	} else if (strcmp(want, "status") == 0) {
		c->pending = true;
		s->hooks->status(s->arg, json_is_true(json_object_get(req, "stacks")), on_reply, c);
	} else {
		send_error(c, "unknown \"want\"", want);
	}
	json_decref(req);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr nl = evbuffer_search(in, "\n", 1, NULL);
	size_t len = nl.pos >= 0 ? (size_t)nl.pos : evbuffer_get_length(in);
	char *line;

	if (nl.pos < 0 && len < STATUS_REQ_MAX)
		return; /* more to come */
	if (len >= STATUS_REQ_MAX) {
		send_error(c, "longer than 4096 bytes", NULL);
		return;
	}
	line = (char *)evbuffer_pullup(in, (ev_ssize_t)len);
	handle(c, line ? line : "", len);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	/* EOF, an error or a deadline: a request cut short, a reply not
	 * taken; either way the connection ends */
	conn_close(c);
}

/* The first free connection slot, or -1. */
static int free_slot(const struct status_server *s)
{
	for (int k = 0; k < STATUS_CONNS; k++)
		if (!s->conns[k])
			return k;
	return -1;
}

/* Whether the peer is the job's owner (the kernel's word for it: the
 * credentials it had when it connected). */
static bool owner(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == geteuid();
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct status_server *s = arg;
	struct timeval rd = clock_tv(STATUS_REQ_DEADLINE), wr = clock_tv(STATUS_REPLY_DEADLINE);

	for (int tries = 0; tries < STATUS_CONNS; tries++) {
		int fd = accept4((int)lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), k;
		struct conn *c;

		if (fd < 0)
			return; /* EAGAIN: none left; anything else: the next one */
		if ((k = free_slot(s)) < 0 || !(c = calloc(1, sizeof(*c)))) {
			close(fd);
			continue;
		}
		/* a stranger's request is read and refused, not cut off: a
		 * close with its request unread would reset the connection
		 * before it could read why */
		*c = (struct conn){ .s = s, .bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE),
				    .stranger = !owner(fd) };
		if (!c->bev) {
			close(fd);
			free(c);
			continue;
		}
		s->conns[k] = c;
		bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
		bufferevent_set_timeouts(c->bev, &rd, &wr);
		bufferevent_setwatermark(c->bev, EV_READ, 0, STATUS_REQ_MAX);
		bufferevent_enable(c->bev, EV_READ);
	}
}

int status_server_open(struct status_server **sp, struct event_base *base, int lfd, const char *path,
		       const struct status_server_hooks *hooks, void *arg)
{
	struct status_server *s = calloc(1, sizeof(*s));

	*sp = NULL;
	if (!s || !(s->path = strdup(path)) ||
	    !(s->accept_ev = event_new(base, lfd, EV_READ | EV_PERSIST, on_accept, s)) ||
	    event_add(s->accept_ev, NULL) < 0) {
		if (s && s->accept_ev)
			event_free(s->accept_ev);
		if (s)
			free(s->path);
		free(s);
		close(lfd);
		return -ENOMEM;
	}
	s->base = base;
	s->lfd = lfd;
	s->hooks = hooks;
	s->arg = arg;
	*sp = s;
	return 0;
}

void status_server_close(struct status_server *s)
{
	if (!s)
		return;
	for (int k = 0; k < STATUS_CONNS; k++)
		if (s->conns[k]) {
			s->conns[k]->pending = false;
			conn_close(s->conns[k]);
		}
	event_free(s->accept_ev);
	close(s->lfd);
	(void)unlink(s->path);
	free(s->path);
	free(s);
}
