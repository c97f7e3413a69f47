# SPDX-License-Identifier: MIT
"""The job plane's own lines and a stderr nobody reads.

One node's slotrun writes its stderr into a pipe that the test fills and
then holds without reading.  Then something happens elsewhere that the
plane must act on there, and mostly say there too (a failure on another
node, a stop, a lost node): the node must go on all the same, stop its
workers, take part in the end of the job, and wait for its reader only in
the final flush.  When the test reads again, slotrun's lines come whole
and in order: the plane's line before the summary.

Three nodes of netns.Cluster, node i with ranks 2i and 2i+1; every wait has
a deadline and every slotrun is killed on the way out."""
import os
import signal
import subprocess

from harness import Proc, case, run
from jobs import Job, SR, clean_env, job_on

SECRET = "plane-stderr-e2e-secret"
HEARTBEAT = 2
# the held node waits this long for its reader at the end, so that the test
# can read its lines; the others give up on theirs after a second
HELD_GRACE = 60
OPTS = ["--join-timeout", "10", "--heartbeat-timeout", str(HEARTBEAT)]
START_WITHIN = 30
IDLE = ["sh", "-c", 'echo ready; if [ "$RANK" = 5 ] && [ -n "$FAIL_5" ]; then '
        'read x < "$JP_DIR/go.5"; exit 4; fi; exec sleep 60']


class HeldErr(Proc):
    """A slotrun whose stderr is a pipe the test holds: full when the
    process starts, and read by nobody until release()."""

    def __init__(self, argv, environ):
        r, w = os.pipe2(os.O_CLOEXEC)
        fill(w)
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=w, stdin=subprocess.DEVNULL,
                                  env=environ)
        os.close(w)
        self.out = b""
        self.err = b""
        self.held = os.fdopen(r, "rb", buffering=0)
        # the Job's readers skip a closed pipe
        self.p.stderr = open(os.devnull, "rb")
        self.p.stderr.close()

    def release(self):
        """From now on the Job reads this stderr like any other."""
        self.p.stderr = self.held


def fill(w):
    """Fills the pipe through a second, non-blocking open file description
    (the slotrun's own stays blocking, as a terminal's or a pipe's is)."""
    fd = os.open(f"/proc/self/fd/{w}", os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        while True:
            try:
                os.write(fd, b"x" * 4095 + b"\n")
            except BlockingIOError:
                break
    finally:
        os.close(fd)


class HeldJob(Job):
    def start(self, i, *, held=False, grace=1, env=None):
        args = ["--nnodes", "3", "--node-rank", str(i), "--addrs", ",".join(self.cl.addrs),
                "--slots", "2", *OPTS, "--grace", str(grace), "--", *IDLE]
        e = clean_env({"SLOTRUN_JOB_SECRET": SECRET, "JP_DIR": self.dir, **(env or {})})
        if not held:
            return self.spawn(i, args, e)
        p = HeldErr(self.cl.prefix(i) + [SR, *args], e)
        p.node = i
        self.procs[i] = p
        self.every.append(p)
        return p

    def ready(self, nodes):
        def all_ready():
            return all(b"[rank=%d] ready\n" % r in self.out(r // 2) for n in nodes for r in (2 * n, 2 * n + 1))
        self.wait(all_ready, START_WITHIN, f"'ready' from every rank of nodes {list(nodes)}")

    def workers_gone(self, i, timeout):
        """Until only node i's slotrun is left on node i."""
        me = self.procs[i].pid
        self.wait(lambda: set(self.cl.pids(i)) <= {me}, timeout,
                  f"node {i}'s workers to be stopped (its stderr unread)", must_run=[i])

    def read_held(self, i, timeout):
        """Reads node i's stderr again, to the end; returns slotrun's own
        part (after the filler) and its exit code."""
        p = self.procs[i]
        p.release()
        code, = self.finish([i], timeout)
        filler = b"x" * 4095 + b"\n"
        n = 0
        while p.err.startswith(filler, n * len(filler)):
            n += 1
        own = p.err[n * len(filler):]
        return own.decode(errors="replace"), code


def in_order(text, *parts):
    at = [text.find(x) for x in parts]
    assert -1 not in at and at == sorted(at), f"expected in this order: {parts}\nin:\n{text}"


@case
def a_failure_elsewhere_while_a_member_s_stderr_is_unread():
    with job_on(3, "ps", HeldJob) as job:
        os.mkfifo(os.path.join(job.dir, "go.5"))
        job.start(0)
        job.start(1, held=True, grace=HELD_GRACE)
        job.start(2, env={"FAIL_5": "1"})
        job.ready(range(3))
        fd = os.open(os.path.join(job.dir, "go.5"), os.O_WRONLY | os.O_CLOEXEC)
        os.write(fd, b"go\n")
        os.close(fd)
        job.expect_exit([4, 4], [0, 2], timeout=30)
        job.workers_gone(1, 10)
        assert job.running(1), job.describe()       # its last words wait for the reader
        own, code = job.read_held(1, 30)
        assert code == 4, f"exit {code}\n{own}"
        in_order(own, "slotrun: stopping this node's workers: rank 5 on node 2 (10.213.0.3) exit 4",
                 "job failed: rank 5 on node 2 (10.213.0.3) exit 4")
        job.assert_nothing_left()


@case
def a_stop_elsewhere_while_a_member_s_stderr_is_unread():
    with job_on(3, "pt", HeldJob) as job:
        job.start(0)
        job.start(1, held=True, grace=HELD_GRACE)
        job.start(2)
        job.ready(range(3))
        job.procs[2].signal(signal.SIGTERM)
        job.expect_exit([143, 143], [0, 2], timeout=30)
        job.workers_gone(1, 10)
        own, code = job.read_held(1, 30)
        assert code == 143, f"exit {code}\n{own}"
        assert "job stopped: SIGTERM to node 2 (10.213.0.3)" in own, own
        job.assert_nothing_left()


@case
def a_lost_node_while_the_chief_s_stderr_is_unread():
    with job_on(3, "pl", HeldJob) as job:
        job.start(0, held=True, grace=HELD_GRACE)
        job.start(1)
        job.start(2)
        job.ready(range(3))
        job.procs[2].signal(signal.SIGKILL)
        job.expect_exit([1], [1], timeout=HEARTBEAT + 20)
        job.workers_gone(0, 10)
        assert job.running(0), job.describe()
        own, code = job.read_held(0, 30)
        assert code == 1, f"exit {code}\n{own}"
        in_order(own, "slotrun: stopping this node's workers: node 2 (10.213.0.3) lost",
                 "job failed: node 2 (10.213.0.3) lost")
        job.assert_nothing_left()


run()
