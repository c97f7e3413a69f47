// SPDX-License-Identifier: MIT
/* What the job plane's seal costs per frame: encode, seal, open and decode
 * against encode and decode alone, on the same frames (a PING, and a STOP
 * carrying a full cause with an 8 KiB tail), in batches that alternate
 * between the two, the order swapped every round.  Times are the thread's
 * CPU time (CLOCK_THREAD_CPUTIME_ID), so that on a shared machine the time
 * other processes hold the core is not counted on either side.  Prints the
 * median of the batches in ns per frame for each and the difference;
 * --json adds one JSON object on the last line for bench/seal.py.
 *
 *   seal_cost [--frames N] [--rounds R] [--json]
 *
 * Exits 1 when a frame does not come back (a decode or an open fails). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "plane_proto.h"

#define MAX_ROUNDS 1001

struct frame {
	const char *name;
	struct plane_msg msg;
	int bytes;                 /* the plain frame's length */
	double plain[MAX_ROUNDS];  /* ns per frame, per batch */
	double sealed[MAX_ROUNDS];
};

static unsigned char buf[PLANE_MAX_FRAME + 4];
static struct plane_msg out;
static volatile unsigned long sink;
static long failures;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void fill(char *s, size_t cap, char c)
{
	memset(s, c, cap - 1);
	s[cap - 1] = '\0';
}

/* A STOP for a rank's failure with every string of its cause full. */
static void full_stop(struct plane_msg *m)
{
	struct plane_cause *c = &m->cause;

	*m = (struct plane_msg){ .type = PLANE_STOP, .sig = 0, .node = 2 };
	c->kind = PLANE_CAUSE_RANK;
	c->node = 2;
	c->rank = 5;
	c->code = 4;
	c->when_ms = 1764000000000;
	c->after_ms = 1234;
	fill(c->host, sizeof(c->host), 'h');
	fill(c->text, sizeof(c->text), 't');
	fill(c->tail, sizeof(c->tail), 'l');
	for (size_t i = 63; i < sizeof(c->tail) - 1; i += 64)
		c->tail[i] = '\n';
	fill(c->message, sizeof(c->message), 'm');
	c->culprit = -1;
	c->culprit_node = -1;
}

static double batch_plain(const struct plane_msg *m, int n)
{
	double t0 = now_ns();

	for (int i = 0; i < n; i++) {
		int len = plane_encode(m, buf, sizeof(buf));

		if (len < 0 || plane_decode(buf, (size_t)len, &out) < 0)
			failures++;
		sink += (unsigned long)out.type + (unsigned char)out.cause.tail[0];
	}
	return (now_ns() - t0) / n;
}

static double batch_sealed(const struct plane_msg *m, int n, struct plane_seal *tx, struct plane_seal *rx)
{
	double t0 = now_ns();

	for (int i = 0; i < n; i++) {
		int len = plane_encode(m, buf, sizeof(buf));
		long plain;

		if (len < 0 || (len = plane_seal(tx, buf, (size_t)len, sizeof(buf))) < 0) {
			failures++;
			continue;
		}
		plain = plane_open_frame(rx, buf, (size_t)len);
		if (plain < 0 || plane_decode(buf, (size_t)plain, &out) < 0)
			failures++;
		sink += (unsigned long)out.type + (unsigned char)out.cause.tail[0];
	}
	return (now_ns() - t0) / n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int usage(void)
{
	fprintf(stderr, "usage: seal_cost [--frames N] [--rounds R (1..%d)] [--json]\n", MAX_ROUNDS);
	return 2;
}

int main(int argc, char **argv)
{
	static struct frame fr[2] = { { .name = "ping" }, { .name = "stop" } };
	unsigned char nc[AUTH_NONCE_LEN], nn[AUTH_NONCE_LEN];
	struct plane_seal tx, rx;
	double med[2][2];
	int frames = 2000, rounds = 21;
	bool json = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc)
			frames = atoi(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else
			return usage();
	}
	if (frames < 1 || rounds < 1 || rounds > MAX_ROUNDS)
		return usage();
	if (auth_init() < 0) {
		fprintf(stderr, "seal_cost: libsodium did not initialise\n");
		return 1;
	}
	auth_nonce(nc);
	auth_nonce(nn);
	plane_seal_init(&tx, "bench-seal-secret", nc, nn, true);
	plane_seal_init(&rx, "bench-seal-secret", nc, nn, false);
	fr[0].msg = (struct plane_msg){ .type = PLANE_PING };
	full_stop(&fr[1].msg);
	for (int k = 0; k < 2; k++) {
		fr[k].bytes = plane_encode(&fr[k].msg, buf, sizeof(buf));
		if (fr[k].bytes < 0) {
			fprintf(stderr, "seal_cost: the %s frame does not encode: %s\n", fr[k].name,
				strerror(-fr[k].bytes));
			return 1;
		}
		batch_plain(&fr[k].msg, frames);   /* warm both sides alike */
		batch_sealed(&fr[k].msg, frames, &tx, &rx);
	}
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < 2; k++) {
			if (r % 2) {
				fr[k].sealed[r] = batch_sealed(&fr[k].msg, frames, &tx, &rx);
				fr[k].plain[r] = batch_plain(&fr[k].msg, frames);
			} else {
				fr[k].plain[r] = batch_plain(&fr[k].msg, frames);
				fr[k].sealed[r] = batch_sealed(&fr[k].msg, frames, &tx, &rx);
			}
		}
	if (failures) {
		fprintf(stderr, "seal_cost: %ld frames did not come back\n", failures);
		return 1;
	}
	printf("# the seal's cost: %d batches of %d frames, alternating; median CPU ns per frame\n", rounds,
	       frames);
	printf("%-5s %7s %12s %12s %10s %7s\n", "frame", "bytes", "encode+decode", "+seal+open", "seal cost",
	       "ratio");
	for (int k = 0; k < 2; k++) {
		med[k][0] = median(fr[k].plain, rounds);
		med[k][1] = median(fr[k].sealed, rounds);
		printf("%-5s %7d %12.0f %12.0f %10.0f %6.2fx\n", fr[k].name, fr[k].bytes, med[k][0], med[k][1],
		       med[k][1] - med[k][0], med[k][1] / med[k][0]);
	}
	if (json)
		printf("{\"clock\": \"thread CPU time\", \"frames\": %d, \"rounds\": %d, \"tag_bytes\": %d, "
		       "\"ping\": {\"bytes\": %d, \"plain_ns\": %.1f, \"sealed_ns\": %.1f}, "
		       "\"stop\": {\"bytes\": %d, \"plain_ns\": %.1f, \"sealed_ns\": %.1f}}\n",
		       frames, rounds, AUTH_TAG_LEN, fr[0].bytes, med[0][0], med[0][1], fr[1].bytes, med[1][0],
		       med[1][1]);
	return 0;
}
