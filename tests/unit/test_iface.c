// SPDX-License-Identifier: MIT
/* Choosing the interface that reaches the chief.  iface_for_peer reads the
 * machine's own interfaces and routes, so the inputs are made: in a network
 * namespace of its own (root, veth), two interfaces with known addresses
 * and routes; elsewhere the loopback and this machine's own addresses. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "iface.h"
#include "leak_check.h"

/* iface_for_peer(host) must give want_rc and, when 0, the name want;
 * else a reason naming the host.  NULL when so, or what went wrong. */
static const char *check(const char *host, int want_rc, const char *want, const char *reason_has)
{
	static char what[512];
	char name[IF_NAMESIZE] = "", err[256] = "";
	int rc = iface_for_peer(host, 0, NULL, NULL, name, sizeof(name), err, sizeof(err));

	if (rc != want_rc)
		snprintf(what, sizeof(what), "%s: got %d (%s, '%s'), want %d", host, rc, name, err, want_rc);
	else if (rc == 0 && strcmp(name, want) != 0)
		snprintf(what, sizeof(what), "%s: got '%s', want '%s'", host, name, want);
	else if (rc < 0 && (!strstr(err, host) || !strstr(err, reason_has) || strchr(err, '\n')))
		snprintf(what, sizeof(what), "%s: the reason '%s' does not name the host and '%s' in one line",
			 host, err, reason_has);
	else
		return NULL;
	return what;
}

static bool has_addr(const char *ifname, int family)
{
	struct ifaddrs *ifs;
	bool found = false;

	if (getifaddrs(&ifs) < 0)
		return false;
	for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == family && !strcmp(i->ifa_name, ifname))
			found = true;
	freeifaddrs(ifs);
	return found;
}

static bool resolves_to_loopback(const char *name)
{
	struct addrinfo hints = { .ai_family = AF_INET, }, *res;
	bool lo;

	if (getaddrinfo(name, NULL, &hints, &res) != 0)
		return false;
	lo = ((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
	freeaddrinfo(res);
	return lo;
}

LEAK_TEST(iface, loopback_addresses_give_the_loopback)
{
	const char *e;

	cr_assert_null(e = check("127.0.0.1", 0, "lo", NULL), "%s", e);
	/* not an address of lo's, but routed through it */
	cr_assert_null(e = check("127.0.0.2", 0, "lo", NULL), "%s", e);
	/* by name, where the machine's /etc/hosts has it */
	if (resolves_to_loopback("localhost"))
		cr_assert_null(e = check("localhost", 0, "lo", NULL), "%s", e);
	if (has_addr("lo", AF_INET6))
		cr_assert_null(e = check("::1", 0, "lo", NULL), "%s", e);
}

/* Each address this machine holds (not link-local: those need a scope)
 * names the interface holding it, not the loopback the kernel would route
 * it through. */
LEAK_TEST(iface, each_own_address_gives_its_own_interface)
{
	struct ifaddrs *ifs;
	int seen = 0;

	cr_assert_eq(getifaddrs(&ifs), 0);
	for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
		char host[NI_MAXHOST];
		const char *e;
		int fam = i->ifa_addr ? i->ifa_addr->sa_family : AF_UNSPEC;
		socklen_t sl = fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);

		if (fam != AF_INET && fam != AF_INET6)
			continue;
		if (fam == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
			continue;
		cr_assert_eq(getnameinfo(i->ifa_addr, sl, host, sizeof(host), NULL, 0, NI_NUMERICHOST), 0);
		e = check(host, 0, i->ifa_name, NULL);
		cr_assert_null(e, "%s", e);
		seen++;
	}
	freeifaddrs(ifs);
	cr_assert_gt(seen, 0, "not even the loopback has an address");
}

LEAK_TEST(iface, exists_only_for_interfaces_that_exist)
{
	char big[64];

	cr_assert_eq(iface_exists("lo"), 0);
	cr_assert_eq(iface_exists("no-such-if0"), -ENODEV);
	cr_assert_eq(iface_exists(""), -ENODEV);
	memset(big, 'l', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_assert_eq(iface_exists(big), -ENODEV, "longer than IFNAMSIZ");
}

/* ---- a made network: its own namespace ---- */

static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* In a child with a network namespace of its own: lo up; fake0 (10.9.8.7/24,
 * fd00:9::7/64) and fake2 (10.7.0.1/16) each one end of a veth pair.  Each
 * failed check is written to fd; exits 0 when all held, 1 when some did
 * not, 77 when the namespace cannot be made. */
static void made_network_checks(int fd)
{
	static const struct { const char *host; int rc; const char *name, *reason; } before[] = {
		{ "10.9.8.7", 0, "fake0", NULL },          /* holds it: not lo, where it routes */
		{ "10.9.8.20", 0, "fake0", NULL },         /* its subnet: the route says fake0 */
		{ "10.7.200.1", 0, "fake2", NULL },
		{ "fd00:9::7", 0, "fake0", NULL },
		{ "fd00:9::99", 0, "fake0", NULL },
		{ "127.0.0.1", 0, "lo", NULL },
		{ "::1", 0, "lo", NULL },
		/* no default route yet */
		{ "198.51.100.1", -ENETUNREACH, NULL, "--iface" },
		{ "2001:db8::1", -ENETUNREACH, NULL, "--iface" },
		/* no DNS in here: nothing resolves but numbers and /etc/hosts */
		{ "no-such-host.invalid", -EHOSTUNREACH, NULL, "cannot resolve" },
		{ "10.9.8.300", -EHOSTUNREACH, NULL, "cannot resolve" },
	};
	const char *e;
	int bad = 0;

	if (unshare(CLONE_NEWNET) < 0)
		_exit(77);
	if (sh("exec >/dev/null 2>&1; ip link set lo up && "
	       "ip link add fake0 type veth peer name fake1 && ip link add fake2 type veth peer name fake3 && "
	       "ip addr add 10.9.8.7/24 dev fake0 && ip addr add fd00:9::7/64 dev fake0 nodad && "
	       "ip addr add 10.7.0.1/16 dev fake2 && "
	       "for i in fake0 fake1 fake2 fake3; do ip link set $i up || exit 1; done") != 0)
		_exit(77);
	for (size_t i = 0; i < sizeof(before) / sizeof(before[0]); i++) {
		e = check(before[i].host, before[i].rc, before[i].name, before[i].reason);

		if (e) {
			dprintf(fd, "%s\n", e);
			bad = 1;
		}
	}
	/* a default route: everything else goes through fake2 */
	if (sh("ip route add default via 10.7.0.254 dev fake2") != 0) {
		dprintf(fd, "cannot add a default route\n");
		_exit(1);
	}
	e = check("198.51.100.1", 0, "fake2", NULL);
	if (e) {
		dprintf(fd, "%s\n", e);
		bad = 1;
	}
	_exit(bad);
}

LEAK_TEST_OPTS(iface, a_made_network_gives_the_holder_then_the_route_then_a_reason, .timeout = 30)
{
	char out[4096] = "";
	int p[2], status;
	ssize_t n, have = 0;
	pid_t pid;

	if (geteuid() != 0)
		cr_skip_test("needs root for a network namespace of its own");
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		made_network_checks(p[1]);
	}
	close(p[1]);
	while ((n = read(p[0], out + have, sizeof(out) - 1 - (size_t)have)) > 0)
		have += n;
	close(p[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "the checks died: status %#x", status);
	if (WEXITSTATUS(status) == 77)
		cr_skip_test("cannot make a network namespace with veth interfaces here (needs ip, iproute2)");
	cr_assert_eq(WEXITSTATUS(status), 0, "%s", out);
}
