// SPDX-License-Identifier: MIT
/* The shared-memory transport (shm.c) and the hierarchical one (hier.c)
 * that puts it together with the TCP ring across nodes.  Internal to the
 * comm library; comm.c drives the setup.
 *
 * "Same node" (docs/comm.md): the same kernel (boot id) and the same network
 * namespace, since the segment travels over an abstract Unix socket, which
 * lives in a network namespace -- not the same host name, which containers
 * and network namespaces repeat.  The setup then proves the segment is
 * really shared: the leader's random cookie must be read through every
 * member's mapping, and every member's answer through the leader's.
 *
 * Setup, inside slotcomm_init:
 *   shm_info_fill   every rank: its node key, a listening abstract socket
 *                   and a random token, to be exchanged in the rendezvous
 *                   (shm_info_to_node, the table's struct frame_node)
 *   shm_attach      the ranks of each node: the leader (lowest rank) makes
 *                   the segment (memfd), hands it over the socket
 *                   (SCM_RIGHTS) to each member that proves its token, and
 *                   both sides check the probe.  No name ever exists in
 *                   /dev/shm or anywhere else: the memory goes away with
 *                   the last process that maps it, however they all end.
 *   shm_free        what a communicator holds (slotcomm_destroy; also after a
 *                   failed setup) */
#ifndef SLOTRUN_SHM_H
#define SLOTRUN_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "comm_internal.h"
#include "transport.h"

#define SHM_KEY_MAX 96
#define SHM_SOCK_MAX 44
#define SHM_TOKEN_LEN FRAME_NODE_ID_LEN

/* What each rank tells the others (in the rendezvous's table).  The key is
 * the hex digest of the node's identity, the socket "slotrun-" and the hex
 * of 16 random bytes: what struct frame_node carries in 49 bytes. */
struct shm_info {
	char transport;               /* SLOTRUN_TRANSPORT asked: 'a'uto, 't'cp, 's'hm */
	char key[SHM_KEY_MAX];        /* "<boot id>/<net namespace inode>", "" if unknown */
	char sock[SHM_SOCK_MAX];      /* abstract socket name, "" when none */
	uint8_t token[SHM_TOKEN_LEN]; /* proves a member to its leader */
};

/* This machine's node key into buf: "" when the boot id or the network
 * namespace cannot be read (such a rank shares memory with nobody). */
void shm_node_key(char *buf, size_t len);

/* Fills mine (key, token) and, unless SLOTRUN_TRANSPORT=tcp, starts
 * listening on a fresh abstract socket.  Never fails: without a socket the
 * name stays empty, and shm_attach says why. */
void shm_info_fill(struct slotcomm *c, struct shm_info *mine);

/* An shm_info as the rendezvous carries it, and back (a peer's bytes
 * become hex: nothing it sends is a string of its own). */
void shm_info_to_node(const struct shm_info *in, struct frame_node *out);
void shm_info_from_node(const struct frame_node *in, struct shm_info *out);

/* Sets up this rank's node (all[] from every rank, slotcomm_allgather'd):
 * c->shm for a node of two or more ranks.  0 on success; a negative errno
 * with the reason in why (one line, naming the rank at fault where there is
 * one) when shared memory cannot be used here, and the caller falls back
 * or fails.  Everything before the deadline. */
int shm_attach(struct slotcomm *c, const struct shm_info *all, int64_t deadline, char *why,
	       size_t whylen);

/* Closes and unmaps everything of c->shm (and the listener); when bye, the
 * node's peers are told that this rank left on purpose. */
void shm_free(struct slotcomm *c, int bye);

/* The node's shape, once attached: ranks on this node (1 without c->shm)
 * and this rank's index among them. */
int shm_local_size(const struct slotcomm *c);

/* The node phases the hierarchical transport is made of (in place, every
 * rank of the node with the same arguments; op is never SLOTCOMM_AVG here):
 * shm_reduce leaves the node's reduction in the leader's buf only;
 * shm_bcast copies the leader's buf to every rank of the node. */
int shm_reduce(struct slotcomm *c, void *buf, size_t count, enum slotcomm_dtype dtype, enum slotcomm_op op);
int shm_bcast(struct slotcomm *c, void *buf, size_t bytes);

/* This rank is making progress elsewhere (its TCP ring): the node's ranks
 * waiting on it push their SLOTRUN_TIMEOUT back (transport.progress). */
void shm_progress(struct slotcomm *c);

/* transport.broken for both: the failure goes into the segment and every
 * sleeper of the node is woken. */
/* Whether a rank of this node left the job before this collective, or,
 * while this rank is in a control collective, is in an all-reduce of the
 * same number (its descriptor says so): 0, or the divergence
 * (comm_diverged).  Reads the segment only; 0 without one. */
int shm_check_peers(struct slotcomm *c);

void shm_transport_broken(struct slotcomm *c, const struct frame_abort *a);

extern const struct transport transport_shm, transport_hier;

#endif
