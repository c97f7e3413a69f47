// SPDX-License-Identifier: MIT
/* The rendezvous protocol (rendezvous.c, and rdv_chief.c for rank 0): how
 * the ranks find each other through rank 0.  Internal to the comm
 * library. */
#ifndef SLOTRUN_RENDEZVOUS_H
#define SLOTRUN_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "comm_internal.h"

/* The seals' labels (auth_mac): a registration's, and the table's. */
#define RDV_LABEL_REGISTER "slotrun-rdv-register"
#define RDV_LABEL_TABLE "slotrun-rdv-table"

/* Connections rank 0 holds before they register, at most. */
#define RDV_PENDING_MAX 64

/* MASTER_ADDR and MASTER_PORT as an address, asked again while the name
 * does not resolve yet (a container's name is in its network's DNS only
 * once it runs), until the deadline.  rank 0 resolves it too: it listens
 * there.  Fails with c->err naming MASTER_ADDR, the timeout and the
 * resolver's last answer. */
int rdv_resolve_master(struct slotcomm *c, int64_t deadline, struct sockaddr_storage *master,
		       socklen_t *mlen);

/* Registers this rank with rank 0 at master (rank 0: takes every other
 * rank's registration) and fills c->peers with the table and c->ctl with
 * the control connections.  my_addr is the address this rank's data plane
 * offers ("" for the one its connection to rank 0 leaves from), dport its
 * port.  Everything before the deadline; on failure c->err names the rank
 * at fault (or the ranks that never came) and the registered ranks are
 * told why. */
int rdv_run(struct slotcomm *c, const struct sockaddr_storage *master, socklen_t mlen,
	    const char *my_addr, int dport, int64_t deadline);

/* Rank 0's side of rdv_run (rdv_chief.c), its own table entry filled. */
int rdv_chief(struct slotcomm *c, const struct sockaddr_storage *master, socklen_t mlen,
	      int64_t deadline);

#endif
