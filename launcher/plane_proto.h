// SPDX-License-Identifier: MIT
/* The job plane's protocol: what the slotruns of one job say to each other
 * over the control connection, and what the chief decides.  Pure: bytes in,
 * values out, no sockets and no clock (times come in as arguments), so every
 * branch is unit-tested.  plane.c carries it over libevent.
 *
 * Wire: frames of a 4-byte big-endian length L (of what follows, at most
 * PLANE_MAX_FRAME), a 1-byte type, L-1 payload bytes.  Integers are
 * big-endian; a string is a 2-byte length and that many bytes, no NUL, below
 * its field's capacity.  A frame with an unknown type, a short or long
 * payload, or a bad string is a protocol error: the connection is dropped.
 *
 * Handshake (mutual, the secret never crosses the wire):
 *   chief -> node   CHAL     PLANE_MAGIC, chief nonce Nc
 *   node  -> chief  JOIN     node nonce Nn, MAC, join fields
 *                            MAC = HMAC(secret; "slotrun-join", Nc, Nn, fields)
 *   chief -> node   WELCOME  HMAC(secret; "slotrun-welcome", Nn, Nc)
 *                   or REFUSE (wrong MAC: the secrets differ), then the
 *                   close, or MISMATCH naming whose secret is the odd one
 *                   when the join ends for it (plane_coord_secret)
 * Both nonces are fresh per connection, so a recorded JOIN or WELCOME does
 * not verify on another connection.  The fields end with the secret's id
 * (plane_secret_id), which tells another secret from a replay.  Every frame
 * after the handshake is sealed (plane_seal): it ends in a tag under a key
 * of that connection, over its direction and sequence number, so a
 * replayed, reordered or injected frame is refused and the connection
 * dropped.
 *
 * Then the chief checks that the nodes agree (PLANE_ABORT on a mismatch,
 * PLANE_START when all are in), relays failures, stops and signals to every
 * node, and ends the job (PLANE_END) when every node's workers are gone. */
#ifndef SLOTRUN_PLANE_PROTO_H
#define SLOTRUN_PLANE_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "plane_cause.h"

struct restart_policy;

#define PLANE_MAGIC "slotrun-plane/1"   /* with its NUL: 16 bytes on the wire */
#define PLANE_MAGIC_LEN 16
#define PLANE_MAX_FRAME 32768           /* type + payload (+ the tag once sealed) */
#define PLANE_VERSION_MAX 64

enum plane_type {
	PLANE_CHAL = 1,   /* chief -> node: magic, nonce */
	PLANE_JOIN,       /* node -> chief: nonce, mac, join */
	PLANE_WELCOME,    /* chief -> node: mac */
	PLANE_REFUSE,     /* chief -> node: text (unauthenticated: the MAC failed) */
	PLANE_START,      /* chief -> node: round: every node is in and agrees */
	PLANE_ABORT,      /* chief -> node: code, text: the job will not start */
	PLANE_FAIL,       /* node -> chief: cause: this node's root cause */
	PLANE_STOP_REQ,   /* node -> chief: sig: this node's slotrun was told to stop */
	PLANE_SIGNAL_REQ, /* node -> chief: sig: for every worker of the job */
	PLANE_STOP,       /* chief -> node: sig (0: a failure), node it came from, cause */
	PLANE_SIGNAL,     /* chief -> node: sig, node it came from */
	PLANE_DONE,       /* node -> chief: code: this node's workers are all reaped */
	PLANE_END,        /* chief -> node: code, cause: the job is over, exit */
	PLANE_PING,       /* both ways: heartbeat */
	PLANE_RESTART,    /* chief -> node: attempt, delay (ms), cause: every node's workers
			   * are gone; attempt `code` (restarts used, which a re-form
			   * for a new node does not count) starts with the next START */
	PLANE_PAUSE_REQ,  /* node -> chief: sig: this node's slotrun stopped its workers on a
			   * terminal stop and stops itself now */
	PLANE_RESUME_REQ, /* node -> chief: this node's slotrun was continued */
	PLANE_PAUSE,      /* chief -> node: sig, node that was stopped: stop the workers */
	PLANE_RESUME,     /* chief -> node: node continued last: no node is stopped, continue
			   * the workers */
	PLANE_MISMATCH,   /* chief -> node, unauthenticated: node: the job secrets differ and
			   * the join ends; node is the one whose secret is the odd one (0:
			   * the chief's) */
	PLANE_QUERY,      /* node -> chief: id, flags: the whole job's status, please (slotrun
			   * status on this node) */
	PLANE_ASK,        /* chief -> node: id, flags: this node's part of a status */
	PLANE_PART,       /* either way: id, more, data: a piece of a document (a node's
			   * part for ASK, the job's whole status for QUERY) */
	PLANE_EVENT,      /* node -> chief: data: one event for the chief's --timeline */
	PLANE_FWD,        /* relay <-> chief: fwd: a frame of a node behind the relay, on the
			   * relay's connection id (docs/job-plane.md, "The tree") */
	PLANE_GONE,       /* relay -> chief: fwd.id, cause.text: that node's connection was
			   * lost (fwd.flags PLANE_FWD_HOST_GONE: its host closed it);
			   * chief -> relay: close connection fwd.id; relay -> node: cause:
			   * the relay lost the chief, and the job with it */
	PLANE_TYPE_LAST = PLANE_GONE
};

/* PLANE_FWD's id for "every node behind the relay" (but fwd.except). */
#define PLANE_FWD_ALL 0xffffffffu
/* PLANE_FWD's flags. */
#define PLANE_FWD_PROVED 1u     /* relay -> chief, a JOIN: its MAC proved the secret to the relay */
#define PLANE_FWD_CLOSE 2u      /* chief -> relay: close the connection once this is sent */
#define PLANE_FWD_HOST_GONE 4u  /* GONE, relay -> chief: the node's host closed the connection */
/* What a PLANE_FWD carries: the frame (plain, with its header) points
 * into the decoded buffer, valid while it is. */
struct plane_fwd {
	uint32_t id, except;       /* the relay's connection (PLANE_FWD_ALL: each but except) */
	unsigned flags;            /* PLANE_FWD_* */
	char peer[64];             /* relay -> chief, with a JOIN: the address it came from */
	const unsigned char *frame;
	size_t len;
};

/* A document a PART carries is cut into pieces of at most this many bytes
 * (JSON text: no NUL). */
#define PLANE_PIECE_MAX 16000
/* QUERY's and ASK's flags. */
#define PLANE_Q_STACKS 1u

/* A slotrun's id: random, fresh for every slotrun, so that the chief of an
 * elastic job tells a node that comes back (after a failover) from a new
 * one, and the same node from a second slotrun on the same host. */
#define PLANE_ID_LEN 16

/* The nodes a node of an elastic round knows as its possible next chiefs
 * (ranks 1..this, in order): enough to find the job after the chief's
 * loss, and O(1) per node however large the round. */
#define PLANE_CANDIDATES 8

enum plane_admit {
	PLANE_ADMIT_NOW,        /* a node that arrives while a round runs re-forms the job at once */
	PLANE_ADMIT_NEXT_ROUND, /* ... waits until the round ends for another reason */
};

struct plane_join {
	int node_rank, nnodes, slots, world_size;  /* elastic: node_rank is a preference, or -1 */
	int max_restarts;
	int hb_timeout_ms;         /* --heartbeat-timeout: one per job */
	/* elastic (nnodes_min < nnodes): the rest of what the nodes agree on,
	 * and who this is */
	int nnodes_min;
	int settle_ms;
	int admit;                 /* enum plane_admit */
	unsigned char id[PLANE_ID_LEN];
	int round;                 /* the last round it was in (a failover's rejoin), else 0 */
	int restarts;              /* ... and the restarts the job had used then */
	int fanout;                /* the relay tree's fan-out, 0: a star (plane_tree.h) */
	char version[PLANE_VERSION_MAX];
	char host[PLANE_HOST_MAX];
	/* Which secret the node holds (plane_secret_id), so that the chief
	 * tells another secret from a forged or replayed JOIN, whose MAC
	 * fails as well.  A JOIN may end before it (has_id false). */
	bool has_id;
	unsigned char secret_id[AUTH_MAC_LEN];
};

/* What START tells a node of the round it starts (every job: a fixed-size
 * job's is its plan, attempt after attempt). */
struct plane_round_info {
	int round;                 /* 1 for the first */
	int restarts;              /* restarts used so far: TORCHELASTIC_RESTART_COUNT */
	int nnodes, node_rank;     /* this round's node count, the node's rank in it */
	int rank_base, world_size; /* its first global rank; the round's rank count */
	char master[PLANE_HOST_MAX];  /* the chief's address for the workers (MASTER_ADDR);
				       * "" in a fixed-size job: each node's own */
	char why[PLANE_TEXT_MAX];  /* why this round formed ("" for the first) */
	int ncand;                 /* the next chiefs, should this one be lost */
	int cand_rank[PLANE_CANDIDATES];
	char cand_host[PLANE_CANDIDATES][PLANE_HOST_MAX];
};

struct plane_msg {
	enum plane_type type;
	unsigned char nonce[AUTH_NONCE_LEN];  /* CHAL, JOIN */
	unsigned char mac[AUTH_MAC_LEN];      /* JOIN, WELCOME */
	struct plane_join join;               /* JOIN */
	int code;                             /* ABORT, DONE, END; RESTART: the attempt (1 = the
					       * first restart) */
	int delay_ms;                         /* RESTART */
	int sig, node;                        /* STOP_REQ, SIGNAL_REQ, PAUSE_REQ (sig); STOP,
					       * SIGNAL, PAUSE; RESUME, MISMATCH (node) */
	struct plane_cause cause;             /* FAIL, STOP, END, RESTART */
	struct plane_round_info round;        /* START */
	uint32_t id;                          /* QUERY, ASK, PART */
	unsigned flags;                       /* QUERY, ASK: PLANE_Q_* */
	bool more;                            /* PART: more pieces follow */
	char data[PLANE_PIECE_MAX + 1];       /* PART, EVENT */
	struct plane_fwd fwd;                 /* FWD; GONE: id, flags */
	char text[PLANE_TEXT_MAX];            /* REFUSE, ABORT; STOP_REQ, SIGNAL_REQ: why, if
					       * not the signal alone (or ""); END: why no round
					       * follows, in an elastic job (or "") */
};

/* Encodes m as one whole frame into buf.  Returns its length, or
 * -EMSGSIZE when cap is too small or a string does not fit its field. */
int plane_encode(const struct plane_msg *m, unsigned char *buf, size_t cap);

/* Encodes a PLANE_FWD carrying f without a whole plane_msg (a relay's and
 * its chief's hot path).  As plane_encode. */
int plane_encode_fwd(const struct plane_fwd *f, unsigned char *buf, size_t cap);

/* Looks at the first have bytes of a stream: 0 when the frame is not whole
 * yet, its total length when it is, -EMSGSIZE when the header announces
 * more than PLANE_MAX_FRAME or nothing (checked before anything is kept). */
long plane_frame_len(const unsigned char *buf, size_t have);

/* The whole length of the frame a stream's first have bytes begin, as its
 * header announces it (whether or not the rest is there yet): 0 while the
 * header is not whole, -EMSGSIZE as for plane_frame_len.  What a reader
 * must hold to take that frame. */
long plane_frame_size(const unsigned char *buf, size_t have);

/* Decodes one whole frame (as plane_frame_len measured it).  0, or -EPROTO
 * for anything malformed; m is then unspecified. */
int plane_decode(const unsigned char *frame, size_t len, struct plane_msg *m);

/* The join fields of an encoded JOIN frame, the part its MAC covers. */
int plane_join_fields(const unsigned char *frame, size_t len, const unsigned char **fields,
		      size_t *flen);

/* Builds a JOIN frame for j, answering the chief's nonce: fresh node nonce
 * in m->nonce (given), j's fields with the secret's id (plane_secret_id),
 * MAC over the encoded fields.  Returns the frame length, or -EMSGSIZE. */
int plane_make_join(const char *secret, const unsigned char chief_nonce[AUTH_NONCE_LEN],
		    const unsigned char node_nonce[AUTH_NONCE_LEN], const struct plane_join *j,
		    unsigned char *buf, size_t cap);

/* Whether the JOIN frame (decoded into m) proves the secret for our nonce. */
bool plane_check_join(const char *secret, const unsigned char chief_nonce[AUTH_NONCE_LEN],
		      const unsigned char *frame, size_t len, const struct plane_msg *m);

/* WELCOME's MAC for a node nonce, and its check on the node's side. */
void plane_welcome_mac(const char *secret, const unsigned char node_nonce[AUTH_NONCE_LEN],
		       const unsigned char chief_nonce[AUTH_NONCE_LEN], unsigned char mac[AUTH_MAC_LEN]);
bool plane_check_welcome(const char *secret, const unsigned char node_nonce[AUTH_NONCE_LEN],
			 const unsigned char chief_nonce[AUTH_NONCE_LEN], const unsigned char mac[AUTH_MAC_LEN]);

/* ---- Frames after the handshake ----
 *
 * Each side seals what it sends once the other side has proved the secret
 * (the chief after WELCOME, a node after JOIN) and opens what it receives
 * from then on: a node's frames after its JOIN, the chief's after WELCOME.
 * A sealed frame is a plain one with AUTH_TAG_LEN more bytes at its end
 * (counted in L): auth_tag under the connection's key over the direction,
 * the frame's number in that direction (from 0) and the frame with its new
 * length.  The key is HMAC(secret; "slotrun-session", Nc, Nn), computed on
 * both sides and never sent. */

struct plane_seal {
	unsigned char key[AUTH_KEY_LEN];
	uint64_t sent, opened;      /* frames sealed, frames opened */
	unsigned char out, in;      /* our direction, the peer's */
};

/* The seal of a connection whose handshake had the chief's nonce Nc and
 * the node's nonce Nn; chief: whether we are the chief's side. */
void plane_seal_init(struct plane_seal *s, const char *secret, const unsigned char nc[AUTH_NONCE_LEN],
		     const unsigned char nn[AUTH_NONCE_LEN], bool chief);

/* Seals the whole frame in buf[0..len) in place (cap: buf's size): its
 * length grows by AUTH_TAG_LEN.  Returns the new length, or -EMSGSIZE when
 * it does not fit (cap, or PLANE_MAX_FRAME). */
int plane_seal(struct plane_seal *s, unsigned char *buf, size_t len, size_t cap);

/* Opens the whole sealed frame in buf[0..len) (as plane_frame_len measured
 * it) in place: checks its tag against the next number from the peer and
 * strips it.  Returns the plain frame's length, or -EBADMSG for a frame
 * that is forged, replayed, reordered, cut or from the other direction
 * (the connection must be dropped: the numbers no longer match). */
long plane_open_frame(struct plane_seal *s, unsigned char *buf, size_t len);

/* A fixed value per secret, HMAC(secret; "slotrun-secret-id"): two JOINs
 * with the same id were made with the same secret.  It tells nothing that
 * a recorded JOIN does not (both allow guessing a weak secret offline). */
void plane_secret_id(const char *secret, unsigned char id[AUTH_MAC_LEN]);

/* ---- Where a connection comes from ---- */

/* Up to this many addresses of one listed node are kept. */
#define PLANE_NODE_ADDRS 8

/* The numeric addresses a listed node's entry resolves to (as inet_ntop
 * writes them); n < 0: the entry is unknown or did not resolve. */
struct plane_node_addrs {
	int n;
	char addr[PLANE_NODE_ADDRS][48];
};

enum plane_from {
	PLANE_FROM_UNSURE,  /* no conclusion: keep today's rules */
	PLANE_FROM_CLAIMED, /* the address is one of the claimed node's */
	PLANE_FROM_OTHER,   /* the address is exactly one other node's, without doubt */
};

/* What the address `from` (numeric; an IPv4 address written as IPv6 counts
 * as the IPv4 one) says about a connection that claims node `claimed` of
 * nodes[0..nnodes).  CLAIMED when it is one of that node's addresses.
 * OTHER, with *other, only when the evidence is unambiguous: every entry
 * resolved, no entry and not `from` is a loopback address, and exactly one
 * entry, another node's, holds `from` (NAT, a shared host, a
 * multi-homed node that connects from an unlisted address all give
 * UNSURE). */
enum plane_from plane_where(const struct plane_node_addrs *nodes, int nnodes, int claimed,
			    const char *from, int *other);

/* The same question for every JOIN of a large job without a pass over
 * every node each time (that made a join O(N^2)): the nodes' addresses
 * sorted once, each lookup a binary search. */
struct plane_addr_entry {
	unsigned char addr[16];
	int node;
};
struct plane_addr_index {
	struct plane_addr_entry *e;  /* sorted by address, then node; no pair twice */
	size_t n;
	bool doubt;                  /* an entry unknown, unresolved, not numeric or loopback */
};

/* Builds ix from nodes[0..nnodes) (a built one is freed first).  0, or
 * -ENOMEM (ix is then empty and in doubt). */
int plane_addr_index_build(struct plane_addr_index *ix, const struct plane_node_addrs *nodes, int nnodes);
void plane_addr_index_free(struct plane_addr_index *ix);
/* plane_where's answer, from the index. */
enum plane_from plane_where_indexed(const struct plane_addr_index *ix, int claimed, const char *from,
				    int *other);

/* ---- The chief's decisions ---- */

struct plane_coord_cfg {
	int nnodes;
	const int *slot_counts;    /* what the chief was told, per node */
	int world_size;
	const char *version;
	char *const *addrs;        /* node addresses, for messages */
	double join_timeout;       /* seconds, for messages */
	const struct restart_policy *restart;  /* NULL: no restarts */
	int max_restarts;          /* every node must say the same */
	int hb_timeout_ms;         /* the same: a node that judges silence sooner than its
				    * peers speak would call healthy nodes lost */
	int fanout;                /* the same: the relay tree (plane_tree.h), 0: a star */
};

enum plane_node_state { PLANE_N_ABSENT, PLANE_N_JOINED, PLANE_N_DONE, PLANE_N_LOST, PLANE_N_TOLD };
/* ABORTING: the job will not start; the chief stays until every node has
 * been told why (or the join timeout), so that each says the same line. */
/* RESTARTING: every node's workers are gone after a failure that may be
 * retried; the next attempt starts when the backoff delay has passed. */
enum plane_phase { PLANE_JOINING, PLANE_ABORTING, PLANE_RUNNING, PLANE_RESTARTING, PLANE_ENDED };

struct plane_coord {
	const struct plane_coord_cfg *cfg;
	enum plane_phase phase;
	enum plane_node_state *st;  /* per node; the chief (node 0) is in from the start */
	int nst[PLANE_N_TOLD + 1];  /* how many nodes are in each state: an event is O(1),
				     * not a pass over every node */
	int *done_code;             /* per node, with PLANE_N_DONE */
	int joined;
	struct plane_cause cause;   /* the job's root cause so far */
	double cause_t;             /* the chief's clock when it was taken */
	int code;                   /* the job's status, once ended */
	char why[PLANE_TEXT_MAX];   /* ABORTING: the reason */
	int restarts;               /* restarts so far */
	struct plane_cause ended;   /* RESTARTING: the root cause of the attempt that ended */
	double delay;               /* RESTARTING: seconds before the next attempt */
	int *paused;                /* per node: the signal that stopped its slotrun, or 0 */
	bool told_stop;             /* a node's slotrun was told to stop (also after the root
				     * cause): the job does not restart */
	/* The join's evidence of secrets that differ (plane_coord_secret). */
	bool *other_secret;         /* per node: it presented another secret than ours */
	int presented;              /* ... how many did */
	unsigned char (*ids)[AUTH_MAC_LEN];  /* ... with this secret id */
	bool chief_odd;             /* the verdict: the chief's secret is the odd one */
};

/* What the chief must carry out after an event, in this order.  A stop or
 * a signal goes to every node but `origin`, which acted on it already. */
struct plane_acts {
	bool abort;            /* send ABORT(code, text) to every node that joined and has not
				* been told, and to the one that joined now; say the text
				* the first time */
	bool first;            /* this abort is the first: say it */
	bool exit;             /* every node has been told: exit code */
	int code;
	char text[PLANE_TEXT_MAX];
	bool start;            /* send START to every node and start our workers */
	bool stop;             /* send STOP(stop_sig, origin); stop our workers unless origin 0 */
	int stop_sig;          /* 0: the job failed; else the signal that stopped it */
	int signal;            /* != 0: send SIGNAL(signal, origin); ours too unless origin 0 */
	int origin;
	bool end;              /* send END(c->code, c->cause) to every node left; exit c->code */
	bool restart;          /* send RESTART(c->restarts, c->delay, c->ended) to every node; wait
				* c->delay, then plane_coord_restart_now() */
	int pause;             /* != 0: node pause_node was stopped by this signal: send
				* PAUSE(pause, pause_node) to every node but origin, and stop
				* our workers unless origin is 0 */
	int pause_node;
	bool still;            /* ... to origin alone instead (ours, if origin is 0): it was
				* continued, but the job stays paused for pause_node */
	bool resume;           /* no node is stopped now: send RESUME(origin) to every node and
				* continue our workers */
	bool held;             /* plane_coord_secret: the connection waits for the verdict
				* (MISMATCH, with the abort); false: refuse it alone */
	bool refuse;           /* plane_coord_join: send ABORT(code, text) to the node that
				* joined now alone and say text: the job goes on without it */
};

/* The root cause window of the supervisor (SUP_ROOT_WINDOW) across nodes: a
 * death by signal reported this soon after a root cause that merely exited
 * with an error replaces it (the crash took its peers down). */
#define PLANE_ROOT_WINDOW 0.25

/* Heartbeats go out every timeout / PLANE_HB_PER_TIMEOUT seconds: four can
 * be lost in a row before a node is declared lost.  Silence is checked
 * twice as often, so a lost node is declared within timeout + timeout/10. */
#define PLANE_HB_PER_TIMEOUT 5

/* ---- Silence ----
 *
 * A peer silent for the heartbeat timeout is lost, unless its host still
 * answers: TCP acknowledges what we sent it, so the machine and the link
 * are up and only its slotrun does not run (stopped, starved of CPU, its
 * loop held up).  Such a peer is waited for up to PLANE_STALL_BOUND
 * heartbeat timeouts, so that a stall of a few seconds, the observer's
 * own or the peer's, ends no job.  And a node whose own loop did not run
 * for long (measured between its ticks) counts every peer as heard when it
 * wakes, since what it did not read is no silence of theirs; if it did not
 * run for longer than its peers wait, it knows they gave it up, and names
 * itself. */
#define PLANE_STALL_BOUND 3

enum plane_silence {
	PLANE_HEARD,       /* not silent for the heartbeat timeout */
	PLANE_WAIT,        /* silent, but its host answers: wait up to the bound */
	PLANE_LOST_SILENT, /* lost: silent, its host does not answer either */
	PLANE_LOST_STALLED,/* lost: its host answered, its slotrun did not, for the bound */
};

/* The verdict on a peer silent for `silent` seconds whose host answered
 * `host_ago` seconds ago (< 0: unknown), for heartbeat timeout hb. */
enum plane_silence plane_silence(double silent, double host_ago, double hb);

/* Whether a loop gap of `gap` seconds (between two runs of a node's own
 * loop) is a stall of that node (its peers' silence meanwhile was not
 * theirs), and whether its peers must have given it up: a gap past what
 * they wait for (PLANE_STALL_BOUND heartbeat timeouts, less the heartbeat
 * interval by which their view of its silence may start earlier). */
bool plane_self_stalled(double gap, double hb);
bool plane_self_given_up(double gap, double hb);

/* A node's next try to reach its chief, after one that failed, waits the
 * backoff delay spread by r (a random number) over [delay/2, 3 delay/2):
 * nodes that failed together (the chief not listening yet, a join storm of
 * a thousand nodes) do not all try again at the same moment. */
double plane_retry_wait(double delay, uint32_t r);

/* A heartbeat timeout in seconds as JOIN carries it: whole milliseconds. */
static inline int plane_hb_ms(double seconds)
{
	return (int)(seconds * 1000.0 + 0.5);
}

/* Returns 0 or -ENOMEM.  cfg must outlive c. */
int plane_coord_init(struct plane_coord *c, const struct plane_coord_cfg *cfg);

/* The same for a round of an elastic job: every node of cfg is in, and the
 * round runs.  cfg->restart is NULL: the end of the round is the elastic
 * chief's to decide (plane_round_after), so a.end ends every round. */
int plane_coord_init_round(struct plane_coord *c, const struct plane_coord_cfg *cfg);
void plane_coord_free(struct plane_coord *c);

/* A node proved the secret and presents j.  A disagreement or a duplicate
 * aborts the job with status 2 and one line naming the node and the field;
 * a node joining after that is told the same.  A node joining once the job
 * has started (a retried ssh, the same command run twice, a pod relaunched
 * while the old slotrun lives) is refused alone (refuse): the job runs on
 * undisturbed. */
struct plane_acts plane_coord_join(struct plane_coord *c, const struct plane_join *j);

/* A connection tied to node `node` (plane_where: CLAIMED) presented the
 * secret id `id`, not ours, while the job is joining: evidence that the
 * secrets differ, not only a forged or replayed JOIN (whose id is ours).
 * The join ends (status 2) once the evidence names the odd one: a node
 * that proved our secret makes every node that presented another one odd;
 * two nodes that presented the same other id make the chief odd; when
 * every other node has presented another id, they are.  Until then the
 * connection is held (acts.held).  Outside the join, for a node that has
 * joined or already presented, or out of range: refused alone (nothing
 * set).  The line: plane_secret_line's, or several nodes named. */
struct plane_acts plane_coord_secret(struct plane_coord *c, int node,
				     const unsigned char id[AUTH_MAC_LEN]);

/* Which node a held connection for `node` is told is odd (MISMATCH). */
int plane_coord_odd(const struct plane_coord *c, int node);

/* A node that proved the secret and claims node `node` joined from `from`,
 * which plane_where says is node `other`'s address: the node ranks and
 * the addresses disagree, the join ends (2), naming both. */
struct plane_acts plane_coord_misplaced(struct plane_coord *c, int node, int other, const char *from);

/* "node 2 (10.213.0.3) presented another job secret: give every node the
 * same --secret-file / SLOTRUN_JOB_SECRET"; for node 0, the chief holds
 * another one than the other nodes. */
void plane_secret_line(char *buf, size_t len, int node, const char *host);

/* The join timeout ran out: the job is aborted (2), naming who is missing. */
struct plane_acts plane_coord_join_timeout(struct plane_coord *c);

/* Node `node` (the chief's own is 0) reports its root cause f at time now.
 * A rank f names at fault is placed on its node here; one outside the job
 * is dropped. */
struct plane_acts plane_coord_fail(struct plane_coord *c, int node, const struct plane_cause *f,
				   double now);

/* Node `node`'s slotrun received sig: a stop (TERM, INT) or a signal for
 * every worker (USR1, USR2, HUP, QUIT). */
struct plane_acts plane_coord_signal(struct plane_coord *c, int node, int sig, bool stops);

/* The same, for a reason of the node's own rather than a signal it got
 * (why: e.g. "the session that started it ended"); the job's cause says
 * it. */
struct plane_acts plane_coord_signal_why(struct plane_coord *c, int node, int sig, bool stops,
					 const char *why);

/* Node `node`'s workers are all reaped; code is its own status. */
struct plane_acts plane_coord_done(struct plane_coord *c, int node, int code);

/* The backoff delay of a restart has passed: start the next attempt. */
struct plane_acts plane_coord_restart_now(struct plane_coord *c);

/* The chief's own loop did not run for longer than the nodes wait for a
 * silent node (plane_self_given_up): they gave it up, so the job ends,
 * naming the chief (at host) as the lost node for why; no restart.
 * Nothing during the join (nodes that gave up have left; the others wait). */
struct plane_acts plane_coord_self_lost(struct plane_coord *c, const char *host, const char *why);

/* Elastic: a node (at host) arrived while the round runs, and is taken in
 * at once: the round ends (cause GROW) and every node stops its workers,
 * the chief's too (origin -1).  Nothing when the round already ends. */
struct plane_acts plane_coord_grow(struct plane_coord *c, const char *host);

/* Node `node`'s slotrun stopped its workers on a terminal stop (sig:
 * SIGTSTP) and stops itself: the job pauses on every node, until no node
 * is stopped.  Only a running job pauses; a stopped node is recorded in
 * any phase, so that its continuation is matched. */
struct plane_acts plane_coord_pause(struct plane_coord *c, int node, int sig);

/* Node `node`'s slotrun was continued: the job resumes, unless another
 * node is still stopped. */
struct plane_acts plane_coord_resume(struct plane_coord *c, int node);

/* Node `node` went away (why: "connection closed", "no heartbeat for 5 s"). */
struct plane_acts plane_coord_lost(struct plane_coord *c, int node, const char *why);

/* "rank 5 on node 2 (10.213.0.3) exit 137 (SIGKILL)", "SIGTERM to node 1
 * (10.213.0.2)", "node 1 (10.213.0.2) lost: connection closed"; "" for none.
 * A rank named at fault comes first: "rank 3 on node 1 (10.213.0.2), named
 * by rank 0 on node 0 (10.213.0.1) (exit 1)". */
void plane_cause_line(const struct plane_cause *cause, char *buf, size_t len);

/* The status of a job with this root cause when no node said otherwise:
 * the rank's code, 128+N for a stop by signal N, 1 for a lost node. */
int plane_cause_code(const struct plane_cause *cause);

#endif
