// SPDX-License-Identifier: MIT
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_info.h"
#include "hostlist.h"
#include "leak_check.h"

/* Arrays, not pointers: Criterion hands parameters to a test running in
 * another process, where only cr_malloc'd pointers would be valid. */
struct hl_case {
	char in[320];
	char want[96];       /* names joined by ' ', or the error's words */
};

static void join(char **hosts, int n, char *out, size_t len)
{
	out[0] = '\0';
	for (int i = 0; i < n; i++)
		snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? " " : "", hosts[i]);
}

TestSuite(hostlist);

ParameterizedTestParameters(hostlist, expands)
{
	static struct hl_case cases[] = {
		{ "gpu[01-04,07],cpu-a[1-2]", "gpu01 gpu02 gpu03 gpu04 gpu07 cpu-a1 cpu-a2" },
		{ "node1", "node1" },
		{ "a,b,c", "a b c" },
		{ "r[1-2]n[01-02]", "r1n01 r1n02 r2n01 r2n02" },
		{ "a[1-2]b[3]c[5-6]d", "a1b3c5d a1b3c6d a2b3c5d a2b3c6d" },
		{ "n[8-10]", "n8 n9 n10" },
		{ "n[08-10]", "n08 n09 n10" },
		{ "n[098-101]", "n098 n099 n100 n101" },
		{ "n[007]", "n007" },
		{ "x[3,1]", "x3 x1" },
		{ "[1-3]", "1 2 3" },
		{ "gpu[1-2]-ib", "gpu1-ib gpu2-ib" },
		{ "10.0.0.[1-3]", "10.0.0.1 10.0.0.2 10.0.0.3" },
		{ "n[0-1],m,k[5]", "n0 n1 m k5" },
		{ "rack[1-2]-node[1,3]", "rack1-node1 rack1-node3 rack2-node1 rack2-node3" },
		{ "n[0-0]", "n0" },
		{ "n[999999999]", "n999999999" },
	};
	return cr_make_param_array(struct hl_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct hl_case *tc, hostlist, expands)
{
	char **hosts = NULL, err[256] = "", got[512];
	int n = -1;

	cr_assert_eq(hostlist_parse("hostlist", tc->in, &hosts, &n, err, sizeof(err)), 0, "'%s': %s",
		     tc->in, err);
	join(hosts, n, got, sizeof(got));
	cr_assert_str_eq(got, tc->want, "'%s'", tc->in);
	for (int i = 0; i < n; i++)
		free(hosts[i]);
	free(hosts);
	leak_check();
}

ParameterizedTestParameters(hostlist, rejects)
{
	static struct hl_case cases[] = {
		{ "gpu[01-", "'gpu[01-': unclosed '['" },
		{ "n[1-2", "unclosed '['" },
		{ "", "hostlist '': empty host list" },
		{ "a,,b", "empty host name" },
		{ "a,", "empty host name" },
		{ ",a", "empty host name" },
		{ "n[5-3]", "reversed range '5-3'" },
		{ "n[]", "empty '[]'" },
		{ "n[1-]", "expected numbers or ranges" },
		{ "n[-3]", "expected numbers or ranges" },
		{ "n[a]", "expected numbers or ranges" },
		{ "n[1,]", "expected numbers or ranges" },
		{ "n[1 ]", "expected numbers or ranges" },
		{ "n[1-2-3]", "expected numbers or ranges" },
		{ "n[1234567890]", "expected numbers or ranges" },
		{ "n1-2]", "']' without '['" },
		{ "n[1[2]]", "'[' inside '[...]'" },
		{ "n[0-65536]", "expands to more than 65536 hosts" },
		{ "a[0-300]b[0-300]", "expands to more than 65536 hosts" },
		{ "n[1-40000],m[1-40000]", "expands to more than 65536 hosts" },
		{ "n[0-999999999]", "expands to more than 65536 hosts" },
		{ "bad host", "unexpected character ' '" },
		{ "a\tb", "unexpected character '\\x09'" },
		{ "a;b\n", "unexpected character '\\x0a'" },
		{ "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		  "xxxxxxxxxx[1-10]", "longer than 253" },
	};
	return cr_make_param_array(struct hl_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct hl_case *tc, hostlist, rejects)
{
	char **hosts = (char **)1, err[512] = "";
	int n = -1;

	cr_assert_eq(hostlist_parse("hostlist", tc->in, &hosts, &n, err, sizeof(err)), -EINVAL,
		     "'%s' was accepted", tc->in);
	cr_assert_null(hosts);
	cr_assert_eq(n, 0);
	cr_assert_not_null(strstr(err, tc->want), "'%s': message '%s' lacks '%s'", tc->in, err,
			   tc->want);
	cr_assert_null(strchr(err, '\n'));
	leak_check();
}

LEAK_TEST(hostlist, largest_allowed)
{
	char **hosts = NULL, err[256] = "";
	int n = 0;

	cr_assert_eq(hostlist_parse("hostlist", "n[00001-65536]", &hosts, &n, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(n, CI_MAX_NODES);
	cr_assert_str_eq(hosts[0], "n00001");
	cr_assert_str_eq(hosts[n - 1], "n65536");
	for (int i = 0; i < n; i++)
		free(hosts[i]);
	free(hosts);
}

LEAK_TEST(hostlist, name_length_limit)
{
	char in[300], **hosts = NULL, err[512] = "";
	int n = 0;

	memset(in, 'x', 251);
	strcpy(in + 251, "[9-10]");    /* longest name: 253 */
	cr_assert_eq(hostlist_parse("hostlist", in, &hosts, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(strlen(hosts[1]), 253);
	for (int i = 0; i < n; i++)
		free(hosts[i]);
	free(hosts);
	strcpy(in + 251, "[09-10]x");
	cr_assert_eq(hostlist_parse("hostlist", in, &hosts, &n, err, sizeof(err)), -EINVAL);
	cr_assert_not_null(strstr(err, "longer than 253"), "%s", err);
}

LEAK_TEST(hostlist, null_is_empty)
{
	char **hosts = NULL, err[256] = "";
	int n = 0;

	cr_assert_eq(hostlist_parse("hostlist", NULL, &hosts, &n, err, sizeof(err)), -EINVAL);
	cr_assert_not_null(strstr(err, "empty host list"));
}

LEAK_TEST(hostlist, the_label_names_the_list)
{
	char **hosts = NULL, err[256] = "";
	int n = 0;

	cr_assert_eq(hostlist_parse("SLURM_JOB_NODELIST", "gpu[01-", &hosts, &n, err, sizeof(err)),
		     -EINVAL);
	cr_assert_str_eq(err, "SLURM_JOB_NODELIST 'gpu[01-': unclosed '['");
}
