// SPDX-License-Identifier: MIT
/* The job plane's connections: framing in, a queue out that never blocks
 * the loop, heartbeats both ways, silence and handshake deadlines, and the
 * last words at close.  What a frame means is the side's (plane_side);
 * this layer only measures frames and says when a connection is lost. */
#ifndef SLOTRUN_PLANE_CONN_H
#define SLOTRUN_PLANE_CONN_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "auth.h"
#include "plane_int.h"
#include "plane_proto.h"

struct conn {
	struct plane *p;
	int fd;
	struct event *ev_read, *ev_write;
	bool connecting;          /* node: connect(2) in progress */
	bool authed;              /* proved the secret (both ways, on a node) */
	bool closing;             /* drop once out is flushed */
	bool told;                /* chief: sent ABORT */
	bool draining;            /* our side is shut: read until EOF, then drop */
	bool paused;              /* the peer's slotrun is stopped on purpose (a terminal
				   * stop): its silence is not counted (plane_conn_pause) */
	bool peer_gone;           /* lost because the peer's host closed or reset it: its
				   * slotrun is gone (a silent peer may be cut off instead) */
	bool waiting;             /* elastic chief: a node that waits for the next round */
	bool sealed_out;          /* what we send is sealed (plane_seal) */
	bool sealed_in;           /* what we receive must be */
	struct plane_seal seal;
	int node;                 /* chief: the node it joined as, or -1; a relay: the node
				   * its JOIN claimed */
	/* Its own side (a relay's connection to a node of its group:
	 * plane_relay.c), or NULL: the plane's. */
	const struct plane_side *side;
	/* The chief's view of a node behind a relay (plane_tunnel.c): no
	 * socket (fd -1); what is sent to it travels on via, its relay's
	 * connection, as PLANE_FWD with tid, the relay's id of the node's
	 * connection.  via is NULL once it is dropped. */
	bool virt;
	struct conn *via;
	uint32_t tid;             /* also on a relay: the id it gave this connection */
	struct plane_tunnels *tun;  /* chief: a relay's connection: the nodes behind it */
	bool relay;               /* chief: a relay's (its JOIN said a relay's node rank) */
	bool held;                /* relay: its JOIN failed the MAC: it waits for the chief's verdict */
	bool batch;               /* carries many nodes' frames (a relay's and its chief's): what
				   * is queued goes out once per pass of the loop, in one write */
	double born, last_rx, last_tx;
	unsigned char nonce[AUTH_NONCE_LEN];       /* the one we sent */
	unsigned char peer_nonce[AUTH_NONCE_LEN];  /* node: the chief's, until WELCOME */
	char peer[64];
	/* What came in and is not a whole frame yet, and what waits to go
	 * out: held only meanwhile (NULL between frames), so that an idle
	 * connection costs the chief no buffer (docs/job-plane.md, "Scale") */
	unsigned char *in;
	size_t in_len, in_cap;
	unsigned char *out;
	size_t out_off, out_len, out_cap;
	struct conn *next;
};

/* A connection on fd (non-blocking, CLOEXEC), linked into p->conns; its
 * events are made but not added.  NULL when out of memory (fd is the
 * caller's then). */
struct conn *plane_conn_new(struct plane *p, int fd, const char *peer);

/* Closes at once and tells the side (dropped); the memory lives until the
 * next tick, since the caller may still be inside one of its callbacks.
 * Again is fine. */
void plane_conn_drop(struct conn *c);

/* A node behind a relay, on the chief: see struct conn's virt.  NULL when
 * out of memory. */
struct conn *plane_conn_new_virtual(struct plane *p, struct conn *via, uint32_t tid, const char *peer);

/* Whether c is still open (a socket, or a relay's that carries it). */
static inline bool plane_conn_open(const struct conn *c)
{
	return c->fd >= 0 || c->via;
}

/* Ends c once what is queued is written: our side is shut, then it is read
 * until the peer closes. */
void plane_conn_close_soon(struct conn *c);

/* Drops c and, unless the job has ended, tells the side it is lost. */
void plane_conn_lost(struct conn *c, const char *why);

/* Gives c up without closing it: no more reading, writing or heartbeats,
 * but the socket stays open until plane_close.  An elastic node that gives
 * its chief up for silence does so: were it to close, the chief, if alive
 * behind a cut, would see a node whose host closed its connection, which
 * only a dead slotrun's does, and count it out of the majority
 * (plane_round_after) while it takes part on the other side. */
void plane_conn_abandon(struct conn *c);

/* The connection's seal, once both nonces are known (plane_seal); the
 * caller then sets sealed_out and sealed_in at the points plane_proto.h
 * names: the chief opens from the frame after a good JOIN and seals from
 * the one after its WELCOME; a node seals from the frame after its JOIN
 * and opens from the one after a good WELCOME. */
void plane_conn_seal(struct conn *c, const char *secret, const unsigned char nc[AUTH_NONCE_LEN],
		     const unsigned char nn[AUTH_NONCE_LEN], bool chief);

/* Queues one frame (or message) and writes what the socket takes now; a
 * peer that lets too much pile up is lost.  Sealed when sealed_out.  On a
 * closed c: nothing. */
void plane_conn_queue(struct conn *c, const unsigned char *frame, size_t n);
void plane_conn_send(struct conn *c, const struct plane_msg *m);

/* The peer's slotrun said it stops itself (a terminal stop), or was
 * continued.  While it is stopped its silence is not counted and no PING
 * goes to it (it would only fill its buffers); the connection is the
 * liveness instead: the kernel closes it when that slotrun dies, however
 * (SIGKILL included), and TCP keepalive, answered by the peer's kernel
 * even while its slotrun is stopped, finds a host that went away within
 * about twice the heartbeat timeout. */
void plane_conn_pause(struct conn *c, bool paused);

/* Writes what is queued on every connection now, waiting up to seconds in
 * all: the last words before our own slotrun stops (it sends nothing while
 * stopped).  A connection that fails meanwhile is lost, as on the loop. */
void plane_conn_flush_now(struct plane *p, double seconds);

/* Our own slotrun was stopped and is continued: what it did not read
 * meanwhile is no silence of the peers', so every peer counts as heard
 * now. */
void plane_conn_woke(struct plane *p);

/* Called first by every callback of the plane: a gap since the last one
 * longer than a stall (plane_self_stalled) means our own loop did not run
 * (stopped, starved); every peer counts as heard now, and when the gap is
 * past what the peers wait for (plane_self_given_up) the side names this
 * node (stalled). */
void plane_conn_awake(struct plane *p);

/* The heartbeat timer, every interval / 2: heartbeats out, silence and
 * handshake deadlines in, closed connections freed.  Returns 0 or
 * -ENOMEM. */
int plane_conn_start_tick(struct plane *p);

/* The last words (ABORT, END) must reach the other nodes before we exit:
 * send what is queued, end our side, and read until each peer closes (or
 * a second passes), so that no reset throws our words away.  Then closes
 * and frees every connection. */
void plane_conn_close_all(struct plane *p);

#endif
