# SPDX-License-Identifier: MIT
"""A terminal stop (Ctrl-Z: SIGTSTP to slotrun) as a shell's job control
does it: every process of the job stops with slotrun, slotrun says so and
stops itself, and SIGCONT (fg) continues them all; the stopped time counts
neither for --hang-timeout nor as a node's silence.  Ctrl-Z is typed on a
pseudo-terminal once, as a user would; the other cases send SIGTSTP.  A
slotrun SIGKILLed while stopped takes its stopped processes with it.  On
several nodes the whole job pauses and resumes; a node that is SIGKILLed
(or whose host goes away) while paused is still seen as lost by the
others.

A process is stopped when /proc/PID/stat says T.  Every wait has a
deadline; holding a job stopped for longer than a timeout is the case
itself, checked as "nothing exits meanwhile"."""

import os
import pty
import re
import select
import signal
import tempfile
import time

from harness import Proc, binary, case, fifo_release, job_env, kill_pids, pid_alive, pids_with_env, run, wait_for
from jobs import Job, clean_env, job_on

SR = binary("slotrun")
TMP = tempfile.mkdtemp(prefix="test_tstp.")

HEARTBEAT = 2
FAST = ["--join-timeout", "20", "--heartbeat-timeout", str(HEARTBEAT), "--grace", "1"]
SECRET = "tstp-e2e-secret"


def state(pid):
    """The state letter of /proc/PID/stat, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def descendants(root):
    """Every live process below root (zombies left out)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if rest[0] not in "ZX":
            children.setdefault(int(rest[1]), []).append(int(d))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def all_stopped(root):
    """root and everything below it stopped (T), the job's command among them."""
    below = descendants(root)
    return state(root) == "T" and below and all(state(p) in ("T", None) for p in below)


def not_stopped(root):
    return {p: state(p) for p in [root, *descendants(root)] if state(p) not in ("T", None)}


def release(d, rank):
    """Lets a rank blocked in `read x < $D/go.RANK` go on (the FIFO opens
    for writing once the rank holds it for reading)."""
    return fifo_release(os.path.join(d, f"go.{rank}"))


# Each rank says it is ready, waits for the test's word, then counts.
WAIT_THEN_COUNT = ('echo ready; read x < "$D/go.$RANK"; i=0; while [ $i -lt 20 ]; do echo "line $i"; '
                   'i=$((i+1)); done; echo done')


def fifos(d, ranks):
    for r in ranks:
        os.mkfifo(os.path.join(d, f"go.{r}"))


@case
def sigtstp_stops_every_worker_and_sigcont_resumes_them():
    d = tempfile.mkdtemp(dir=TMP)
    fifos(d, range(2))
    # --hang-timeout shorter than the stop: the stopped time must not count
    p = Proc([SR, "--slots", "2", "--grace", "1", "--hang-timeout", "2", "--", "sh", "-c",
              WAIT_THEN_COUNT], environ=job_env({"D": d}))
    try:
        p.wait_output(lambda s: s.out.count(b"ready") == 2, 30, "both ranks ready")
        p.signal(signal.SIGTSTP)
        wait_for(lambda: all_stopped(p.pid), 10, "slotrun and every worker process stopped")
        p.wait_line(b"slotrun: stopped (SIGTSTP): 2 ranks stopped; fg or kill -CONT %d resumes them"
                    % p.pid, "err", 10)
        # stopped past the hang timeout: nothing of the job moves meanwhile
        try:
            wait_for(lambda: not_stopped(p.pid), 3, "a process of the job to run")
            raise AssertionError(f"running while stopped: {not_stopped(p.pid)}")
        except AssertionError as e:
            if "timed out" not in str(e):
                raise
        p.signal(signal.SIGCONT)
        p.wait_line(b"slotrun: continued: 2 ranks continued", "err", 10)
        for r in range(2):
            wait_for(release(d, r), 10, f"rank {r} to wait for its word")
        code = p.finish(30)
    finally:
        p.kill()
    assert code == 0, p.err[-2000:]
    for r in range(2):
        for i in range(20):
            assert b"[rank=%d] line %d\n" % (r, i) in p.out, p.out[-2000:]
        assert b"[rank=%d] done\n" % r in p.out, p.out[-2000:]
    assert b"--hang-timeout" not in p.err and b"not by slotrun" not in p.err, p.err[-2000:]


class Terminal:
    """argv on a pseudo-terminal of its own, as a shell's foreground job:
    it leads the session and the terminal's foreground group, so Ctrl-Z
    typed there is the kernel's SIGTSTP to it."""

    def __init__(self, argv, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.out = b""

    def read_until(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while not pred(self.out):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {what}; terminal: {self.out[-2000:]!r}")
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    chunk = os.read(self.fd, 1 << 16)
                except OSError:   # EIO: every writer is gone
                    chunk = b""
                if not chunk:
                    if pred(self.out):
                        return
                    raise AssertionError(f"the terminal closed before {what}; terminal: {self.out[-2000:]!r}")
                self.out += chunk

    def wait(self, flags, timeout, what):
        """The next wait status waitpid(flags) reports."""
        def reported():
            pid, status = os.waitpid(self.pid, flags | os.WNOHANG)
            return (status,) if pid else None
        return wait_for(reported, timeout, what)[0]

    def type(self, data):
        os.write(self.fd, data)

    def close(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        os.close(self.fd)


@case
def ctrl_z_on_a_terminal_stops_the_job_as_a_shell_sees_it():
    d = tempfile.mkdtemp(dir=TMP)
    fifos(d, range(2))
    t = Terminal([SR, "--slots", "2", "--grace", "1", "--", "sh", "-c", WAIT_THEN_COUNT],
                 job_env({"D": d}))
    try:
        t.read_until(lambda o: o.count(b"ready") == 2, 30, "both ranks ready")
        t.type(b"\x1a")   # Ctrl-Z
        # what a shell's waitpid(WUNTRACED) sees
        status = t.wait(os.WUNTRACED, 10, "slotrun to stop")
        assert os.WIFSTOPPED(status), status
        # a SIGSTOP is acted on when its process next runs: under load a
        # worker can still be runnable (R) when slotrun has stopped itself,
        # though it runs no more of its own code
        wait_for(lambda: all_stopped(t.pid), 10, "every worker process stopped")
        t.read_until(lambda o: b"slotrun: stopped (SIGTSTP): 2 ranks stopped; fg or kill -CONT %d" % t.pid
                     in o, 10, "the stop said")
        os.kill(t.pid, signal.SIGCONT)   # fg
        for r in range(2):
            wait_for(release(d, r), 10, f"rank {r} to wait for its word")
        t.read_until(lambda o: o.count(b"done") == 2, 30, "both ranks done")
        status = t.wait(0, 30, "slotrun to exit")
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, t.out[-2000:])
        t.pid = 0
    finally:
        if t.pid:
            t.close()
        else:
            os.close(t.fd)
    assert b"slotrun: continued: 2 ranks continued" in t.out, t.out[-2000:]


@case
def slotrun_killed_while_stopped_leaves_nothing_behind():
    d = tempfile.mkdtemp(dir=TMP)
    fifos(d, range(2))
    p = Proc([SR, "--slots", "2", "--grace", "1", "--", "sh", "-c", WAIT_THEN_COUNT],
             environ=job_env({"D": d}))
    try:
        p.wait_output(lambda s: s.out.count(b"ready") == 2, 30, "both ranks ready")
        job = pids_with_env("", D=d)
        assert job, "no process of the job found"
        p.signal(signal.SIGTSTP)
        wait_for(lambda: all_stopped(p.pid), 10, "slotrun and every worker process stopped")
        p.signal(signal.SIGKILL)
        wait_for(lambda: not any(pid_alive(q) for q in pids_with_env("", D=d)), 10,
                 "every stopped process of the job to die with slotrun")
        assert p.finish(10) == -signal.SIGKILL
    finally:
        p.kill()
        kill_pids(pids_with_env("", D=d))


@case
def sigtstp_while_the_job_is_ending_is_ignored_and_said():
    d = tempfile.mkdtemp(dir=TMP)
    fifos(d, [0])
    p = Proc([SR, "--slots", "1", "--grace", "20", "--", "sh", "-c",
              "trap 'echo got TERM; read x < \"$D/go.0\"; exit 0' TERM; echo ready; "
              "sleep 60 & wait $!"], environ=job_env({"D": d}))
    try:
        p.wait_line(b"[rank=0] ready", "out", 30)
        p.signal(signal.SIGTERM)
        p.wait_line(b"[rank=0] got TERM", "out", 10)
        p.signal(signal.SIGTSTP)
        p.wait_line(b"slotrun: SIGTSTP ignored: the job is ending", "err", 10)
        assert state(p.pid) != "T", "slotrun stopped while its job was ending"
        wait_for(release(d, 0), 10, "rank 0 to wait for its word")
        code = p.finish(30)
    finally:
        p.kill()
    assert code == 128 + signal.SIGTERM, (code, p.err[-2000:])


# --- several nodes: one slotrun per network namespace --------------------

def start_job(job, n=3, cmd=WAIT_THEN_COUNT):
    fifos(job.dir, range(2 * n))
    for i in range(n):
        args = ["--nnodes", str(n), "--node-rank", str(i), "--addrs", ",".join(job.cl.addrs),
                "--slots", "2", *FAST, "--", "sh", "-c", cmd]
        job.spawn(i, args, clean_env({"SLOTRUN_JOB_SECRET": SECRET, "D": job.dir}))
    job.wait(lambda: all(job.out(r // 2).count(b"[rank=%d] ready" % r) for r in range(2 * n)), 60,
             "every rank ready")


def pause(job, victim, n=3):
    """SIGTSTP to node victim's slotrun: it and its workers stop, every
    other node's workers stop too and say why."""
    host = job.cl.addr(victim)
    p = job.procs[victim]
    p.signal(signal.SIGTSTP)
    job.wait(lambda: all_stopped(p.pid), 15, f"node {victim}'s slotrun and workers stopped", must_run=())
    line = b"slotrun: job paused: SIGTSTP to node %d (%s): 2 ranks stopped here" % (victim, host.encode())
    others = [i for i in range(n) if i != victim]
    job.wait(lambda: all(line in job.err(i) for i in others), 15, "the other nodes pausing")
    for i in others:
        job.wait(lambda: not descendants(job.procs[i].pid)
                 or all(state(q) in ("T", None) for q in descendants(job.procs[i].pid)), 15,
                 f"node {i}'s workers stopped")
    return others


def paused_longer_than_the_heartbeat(victim):
    with job_on(3, "tp") as job:
        start_job(job)
        others = pause(job, victim)
        # twice the heartbeat timeout: a silent node would be lost by now
        assert job.stays_running(others, 2 * HEARTBEAT + 1), job.describe()
        assert state(job.procs[victim].pid) == "T", job.describe()
        job.procs[victim].signal(signal.SIGCONT)
        resumed = b"slotrun: job resumed: node %d (%s) was continued" % (victim, job.cl.addr(victim).encode())
        job.wait(lambda: all(resumed in job.err(i) for i in others), 15, "the other nodes resuming")
        for r in range(6):
            job.wait(release(job.dir, r), 15, f"rank {r} to wait for its word")
        job.expect_exit([0, 0, 0], timeout=60)
        for r in range(6):
            out = job.out(r // 2)
            assert all(b"[rank=%d] line %d\n" % (r, i) in out for i in range(20)), job.describe()
            assert b"[rank=%d] done\n" % r in out, job.describe()
        for i in range(3):
            assert b"lost" not in job.err(i), job.describe()
        assert b"slotrun: continued: the job resumes: 2 ranks continued here" in job.err(victim), \
            job.describe()
        job.assert_nothing_left()


@case
def a_paused_node_is_not_lost_and_the_job_resumes():
    paused_longer_than_the_heartbeat(1)


@case
def a_paused_chief_is_not_lost_and_the_job_resumes():
    paused_longer_than_the_heartbeat(0)


def killed_while_paused(victim):
    with job_on(3, "tk") as job:
        start_job(job)
        others = pause(job, victim)
        job.procs[victim].signal(signal.SIGKILL)
        job.expect_exit([1, 1], others, timeout=30)
        # closed, or reset where the victim's kernel still held bytes it had not read
        lost = re.compile(rb"job failed: node %d \(%s\) lost: (connection closed|Connection reset by peer)\n"
                          % (victim, re.escape(job.cl.addr(victim).encode())))
        assert all(lost.search(job.err(i)) for i in others), job.describe()
        job.expect_exit([-signal.SIGKILL], [victim], timeout=10)
        job.assert_nothing_left()   # the stopped workers died with their slotrun


@case
def a_node_killed_while_paused_is_lost_and_the_job_ends():
    killed_while_paused(1)


@case
def a_chief_killed_while_paused_is_lost_and_the_job_ends():
    killed_while_paused(0)


@case
def a_paused_node_whose_host_goes_away_is_lost():
    # its kernel no longer answers the keepalive probes that watch it
    with job_on(3, "tc") as job:
        start_job(job)
        others = pause(job, 1)
        job.cl.cut(1)
        job.expect_exit([1, 1], others, timeout=60)
        job.assert_err_everywhere(f"node 1 ({job.cl.addr(1)}) lost", nodes=others)


if __name__ == "__main__":
    run()
