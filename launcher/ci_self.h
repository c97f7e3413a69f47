// SPDX-License-Identifier: MIT
/* Which entry of the node list is this node: the node rank found by
 * matching this node's names and addresses against --addrs (or any other
 * list of the job's nodes), as mpirun and srun users expect.
 *
 * Pure: this node's addresses and names are values (struct ci_me), and
 * entries are looked up through struct ci_lookup, so unit tests give a
 * fake interface list and a fake resolver.  Waiting for names that do not
 * resolve yet is the caller's: ci_self_find answers -EAGAIN then. */
#ifndef SLOTRUN_CI_SELF_H
#define SLOTRUN_CI_SELF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* Addresses an entry may resolve to that are kept (the rest are ignored). */
#define CI_SELF_MAX_ADDRS 16

/* This node: its interfaces' addresses and its names (the host name, its
 * canonical name).  A name matches an entry spelled the same, ignoring
 * case; an address matches an entry that resolves to it.  An entry that
 * resolves to a loopback address (all of 127.0.0.0/8, ::1) matches every
 * node. */
struct ci_me {
	const struct sockaddr_storage *addrs;
	int naddrs;
	const char *const *names;
	int nnames;
};

/* Looks host up once: fills out with at most max addresses and returns
 * how many, or -1 with *gai the resolver's answer (an EAI_* code). */
struct ci_lookup {
	int (*lookup)(void *ctx, const char *host, struct sockaddr_storage *out, int max, int *gai);
	void *ctx;
};

/* What ci_self_find saw. */
struct ci_self {
	int rank;               /* the one entry that is this node */
	bool loopback;          /* an entry resolved to a loopback address: such
	                         * an entry is every node's */
	const char *pending;    /* -EAGAIN: an entry that does not resolve yet */
	int gai;                /* ... and the resolver's answer for it */
};

/* Matches every entry of list (n entries, named by what in messages, e.g.
 * "--addrs 'n[1-4]'") against me.  Returns 0 with out->rank when exactly
 * one entry is this node; -ENOENT when none is, -EEXIST when several are,
 * each with one line in err that names the list, the entries and this node
 * (its first name and addresses) and says to give --node-rank; -EAGAIN
 * when an entry did not resolve with an answer that may change
 * (out->pending, out->gai; err says so): the caller asks again later.  An
 * entry whose lookup fails for good matches nothing. */
int ci_self_find(char *const *list, int n, const char *what, const struct ci_me *me,
		 const struct ci_lookup *lk, struct ci_self *out, char *err, size_t errlen);

/* "host h, addresses 10.0.0.1, fe80::1" into buf: this node in messages. */
void ci_me_describe(const struct ci_me *me, char *buf, size_t len);

#endif
