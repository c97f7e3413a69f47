// SPDX-License-Identifier: MIT
/* Slurm's hostlist syntax (SLURM_JOB_NODELIST) through hostlist_parse.
 * Input: the list.  Checked: on success 1..CI_MAX_NODES names, each
 * non-empty, at most 253 bytes of printable ASCII other than , [ and ];
 * on failure one non-empty line naming the list and no array. */
#include <errno.h>
#include <string.h>

#include "cluster_info.h"
#include "fuzz.h"
#include "hostlist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), err[512] = "", **hosts = (char **)1;
	int n = -1, r;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	r = hostlist_parse("SLURM_JOB_NODELIST", s, &hosts, &n, err, sizeof(err));
	if (r == 0) {
		FUZZ_CHECK(hosts && n >= 1 && n <= CI_MAX_NODES);
		for (int i = 0; i < n; i++) {
			size_t len = strlen(hosts[i]);

			FUZZ_CHECK(len >= 1 && len <= 253);
			for (size_t k = 0; k < len; k++)
				FUZZ_CHECK((unsigned char)hosts[i][k] > 0x20 && (unsigned char)hosts[i][k] < 0x7f &&
					   !strchr(",[]", hosts[i][k]));
			free(hosts[i]);
		}
		free(hosts);
	} else {
		FUZZ_CHECK(r == -EINVAL || r == -ENOMEM);
		FUZZ_CHECK(hosts == NULL);
		FUZZ_CHECK(err[0] != '\0' && !strchr(err, '\n'));
		FUZZ_CHECK(r == -ENOMEM || strstr(err, "SLURM_JOB_NODELIST"));
	}
	free(s);
	return 0;
}
