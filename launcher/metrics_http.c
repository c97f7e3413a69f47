// SPDX-License-Identifier: MIT
#include "metrics_http.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "lazylib.h"
#include "sock.h"

struct metrics_http {
	struct evhttp *http;
	metrics_render_fn render;
	void *arg;
};

int metrics_parse_listen(const char *text, char **addr, int *port)
{
	const char *colon = strrchr(text, ':'), *host = text;
	size_t hlen;
	long p;

	*addr = NULL;
	*port = 0;
	if (!colon)
		colon = text - 1; /* a port alone */
	if (io_parse_long(colon + 1, 0, 65535, &p) < 0)
		return -EINVAL;
	hlen = colon >= text ? (size_t)(colon - text) : 0;
	if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
		host++;
		hlen -= 2;
	} else if (hlen && memchr(host, ':', hlen)) {
		return -EINVAL; /* an IPv6 address wants its brackets */
	}
	if (colon >= text && hlen == 0)
		return -EINVAL;
	if (hlen && !(*addr = strndup(host, hlen)))
		return -ENOMEM;
	*port = (int)p;
	return 0;
}

/* evhttp (libevent_extra), loaded when --metrics-port is given (lazylib.h):
 * each function named once, its pointer and its symbol made from that */
#define EV_FNS(X) \
	X(accept_socket_with_handle) \
	X(add_header) \
	X(find_header) \
	X(free) \
	X(new) \
	X(request_get_input_headers) \
	X(request_get_output_headers) \
	X(send_error) \
	X(send_reply) \
	X(set_allowed_methods) \
	X(set_cb) \
	X(set_gencb) \
	X(set_max_body_size) \
	X(set_max_headers_size) \
	X(set_timeout)
#define EV_FIELD(f) __typeof__(evhttp_##f) *f;
#define EV_SYM(f) { "evhttp_" #f, offsetof(struct ev_fns, f) },
static struct ev_fns {
	EV_FNS(EV_FIELD)
} ev;
static const struct lazylib_sym ev_syms[] = { EV_FNS(EV_SYM) { NULL, 0 } };
static struct lazylib ev_lib = LAZYLIB_INIT(SLOTRUN_SONAME_EVENT_EXTRA, "libevent-extra-2.1-7", ev_syms, &ev);

static void on_metrics(struct evhttp_request *req, void *arg)
{
	struct metrics_http *m = arg;
	const char *accept = ev.find_header(ev.request_get_input_headers(req), "Accept");
	enum metrics_format fmt = metrics_negotiate(accept);
	struct evbuffer *body = evbuffer_new();
	char *text = NULL;
	size_t len = 0;

	if (!body || m->render(m->arg, fmt, &text, &len) < 0 || evbuffer_add(body, text, len) < 0) {
		ev.send_error(req, HTTP_INTERNAL, "cannot render the metrics");
	} else {
		ev.add_header(ev.request_get_output_headers(req), "Content-Type",
				  fmt == METRICS_OPENMETRICS ? METRICS_OPENMETRICS_TYPE : METRICS_TEXT_TYPE);
		ev.send_reply(req, HTTP_OK, "OK", body);
	}
	free(text);
	if (body)
		evbuffer_free(body);
}

static void on_other(struct evhttp_request *req, void *arg)
{
	ev.send_error(req, HTTP_NOTFOUND, "slotrun serves its metrics at /metrics");
}

/* A listening socket on addr:port.  Returns the fd or -errno. */
static int listen_on(const char *addr, int port, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_PASSIVE, .ai_socktype = SOCK_STREAM }, *res;
	char service[8];
	int fd = -1, e;

	if (!addr) {
		e = sock_listen((struct sockaddr *)&ss, sock_addr_any(AF_INET6, port, &ss), 64, 0, &fd);
		if (e == -EAFNOSUPPORT) /* no IPv6 here */
			e = sock_listen((struct sockaddr *)&ss, sock_addr_any(AF_INET, port, &ss), 64, 0, &fd);
	} else {
		snprintf(service, sizeof(service), "%d", port);
		if (getaddrinfo(addr, service, &hints, &res) != 0) {
			snprintf(err, errlen, "--metrics-port: '%s' is not an address of this machine's kind "
				 "(give a numeric IPv4 or [IPv6] address)", addr);
			return -EINVAL;
		}
		e = sock_listen(res->ai_addr, res->ai_addrlen, 64, 0, &fd);
		freeaddrinfo(res);
	}
	if (e == -EADDRINUSE)
		snprintf(err, errlen, "--metrics-port %s%s%d: the port is in use: choose another", addr ? addr : "",
			 addr ? ":" : "", port);
	else if (e < 0)
		snprintf(err, errlen, "--metrics-port %s%s%d: cannot listen: %s", addr ? addr : "", addr ? ":" : "",
			 port, strerror(-e));
	return e < 0 ? e : fd;
}

int metrics_http_open(struct metrics_http **mp, struct event_base *base, const char *addr, int port,
		      metrics_render_fn render, void *arg, char *err, size_t errlen)
{
	struct metrics_http *m;
	int fd;

	*mp = NULL;
	if (lazylib_load(&ev_lib) < 0) {
		snprintf(err, errlen, "--metrics-port: %s", ev_lib.err);
		return -ELIBACC;
	}
	fd = listen_on(addr, port, err, errlen);
	if (fd < 0)
		return fd;
	if (!(m = calloc(1, sizeof(*m))) || !(m->http = ev.new(base)) ||
	    !ev.accept_socket_with_handle(m->http, fd)) {
		if (m && m->http)
			ev.free(m->http);
		close(fd);
		free(m);
		snprintf(err, errlen, "--metrics-port: cannot serve: out of memory");
		return -ENOMEM;
	}
	m->render = render;
	m->arg = arg;
	ev.set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	ev.set_timeout(m->http, METRICS_HTTP_DEADLINE);
	ev.set_max_headers_size(m->http, 16384);
	ev.set_max_body_size(m->http, 4096);
	ev.set_cb(m->http, "/metrics", on_metrics, m);
	ev.set_gencb(m->http, on_other, m);
	*mp = m;
	return 0;
}

void metrics_http_close(struct metrics_http *m)
{
	if (!m)
		return;
	ev.free(m->http); /* closes the bound socket too */
	free(m);
}
