# SPDX-License-Identifier: MIT
"""The job plane across three nodes (docs/job-plane.md): one slotrun
per node, each in a network namespace of netns.Cluster, node i with ranks
2i and 2i+1.  The slotruns join the chief, agree, and from then on share
one fate: a failure, a stop, a preemption signal or a lost node anywhere
ends or reaches the job on every node with one status.

Every wait has a deadline and every slotrun is killed on the way out, so a
slotrun without the job plane fails these quickly (it refuses the options)
instead of hanging them.  Timeouts are short (--join-timeout 5,
--heartbeat-timeout 2, --grace 1) where a case is not about them; the
bounds on how fast a node reacts are generous: timings are benchmarks."""
import contextlib
import json
import os
import signal
import socket
import stat
import struct
import time

from harness import Proc, Skip, case, fifo_release, run
from jobs import SR, SYSTEM_PY, Job, clean_env, job_on, need_torch

HERE = os.path.dirname(os.path.abspath(__file__))
DDP_CHECK = os.path.join(HERE, "..", "..", "examples", "pytorch", "ddp_check.py")

SECRET = "job-plane-e2e-secret"
HEARTBEAT = 2
GRACE = 1
FAST = ["--join-timeout", "5", "--heartbeat-timeout", str(HEARTBEAT), "--grace", str(GRACE)]
CONTROL_PORT = 29401            # the default: MASTER_PORT (29400) + 1
PLANE_HB_PER_TIMEOUT = 5        # launcher/plane_proto.h
LOST_WITHIN = HEARTBEAT + GRACE + 8
START_WITHIN = 30               # joins, agreement, six workers on two cores

MAGIC = b"slotrun-plane/1\0"
CHAL, JOIN = 1, 2

def env_for(extra=None, secret=SECRET):
    """Our environment without a scheduler's or slotrun's variables."""
    e = clean_env({"SLOTRUN_JOB_SECRET": secret} if secret is not None else None)
    e.update(extra or {})
    return e


def node_of(rank):
    return rank // 2


def said(out, rank, text):
    return b"[rank=%d] %s\n" % (rank, text.encode()) in out


class PlaneJob(Job):
    """A job of this file's shape: node i runs slotrun --nnodes 3 --node-rank i
    with two slots, so rank r is on node r // 2."""

    def start(self, i, cmd, *, node_rank=None, nnodes=3, slots=2, opts=FAST, extra=(), env=None, addrs=None):
        args = ["--nnodes", str(nnodes), "--node-rank", str(i if node_rank is None else node_rank),
                "--addrs", ",".join(addrs or self.cl.addrs), "--slots", str(slots), *opts, *extra, "--", *cmd]
        e = env_for({"JP_DIR": self.dir}) if env is None else dict(env, JP_DIR=self.dir)
        return self.spawn(i, args, e)

    def start_all(self, cmd, nodes=range(3), **kw):
        for i in nodes:
            self.start(i, cmd, **kw)

    def wait_ready(self, ranks=range(6), text="ready", timeout=START_WITHIN, must_run=None):
        self.wait(lambda: all(said(self.out(node_of(r)), r, text) for r in ranks), timeout,
                  f"{text!r} from ranks {list(ranks)}", must_run)


def job_plane(nodes=3, tag="jp"):
    return job_on(nodes, tag, PlaneJob)


def fifos(job, ranks):
    for r in ranks:
        os.mkfifo(os.path.join(job.dir, f"go.{r}"))


def release(job, rank, timeout=10):
    """Lets a rank blocked in `read x < $JP_DIR/go.RANK` go on.  The FIFO
    opens for writing only once the rank holds it open for reading."""
    path = os.path.join(job.dir, f"go.{rank}")
    job.wait(fifo_release(path), timeout, f"rank {rank} to wait on {path}", must_run=())


def markers(job):
    return sorted(n for n in os.listdir(job.dir) if n.startswith("started."))


MARK = ["sh", "-c", 'touch "$JP_DIR/started.$RANK"; echo ran']
IDLE = ["sh", "-c", "echo ready; exec sleep 60"]


def assert_all_ran(job):
    for r in range(6):
        assert said(job.out(node_of(r)), r, "ran"), f"rank {r} did not run\n" + job.describe()


# --- the control connection, for the cases that speak it ------------------

def frame(kind, payload):
    return struct.pack(">IB", 1 + len(payload), kind) + payload


def recv_exact(s, n, deadline):
    buf = b""
    while len(buf) < n:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = s.recv(n - len(buf))
        except (TimeoutError, socket.timeout):
            raise AssertionError(f"timed out after {len(buf)} of {n} bytes") from None
        if not chunk:
            raise AssertionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def read_frame(s, timeout=10, limit=1 << 16):
    """(type, payload, raw bytes) of one frame."""
    deadline = time.monotonic() + timeout
    head = recv_exact(s, 4, deadline)
    n = struct.unpack(">I", head)[0]
    assert 1 <= n <= limit, f"frame length {n}"
    body = recv_exact(s, n, deadline)
    return body[0], body[1:], head + body


def connect(job, i, addr, port, timeout=START_WITHIN, must_run=None):
    """A connection from node i to addr:port, retried while refused (the
    listener may not be up yet)."""
    box = {}

    def attempt():
        s = job.cl.socket(i)
        s.settimeout(2)
        try:
            s.connect((addr, port))
        except (ConnectionRefusedError, TimeoutError, socket.timeout):
            s.close()
            return False
        box["s"] = s
        return True
    job.wait(attempt, timeout, f"a connection to {addr}:{port}", must_run=must_run)
    return box["s"]


def closed_by_peer(s, timeout):
    """True when the peer closes s within timeout (EOF or reset), whatever
    it sent before; False when it keeps it open."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        s.settimeout(left)
        try:
            if not s.recv(4096):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except (TimeoutError, socket.timeout):
            return False


# --- the cases --------------------------------------------------------------

@case
def failure_with_idle_ranks_stops_every_node_with_its_status():
    with job_plane() as job:
        fifos(job, [5])
        for i in range(3):
            job.start(i, ["sh", "-c", 'echo ready; if [ "$RANK" = 5 ]; then echo "bad batch" >&2; '
                          'read x < "$JP_DIR/go.5"; exit 4; fi; exec sleep 60'],
                      extra=["--error-file", os.path.join(job.dir, f"error.{i}.json")])
        job.wait_ready()
        t0 = time.monotonic()
        release(job, 5)
        job.expect_exit([4, 4, 4], timeout=30)
        job.exited_within(range(3), t0, 10)
        job.assert_err_everywhere("job failed: rank 5 on node 2 (10.213.0.3) exit 4")
        job.assert_err_everywhere("slotrun: | [rank=5] bad batch")
        job.assert_nothing_left()
        for i in range(3):
            with open(os.path.join(job.dir, f"error.{i}.json")) as f:
                e = json.load(f)
            assert e["exit_status"] == 4 and e["node_rank"] == i, e
            rc = e["root_cause"]
            assert (rc["kind"], rc["node_rank"], rc["host"], rc["rank"], rc["exit_code"]) == \
                ("rank", 2, "10.213.0.3", 5, 4), rc
            assert rc["stderr_tail"] == ["[rank=5] bad batch"], rc
            assert [r["rank"] for r in e["ranks"]] == [2 * i, 2 * i + 1], e["ranks"]


@case
def nodes_that_disagree_on_slots_start_nothing():
    with job_plane() as job:
        job.start(0, MARK)
        job.start(1, MARK)
        job.start(2, MARK, slots=3)
        job.expect_exit([2, 2, 2], timeout=30)
        job.assert_err_everywhere("node 2 (10.213.0.3) says 3 slots, node 0 was told 2")
        assert markers(job) == [], markers(job)
        job.assert_nothing_left()


@case
def a_node_that_never_comes_is_named_after_the_join_timeout():
    with job_plane() as job:
        t0 = time.monotonic()
        job.start_all(MARK, nodes=[0, 1], opts=["--join-timeout", "3", "--heartbeat-timeout", "2", "--grace", "1"])
        job.expect_exit([2, 2], timeout=30)
        early = {i: round(job.exit_at[job.procs[i]] - t0, 2) for i in (0, 1) if job.exit_at[job.procs[i]] - t0 < 3}
        assert not early, f"gave up before the 3 s join timeout: {early}\n" + job.describe()
        job.assert_err_everywhere("node 2 (10.213.0.3) did not join within 3 s", nodes=[0, 1])
        assert markers(job) == [], markers(job)
        job.assert_nothing_left()


# --join-timeout far above the bound a case waits: an exit within that bound
# is the join ending at once, not running out
SLOW_JOIN = ["--join-timeout", "60", "--heartbeat-timeout", "2", "--grace", "1"]
SECRET_FIX = "give every node the same --secret-file / SLOTRUN_JOB_SECRET"


@case
def a_node_with_another_secret_ends_the_join_on_every_node():
    with job_plane() as job:
        job.start_all(MARK, nodes=[0, 1], opts=SLOW_JOIN)
        job.start(2, MARK, opts=SLOW_JOIN, env=env_for(secret="not-" + SECRET))
        job.expect_exit([2, 2, 2], timeout=30)
        job.assert_err_everywhere(f"slotrun: node 2 ({job.cl.addr(2)}) presented another job secret: {SECRET_FIX}")
        assert markers(job) == [], markers(job)
        job.assert_nothing_left()


@case
def a_chief_with_another_secret_is_named_by_every_node():
    with job_plane() as job:
        job.start(0, MARK, opts=SLOW_JOIN, env=env_for(secret="not-" + SECRET))
        job.start_all(MARK, nodes=[1, 2], opts=SLOW_JOIN)
        job.expect_exit([2, 2, 2], timeout=30)
        job.assert_err_everywhere(f"slotrun: node 0 ({job.cl.addr(0)}), the chief, holds another job secret "
                                  f"than the other nodes: {SECRET_FIX}")
        assert markers(job) == [], markers(job)
        job.assert_nothing_left()


@case
def a_stray_with_another_secret_from_an_unlisted_address_is_refused_alone():
    # a fourth namespace, not in the job's list, claims node 2's place
    with job_plane(nodes=4) as job:
        listed = job.cl.addrs[:3]
        job.start_all(MARK, nodes=[0, 1], opts=SLOW_JOIN, addrs=listed)
        job.start(3, MARK, node_rank=2, opts=SLOW_JOIN, addrs=listed, env=env_for(secret="not-" + SECRET))
        job.expect_exit([2], [3], timeout=30)
        assert b"refused our job secret" in job.err(3), job.describe()
        assert job.running(0) and job.running(1), "the stray ended the join\n" + job.describe()
        assert b"presented another job secret: not joined" in job.err(0), job.describe()
        job.start(2, MARK, opts=SLOW_JOIN, addrs=listed)
        job.expect_exit([0, 0, 0], nodes=[0, 1, 2], timeout=30)
        assert_all_ran(job)
        job.assert_nothing_left()


def a_second_node_2_once_the_job_runs(check, env=None):
    """Starts node 2's command a second time (env: its environment) once
    the job runs; check(job, second) looks at that slotrun once it has
    exited; then the job must finish undisturbed."""
    with job_plane() as job:
        fifos(job, range(6))
        wait_go = ["sh", "-c", 'echo ready; read x < "$JP_DIR/go.$RANK"; echo ran']
        job.start_all(wait_go, opts=SLOW_JOIN)
        job.wait_ready()
        node2 = job.procs[2]
        second = job.start(2, MARK, opts=SLOW_JOIN, env=env)
        job.procs[2] = node2
        job.wait(lambda: second.p.poll() is not None, 30, "the second node 2 to exit")
        job._drain([second], 2)
        check(job, second)
        for r in range(6):
            release(job, r)
        job.expect_exit([0, 0, 0], timeout=30)
        assert_all_ran(job)
        job.assert_nothing_left()


@case
def another_secret_after_the_start_is_refused_and_the_job_goes_on():
    def check(job, stray):
        assert stray.p.returncode == 2 and b"refused our job secret" in stray.err, job.describe()
    a_second_node_2_once_the_job_runs(check, env=env_for(secret="not-" + SECRET))


@case
def the_same_node_started_again_is_refused_alone_and_the_job_goes_on():
    """A retried ssh, a pod relaunched while its old slotrun lives: node 2's
    command run a second time, with the right secret, once the job runs."""
    late = b"node 2 (10.213.0.3) joined after the job had started: not joined, the job runs on without it"

    def check(job, again):
        assert again.p.returncode == 2 and late in again.err, job.describe()
        assert late in job.err(0), job.describe()
    a_second_node_2_once_the_job_runs(check)


@case
def a_replayed_join_is_refused_and_the_job_goes_on():
    port = 29600
    with job_plane() as job:
        cl = job.cl
        opts = ["--join-timeout", "20", "--heartbeat-timeout", "2", "--grace", "1"]
        fake = cl.socket(0)
        conn = None
        try:
            # a fake chief records what a real node 1 answers to its challenge
            fake.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            fake.bind((cl.addr(0), port))
            fake.listen(4)
            fake.setblocking(False)
            job.start(1, MARK, opts=opts, extra=["--control-port", str(port)])
            box = {}

            def accepted():
                try:
                    box["c"] = fake.accept()[0]
                    return True
                except BlockingIOError:
                    return False
            job.wait(accepted, START_WITHIN, "node 1 to connect to the fake chief")
            conn = box["c"]
            conn.setblocking(True)
            nonce = os.urandom(32)
            conn.sendall(frame(CHAL, MAGIC + nonce))
            try:
                kind, _, recorded = read_frame(conn)
            except (AssertionError, OSError) as e:
                raise AssertionError(f"no JOIN from node 1: {e}\n" + job.describe()) from None
            assert kind == JOIN, f"node 1 answered the challenge with a frame of type {kind}, not JOIN"
            job.procs[1].kill()
            job.finish([1], timeout=10)
        finally:
            if conn:
                # reset, not closed: no TIME_WAIT on the chief's address for
                # the real chief to bind over
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
            fake.close()
        assert markers(job) == [], markers(job)

        job.start(0, MARK, opts=opts, extra=["--control-port", str(port)])
        s = connect(job, 1, cl.addr(0), port)
        try:
            try:
                kind, payload, _ = read_frame(s)
            except (AssertionError, OSError) as e:
                raise AssertionError(f"no challenge from the chief: {e}\n" + job.describe()) from None
            assert kind == CHAL and len(payload) == 48 and payload[:16] == MAGIC, (kind, payload)
            assert payload[16:] != nonce
            s.sendall(recorded)
            assert closed_by_peer(s, 5), "the chief kept a replayed JOIN's connection open"
        finally:
            s.close()
        assert job.running(0), job.describe()
        env = env_for({"SLOTRUN_CONTROL_PORT": str(port)})
        job.start(1, MARK, opts=opts, env=env)
        job.start(2, MARK, opts=opts, env=env)
        job.expect_exit([0, 0, 0], timeout=30)
        assert_all_ran(job)
        job.assert_nothing_left()


@case
def garbage_on_the_control_port_does_not_disturb_the_job():
    with job_plane() as job:
        cl = job.cl
        opts = ["--join-timeout", "20", "--heartbeat-timeout", "2", "--grace", "1"]
        job.start(0, MARK, opts=opts)
        held = []
        try:
            held.append(connect(job, 1, cl.addr(0), CONTROL_PORT))
            held[-1].sendall(b"GET / HTTP/1.1\r\n\r\n")
            held.append(connect(job, 1, cl.addr(0), CONTROL_PORT))
            held[-1].sendall(os.urandom(1000))
            held.append(connect(job, 2, cl.addr(0), CONTROL_PORT))
            held[-1].sendall(struct.pack(">IB", 1 << 31, JOIN) + b"\0" * 64)
            connect(job, 2, cl.addr(0), CONTROL_PORT).close()
            for k in range(40):
                held.append(connect(job, 1 + k % 2, cl.addr(0), CONTROL_PORT, timeout=10))
            assert job.running(0), job.describe()
            job.start(1, MARK, opts=opts)
            job.start(2, MARK, opts=opts)
            job.expect_exit([0, 0, 0], timeout=40)
        finally:
            for s in held:
                s.close()
        assert_all_ran(job)
        job.assert_nothing_left()


@contextlib.contextmanager
def a_node_lost(victim, sig):
    """Ranks idle on every node; `sig` goes to node `victim`'s slotrun; the
    other two name it lost and exit 1.  Yields the job to the case, which
    checks the victim."""
    with job_plane() as job:
        job.start_all(IDLE)
        job.wait_ready()
        t0 = time.monotonic()
        job.procs[victim].signal(sig)
        others = [i for i in range(3) if i != victim]
        job.expect_exit([1, 1], others, timeout=30)
        job.exited_within(others, t0, LOST_WITHIN)
        job.assert_err_everywhere(f"node {victim} ({job.cl.addr(victim)}) lost", nodes=others)
        yield job


@case
def sigkill_of_a_node_is_seen_by_the_others():
    with a_node_lost(1, signal.SIGKILL) as job:
        job.expect_exit([-signal.SIGKILL], [1], timeout=10)
        job.assert_nothing_left()   # node 1's workers died with their slotrun


@case
def sigkill_of_the_chief_is_seen_by_the_others():
    with a_node_lost(0, signal.SIGKILL) as job:
        job.expect_exit([-signal.SIGKILL], [0], timeout=10)
        job.assert_nothing_left()


@case
def a_cut_cable_is_a_lost_node_on_both_sides():
    with job_plane() as job:
        job.start_all(IDLE)
        job.wait_ready()
        t0 = time.monotonic()
        job.cl.cut(2)
        job.expect_exit([1, 1, 1], timeout=30)
        job.exited_within(range(3), t0, LOST_WITHIN)
        job.assert_err_everywhere("node 2 (10.213.0.3) lost", nodes=[0, 1])
        job.assert_err_everywhere("node 0 (10.213.0.1) lost", nodes=[2])
        job.assert_nothing_left()


@case
def a_stopped_node_is_lost_and_gives_up_when_continued():
    with a_node_lost(1, signal.SIGSTOP) as job:
        t1 = time.monotonic()
        job.procs[1].signal(signal.SIGCONT)
        code, = job.finish([1], timeout=20)
        assert code != 0, job.describe()
        job.exited_within([1], t1, 10)
        job.assert_nothing_left()


@case
def sigterm_to_one_node_stops_every_node():
    with job_plane() as job:
        job.start_all(["sh", "-c", "trap 'echo got TERM; exit 143' TERM; echo ready; sleep 60 & wait $!; "
                       "echo 'no TERM'; exit 1"])
        job.wait_ready()
        job.procs[1].signal(signal.SIGTERM)
        job.expect_exit([143, 143, 143], timeout=30)
        for r in range(6):
            assert said(job.out(node_of(r)), r, "got TERM"), f"rank {r}\n" + job.describe()
        job.assert_err_everywhere("job stopped: SIGTERM to node 1 (10.213.0.2)")
        job.assert_nothing_left()


@case
def sigusr1_to_one_node_reaches_every_rank_and_the_job_goes_on():
    # the first USR1 is a preemption notice: the ranks say so and go on;
    # the second (to the chief this time) makes them finish
    with job_plane() as job:
        job.start_all(["sh", "-c", "n=0; trap 'n=$((n+1)); echo \"got USR1 #$n\"; [ $n -lt 2 ] || exit 0' USR1; "
                       "echo ready; for i in 1 2 3; do sleep 60 & wait $!; done; echo 'no USR1'; exit 1"])
        job.wait_ready()
        job.procs[1].signal(signal.SIGUSR1)
        job.wait_ready(text="got USR1 #1", timeout=20)
        assert all(job.running(i) for i in range(3)), job.describe()
        job.procs[0].signal(signal.SIGUSR1)
        job.expect_exit([0, 0, 0], timeout=30)
        for r in range(6):
            assert said(job.out(node_of(r)), r, "got USR1 #2"), f"rank {r}\n" + job.describe()
        job.assert_nothing_left()


@case
def nodes_done_early_wait_for_the_job():
    with job_plane() as job:
        fifos(job, [4, 5])
        job.start_all(["sh", "-c", 'if [ "$RANK" -ge 4 ]; then echo ready; read x < "$JP_DIR/go.$RANK"; fi; '
                       "echo done"])
        job.wait_ready(ranks=[0, 1, 2, 3], text="done")
        job.wait_ready(ranks=[4, 5])
        for i in (0, 1):   # its ranks have exited, its slotrun has not
            job.wait(lambda: job.cl.pids(i) == [job.procs[i].pid], 10, f"node {i}'s ranks to exit")
        assert job.stays_running([0, 1], 2), "a node whose ranks were done left the job\n" + job.describe()
        release(job, 4)
        release(job, 5)
        job.expect_exit([0, 0, 0], timeout=30)
        for r in range(6):
            assert said(job.out(node_of(r)), r, "done"), job.describe()
        job.assert_nothing_left()


def wakeups(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError(f"no voluntary_ctxt_switches in /proc/{pid}/status")


@case
def an_idle_member_wakes_once_per_heartbeat():
    # A member answers the chief's heartbeat in the wake-up it causes and
    # puts its own tick off while they come: one wake-up per heartbeat
    # interval (timeout/5), where it took three (two ticks and the chief's
    # heartbeat).  At a thousand nodes that was half the CPU of two cores.
    hb = 1.0
    window = 3.0
    with job_plane() as job:
        job.start_all(IDLE, opts=["--join-timeout", "5", "--heartbeat-timeout", str(hb), "--grace", "1"])
        job.wait_ready()
        pid = job.procs[1].pid
        before = wakeups(pid)
        # the window the rate is taken over
        assert job.stays_running([0, 1, 2], window), "a node exited\n" + job.describe()
        rate = (wakeups(pid) - before) / window
        per_interval = rate * hb / PLANE_HB_PER_TIMEOUT
        assert per_interval < 2, f"node 1's slotrun woke {rate:.1f} times a second, {per_interval:.1f} " \
                                 f"times per heartbeat interval\n" + job.describe()
        job.procs[1].signal(signal.SIGTERM)
        job.expect_exit([143, 143, 143], timeout=30)
        job.assert_nothing_left()


@case
def duplicate_node_rank_is_refused():
    # node 2 finds that --addrs lists its address as node 2's and stops
    # before joining; the chief's refusal of a rank joined twice, where a
    # node cannot tell, is plane_coord's unit test
    with job_plane() as job:
        job.start(0, MARK)
        job.start(1, MARK)
        job.start(2, MARK, node_rank=1)
        job.expect_exit([2], nodes=[2], timeout=30)
        assert b"disagrees" in job.err(2) and b"--node-rank 2" in job.err(2), job.describe()
        job.expect_exit([2, 2], nodes=[0, 1], timeout=30)
        assert b"node 2" in job.err(0), job.describe()
        assert markers(job) == [], markers(job)
        job.assert_nothing_left()


@case
def without_a_secret_every_node_says_so_once():
    with job_plane() as job:
        job.start_all(MARK, env=env_for(secret=None))
        job.expect_exit([0, 0, 0], timeout=30)
        for i in range(3):
            n = sum(b"is therefore not secret" in l for l in job.err(i).split(b"\n"))
            assert n == 1, f"node {i} said it {n} times\n" + job.describe()
        assert_all_ran(job)
    with job_plane(tag="file") as job:
        # the first line is the secret: the rest may differ between nodes
        files = []
        for i in range(3):
            files.append(os.path.join(job.dir, f"secret.{i}"))
            with open(files[i], "w") as f:
                f.write(f"{SECRET}-from-a-file\nnode {i}'s own comment\n")
            os.chmod(files[i], stat.S_IRUSR)
        job.start(0, MARK, env=env_for(secret=None), extra=["--secret-file", files[0]])
        job.start(1, MARK, env=env_for(secret=None), extra=["--secret-file", files[1]])
        job.start(2, MARK, env=env_for({"SLOTRUN_SECRET_FILE": files[2]}, secret=None))
        job.expect_exit([0, 0, 0], timeout=30)
        for i in range(3):
            assert b"is therefore not secret" not in job.err(i), job.describe()
        assert_all_ran(job)


@case
def nccl_worker_all_reduce_across_three_nodes():
    nw = os.environ.get("NCCL_WORKER_BIN")
    if not nw:
        raise Skip("NCCL_WORKER_BIN not set")
    with job_plane() as job:
        job.start_all([nw, "--backend", "cpu", "-b", "4", "-e", "1M", "-f", "16", "-d", "all", "-o", "sum"],
                      extra=["--master-port", "29517"], env=env_for({"SLOTRUN_TIMEOUT": "60"}))
        job.expect_exit([0, 0, 0], timeout=120)
        out = job.out(0).decode(errors="replace")
        assert "# ranks 6," in out, out[:3000]
        for a in job.cl.addrs:   # each node's ranks on its own bridge address
            assert out.count(f"data plane {a}:") == 2, out[:3000]
        rows = [l for l in out.splitlines() if l.startswith("[rank=0] ") and not l.startswith("[rank=0] #")]
        assert len(rows) >= 6 and all(l.split()[-1] == "0" for l in rows), rows
        job.assert_nothing_left()


@case
def pytorch_ddp_across_three_nodes():
    need_torch()
    with job_plane() as job:
        job.start_all([SYSTEM_PY, DDP_CHECK], env=env_for({"SLOTRUN_TIMEOUT": "120"}))
        job.expect_exit([0, 0, 0], timeout=240)
        for r in range(6):
            out = job.out(node_of(r))
            assert b"[rank=%d] params identical" % r in out, job.describe()
        job.assert_nothing_left()


# --- restarts across nodes ---------------------------------------------------

RESTART_RANK = ["python3", os.path.join(HERE, "restart_rank.py")]


def fail_once(job, delay):
    """Starts restart_rank.py on every node with one restart after `delay`,
    and lets rank 5 (node 2) fail attempt 0 once every rank is up."""
    fifos(job, [5])
    job.start_all(RESTART_RANK, extra=["--max-restarts", "1", "--restart-delay", delay],
                  env=env_for({"RESTART_TAG": f"r{os.getpid()}", "FAIL_RANK": "5"}))
    job.wait_ready()
    release(job, 5)


@case
def a_failure_restarts_every_node_in_step():
    # attempt 1: every rank finds nothing of attempt 0 alive on any node
    with job_plane() as job:
        fail_once(job, "0.2")
        job.expect_exit([0, 0, 0], timeout=60)
        for r in range(6):
            assert said(job.out(node_of(r)), r, "attempt 1 stale=0 torch=1/1"), f"rank {r}\n" + job.describe()
        job.assert_err_everywhere("attempt 2 of 2 in 0.2 s, after rank 5 on node 2 (10.213.0.3) exit 4")
        job.assert_err_everywhere("attempt 1 of 2 failed: rank 5 on node 2 (10.213.0.3) exit 4")
        job.assert_err_everywhere("attempt 2 of 2 succeeded")
        job.assert_nothing_left()


@case
def sigterm_during_the_backoff_stops_every_node_at_once():
    with job_plane() as job:
        fail_once(job, "60")
        job.wait(lambda: b"attempt 2 of 2 in 60 s" in job.err(1), 30, "node 1 waiting to restart")
        t0 = time.monotonic()
        job.procs[1].signal(signal.SIGTERM)
        job.expect_exit([143, 143, 143], timeout=30)
        job.exited_within(range(3), t0, 10)
        job.assert_err_everywhere("job stopped: SIGTERM to node 1 (10.213.0.2)")
        for r in range(6):
            assert not said(job.out(node_of(r)), r, "attempt 1 stale=0 torch=1/1"), job.describe()
        job.assert_nothing_left()


@case
def nodes_that_disagree_on_max_restarts_start_nothing():
    with job_plane() as job:
        job.start(0, MARK, extra=["--max-restarts", "2"])
        job.start(1, MARK, extra=["--max-restarts", "2"])
        job.start(2, MARK)
        job.expect_exit([2, 2, 2], timeout=30)
        job.assert_err_everywhere("node 2 (10.213.0.3) says --max-restarts 0, node 0 was told 2")
        assert markers(job) == [], markers(job)


@case
def nodes_that_disagree_on_the_heartbeat_timeout_start_nothing():
    # a node that judges silence sooner than its peers speak would call
    # healthy nodes lost: one heartbeat timeout per job
    with job_plane() as job:
        job.start(0, MARK)
        job.start(1, MARK)
        job.start(2, MARK, opts=["--join-timeout", "5", "--heartbeat-timeout", "7.5", "--grace", "1"])
        job.expect_exit([2, 2, 2], timeout=30)
        job.assert_err_everywhere(f"node 2 (10.213.0.3) says --heartbeat-timeout 7.5, node 0 was told {HEARTBEAT}")
        assert markers(job) == [], markers(job)



@case
def a_node_rank_the_chief_sees_from_another_node_s_address_ends_the_join():
    # Nodes 1 and 2 swapped their ranks, and their /etc/hosts swap the two
    # names as well, so each finds its rank consistent with the list; the
    # chief's /etc/hosts is right.  Each hosts file is bound over /etc/hosts
    # in a mount namespace of that slotrun's own.
    with job_plane() as job:
        a = job.cl.addrs
        names = ["sr-node0", "sr-node1", "sr-node2"]
        views = {"right": [a[0], a[1], a[2]], "swapped": [a[0], a[2], a[1]]}
        for view, order in views.items():
            with open(os.path.join(job.dir, f"hosts.{view}"), "w") as f:
                f.write("127.0.0.1 localhost\n")
                f.writelines(f"{addr} {name}\n" for addr, name in zip(order, names))

        def start(i, rank, view):
            args = ["--nnodes", "3", "--node-rank", str(rank), "--addrs", ",".join(names), "--slots", "2",
                    *SLOW_JOIN, "--", *MARK]
            own_hosts = ["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"',
                         os.path.join(job.dir, f"hosts.{view}")]
            p = Proc(job.cl.prefix(i) + own_hosts + [SR, *args], environ=env_for({"JP_DIR": job.dir}))
            p.node = i
            job.procs[i] = p
            job.every.append(p)

        start(0, 0, "right")
        start(1, 2, "swapped")
        start(2, 1, "swapped")
        job.expect_exit([2, 2, 2], timeout=30)
        job.assert_err_everywhere("which the node list gives node")
        assert (f"joined from {a[1]}, which the node list gives node 1 (sr-node1), not node 2 (sr-node2)".encode()
                in job.err(0) or
                f"joined from {a[2]}, which the node list gives node 2 (sr-node2), not node 1 (sr-node1)".encode()
                in job.err(0)), job.describe()
        assert markers(job) == [], markers(job)
        job.assert_nothing_left()


run()
