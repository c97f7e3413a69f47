// SPDX-License-Identifier: MIT
/* The job's status socket (status_sock.h) on the runner's loop: each
 * connection sends one request, a JSON object on one line, and gets one
 * reply, a JSON object on one line, and is closed.
 *
 *   {"v": 1, "want": "hello"}                  -> {"v": 1, "job": {...}}
 *   {"v": 1, "want": "status", "stacks": true} -> {"v": 1, "job": {...}, "rows": [...],
 *                                                  "stacks": [...]}
 *   anything else                              -> {"v": 1, "error": "..."}
 *
 * Only the job's owner is served: the peer's uid (SO_PEERCRED) must be
 * slotrun's, or the reply is an error saying so.  Nothing here blocks the
 * loop: sockets are non-blocking, a request is at most STATUS_REQ_MAX
 * bytes and must come within STATUS_REQ_DEADLINE seconds, a reply must be
 * taken within STATUS_REPLY_DEADLINE, and at most STATUS_CONNS connections
 * are served at once (more are closed at once).  A client that leaves
 * before its reply is an EPIPE: the process ignores SIGPIPE (slotrun
 * does). */
#ifndef SLOTRUN_STATUS_SERVER_H
#define SLOTRUN_STATUS_SERVER_H

#include <jansson.h>
#include <stdbool.h>

struct event_base;

#define STATUS_REQ_MAX 4096
#define STATUS_REQ_DEADLINE 2.0
#define STATUS_REPLY_DEADLINE 5.0
#define STATUS_CONNS 16

/* Hands a reply (a JSON object; the server takes the reference) to the
 * connection ctx. */
typedef void (*status_reply_fn)(void *ctx, json_t *reply);

struct status_server_hooks {
	/* The job's header (status_job_json), new reference; NULL: none. */
	json_t *(*hello)(void *arg);
	/* The whole status: calls reply(ctx, ...) exactly once, now or later
	 * on the loop, with an object holding "job", "rows" and, when stacks
	 * was asked for, "stacks".  ctx stays valid until then, also when the
	 * client went away meanwhile (the reply is dropped then). */
	void (*status)(void *arg, bool stacks, status_reply_fn reply, void *ctx);
};

struct status_server;

/* Serves the listening socket lfd (status_sock_listen's; the server owns
 * it) at path on base.  Returns 0 or -ENOMEM (lfd closed). */
int status_server_open(struct status_server **s, struct event_base *base, int lfd, const char *path,
		       const struct status_server_hooks *hooks, void *arg);

/* Closes every connection and the socket, and removes the socket's file.
 * Replies the status hook still owes must not be given after this.  NULL
 * is nothing. */
void status_server_close(struct status_server *s);

#endif
