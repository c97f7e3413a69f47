// SPDX-License-Identifier: MIT
/* The status socket's server on a real loop, with the test as its client:
 * each exchange runs the loop until the reply has come (or a deadline). */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "leak_check.h"
#include "status_server.h"
#include "status_sock.h"
#include "tmp_dir.h"

static struct event_base *base;
static struct status_server *server;
static int statuses;
static struct event *later;
static status_reply_fn later_reply;
static void *later_ctx;

static json_t *hello(void *arg)
{
	return json_pack("{s:s}", "id", "job-1");
}

static void on_later(evutil_socket_t fd, short what, void *arg)
{
	later_reply(later_ctx, json_pack("{s:{}, s:[], s:[]}", "job", "rows", "stacks"));
}

/* Replies at once, or with stacks a little later (as a collection would). */
static void status(void *arg, bool stacks, status_reply_fn reply, void *ctx)
{
	struct timeval tv = { 0, 20000 };

	statuses++;
	if (!stacks) {
		reply(ctx, json_pack("{s:{s:s}, s:[]}", "job", "id", "job-1", "rows"));
		return;
	}
	later_reply = reply;
	later_ctx = ctx;
	evtimer_add(later, &tv);
}

static const struct status_server_hooks hooks = { .hello = hello, .status = status };

static void setup(void)
{
	int fd;

	tmp_dir_setup();
	signal(SIGPIPE, SIG_IGN); /* as slotrun does: a client gone is EPIPE */
	statuses = 0;
	cr_assert_not_null(base = event_base_new());
	cr_assert_not_null(later = evtimer_new(base, on_later, NULL));
	fd = status_sock_listen(tmp_path("1.sock"));
	cr_assert_geq(fd, 0);
	cr_assert_eq(status_server_open(&server, base, fd, tmp_path("1.sock"), &hooks, NULL), 0);
}

static void teardown(void)
{
	status_server_close(server);
	event_free(later);
	event_base_free(base);
	tmp_dir_teardown();
}

TestSuite(status_server, .init = setup, .fini = teardown, .timeout = 20);

static int dial(void)
{
	int fd = status_sock_connect(tmp_path("1.sock"));

	cr_assert_geq(fd, 0);
	return fd;
}

/* Runs the loop until fd has a whole reply line or EOF (then "" if
 * nothing came), or `seconds` pass (NULL).  Returns a malloc'd string. */
static char *await(int fd, double seconds)
{
	char buf[8192];
	size_t len = 0;
	double end = clock_mono() + seconds;

	while (clock_mono() < end) {
		ssize_t n;

		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		n = recv(fd, buf + len, sizeof(buf) - 1 - len, MSG_DONTWAIT);
		if (n == 0 || (n > 0 && memchr(buf + len, '\n', (size_t)n))) {
			len += n > 0 ? (size_t)n : 0;
			buf[len] = '\0';
			return strdup(buf);
		}
		if (n > 0)
			len += (size_t)n;
		else
			poll(NULL, 0, 1);
	}
	return NULL;
}

static char *exchange(const char *request)
{
	int fd = dial();
	char *reply;

	cr_assert_eq(write(fd, request, strlen(request)), (ssize_t)strlen(request));
	reply = await(fd, 5);
	close(fd);
	cr_assert_not_null(reply, "no reply to %s", request);
	return reply;
}

LEAK_TEST(status_server, hello_is_the_header)
{
	char *r = exchange("{\"v\":1,\"want\":\"hello\"}\n");

	cr_assert_str_eq(r, "{\"job\":{\"id\":\"job-1\"},\"v\":1}\n");
	cr_assert_eq(statuses, 0, "no status gathered for a hello");
	free(r);
}

LEAK_TEST(status_server, status_is_gathered_now_or_later)
{
	char *r = exchange("{\"v\":1,\"want\":\"status\"}\n");

	cr_assert(strstr(r, "\"rows\":[]"), "%s", r);
	free(r);
	r = exchange("{\"v\":1,\"want\":\"status\",\"stacks\":true}\n");
	cr_assert(strstr(r, "\"stacks\":[]"), "the later reply: %s", r);
	cr_assert_eq(statuses, 2);
	free(r);
}

LEAK_TEST(status_server, a_client_gone_before_its_reply_is_no_harm)
{
	int fd = dial();
	char *r;

	cr_assert_eq(write(fd, "{\"want\":\"status\",\"stacks\":true}\n", 33), 33);
	while (statuses == 0)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	close(fd);
	r = exchange("{\"want\":\"hello\"}\n"); /* runs the loop past the late reply */
	free(r);
	r = await(dial(), 0.1);
	free(r);
}

LEAK_TEST(status_server, bad_requests_get_one_error_line)
{
	const char *bad[][2] = {
		{ "nonsense\n", "bad request: not JSON" },
		{ "{\"v\":1}\n", "bad request: no \\\"want\\\"" },
		{ "{\"want\":\"everything\"}\n", "bad request: unknown \\\"want\\\": everything" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *r = exchange(bad[i][0]);

		cr_assert(strstr(r, bad[i][1]) && strstr(r, "\"error\""), "%s -> %s", bad[i][0], r);
		free(r);
	}
}

LEAK_TEST(status_server, a_request_past_the_bound_is_refused)
{
	char big[STATUS_REQ_MAX + 100];
	int fd = dial();
	char *r;

	memset(big, ' ', sizeof(big));
	cr_assert_eq(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
	r = await(fd, 5);
	cr_assert_not_null(r);
	cr_assert(strstr(r, "longer than 4096 bytes"), "%s", r);
	free(r);
	close(fd);
}

LEAK_TEST(status_server, past_the_connection_bound_more_are_closed_at_once)
{
	int fds[STATUS_CONNS + 1];
	char *r;

	for (int k = 0; k < STATUS_CONNS + 1; k++) {
		fds[k] = dial();
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	}
	r = await(fds[STATUS_CONNS], 5);
	cr_assert_str_eq(r, "", "closed without a word");
	free(r);
	for (int k = 0; k < STATUS_CONNS + 1; k++)
		close(fds[k]);
}

LEAK_TEST(status_server, a_silent_client_is_dropped_at_the_deadline)
{
	int fd = dial();
	double t0 = clock_mono();
	char *r = await(fd, STATUS_REQ_DEADLINE + 3);

	cr_assert_not_null(r, "still open after the deadline");
	cr_assert_str_eq(r, "");
	cr_assert_geq(clock_mono() - t0, STATUS_REQ_DEADLINE - 0.1);
	free(r);
	close(fd);
}

LEAK_TEST(status_server, another_uid_is_refused)
{
	int p[2], status;
	pid_t pid;
	char got[512] = "";
	ssize_t n;
	char *r;

	if (geteuid() != 0)
		cr_skip_test("needs root to be another user");
	cr_assert_eq(chmod(tmpdir, 0755), 0);
	cr_assert_eq(chmod(tmp_path("1.sock"), 0777), 0, "only the uid check stands in the way");
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) { /* connects as nobody and passes on what it got */
		char buf[512];
		int fd;
		ssize_t k = 0, m;

		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		fd = status_sock_connect(tmp_path("1.sock"));
		if (fd < 0 || fcntl(fd, F_SETFL, 0) < 0 || write(fd, "{\"want\":\"status\"}\n", 18) < 0)
			_exit(3);
		while ((m = read(fd, buf + k, sizeof(buf) - 1 - (size_t)k)) > 0)
			k += m;
		if (write(p[1], buf, (size_t)k) < 0)
			_exit(4);
		_exit(0);
	}
	close(p[1]);
	while (waitpid(pid, &status, WNOHANG) == 0)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed: %d", status);
	n = read(p[0], got, sizeof(got) - 1);
	close(p[0]);
	cr_assert_gt(n, 0);
	cr_assert(strstr(got, "\"error\":\"refused: only the user who started the job (uid 0) may ask for its status\""),
		  "%s", got);
	cr_assert_eq(statuses, 0, "nothing gathered for a stranger");
	r = exchange("{\"want\":\"hello\"}\n");
	cr_assert(strstr(r, "job-1"), "the owner is still served: %s", r);
	free(r);
}

LEAK_TEST(status_server, closing_removes_the_socket)
{
	status_server_close(server);
	server = NULL;
	cr_assert_neq(access(tmp_path("1.sock"), F_OK), 0);
}
