// SPDX-License-Identifier: MIT
/* The consoles' glue driven over pipes: the test is the slow reader. */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "console.h"
#include "leak_check.h"

static struct event_base *base;
static struct console c;
static int out_pipe[2], err_pipe[2];
static bool stopping;
static int pauses[2], resumes[2];

static bool hook_stopping(void *arg)
{
	return stopping;
}

static void hook_pause(void *arg, int k, bool paused)
{
	(paused ? pauses : resumes)[k]++;
}

static const struct console_hooks hooks = { .stopping = hook_stopping, .pause = hook_pause };

static void setup(void)
{
	cr_assert_eq(pipe2(out_pipe, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(err_pipe, O_CLOEXEC), 0);
	cr_assert_eq(fcntl(out_pipe[0], F_SETFL, O_NONBLOCK), 0);
	cr_assert_not_null(base = event_base_new());
	stopping = false;
	memset(pauses, 0, sizeof(pauses));
	memset(resumes, 0, sizeof(resumes));
	cr_assert_eq(console_init(&c, base, out_pipe[1], err_pipe[1], &hooks, NULL), 0);
}

static void teardown(void)
{
	console_free(&c);
	event_base_free(base);
	for (int k = 0; k < 2; k++) {
		close(out_pipe[k]);
		close(err_pipe[k]);
	}
}

TestSuite(console, .init = setup, .fini = teardown, .timeout = 30);

/* More than OUT_CONSOLE_HIGH bytes of whole lines for con[k], beyond what
 * its pipe takes (64 KiB by default). */
static void overfill(int k)
{
	static char line[4096];

	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (size_t n = 0; n <= OUT_CONSOLE_HIGH + (1 << 18); n += sizeof(line))
		out_console_put(&c.con[k], line, sizeof(line));
}

LEAK_TEST(console, a_note_is_one_line_on_stderr)
{
	char buf[64] = "";

	console_note(&c, "slotrun: %s %d", "note", 7);
	cr_assert_gt(read(err_pipe[0], buf, sizeof(buf) - 1), 0);
	cr_assert_str_eq(buf, "slotrun: note 7\n");
}

LEAK_TEST(console, a_full_console_pauses_its_reads_until_it_is_read_below_low)
{
	char sink[65536];

	overfill(0);
	console_flush(&c);
	cr_assert_eq(pauses[0], 1, "stdout is full: its reads pause");
	cr_assert_eq(pauses[1], 0, "stderr is not");
	cr_assert(c.paused[0]);
	/* the reader catches up; the loop writes on as the pipe takes it */
	for (double end = clock_mono() + 20; !resumes[0] && clock_mono() < end;) {
		while (read(out_pipe[0], sink, sizeof(sink)) > 0)
			;
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	cr_assert_eq(resumes[0], 1, "below OUT_CONSOLE_LOW the reads resume");
	cr_assert_not(c.paused[0]);
}

LEAK_TEST(console, a_stopping_job_sheds_instead_of_pausing)
{
	overfill(0);
	console_flush(&c);
	cr_assert(c.paused[0]);
	stopping = true;
	console_flush(&c);
	cr_assert_eq(resumes[0], 1, "the workers' output is read on");
	cr_assert(c.con[0].shed);
	cr_assert(c.con[1].shed);
}

LEAK_TEST(console, draining_at_exit_gives_up_at_its_deadline_and_counts_the_loss)
{
	overfill(0);
	console_drain(&c, base, 0.2); /* nobody reads */
	cr_assert_eq(out_console_pending(&c.con[0]), 0);
	cr_assert_gt(c.con[0].dropped, 0);
	cr_assert_not(c.flushing);
}

LEAK_TEST(console, a_stop_signal_matters_to_it_only_while_draining)
{
	cr_assert_not(console_signal(&c, SIGTERM));
	c.flushing = true;
	cr_assert(console_signal(&c, SIGUSR1));
	cr_assert_not(c.give_up, "not a stop");
	cr_assert(console_signal(&c, SIGTERM));
	cr_assert(c.give_up);
	c.flushing = false;
}

/* stdout's fd becomes a file on a full disk (/dev/full), then a file with
 * room (a temporary file dup'd over the same number). */
static void full_disk_on_stdout(void)
{
	int full = open("/dev/full", O_WRONLY | O_CLOEXEC);

	cr_assert_geq(full, 0);
	cr_assert_eq(dup3(full, out_pipe[1], O_CLOEXEC), out_pipe[1]);
	close(full);
}

static int room_on_stdout(char *path)
{
	int file = mkstemp(path);

	cr_assert_geq(file, 0);
	cr_assert_eq(dup3(file, out_pipe[1], O_CLOEXEC), out_pipe[1]);
	return file;
}

/* What slotrun said on stderr by now, after the loop ran until `want` came
 * or a deadline. */
static void wait_said(char *said, size_t size, const char *want)
{
	size_t len = strlen(said);

	cr_assert_eq(fcntl(err_pipe[0], F_SETFL, O_NONBLOCK), 0);
	for (double end = clock_mono() + 20; clock_mono() < end;) {
		ssize_t n;

		while (len < size - 1 && (n = read(err_pipe[0], said + len, size - 1 - len)) > 0)
			len += (size_t)n;
		said[len] = '\0';
		if (strstr(said, want))
			break;
		event_base_loop(base, EVLOOP_ONCE); /* the retry timer, or stderr's room */
	}
	cr_assert(strstr(said, want), "%s", said);
}

LEAK_TEST(console, a_full_disk_pauses_nobody_and_a_timer_retries_until_there_is_room)
{
	char said[4096] = "", path[] = "/tmp/slotrun-test-nospc-XXXXXX", want[256];
	int file;

	full_disk_on_stdout();
	out_console_put(&c.con[0], "one\n", 4);
	console_flush(&c);
	cr_assert(c.con[0].wait.waiting);
	wait_said(said, sizeof(said), "slotrun: stdout: No space left on device: retrying until there is "
		  "room; meanwhile what exceeds 1024 KiB is dropped and counted\n");
	overfill(0);
	console_flush(&c);
	cr_assert_eq(pauses[0], 0, "a full disk holds no worker back");
	cr_assert_gt(c.con[0].dropped, 0, "its queue is bounded instead");
	cr_assert(evtimer_pending(c.retry[0], NULL), "a timer, not the fd, retries");
	file = room_on_stdout(path);
	snprintf(want, sizeof(want), "(No space left on device); %zu lines (%zu bytes) were lost\n",
		 c.con[0].wait.lines, c.con[0].wait.bytes);
	wait_said(said, sizeof(said), want);
	cr_assert(strstr(said, "slotrun: stdout resumed after "), "%s", said);
	cr_assert_not(c.con[0].wait.waiting);
	unlink(path);
	close(file);
}

LEAK_TEST(console, draining_at_exit_waits_for_a_full_disk_a_bounded_time)
{
	full_disk_on_stdout();
	out_console_put(&c.con[0], "one\n", 4);
	console_drain(&c, base, -1);
	cr_assert_eq(out_console_pending(&c.con[0]), 0);
	cr_assert_eq(c.con[0].dropped, 4, "given up and counted");
}
