# SPDX-License-Identifier: MIT
"""Many nodes of one job simulated on one machine: N slotruns of one slot
each on loopback (`--nnodes N --node-rank i --master-addr 127.0.0.1`, one
job secret, `--bind none`), so that the chief's slotrun (node 0) holds N-1
connections as it would on N hosts.  Their worker is scale_worker.c (no
shell, no libc start-up beyond its own): it stamps its start, its failure
and the stop that reached it with CLOCK_MONOTONIC into one shared file.
For tests/e2e/test_scale.py and bench/scale.py.

With a fan-out F (`fanout=F`), the job runs as a relay tree
(docs/job-plane.md, "The tree"), each relay under SCHED_FIFO below the
chief's priority (a chief for its group, on a host of its own on a
cluster, that must not keep the chief waiting either).
Every relay must listen on the control
port of a host of its own, so each group of F nodes runs in a network
namespace of its own, a host of a netns.Cluster (10.213.0.G+1 for group
G, on one bridge), and every node is given the job's addresses
(SLOTRUN_ADDRS: node k's is its group's host).  Needs root.

Each slotrun's exit is waited for through a pidfd, so that the rest of a
test's children are left to their own waits; its stdout and stderr go to
node-I.log in the job's folder.

On N hosts no node's work takes the chief's CPU; here every node shares
the machine's cores with it.  So the chief's slotrun runs under SCHED_FIFO
where we may set it (root; its own workers are started under the usual
policy, SCHED_RESET_ON_FORK), and the other nodes under SCHED_BATCH (their
workers too): the chief is not kept waiting by the nodes its messages
wake.  Without that, at 256 nodes the chief's broadcast of a STOP ran for
14 ms and waited for the CPU for 430.  Every other node's work is still
done one after another on the machine's cores, where N hosts do it at
once."""
import ctypes
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from ports import free_ports

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER_SRC = os.path.join(HERE, "scale_worker.c")


def build_worker(folder, src=WORKER_SRC):
    """scale_worker (or src) compiled into folder (static where it can be:
    it starts once per node), or None without a C compiler."""
    out = os.path.join(folder, os.path.splitext(os.path.basename(src))[0])
    for cc in (["musl-gcc", "-static"], ["cc", "-static"], ["cc"]):
        if shutil.which(cc[0]) and subprocess.run(cc + ["-O2", "-o", out, src],
                                                  stderr=subprocess.DEVNULL).returncode == 0:
            return out
    return None


def free_port_pair():
    """p such that p and p + 1 are free on loopback now."""
    return free_ports(2, consecutive=True)[0]


def job_env():
    """Ours without the scheduler variables that would change the plan,
    with the job secret and a topology of one PU: each slotrun reads it in
    microseconds instead of walking /sys (the nodes share the cores)."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("SLURM_", "DET_", "SLOTRUN_", "PET_", "OMPI_", "PMI_"))
         and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                       "JOB_COMPLETION_INDEX", "CUDA_VISIBLE_DEVICES")}
    e.update({"SLOTRUN_DET_INFO_DIR": "/nonexistent", "SLOTRUN_JOB_SECRET": "sim-nodes-secret",
              "HWLOC_SYNTHETIC": "pu:1"})
    return e


def enter_netns(fd):
    """This thread (and what it spawns from now on) joins the network
    namespace fd names."""
    import netns
    if netns._libc().setns(fd, netns._CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"setns: {os.strerror(e)}")


def chief_first(pid, prio=2):
    """The chief's slotrun (pid) gets the CPU before any node it wakes, as on
    a host of its own: whether that could be arranged.  A relay (prio 1)
    before its group's nodes, after the chief."""
    try:
        os.sched_setscheduler(pid, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(prio))
        return True
    except OSError:
        return False


def fds_needed(n):
    """Open files a simulation of n nodes takes on this machine at once:
    the chief's (a connection and a handshake per node), ours (a pidfd per
    node, a log while each starts), and a margin."""
    return 3 * n + 200


class Job:
    """One job of n simulated nodes; start() launches them, node 0 first."""

    def __init__(self, slotrun, worker, n, args=(), folder=None, keep=False, command=None, fanout=0,
                 adjust=None):
        """command(i, port, log): node i's argv instead of slotrun's (the
        bench's floor, bench/floor_node.c).  fanout: a relay tree, each
        group in a namespace of its own (see above).  adjust(i, argv,
        env): node i's own changes to its argv and env (lists and dict
        given), for a node given other settings than the rest."""
        self.slotrun, self.worker, self.n, self.args = slotrun, worker, n, list(args)
        self.command = command
        self.fanout = fanout
        self.adjust = adjust
        self.cluster = None
        self.port = None
        self.dir = tempfile.mkdtemp(prefix=f"sim{n}-", dir=folder)
        self.keep = keep
        self.log_path = os.path.join(self.dir, "events")
        open(self.log_path, "w").close()
        self.log = open(self.log_path, "rb")
        self.buf = b""
        self.events = []
        self.pids = []
        self.exits = {}            # pid -> (monotonic ns, status, cpu s, max RSS KiB)
        self.t_last = None         # monotonic ns just before the last node's start
        self.chief_rt = False      # the chief runs under SCHED_FIFO (chief_first)
        self.sel = selectors.EpollSelector()
        self.lock = threading.Condition()
        self.waiter = None

    # ---- starting and ending ----

    def start(self):
        ours = os.sched_getscheduler(0)
        home = None
        if self.fanout:
            import netns  # root only: the star needs none of it
            self.cluster = netns.Cluster((self.n + self.fanout - 1) // self.fanout, "sim")
            home = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            self._start()
        finally:
            os.sched_setscheduler(0, ours, os.sched_param(0))
            if home is not None:
                enter_netns(home)
                os.close(home)

    def group(self, i):
        """The namespace node i runs in (with a fan-out), or None."""
        return i // self.fanout if self.fanout else None

    def _start(self):
        port = self.port = free_port_pair()
        env = job_env()
        where = ["--master-addr", "127.0.0.1"]
        if self.fanout:
            import netns
            env["SLOTRUN_ADDRS"] = ",".join(self.cluster.addr(self.group(i)) for i in range(self.n))
            where = ["--fanout", str(self.fanout)]
        for i in range(self.n):
            if self.fanout and i % self.fanout == 0:  # the spawns from here on are in group i's
                with open(os.path.join(netns.NETNS_DIR, self.cluster.ns(self.group(i))), "rb") as f:
                    enter_netns(f.fileno())
            if i == 1:  # the members inherit it from us
                os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
            out = os.open(os.path.join(self.dir, f"node-{i}.log"), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
            fa = [(os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, out, 2),
                  (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0)]
            if self.command:
                argv = self.command(i, port, self.log_path)
            else:
                argv = [self.slotrun, "--nnodes", str(self.n), "--node-rank", str(i), *where,
                        "--master-port", str(port), "--slots", "1", "--bind", "none", *self.args,
                        "--", self.worker, self.log_path, "hold"]
            node_env = env
            if self.adjust:
                node_env = dict(env)
                self.adjust(i, argv, node_env)
            self.t_last = time.monotonic_ns()
            try:
                pid = os.posix_spawn(argv[0], argv, node_env, file_actions=fa)
            finally:
                os.close(out)
            self.pids.append(pid)
            if i == 0 or (self.fanout and i % self.fanout == 0):  # a relay is a chief for its group
                rt = chief_first(pid, 2 if i == 0 else 1)
                self.chief_rt = rt if i == 0 else self.chief_rt and rt
            self.sel.register(os.pidfd_open(pid), selectors.EVENT_READ, pid)
            if self.waiter is None:
                self.waiter = threading.Thread(target=self._wait, daemon=True)
                self.waiter.start()

    def _wait(self):
        while True:
            with self.lock:
                if len(self.exits) == len(self.pids) == self.n:
                    return
            for key, _ in self.sel.select(0.05):
                pid = key.data
                _, status, ru = os.wait4(pid, 0)
                t = time.monotonic_ns()
                self.sel.unregister(key.fileobj)
                os.close(key.fd)
                with self.lock:
                    self.exits[pid] = (t, os.waitstatus_to_exitcode(status), ru.ru_utime + ru.ru_stime,
                                       ru.ru_maxrss)
                    self.lock.notify_all()

    def wait_exit(self, timeout):
        """Whether every slotrun exited within timeout seconds."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while len(self.exits) < len(self.pids):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(left)
        return True

    def kill(self):
        """SIGKILL to every slotrun still running (their workers die with
        them), and their reaping."""
        for p in self.pids:
            if p not in self.exits:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.wait_exit(60)

    def close(self):
        self.kill()
        self.log.close()
        if self.cluster:
            self.cluster.close()
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---- what happened ----

    def poll(self):
        data = self.log.read()
        if data:
            self.buf += data
            *lines, self.buf = self.buf.split(b"\n")
            for line in lines:
                w = line.decode().split()
                self.events.append((w[0], int(w[1]), int(w[2]), int(w[3]), int(w[4]) if len(w) > 4 else 0))

    def of(self, kind, attempt=None):
        """Events (kind, rank, attempt, ns, pid) of one kind."""
        self.poll()
        return [e for e in self.events if e[0] == kind and (attempt is None or e[2] == attempt)]

    def wait_events(self, kind, attempt, count, timeout, what):
        """Polls every 10 ms until count events of kind came; raises with
        the nodes' statuses when a slotrun exits first or at the deadline."""
        deadline = time.monotonic() + timeout
        while len(self.of(kind, attempt)) < count:
            with self.lock:
                gone = len(self.exits)
            if gone:
                raise AssertionError(f"{gone} slotruns exited before {what}: {self.story()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what} "
                                     f"({len(self.of(kind, attempt))} of {count}): {self.story()}")
            time.sleep(0.01)  # the polling interval of a deadline wait
        return self.of(kind, attempt)

    def fail(self, rank):
        """The worker of rank fails (exit 4): its stamp is the failure's."""
        pid = [e[4] for e in self.of("start", 0) if e[1] == rank][0]
        os.kill(pid, signal.SIGUSR1)

    def codes(self):
        return [self.exits[p][1] if p in self.exits else None for p in self.pids]

    def node_log(self, i):
        with open(os.path.join(self.dir, f"node-{i}.log"), errors="replace") as f:
            return f.read()

    def story(self):
        """The statuses and the last lines of a few nodes, for a failure's
        message."""
        h = {}
        for c in self.codes():
            h[c] = h.get(c, 0) + 1
        tails = []
        for i in sorted({0, 1, self.n // 2, self.n - 1}):
            try:
                tails.append(f"node {i}: " + " | ".join(self.node_log(i).splitlines()[-3:]))
            except OSError:
                pass
        return f"statuses {h}; " + "; ".join(tails)

    # ---- the chief and a member, seen from /proc ----

    @staticmethod
    def proc(pid):
        """VmRSS (KiB), the fd count and the CPU seconds of pid so far (of
        its threads alive: slotrun's diagnostics threads end before its
        exit)."""
        out = {}
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if k == "VmRSS":
                        out["rss_kib"] = int(v.split()[0])
            out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
            with open(f"/proc/{pid}/schedstat") as f:  # in ns, where stat counts 10 ms ticks
                out["cpu_s"] = int(f.read().split()[0]) / 1e9
        except OSError:
            pass
        return out
