// SPDX-License-Identifier: MIT
/* The stack collector (launcher/stacks.h) as a command, for the end-to-end
 * tests to call on a job that keeps running:
 *     stacks_dump [--descendants] [--wait S] [--deadline S] [--threads N] [--times] PID...
 * prints stacks_text of the collection, then "cut" when the collection did
 * not take everything, "whole" when it did; exits 0, or 1 with one line.
 * --times prints instead, for each thread taken, "TID WAITED HELD": the
 * seconds it took to stop and it was held stopped, then the whole
 * collection's seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "stacks.h"

int main(int argc, char **argv)
{
	struct stacks_opts o = { .deadline = 10 };
	struct stacks_text_opts to = { .root = -1 };
	pid_t roots[64];
	struct stacks *s;
	char *text;
	bool times = false;
	double t0;
	int n = 0, e;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--descendants"))
			o.descendants = true;
		else if (!strcmp(argv[i], "--wait") && i + 1 < argc)
			o.thread_wait = atof(argv[++i]);
		else if (!strcmp(argv[i], "--deadline") && i + 1 < argc)
			o.deadline = atof(argv[++i]);
		else if (!strcmp(argv[i], "--times"))
			times = true;
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			o.max_threads = atoi(argv[++i]);
		else if (n < 64)
			roots[n++] = (pid_t)atoi(argv[i]);
	}
	o.deadline += t0 = clock_mono();
	if ((e = stacks_collect(roots, n, &o, &s)) < 0 || !(text = stacks_text(s, &to))) {
		fprintf(stderr, "stacks_dump: out of memory\n");
		stacks_free(s);
		return 1;
	}
	if (times) {
		for (int i = 0; i < s->nprocs; i++)
			for (int k = 0; k < s->procs[i].nthreads; k++) {
				const struct stacks_thread *t = &s->procs[i].threads[k];

				if (t->why == STACKS_TAKEN)
					printf("%d %.6f %.6f\n", (int)t->tid, t->waited, t->held);
			}
		printf("%.6f\n", clock_mono() - t0);
	} else {
		fputs(text, stdout);
	}
	printf("%s\n", s->cut ? "cut" : "whole");
	free(text);
	stacks_free(s);
	return 0;
}
