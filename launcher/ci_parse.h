// SPDX-License-Identifier: MIT
/* Parsing helpers shared by the ClusterInfo sources (ci_*.c), so that
 * every source words its values and its errors alike (the hostlist parser
 * below them shares ci_util.h).  Internal to the launcher.
 *
 * Every parse_* helper takes the value as the source found it (NULL: absent,
 * which is not an error and leaves out unset), and on success fills out with
 * the value and the words that name it in later messages ("--node-rank '5'").
 * Errors: -EINVAL with one line in c->err naming the value and what was
 * expected, or -ENOMEM with "out of memory". */
#ifndef SLOTRUN_CI_PARSE_H
#define SLOTRUN_CI_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "ci_util.h"
#include "cluster_info.h"

#define CI_IFACE_MAX 15     /* IFNAMSIZ - 1 */
#define CI_WHAT_MAX 320     /* "SLURM_JOB_NODELIST 'gpu[01-04,07],...'" */

/* What a source reads from and where its one error line goes. */
struct ci_ctx {
	const struct ci_env *env;
	const struct ci_flags *flags;   /* NULL: no flags were given */
	char *err;
	size_t errlen;
};

/* Every rejection goes through here: one line in err, -EINVAL. */
int ci_fail(struct ci_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "out of memory" in err, -ENOMEM. */
int ci_oom(struct ci_ctx *c);

/* printf into a CI_WHAT_MAX buffer: the words that name a value. */
void ci_name_it(char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The variable name from the source's environment, NULL when unset. */
const char *ci_get(struct ci_ctx *c, const char *name);

/* ---- values as one source gives them ---- */

struct ci_num {
	bool set;
	long v;
	long lo;                   /* a node count's MIN (elastic MIN:MAX, v the MAX);
	                            * v for every other number */
	char what[CI_WHAT_MAX];    /* "--node-rank '5'", "rendezvous.json container_rank 5" */
};

struct ci_strlist {
	bool set;
	char **v;
	int n;
	char what[CI_WHAT_MAX];
};

struct ci_slotspec {
	bool set;
	bool per_node;          /* one count per node; else v[0] for every node */
	int *v;
	int n;
	char what[CI_WHAT_MAX];
};

struct ci_str {
	bool set;
	char *v;
	char what[CI_WHAT_MAX];
};

/* An integer in [min, max]. */
int ci_parse_num(struct ci_ctx *c, struct ci_num *out, const char *name, const char *s,
		 long min, long max);

/* A name a resolver or a socket call could take: printable ASCII without
 * blanks or '?' (CI_ADDR_UNKNOWN), at most CI_HOST_MAX bytes, not an option
 * look-alike. */
bool ci_host_ok(const char *h, size_t len);

/* One host name or address (the chief's). */
int ci_parse_host(struct ci_ctx *c, struct ci_str *out, const char *name, const char *s);

/* A node count as torchrun takes it: "N", or an elastic range "MIN:MAX"
 * (1 <= MIN <= MAX; "N:N" is N).  out->v is the count (MAX), out->lo MIN. */
int ci_parse_nnodes(struct ci_ctx *c, struct ci_num *out, const char *name, const char *s);

/* A network interface name as the kernel accepts it. */
int ci_parse_iface(struct ci_ctx *c, struct ci_str *out, const char *name, const char *s);

/* A comma list of at most max entries, each of which ok() accepts; how an
 * entry fails is said by complaint (" is not ...", or ": expected ...").
 * Blanks around entries are forgiven ("a, b" from a shell); empty entries
 * are not.  s must not be NULL. */
int ci_parse_list(struct ci_ctx *c, struct ci_strlist *out, const char *name, const char *s,
		  int max, bool (*ok)(const char *), const char *complaint);

/* A comma list of host names or addresses, chief first; with a '[' a Slurm
 * hostlist ("node[01-04]", "trainer-[0-3].svc"). */
int ci_parse_addrs(struct ci_ctx *c, struct ci_strlist *out, const char *name, const char *s);

/* "N" (every node has N slots) or "N0,N1,..." (one count per node). */
int ci_parse_slots(struct ci_ctx *c, struct ci_slotspec *out, const char *name, const char *s);

/* torchrun's --nproc-per-node: a count as ci_parse_slots takes it, or
 * "auto"/"gpu", which leave out unset (the default: visible GPUs, else 1).
 * "cpu" (one worker per CPU) is refused with the fix. */
int ci_parse_nproc(struct ci_ctx *c, struct ci_slotspec *out, const char *name, const char *s);

/* Rejects a GPU named twice: two slots on one device is never what a
 * scheduler meant. */
int ci_check_unique(struct ci_ctx *c, const struct ci_strlist *g);

/* A GPU index as schedulers write it: a decimal in 0..INT32_MAX. */
bool ci_gpu_index_ok(const char *s);

#endif
