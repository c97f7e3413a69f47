// SPDX-License-Identifier: MIT
/* Replays a fuzz target's corpus: every regular file in the folders given
 * goes through LLVMFuzzerTestOneInput once, in name order.  A crash or a
 * failed check aborts, after the file's name is said; exit 0 otherwise, 1
 * when a folder cannot be read or holds no file. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#define REPLAY_MAX (1 << 20)

static int replay_file(const char *path)
{
	unsigned char *buf = malloc(REPLAY_MAX);
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!buf || !f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		free(buf);
		if (f)
			fclose(f);
		return -1;
	}
	n = fread(buf, 1, REPLAY_MAX, f);
	fclose(f);
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, rc = 0;

	for (int a = 1; a < argc; a++) {
		struct dirent **names;
		int count = scandir(argv[a], &names, NULL, alphasort);

		if (count < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[a], strerror(errno));
			return 1;
		}
		for (int i = 0; i < count; i++) {
			char path[4096];
			struct stat st;

			snprintf(path, sizeof(path), "%s/%s", argv[a], names[i]->d_name);
			free(names[i]);
			if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
				continue;
			if (replay_file(path) < 0)
				rc = 1;
			else
				files++;
		}
		free(names);
	}
	if (files == 0) {
		fprintf(stderr, "replay: no input found\n");
		return 1;
	}
	fprintf(stderr, "replay: %d inputs, no crash\n", files);
	return rc;
}
