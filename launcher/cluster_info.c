/* TEMPORARY STUB — not committed */
#include "cluster_info.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static const char *g(void *c, const char *n) { return getenv(n); }
static char *rf(void *c, const char *p) { errno = ENOENT; return NULL; }
const struct ci_env ci_process_env = { g, rf, NULL };
const char *ci_source_name(enum ci_source s) { return "flag"; }
int ci_load(const struct ci_flags *f, const struct ci_env *env, int vg, struct cluster_info *ci, char *err, size_t errlen)
{
	memset(ci, 0, sizeof(*ci));
	ci->nnodes = 1; ci->slots = f->slots ? atoi(f->slots) : 1;
	if (ci->slots <= 0) { snprintf(err, errlen, "--slots '%s': bad", f->slots); return -EINVAL; }
	ci->addrs = calloc(2, sizeof(char*)); ci->addrs[0] = strdup("127.0.0.1");
	ci->slot_counts = calloc(1, sizeof(int)); ci->slot_counts[0] = ci->slots;
	ci->world_size = ci->slots; ci->master_port = 29400;
	return 0;
}
void ci_free(struct cluster_info *ci) { if (ci->addrs) { free(ci->addrs[0]); free(ci->addrs);} free(ci->slot_counts); }
int ci_parse_hostlist(const char *s, char ***h, int *n, char *e, size_t l) { return -EINVAL; }
