# SPDX-License-Identifier: MIT
"""End-to-end tests of the shared-memory transport (SLOTRUN_TRANSPORT=auto
and shm on one host) and of the hierarchical one across network-namespace
nodes: every type and op, odd counts and counts below n, up to 5 ranks; the
transport each setting picks; a rank killed or stopped mid-all-reduce named
by the others; kill -9 at random moments leaving no segment behind."""

import os
import random
import re
import signal
import subprocess
import time

from harness import Proc, binary, case, free_port, job_env, run, wait_for
from ranks import (ALLREDUCING, NW, bench_ok, cpu_seconds, finish_all, rank_env, start,
                   start_allreducing, survivors_name, table)

CHECK = binary("comm_check")
SR = binary("slotrun")
TIMEOUT = 4  # SLOTRUN_TIMEOUT for the failure tests, seconds
ALL = ["-d", "all", "-o", "all", "-n", "1", "-w", "0"]


def shm_ok(n, args, transport="auto", **kw):
    out, rows = bench_ok(n, args, transport=transport, **kw)
    assert b"# transport shm\n" in out, out[:1500]
    return out, rows


@case
def every_type_and_op_n2_to_n5():
    # 4, 36, ..., 236196 bytes: the small path and the stepped one, odd
    # counts, counts below n (1 float32, 0 float64).
    for n in (2, 3, 4, 5):
        _, rows = shm_ok(n, ["-b", "4", "-e", "300K", "-f", "9", *ALL], expect_rows=6 * 5 * 6)
        assert any(0 < r[1] < n for r in rows), "a count below the world size"
        assert any(r[1] == 0 for r in rows), "an empty buffer"


@case
def many_windows_odd_counts():
    # 1835009 float32 over 3 ranks: 28 windows, the last one short and
    # its pieces uneven; 1000006 bytes of every type and op over 2.
    _, rows = shm_ok(3, ["-b", "7340036", "-e", "7340036", "-n", "2", "-w", "1"])
    assert rows == [(7340036, 1835009, "float32", "sum", 0)], rows
    _, rows = shm_ok(2, ["-b", "1000006", "-e", "1000006", *ALL], expect_rows=6 * 5)


@case
def core_api_and_small_all_reduces_over_shm():
    for n in (2, 3, 5):
        procs = start(n, [CHECK], transport="auto")
        codes = finish_all(procs, 120)
        assert all(c == 0 for c in codes.values()), (n, codes, {r: p.err for r, p in procs.items()})
        for r, p in procs.items():
            assert p.out.decode().startswith(f"comm_check: rank {r}: ok ({n} ranks"), p.out


@case
def each_setting_picks_its_transport():
    for transport, says in (("auto", b"# transport shm\n"), ("shm", b"# transport shm\n"),
                            ("tcp", b"# transport tcp\n")):
        out, _ = bench_ok(3, ["-b", "64K", "-e", "64K"], transport=transport)
        assert says in out, (transport, out[:1500])
        assert b"# ranks 3, hosts 1, nodes 1," in out, out[:500]


@case
def ranks_that_disagree_are_told():
    port = free_port()
    procs = start(2, [NW, "--backend", "cpu", "-b", "4K", "-e", "4K"], port=port, ranks=[0],
                  transport="auto", timeout=TIMEOUT)
    procs.update(start(2, [NW, "--backend", "cpu", "-b", "1M", "-e", "1M"], port=port, ranks=[1],
                       transport="auto", timeout=TIMEOUT))
    codes = finish_all(procs, 30)
    assert codes[0] != 0 and codes[1] != 0, codes
    # each rank says it, or relays what the other said: both shapes, both ranks
    shapes = re.compile(r"rank (\d) is at all-reduce #(\d+) of (\d+) float32 sum, "
                        r"rank (\d) at all-reduce #\2 of (\d+) float32 sum")
    for r in (0, 1):
        m = shapes.search(procs[r].err.decode())
        assert m, procs[r].err
        sizes = {int(m.group(1)): int(m.group(3)), int(m.group(4)): int(m.group(5))}
        assert sizes == {0: 1024, 1: 262144}, (r, procs[r].err)


@case
def mismatched_transport_settings_are_told():
    procs = start(2, [NW, "--backend", "cpu", "-b", "4K", "-e", "4K"], transport="auto",
                  env_for=lambda r: {"SLOTRUN_TRANSPORT": "tcp"} if r == 1 else {})
    codes = finish_all(procs, 30)
    for r in (0, 1):
        err = procs[r].err.decode()
        assert codes[r] == 1 and "SLOTRUN_TRANSPORT differs: rank" in err, (r, codes, err)
        assert err.count("\n") == 1, err


@case
def killed_member_and_killed_leader_are_named_at_once():
    for victim in (2, 0):   # rank 0 leads the node: it holds the others' sockets
        procs = start_allreducing(4, victim, TIMEOUT, transport="shm")
        t0 = time.monotonic()
        procs[victim].p.send_signal(signal.SIGKILL)
        # at once: the dead rank's sockets close; well before SLOTRUN_TIMEOUT
        survivors_name(procs, victim, t0, TIMEOUT, "during all-reduce")


@case
def wedged_rank_is_named_after_the_timeout():
    procs = start_allreducing(4, 1, 2, transport="shm")
    t0 = time.monotonic()
    procs[1].p.send_signal(signal.SIGSTOP)
    try:
        survivors_name(procs, 1, t0, 2 + 1.5 + 2, "did not answer",
                       named=r"peer ranks? (\d+, )*1\b")
    finally:
        procs[1].p.send_signal(signal.SIGKILL)
        procs[1].p.wait(10)


def memfds_of(port):
    """Processes that map, or hold open, the segment of the job on port."""
    tag = f"memfd:slotrun-shm:{port} "
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/maps") as f:
                if tag.rstrip() in f.read():
                    found.append((int(d), "mapped"))
                    continue
            for fd in os.listdir(f"/proc/{d}/fd"):
                if os.readlink(f"/proc/{d}/fd/{fd}").startswith(tag.rstrip()):
                    found.append((int(d), "open"))
                    break
        except OSError:
            pass
    return found


def dev_shm():
    return {n for n in os.listdir("/dev/shm") if "slotrun" in n}


@case
def the_segment_is_seen_while_running_and_gone_after_kill_9():
    port = free_port()
    procs = start(2, ALLREDUCING, port=port, transport="shm", timeout=10)
    procs[0].wait_line("# transport shm", timeout=60)
    seen = wait_for(lambda: len(memfds_of(port)) >= 2 and memfds_of(port), 20, "both ranks' mappings")
    assert {pid for pid, _ in seen} == {p.pid for p in procs.values()}, seen
    for p in procs.values():
        p.p.send_signal(signal.SIGKILL)
    finish_all(procs, 20)
    assert memfds_of(port) == []


@case
def kill_9_at_random_moments_leaves_no_segment():
    seed = int(os.environ.get("SHM_KILL_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    before = dev_shm()
    for k in range(8):
        n = 3
        victims = list(range(n)) if k % 4 == 3 else [rng.randrange(n)]   # sometimes all at once
        delay = rng.uniform(0.0, 0.4)   # from the start: rendezvous, setup, all-reduces
        what = f"seed {seed}, run {k}: kill {victims} after {delay:.3f}s"
        port = free_port()
        procs = start(n, [NW, "--backend", "cpu", "-b", "4K", "-e", "16M", "-n", "3", "-w", "1"],
                      port=port, transport="shm", timeout=2)
        # the chosen moment comes: not synchronization, the point is to hit any moment
        time.sleep(delay)
        for v in victims:
            procs[v].p.send_signal(signal.SIGKILL)
        codes = finish_all(procs, 2 + 1.5 + 10)
        assert all(codes[v] == -signal.SIGKILL or codes[v] == 0 for v in victims), (what, codes)
        for r, code in codes.items():   # a survivor either finished or said why it stopped
            if r not in victims and code != 0:
                assert procs[r].err.startswith(b"nccl_worker: rank %d: " % r), (what, procs[r].err)
        assert memfds_of(port) == [], (what, memfds_of(port))
        assert dev_shm() == before, (what, dev_shm())


def namespace_job(cl, slots, cmd, env):
    procs = {}
    for i in range(cl.n):
        procs[i] = Proc(cl.prefix(i) + [SR, "--nnodes", str(cl.n), "--node-rank", str(i),
                                        "--addrs", ",".join(cl.addrs), "--slots", slots,
                                        "--master-port", str(29700 + os.getpid() % 200), "--", *cmd],
                        environ=job_env(env))
    return procs


@case
def mixed_shm_and_tcp_across_namespace_nodes():
    from netns import Cluster
    env = {"SLOTRUN_JOB_SECRET": "e2e-shm", "SLOTRUN_TIMEOUT": "60"}
    with Cluster(3, "shm") as cl:
        # 2 + 1 + 2 ranks: two nodes share memory, one rank alone, TCP across
        procs = namespace_job(cl, "2,1,2", [NW, "--backend", "cpu", "-b", "4", "-e", "2M", "-f", "11",
                                            *ALL], env)
        codes = finish_all(procs, 120)
        out = procs[0].out.decode(errors="replace")
        assert codes == {0: 0, 1: 0, 2: 0}, (codes, {i: p.err[-800:] for i, p in procs.items()})
        assert "[rank=0] # transport shm+tcp" in out and "nodes 3, local ranks 2" in out, out[:2000]
        rows = [l.split(None, 1)[1] for l in out.splitlines()
                if l.startswith("[rank=0] ") and not l.startswith("[rank=0] #")]
        assert len(table("\n".join(rows).encode())) == 6 * 5 * 6, rows
        assert all(r[4] == 0 for r in table("\n".join(rows).encode())), rows

        # shm across those nodes: one line, and nothing runs (slotrun may stop
        # a node's second rank before it says the same)
        procs = namespace_job(cl, "2", [NW, "--backend", "cpu", "-b", "4K", "-e", "4K"],
                              dict(env, SLOTRUN_TRANSPORT="shm"))
        codes = finish_all(procs, 60)
        for i, p in procs.items():
            err = p.err.decode(errors="replace")
            assert codes[i] != 0, (i, codes, err)
            assert re.search(r"\[rank=(\d+)\] nccl_worker: rank \1: SLOTRUN_TRANSPORT=shm, but ranks 0 "
                             r"and 2 are on different hosts \([^,]+, [^;]+; a host is a kernel boot "
                             r"and a network namespace\): use auto or tcp\n", err), err
            assert "[rank=0] #" not in p.out.decode(errors="replace"), "nothing ran"


@case
def a_rank_killed_across_nodes_is_named_by_every_other():
    """shm+tcp on 2 namespace nodes x 2 ranks, no slotrun in between: a
    member killed mid-all-reduce (rank 3), then a leader (rank 2), is
    named by the ranks of both nodes well before SLOTRUN_TIMEOUT."""
    from netns import Cluster
    with Cluster(2, "kill") as cl:
        for victim in (3, 2):
            port = free_port()
            procs = {}
            for r in range(4):
                env = rank_env(r, 4, port, timeout=TIMEOUT, transport="auto", LOCAL_RANK=r % 2,
                               LOCAL_WORLD_SIZE=2, MASTER_ADDR=cl.addr(0))
                procs[r] = Proc(cl.prefix(r // 2) + ALLREDUCING, env=env)
            procs[0].wait_line("# transport shm+tcp", timeout=60)
            wait_for(lambda: cpu_seconds(procs[victim].pid) > 0.3, 60, "the ranks to be all-reducing")
            t0 = time.monotonic()
            procs[victim].p.send_signal(signal.SIGKILL)
            survivors_name(procs, victim, t0, TIMEOUT, "during all-reduce")


@case
def members_wait_out_a_slow_network_past_the_timeout():
    """An all-reduce whose leaders' ring takes longer than SLOTRUN_TIMEOUT
    but keeps moving: the members, waiting for their leader's broadcast,
    see its progress and do not call it stuck."""
    from netns import Cluster
    env = {"SLOTRUN_JOB_SECRET": "e2e-shm", "SLOTRUN_TIMEOUT": "2"}
    with Cluster(2, "slow") as cl:
        # 8 MiB each way between the leaders at 16 Mbit/s: about 4 s
        for i in range(2):
            subprocess.run(cl.prefix(i) + ["tc", "qdisc", "add", "dev", cl.iface(i), "root", "tbf",
                                           "rate", "16mbit", "burst", "64kb", "latency", "2s"],
                           check=True)
        procs = namespace_job(cl, "2", [NW, "--backend", "cpu", "-b", "8M", "-e", "8M", "-n", "1",
                                        "-w", "0"], env)
        codes = finish_all(procs, 120)
        assert codes == {0: 0, 1: 0}, (codes, {i: p.err[-800:] for i, p in procs.items()})
        out = procs[0].out.decode(errors="replace")
        assert "[rank=0] # transport shm+tcp" in out, out
        rows = table("\n".join(l.split(None, 1)[1] for l in out.splitlines()
                               if l.startswith("[rank=0] ") and not l.startswith("[rank=0] #")).encode())
        assert len(rows) == 1 and rows[0][4] == 0, rows
        took = float([l for l in out.splitlines() if l.startswith("[rank=0] ") and "#" not in l][0]
                     .split()[6])
        print(f"# the all-reduce took {took / 1e6:.1f} s", flush=True)
        assert took > 2.5e6, f"the all-reduce took {took:.0f} us: the link was not slow enough to test"


run()
