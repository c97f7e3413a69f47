// SPDX-License-Identifier: MIT
#include "metrics_http.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
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

static void on_metrics(struct evhttp_request *req, void *arg)
{
	struct metrics_http *m = arg;
	const char *accept = evhttp_find_header(evhttp_request_get_input_headers(req), "Accept");
	enum metrics_format fmt = metrics_negotiate(accept);
	struct evbuffer *body = evbuffer_new();
	char *text = NULL;
	size_t len = 0;

	if (!body || m->render(m->arg, fmt, &text, &len) < 0 || evbuffer_add(body, text, len) < 0) {
		evhttp_send_error(req, HTTP_INTERNAL, "cannot render the metrics");
	} else {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
				  fmt == METRICS_OPENMETRICS ? METRICS_OPENMETRICS_TYPE : METRICS_TEXT_TYPE);
		evhttp_send_reply(req, HTTP_OK, "OK", body);
	}
	free(text);
	if (body)
		evbuffer_free(body);
}

static void on_other(struct evhttp_request *req, void *arg)
{
	evhttp_send_error(req, HTTP_NOTFOUND, "slotrun serves its metrics at /metrics");
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
	int fd = listen_on(addr, port, err, errlen);

	*mp = NULL;
	if (fd < 0)
		return fd;
	if (!(m = calloc(1, sizeof(*m))) || !(m->http = evhttp_new(base)) ||
	    !evhttp_accept_socket_with_handle(m->http, fd)) {
		if (m && m->http)
			evhttp_free(m->http);
		close(fd);
		free(m);
		snprintf(err, errlen, "--metrics-port: cannot serve: out of memory");
		return -ENOMEM;
	}
	m->render = render;
	m->arg = arg;
	evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_timeout(m->http, METRICS_HTTP_DEADLINE);
	evhttp_set_max_headers_size(m->http, 16384);
	evhttp_set_max_body_size(m->http, 4096);
	evhttp_set_cb(m->http, "/metrics", on_metrics, m);
	evhttp_set_gencb(m->http, on_other, m);
	*mp = m;
	return 0;
}

void metrics_http_close(struct metrics_http *m)
{
	if (!m)
		return;
	evhttp_free(m->http); /* closes the bound socket too */
	free(m);
}
