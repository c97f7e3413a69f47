// SPDX-License-Identifier: MIT
/* --metrics-port: the metrics (metrics.h) served over HTTP on the
 * runner's loop (libevent's evhttp), at /metrics, in the syntax the
 * scraper's Accept header asks for.  Requests are bounded (headers, body,
 * a deadline per connection); nothing blocks the loop. */
#ifndef SLOTRUN_METRICS_HTTP_H
#define SLOTRUN_METRICS_HTTP_H

#include <stddef.h>

#include "metrics.h"

struct event_base;
struct metrics_http;

/* Seconds a connection may take to send its request and take the reply. */
#define METRICS_HTTP_DEADLINE 10

/* The exposition in fmt, malloc'd into *text: 0 or -errno. */
typedef int (*metrics_render_fn)(void *arg, enum metrics_format fmt, char **text, size_t *len);

/* Listens on addr (a numeric address; NULL: every address, IPv6 and IPv4)
 * and port.  Returns 0, or -errno with a one-line reason in err
 * (-EADDRINUSE: the port is taken). */
int metrics_http_open(struct metrics_http **m, struct event_base *base, const char *addr, int port,
		      metrics_render_fn render, void *arg, char *err, size_t errlen);

/* Closes the listener and its connections.  NULL is nothing. */
void metrics_http_close(struct metrics_http *m);

/* "[ADDR:]PORT" as given to --metrics-port: *addr malloc'd or NULL for
 * every address, *port 0..65535 (0: off).  IPv6 addresses in brackets:
 * "[::1]:9400".  Returns 0, or -EINVAL.  Pure. */
int metrics_parse_listen(const char *text, char **addr, int *port);

#endif
