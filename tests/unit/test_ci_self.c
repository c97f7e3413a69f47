// SPDX-License-Identifier: MIT
/* Finding this node's rank in the node list (ci_self.c), and ci_load asking
 * for it when no source names the rank.  This node's interfaces and the
 * resolver are fakes: tables of values.  iface_find_self, the real thing
 * around them, is checked last with entries whose answers do not depend on
 * the machine's network. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ci_self.h"
#include "cluster_info.h"
#include "iface.h"
#include "leak_check.h"
#include "sock.h"

/* ---- a fake resolver: name -> addresses, or an EAI_* answer ---- */

struct answer {
	const char *host;
	const char *addrs[3];
	int gai;            /* nonzero: the lookup fails with it */
};

static const struct answer *ANSWERS;
static int LOOKUPS;

static void fill(struct sockaddr_storage *ss, const char *text)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(text, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		cr_assert_eq(inet_pton(AF_INET6, text, &s6->sin6_addr), 1, "%s", text);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		cr_assert_eq(inet_pton(AF_INET, text, &s4->sin_addr), 1, "%s", text);
	}
}

static int fake_lookup(void *ctx, const char *host, struct sockaddr_storage *out, int max, int *gai)
{
	struct in6_addr a6;
	struct in_addr a4;

	(void)ctx;
	LOOKUPS++;
	if (inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1) {
		fill(&out[0], host);
		return 1;
	}
	for (const struct answer *a = ANSWERS; a && a->host; a++) {
		int n = 0;

		if (strcmp(a->host, host) != 0)
			continue;
		if (a->gai) {
			*gai = a->gai;
			return -1;
		}
		for (; n < 3 && n < max && a->addrs[n]; n++)
			fill(&out[n], a->addrs[n]);
		return n;
	}
	*gai = EAI_NONAME;
	return -1;
}

static const struct ci_lookup LK = { .lookup = fake_lookup };

/* ---- this node ---- */

static struct sockaddr_storage MY_ADDRS[4];
static struct ci_me ME;
static const char *MY_NAMES[2];

static void me(const char *name, const char *a0, const char *a1, const char *a2)
{
	const char *a[] = { a0, a1, a2 };

	memset(&ME, 0, sizeof(ME));
	MY_NAMES[0] = name;
	ME.names = MY_NAMES;
	ME.nnames = name ? 1 : 0;
	ME.addrs = MY_ADDRS;
	for (int i = 0; i < 3; i++)
		if (a[i])
			fill(&MY_ADDRS[ME.naddrs++], a[i]);
}

static const struct answer CLUSTER[] = {
	{ "n1", { "10.0.0.1" }, 0 },
	{ "n2", { "10.0.0.2", "fd00::2" }, 0 },
	{ "n3", { "10.0.0.3" }, 0 },
	{ "n4", { "10.0.0.4" }, 0 },
	{ "localhost", { "127.0.0.1", "::1" }, 0 },
	{ "late", { NULL }, EAI_AGAIN },
	{ "bad-service", { NULL }, EAI_SERVICE },
	{ NULL, { NULL }, 0 },
};

static char ERR[1024];
static struct ci_self OUT;

static int find(const char *csv)
{
	char *copy = strdup(csv), *list[16], *save = NULL;
	char what[128];
	int n = 0, r;

	cr_assert_not_null(copy);
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		list[n++] = t;
	snprintf(what, sizeof(what), "--addrs '%s'", csv);
	ANSWERS = CLUSTER;
	ERR[0] = '\0';
	r = ci_self_find(list, n, what, &ME, &LK, &OUT, ERR, sizeof(ERR));
	/* pending points into the list: keep what the tests look at */
	if (r == -EAGAIN)
		cr_assert(OUT.pending >= copy && OUT.pending < copy + strlen(csv));
	OUT.pending = OUT.pending ? "set" : NULL;
	free(copy);
	cr_assert_null(strchr(ERR, '\n'), "one line: %s", ERR);
	return r;
}

LEAK_TEST(self, found_by_an_address_of_one_of_its_interfaces)
{
	me("box", "127.0.0.1", "192.168.9.9", "10.0.0.3");
	cr_assert_eq(find("n1,n2,n3,n4"), 0, "%s", ERR);
	cr_assert_eq(OUT.rank, 2);
	cr_assert(!OUT.loopback);
	cr_assert_eq(find("10.0.0.1,10.0.0.3"), 0, "%s", ERR);
	cr_assert_eq(OUT.rank, 1);
}

LEAK_TEST(self, any_of_an_entrys_addresses_counts_ipv6_too)
{
	me("box", "fd00::2", NULL, NULL);
	cr_assert_eq(find("n1,n2,n3"), 0, "%s", ERR);
	cr_assert_eq(OUT.rank, 1);
}

LEAK_TEST(self, an_ipv4_address_written_as_ipv6_is_the_same_address)
{
	me("box", "10.0.0.4", NULL, NULL);
	cr_assert_eq(find("n1,::ffff:10.0.0.4"), 0, "%s", ERR);
	cr_assert_eq(OUT.rank, 1);
}

LEAK_TEST(self, found_by_its_host_name_in_any_case_without_a_lookup)
{
	me("Node-7", "192.168.9.9", NULL, NULL);
	LOOKUPS = 0;
	cr_assert_eq(find("node-7,n1"), 0, "%s", ERR);
	cr_assert_eq(OUT.rank, 0);
	cr_assert_eq(LOOKUPS, 1, "only n1 is looked up, got %d lookups", LOOKUPS);
}

LEAK_TEST(self, a_node_not_in_the_list_is_named_with_the_list)
{
	me("box", "192.168.9.9", "10.1.1.1", NULL);
	cr_assert_eq(find("n1,n2,n3"), -ENOENT);
	cr_assert(strstr(ERR, "this node is not in --addrs 'n1,n2,n3'"), "%s", ERR);
	cr_assert(strstr(ERR, "host box, addresses 192.168.9.9, 10.1.1.1"), "%s", ERR);
	cr_assert(strstr(ERR, "--node-rank"), "%s", ERR);
}

LEAK_TEST(self, a_node_listed_twice_is_named_with_both_entries)
{
	me("box", "10.0.0.2", NULL, NULL);
	cr_assert_eq(find("n1,n2,n3,10.0.0.2"), -EEXIST);
	cr_assert(strstr(ERR, "--addrs 'n1,n2,n3,10.0.0.2' names this node more than once, as entries "
			      "1 'n2' and 3 '10.0.0.2'"), "%s", ERR);
	cr_assert(strstr(ERR, "host box, address 10.0.0.2"), "%s", ERR);
	cr_assert(strstr(ERR, "--node-rank"), "%s", ERR);
}

LEAK_TEST(self, loopback_entries_are_every_nodes_and_are_said)
{
	me("box", "127.0.0.1", "10.0.0.9", NULL);
	cr_assert_eq(find("localhost,localhost"), -EEXIST);
	cr_assert(OUT.loopback);
	cr_assert_eq(find("n1,localhost"), 0, "%s", ERR);
	cr_assert(OUT.loopback && OUT.rank == 1);
	/* on no interface's list, but this machine all the same */
	cr_assert_eq(find("127.0.0.1,127.0.0.2"), -EEXIST);
	cr_assert(strstr(ERR, "entries 0 '127.0.0.1' and 1 '127.0.0.2'"), "%s", ERR);
}

LEAK_TEST(self, a_name_that_does_not_resolve_yet_asks_for_another_try)
{
	me("box", "10.0.0.1", NULL, NULL);
	cr_assert_eq(find("n1,late,n3"), -EAGAIN);
	cr_assert_not_null(OUT.pending);
	cr_assert_eq(OUT.gai, EAI_AGAIN);
	cr_assert(strstr(ERR, "cannot resolve 'late' (an entry of --addrs 'n1,late,n3')"), "%s", ERR);
	cr_assert(strstr(ERR, gai_strerror(EAI_AGAIN)), "%s", ERR);
	cr_assert_eq(find("n1,unknown-yet"), -EAGAIN, "EAI_NONAME may mend: %s", ERR);
}

LEAK_TEST(self, a_lookup_that_fails_for_good_matches_nothing)
{
	me("box", "10.0.0.3", NULL, NULL);
	cr_assert_eq(find("bad-service,n3"), 0, "%s", ERR);
	cr_assert_eq(OUT.rank, 1);
}

LEAK_TEST(self, a_node_without_addresses_or_names_is_described_so)
{
	char buf[128];

	me(NULL, NULL, NULL, NULL);
	ci_me_describe(&ME, buf, sizeof(buf));
	cr_assert_str_eq(buf, "host ?, addresses none");
	cr_assert_eq(find("n1"), -ENOENT);
}

/* ---- ci_load asks env.self_rank when no source names the rank ---- */

struct asked {
	int calls;
	int n;
	char list[256];
	char what[128];
	int rank;
	int fail;           /* -errno: self_rank fails with it */
	const char *env_addrs;  /* SLOTRUN_ADDRS */
};

static const char *no_env(void *ctx, const char *name)
{
	struct asked *a = ctx;

	return a && strcmp(name, "SLOTRUN_ADDRS") == 0 ? a->env_addrs : NULL;
}

static char *no_file(void *ctx, const char *path)
{
	(void)ctx;
	(void)path;
	errno = ENOENT;
	return NULL;
}

static int fake_self_rank(void *ctx, char *const *addrs, int n, const char *what, int *rank, char *err,
			  size_t errlen)
{
	struct asked *a = ctx;
	size_t o = 0;

	a->calls++;
	a->n = n;
	for (int i = 0; i < n; i++)
		o += (size_t)snprintf(a->list + o, sizeof(a->list) - o, "%s%s", i ? "," : "", addrs[i]);
	snprintf(a->what, sizeof(a->what), "%s", what);
	if (a->fail) {
		snprintf(err, errlen, "this node is not in %s", what);
		return a->fail;
	}
	*rank = a->rank;
	return 0;
}

static int load(struct asked *a, const struct ci_flags *fl, struct cluster_info *ci, char *err, size_t len)
{
	struct ci_env env = { .getenv = no_env, .read_file = no_file, .ctx = a };

	if (a)
		env.self_rank = fake_self_rank;
	return ci_load(fl, &env, 0, ci, err, len);
}

LEAK_TEST(self_load, the_rank_is_the_nodes_place_in_addrs)
{
	struct asked a = { .rank = 2 };
	struct ci_flags fl = { .addrs = "n[1-4]", .slots = "1,2,3,4" };
	struct cluster_info ci;
	char err[512];

	cr_assert_eq(load(&a, &fl, &ci, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(a.calls, 1);
	cr_assert_str_eq(a.list, "n1,n2,n3,n4");
	cr_assert_str_eq(a.what, "--addrs 'n[1-4]'");
	cr_assert_eq(ci.node_rank, 2);
	cr_assert_eq(ci.src_node_rank, CI_SRC_SELF);
	cr_assert_str_eq(ci_source_name(ci.src_node_rank), "self");
	cr_assert_eq(ci.slots, 3);
	cr_assert_eq(ci.rank_base, 3);
	cr_assert_eq(ci.world_size, 10);
	ci_free(&ci);
}

LEAK_TEST(self_load, the_chief_address_that_wins_is_entry_0)
{
	struct asked a = { .rank = 1, .env_addrs = "x,b,c" };
	struct ci_flags fl = { .master_addr = "a" };
	struct cluster_info ci;
	char err[512];

	cr_assert_eq(load(&a, &fl, &ci, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(a.list, "a,b,c");
	cr_assert_str_eq(a.what, "SLOTRUN_ADDRS 'x,b,c'");
	cr_assert_eq(ci.node_rank, 1);
	cr_assert_str_eq(ci.addrs[0], "a");
	ci_free(&ci);
}

LEAK_TEST(self_load, a_given_rank_is_not_searched)
{
	struct asked a = { .rank = 1 };
	struct ci_flags fl = { .addrs = "a,b", .node_rank = "0" };
	struct cluster_info ci;
	char err[512];

	cr_assert_eq(load(&a, &fl, &ci, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(a.calls, 0);
	cr_assert_eq(ci.node_rank, 0);
	cr_assert_eq(ci.src_node_rank, CI_SRC_FLAG);
	ci_free(&ci);
}

LEAK_TEST(self_load, one_node_is_not_searched)
{
	struct asked a = { .rank = 1 };
	struct ci_flags fl = { .addrs = "a" };
	struct cluster_info ci;
	char err[512];

	cr_assert_eq(load(&a, &fl, &ci, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(a.calls, 0);
	cr_assert_eq(ci.node_rank, 0);
	ci_free(&ci);
}

LEAK_TEST(self_load, its_error_is_ci_loads_and_nothing_is_left)
{
	struct asked a = { .fail = -ENOENT };
	struct ci_flags fl = { .addrs = "a,b,c" };
	struct cluster_info ci;
	char err[512];

	cr_assert_eq(load(&a, &fl, &ci, err, sizeof(err)), -ENOENT);
	cr_assert_str_eq(err, "this node is not in --addrs 'a,b,c'");
	cr_assert_eq(ci.addrs, NULL);
	cr_assert_eq(ci.nnodes, 0);
}

LEAK_TEST(self_load, without_a_list_or_a_way_to_look_the_rank_is_missing)
{
	struct ci_flags fl = { .addrs = "a,b" }, chief = { .nnodes = "2", .master_addr = "a" };
	struct asked a = { .rank = 1 };
	struct cluster_info ci;
	char err[512];

	cr_assert_eq(load(NULL, &fl, &ci, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "no source names this node's rank"), "%s", err);
	cr_assert_eq(load(&a, &chief, &ci, err, sizeof(err)), -EINVAL);
	cr_assert_eq(a.calls, 0, "the chief's address alone gives no places");
	cr_assert(strstr(err, "no source names this node's rank"), "%s", err);
}

/* ---- iface_find_self: the real interfaces and resolver, the wait ---- */

struct waited {
	int calls;
	char entry[64];
};

static void on_wait(void *arg, const char *entry, int gai)
{
	struct waited *w = arg;

	(void)gai;
	w->calls++;
	snprintf(w->entry, sizeof(w->entry), "%s", entry);
}

/* Every machine has 127.0.0.1 on its loopback; TEST-NET-3 (RFC 5737) is
 * nobody's. */
Test(iface_find_self, the_loopback_entry_is_this_machine_and_said_to_be_loopback, .timeout = 60)
{
	char *list[] = { "203.0.113.7", "127.0.0.1" };
	struct iface_me m;
	struct ci_self out;
	char err[512];

	cr_assert_eq(iface_me_load(&m), 0);
	cr_assert_eq(iface_find_self(&m, list, 2, "the list", sock_deadline_in(10), NULL, NULL, &out, err,
				     sizeof(err)), 0, "%s", err);
	cr_assert_eq(out.rank, 1);
	cr_assert(out.loopback);
	iface_me_free(&m);
}

/* .invalid (RFC 6761) never resolves: asked again until the deadline, the
 * wait said once. */
Test(iface_find_self, a_name_that_never_resolves_ends_at_the_deadline_said_once, .timeout = 60)
{
	char *list[] = { "127.0.0.1", "no-such-node.invalid" };
	struct waited w = { 0 };
	struct iface_me m;
	struct ci_self out;
	char err[512];

	cr_assert_eq(iface_me_load(&m), 0);
	cr_assert_eq(iface_find_self(&m, list, 2, "the list", sock_deadline_in(0.3), on_wait, &w, &out, err,
				     sizeof(err)), -ETIMEDOUT);
	cr_assert_eq(w.calls, 1);
	cr_assert_str_eq(w.entry, "no-such-node.invalid");
	cr_assert(strstr(err, "cannot resolve 'no-such-node.invalid' (an entry of the list)"), "%s", err);
	/* a deadline already past: one try, no wait said */
	w.calls = 0;
	cr_assert_eq(iface_find_self(&m, list, 2, "the list", 0, on_wait, &w, &out, err, sizeof(err)),
		     -ETIMEDOUT);
	cr_assert_eq(w.calls, 0);
	iface_me_free(&m);
}
