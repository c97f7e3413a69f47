// SPDX-License-Identifier: MIT
#include "rank_report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"

int rank_report_parse(const char *text, size_t len, struct rank_report *out)
{
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *msg, *culprit;
	int r = -EINVAL;

	*out = (struct rank_report){ .culprit = -1 };
	if (!json_is_object(root))
		goto done;
	msg = json_object_get(root, "message");
	if (json_is_object(msg) && !(msg = json_object_get(msg, "message")))
		goto done; /* torch's @record: {"message": {"message": "...", ...}} */
	culprit = json_object_get(root, "culprit_rank");
	if ((msg && !json_is_string(msg)) || (culprit && !json_is_integer(culprit)) ||
	    (culprit && (json_integer_value(culprit) < 0 || json_integer_value(culprit) > INT_MAX)))
		goto done;
	if (msg)
		snprintf(out->message, sizeof(out->message), "%s", json_string_value(msg));
	out->culprit = culprit ? (int)json_integer_value(culprit) : -1;
	r = 0;
done:
	json_decref(root);
	return r;
}

int rank_reports_open(struct rank_reports *rr)
{
	const char *tmp = getenv("TMPDIR");
	char *dir;

	rr->dir = NULL;
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (asprintf(&dir, "%s/slotrun-reports.XXXXXX", tmp) < 0)
		return -ENOMEM;
	if (!mkdtemp(dir)) {
		int e = errno;

		free(dir);
		return -e;
	}
	rr->dir = dir;
	return 0;
}

void rank_reports_path(const struct rank_reports *rr, int rank, char *buf, size_t len)
{
	if (rr->dir)
		snprintf(buf, len, "%s/rank-%d.json", rr->dir, rank);
	else if (len)
		buf[0] = '\0';
}

void rank_reports_clear(const struct rank_reports *rr, int rank)
{
	char path[4096];

	rank_reports_path(rr, rank, path, sizeof(path));
	if (path[0])
		(void)unlink(path);
}

int rank_reports_read(const struct rank_reports *rr, int rank, struct rank_report *out)
{
	char path[4096], *text;
	int r;

	*out = (struct rank_report){ .culprit = -1 };
	rank_reports_path(rr, rank, path, sizeof(path));
	if (!path[0])
		return -ENOENT;
	text = io_read_file(path, RANK_REPORT_MAX);
	if (!text)
		return -errno;
	r = rank_report_parse(text, strlen(text), out);
	free(text);
	return r;
}

void rank_reports_close(struct rank_reports *rr)
{
	DIR *d;

	if (!rr->dir)
		return;
	/* the workers may have put anything there; a folder of theirs stays */
	d = opendir(rr->dir);
	if (d) {
		struct dirent *e;

		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				(void)unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	(void)rmdir(rr->dir);
	free(rr->dir);
	rr->dir = NULL;
}
