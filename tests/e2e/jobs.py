# SPDX-License-Identifier: MIT
"""Multi-node jobs for the end-to-end tests: one slotrun per node of a
netns.Cluster, all read together (Job), and the environment they start from.
Every wait has a deadline; kill() ends every slotrun of the job."""
import contextlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

from harness import Proc, Skip, binary, job_env
from netns import Cluster

SR = binary("slotrun")
SYSTEM_PY = "/usr/bin/python3"

# Our environment without a scheduler's or slotrun's variables, with
# Determined's info folder out of the way.
clean_env = job_env


def need_torch():
    """Skips unless SYSTEM_PY can run the PyTorch examples (gloo)."""
    if not os.path.exists(SYSTEM_PY):
        raise Skip(f"no {SYSTEM_PY}")
    r = subprocess.run([SYSTEM_PY, "-c", "import torch.distributed as d; assert d.is_gloo_available()"],
                       capture_output=True, timeout=120)
    if r.returncode != 0:
        last = (r.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        raise Skip(f"{SYSTEM_PY} has no PyTorch with gloo (Debian: python3-torch): {last}")


class WaitTimeout(AssertionError):
    pass


class Job:
    """The slotruns of one job, node index -> Proc, all read together.
    cl is a netns.Cluster; d a folder of the test's."""

    def __init__(self, cl, d):
        self.cl = cl
        self.dir = d
        self.procs = {}
        self.every = []         # also the ones replaced (a node started again)
        self.exit_at = {}       # Proc -> time.monotonic() when we saw it gone

    def spawn(self, i, args, env):
        """slotrun ARGS on node i with exactly the environment env."""
        p = Proc(self.cl.prefix(i) + [SR, *args], environ=env)
        p.node = i
        self.procs[i] = p
        self.every.append(p)
        return p

    def out(self, i):
        return self.procs[i].out

    def err(self, i):
        return self.procs[i].err

    def running(self, i):
        self._note_exits()
        return self.procs[i].p.returncode is None

    def _note_exits(self):
        for p in self.every:
            if p.p.poll() is not None and p not in self.exit_at:
                self.exit_at[p] = time.monotonic()

    def describe(self):
        lines = []
        for p in self.every:
            rc = p.p.returncode
            state = "running" if rc is None else f"exit {rc}"
            lines.append(f"node {p.node} (slotrun pid {p.pid}): {state}\n"
                         f"  stderr: {p.err[-1500:]!r}\n  stdout: {p.out[-800:]!r}")
        return "\n".join(lines)

    def _pump(self, timeout):
        """Reads what any slotrun wrote and notes which have exited;
        returns False when nothing is left to wait for."""
        self._note_exits()
        pipes = {}
        for p in self.every:
            for f in (p.p.stdout, p.p.stderr):
                if not f.closed:
                    pipes[f.fileno()] = (p, f)
        if not pipes and all(p in self.exit_at for p in self.every):
            return False
        # the cap is the polling interval of a deadline wait (exits and
        # files are no pipe events), not synchronization
        if pipes:
            r, _, _ = select.select(list(pipes), [], [], min(timeout, 0.05))
        else:
            r = []
            time.sleep(min(timeout, 0.05))
        for fd in r:
            p, f = pipes[fd]
            p.take(f)
        return True

    def wait(self, pred, timeout, what, must_run=None):
        """Until pred() is true; fails at the deadline, or at once when a
        slotrun in must_run (default: every running one) exits first."""
        self._note_exits()
        must = [self.procs[i] for i in (self.procs if must_run is None else must_run)]
        must = [p for p in must if p.p.returncode is None]
        deadline = time.monotonic() + timeout
        while True:
            v = pred()
            if v:
                return v
            gone = [p.node for p in must if p.p.poll() is not None]
            if gone:
                self._drain([p for p in must if p.p.returncode is not None], 1)
                raise AssertionError(f"slotrun on node(s) {gone} exited while waiting for {what}:\n"
                                     + self.describe())
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeout(f"timed out after {timeout}s waiting for {what}:\n" + self.describe())
            if not self._pump(left):
                # the last exit may have come between pred() and the pump
                v = pred()
                if v:
                    return v
                raise AssertionError(f"every slotrun has exited, waiting for {what}:\n" + self.describe())

    def finish(self, nodes=None, timeout=30):
        """Waits for these slotruns to exit (and their output to end);
        returns their exit codes in order."""
        ps = [self.procs[i] for i in (self.procs if nodes is None else nodes)]
        self.wait(lambda: all(p.p.poll() is not None for p in ps), timeout,
                  f"the slotruns of nodes {[p.node for p in ps]} to exit", must_run=())
        for p in ps:
            self.exit_at.setdefault(p, time.monotonic())
        self._drain(ps, 2)
        return [p.p.returncode for p in ps]

    def _drain(self, ps, seconds):
        """Reads what exited slotruns wrote last; a pipe still open after
        the exit means a process of the job holds it (assert_nothing_left
        says which)."""
        end = time.monotonic() + seconds
        while any(not f.closed for p in ps for f in (p.p.stdout, p.p.stderr)) and time.monotonic() < end:
            self._pump(end - time.monotonic())

    def expect_exit(self, codes, nodes=None, timeout=30):
        got = self.finish(nodes, timeout)
        assert got == codes, f"exit codes {got}, expected {codes}\n" + self.describe()

    def exited_within(self, nodes, since, bound):
        late = {i: round(self.exit_at[self.procs[i]] - since, 2) for i in nodes
                if self.exit_at[self.procs[i]] - since > bound}
        assert not late, f"slotruns exited later than {bound}s after the event: {late}\n" + self.describe()

    def stays_running(self, nodes, seconds):
        """True when none of these exits within `seconds` (an exit is what
        is awaited here; its absence is the assertion)."""
        try:
            self.wait(lambda: any(not self.running(i) for i in nodes), seconds, "an exit", must_run=())
        except WaitTimeout:
            return True
        return False

    def assert_err_everywhere(self, text, nodes=range(3)):
        t = text.encode()
        missing = [i for i in nodes if t not in self.err(i)]
        assert not missing, f"{text!r} not on the stderr of node(s) {missing}:\n" + self.describe()

    def assert_nothing_left(self, timeout=5):
        """No process of the job in any node's namespace (workers die with
        their slotrun, also a SIGKILLed one: give them `timeout`)."""
        def left():
            return {i: self.cl.pids(i) for i in range(self.cl.n) if self.cl.pids(i)}
        deadline = time.monotonic() + timeout
        while left():
            if time.monotonic() > deadline:
                found = left()
                cmds = {pid: _cmdline(pid) for pids in found.values() for pid in pids}
                raise AssertionError(f"processes left in node namespaces {found}: {cmds}\n" + self.describe())
            self._pump(0.05)

    def kill(self):
        for p in self.every:
            try:
                p.p.send_signal(signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.every:
            try:
                p.p.wait(10)
            except subprocess.TimeoutExpired:
                pass
            for f in (p.p.stdout, p.p.stderr):
                f.close()


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


@contextlib.contextmanager
def job_on(n, tag, cls=None):
    """A job (cls, default Job) on a Cluster of n nodes, with a folder of its
    own; every slotrun is killed and the nodes removed on the way out."""
    d = tempfile.mkdtemp(prefix="slotrun-job-")
    try:
        with Cluster(n, tag) as cl:
            job = (cls or Job)(cl, d)
            try:
                yield job
            finally:
                job.kill()
    finally:
        shutil.rmtree(d, ignore_errors=True)
