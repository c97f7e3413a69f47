// SPDX-License-Identifier: MIT
/* sock_resolve: which answers are asked again, and what it says at the end.
 * Only names whose answer does not depend on the network are used: numeric
 * addresses and the reserved .invalid domain (RFC 6761), which no resolver
 * knows. */
#include <criterion/criterion.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>

#include "sock.h"

struct said {
	int calls;
	int gai;
};

static void waiting(void *arg, int gai)
{
	struct said *s = arg;

	s->calls++;
	s->gai = gai;
}

Test(sock_resolve, a_numeric_address_resolves_at_once, .timeout = 60)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	struct said s = { 0 };
	int gai = -1;

	cr_assert_eq(sock_resolve("127.0.0.1", "80", &hints, sock_deadline_in(10), waiting, &s, &res, &gai), 0);
	cr_assert_eq(gai, 0);
	cr_assert_eq(s.calls, 0);
	cr_assert_eq(res->ai_family, AF_INET);
	cr_assert_eq(ntohs(((struct sockaddr_in *)res->ai_addr)->sin_port), 80);
	freeaddrinfo(res);
}

Test(sock_resolve, a_name_that_does_not_resolve_is_asked_until_the_deadline_and_said_once, .timeout = 60)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = (void *)1;
	struct said s = { 0 };
	int gai = 0;

	cr_assert_eq(sock_resolve("no-such-host.invalid", "80", &hints, sock_deadline_in(0.3), waiting, &s, &res,
				  &gai), -ETIMEDOUT);
	cr_assert_null(res);
	cr_assert(sock_gai_may_mend(gai), "%s", gai_strerror(gai));
	cr_assert_eq(s.calls, 1);
	cr_assert_eq(s.gai, gai);
}

Test(sock_resolve, a_past_deadline_still_asks_once, .timeout = 60)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	struct said s = { 0 };
	int gai = -1;

	cr_assert_eq(sock_resolve("::1", "80", &hints, 0, NULL, NULL, &res, &gai), 0);
	cr_assert_eq(res->ai_family, AF_INET6);
	freeaddrinfo(res);
	cr_assert_eq(sock_resolve("no-such-host.invalid", "80", &hints, 0, waiting, &s, &res, &gai), -ETIMEDOUT);
	cr_assert_eq(s.calls, 0, "a deadline past at the call has nothing to wait for");
}

Test(sock_resolve, answers_no_retry_mends_end_at_once, .timeout = 60)
{
	struct addrinfo numeric = { .ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM };
	struct addrinfo badsvc = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct said s = { 0 };
	struct addrinfo *res;
	int gai = 0;

	/* AI_NUMERICHOST: "not an address" is final, whatever the deadline */
	cr_assert_eq(sock_resolve("10.9.8.300", "80", &numeric, SOCK_NO_DEADLINE, waiting, &s, &res, &gai),
		     -EINVAL);
	cr_assert_eq(gai, EAI_NONAME);
	cr_assert_eq(s.calls, 0);
	cr_assert_eq(sock_resolve("127.0.0.1", "http-ish", &badsvc, SOCK_NO_DEADLINE, waiting, &s, &res, &gai),
		     -EINVAL);
	cr_assert_eq(gai, EAI_NONAME, "%s", gai_strerror(gai));
	cr_assert_eq(s.calls, 0);
}

Test(sock_resolve, which_answers_may_mend)
{
	cr_assert(sock_gai_may_mend(EAI_NONAME));
	cr_assert(sock_gai_may_mend(EAI_AGAIN));
	cr_assert(sock_gai_may_mend(EAI_FAIL));
	cr_assert(sock_gai_may_mend(EAI_NODATA));
	cr_assert(!sock_gai_may_mend(EAI_SERVICE));
	cr_assert(!sock_gai_may_mend(EAI_FAMILY));
	cr_assert(!sock_gai_may_mend(EAI_MEMORY));
	cr_assert(!sock_gai_may_mend(0));
}

/* sock_backoff: the pause doubles up to its cap, and each is jittered
 * between half and all of it, so that processes started together spread
 * out; every value of the random word stays in range. */
Test(sock_backoff, doubles_to_the_cap_with_jitter_in_range)
{
	static const uint64_t rnd[] = { 0, 1, 2, 12345, UINT64_MAX / 3, UINT64_MAX - 1, UINT64_MAX };
	int64_t p = 5, expect[] = { 5, 10, 20, 40, 80, 100, 100, 100 };

	for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
		int64_t before = p;
		int64_t got = sock_backoff(&p, 100, rnd[i % 7]);

		cr_assert_eq(before, expect[i], "try %zu: pause %lld", i, (long long)before);
		cr_assert(got >= before / 2 && got <= before, "try %zu: %lld outside [%lld, %lld]", i,
			  (long long)got, (long long)before / 2, (long long)before);
	}
	/* the jitter spreads: rnd picks anywhere in [half, all] */
	p = 100;
	cr_assert_eq(sock_backoff(&p, 100, 0), 50);
	p = 100;
	cr_assert_eq(sock_backoff(&p, 100, 50), 100);
	p = 100;
	cr_assert_eq(sock_backoff(&p, 100, 51), 50);
	/* a pause above the cap is the cap */
	p = 1000;
	cr_assert_leq(sock_backoff(&p, 100, 7), 100);
	cr_assert_eq(p, 100);
}
