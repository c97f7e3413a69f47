#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Elastic jobs' figures on 3 network-namespace nodes x 2 slots (needs root
and iproute2), each beside a baseline measured in the same invocation.

Usage: bench/elastic.py [--slotrun PATH] [--runs N] [--skip-torch] [--json FILE]

Every node runs `slotrun --nnodes 2:3 --max-restarts 5 --master-addr <node
0> --node-rank i --slots 2` (default --heartbeat-timeout 5 and --grace) of
workers that print their round and their own clock, then idle:
`echo "up $SLOTRUN_ROUND $(date +%s%N)"; exec sleep 600`.  Times are taken
from the ranks' own clock readings.

kill    round 1 runs; every process of node 2 (slotrun and workers) gets
        SIGKILL; to the last of the 4 survivors' ranks up in round 2.
        Goal: the heartbeat timeout + 2 s.
cut     the same with node 2's cable pulled (its bridge port set down).
        Goal: the heartbeat timeout + 2 s.
chief   SIGKILL of node 0, the chief: to the last of nodes 1 and 2's 4
        ranks up in round 2 (node 1 takes over).
join    nodes 0 and 1 run round 1 (--settle-time 1 on every node); node
        2's slotrun starts: from its launch to its 2 ranks up in round 2.
        Baseline (alternating with it): the workers' own start, a one-node
        slotrun (--nnodes 1 --slots 2) on node 2 from launch to its 2
        ranks up.  Goal: 2 s + the workers' own start.
torchrun  (one run each, skipped with --skip-torch or without PyTorch)
        `torchrun --nnodes 2:3 --nproc_per_node 2 --rdzv_backend c10d
        --rdzv_endpoint <node 0>:29500 --max_restarts 5 --redirects 1 --tee 1
        bench/torch_elastic_loop.py` (Debian's python3-torch, gloo) on the
        same nodes, each in a UTS namespace of its own with its own host
        name (torchrun gives its workers the host name of rank 0's node as
        MASTER_ADDR); SIGKILL of node 2's processes, then node 2's cable
        pulled: from then to the last of the survivors' 4 ranks' first
        step of the next restart.  Its baseline, the workers' own start: a
        one-node torchrun (--standalone) from launch to its 2 ranks' first
        step.  A cut link is given TORCH_CUT_DEADLINE
        seconds with gloo's default timeout (30 minutes), then once more
        with the process group's timeout at TORCH_PG_TIMEOUT seconds."""
import argparse
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from harness import Proc, Skip, job_env, kill_pids  # noqa: E402
from netns import Cluster  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--slotrun", default=os.path.join(HERE, "..", "build", "launcher", "slotrun"))
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--skip-torch", action="store_true", help="no torchrun figures (bench/run --quick)")
ap.add_argument("--json", help="also write the figures here")
args = ap.parse_args()
SR = os.path.abspath(args.slotrun)
SECRET = "bench-elastic"
HEARTBEAT = 5.0                 # slotrun's default --heartbeat-timeout
UP = 'echo "up $SLOTRUN_ROUND $(date +%s%N)"; exec sleep 600'
UP_RE = re.compile(rb"\[rank=(\d+)\] up (\d*) (\d+)\n")
WITHIN = 120                    # seconds for anything to happen on a busy machine
TORCH_PY = "/usr/bin/python3"
TORCHRUN = "/usr/bin/torchrun"
TORCH_LOOP = os.path.join(HERE, "torch_elastic_loop.py")
TORCH_WITHIN = 600              # torch's imports on a busy 2-core machine are slow
TORCH_CUT_DEADLINE = 180
# Debian's torchrun 1.13 on Python 3.11 dies with its default --redirects 0
# and --tee 0 (Std.from_str("0") is None there: 3.11 no longer iterates a
# flag's 0 member): stdout goes to a log file and is teed to the console
# ("[<local rank>]:step ..."), stderr stays as it is.
TORCH_STD = ["--redirects", "1", "--tee", "1"]
TORCH_PG_TIMEOUT = 30
STEP_RE = re.compile(rb"step (\d+) (\d+) (\d+) (\d+)$", re.M)


def env():
    return job_env({"SLOTRUN_JOB_SECRET": SECRET})


def node(net, i, extra=()):
    args_ = ["--nnodes", "2:3", "--master-addr", net.addrs[0], "--node-rank", str(i), "--slots", "2",
             "--max-restarts", "5", *extra, "--", "sh", "-c", UP]
    return Proc(net.prefix(i) + [SR, *args_], environ=env())


def pump(procs, cond, timeout, what):
    """Reads every proc's output until cond() holds; AssertionError naming
    what, with everything read, at the deadline or when all output ended."""
    deadline = time.monotonic() + timeout
    while not cond():
        left = deadline - time.monotonic()
        fds = {f: p for p in procs for f in (p.p.stdout, p.p.stderr) if not f.closed}
        if left <= 0 or not fds:
            raise AssertionError(f"{'timed out' if left <= 0 else 'output ended'} waiting for {what}:\n" +
                                 "\n".join(f"-- {' '.join(p.p.args[4:7])}: out {p.out[-1500:]!r}\n"
                                           f"   err {p.err[-1500:]!r}" for p in procs))
        r, _, _ = select.select(list(fds), [], [], left)
        for f in r:
            fds[f].take(f)


def ups(procs, rnd):
    """rank -> its clock reading when it printed "up RND" (RND None: any)."""
    got = {}
    for p in procs:
        for rank, r, ns in UP_RE.findall(p.out):
            if rnd is None or r == str(rnd).encode():
                got[int(rank)] = int(ns)
    return got


def round_up(procs, rnd, ranks):
    return lambda: len(ups(procs, rnd)) >= ranks


def stop_job(procs, chief):
    """SIGTERM to the chief's slotrun ends the job on every node."""
    procs[chief].signal(signal.SIGTERM)
    for p in procs:
        p.finish(WITHIN)


def empty(net):
    for i in range(net.n):
        pids = net.pids(i)
        kill_pids(pids)
    deadline = time.monotonic() + 30
    while any(net.pids(i) for i in range(net.n)):
        if time.monotonic() > deadline:
            raise AssertionError(f"processes left on the nodes: {[net.pids(i) for i in range(net.n)]}")
        time.sleep(0.05)  # polling interval of a deadline wait


def lost_line(p, why):
    """The survivors' round-2 line must name the loss as expected."""
    err = p.err.decode(errors="replace")
    m = re.search(r"round 2: 2 nodes, 4 ranks \(([^\n]*)\)", err)
    assert m and why in m.group(1), f"round 2 not for {why!r}: {err[-1500:]}"


def three_nodes(net):
    procs = [node(net, i) for i in range(3)]
    pump(procs, round_up(procs, 1, 6), WITHIN, "round 1's 6 ranks")
    return procs


def kill_case(net):
    procs = three_nodes(net)
    t0 = time.time_ns()
    kill_pids(net.pids(2))
    pump(procs[:2], round_up(procs[:2], 2, 4), WITHIN, "round 2's 4 ranks after node 2's SIGKILL")
    took = (max(ups(procs[:2], 2).values()) - t0) / 1e6
    lost_line(procs[0], "node 2 (10.213.0.3) lost: connection closed")
    stop_job(procs, 0)
    empty(net)
    return took


def cut_case(net):
    procs = three_nodes(net)
    t0 = time.time_ns()
    net.cut(2)
    try:
        pump(procs[:2], round_up(procs[:2], 2, 4), WITHIN, "round 2's 4 ranks after node 2's cut")
        took = (max(ups(procs[:2], 2).values()) - t0) / 1e6
        lost_line(procs[0], "no heartbeat for 5 s")
        code = procs[2].finish(WITHIN)   # alone, 1 of 3 nodes: it stops by itself
        assert code == 1, (code, procs[2].err[-1500:])
    finally:
        net.restore(2)
    stop_job(procs[:2], 0)
    empty(net)
    return took


def chief_case(net):
    procs = three_nodes(net)
    t0 = time.time_ns()
    kill_pids(net.pids(0))
    pump(procs[1:], round_up(procs[1:], 2, 4), WITHIN, "round 2's 4 ranks after the chief's SIGKILL")
    took = (max(ups(procs[1:], 2).values()) - t0) / 1e6
    lost_line(procs[1], "took over as the chief")
    stop_job(procs[1:], 0)
    procs[0].finish(WITHIN)
    empty(net)
    return took


def join_case(net):
    settle = ["--settle-time", "1"]
    procs = [node(net, i, settle) for i in range(2)]
    pump(procs, round_up(procs, 1, 4), WITHIN, "round 1's 4 ranks on nodes 0 and 1")
    t0 = time.time_ns()
    procs.append(node(net, 2, settle))
    pump(procs, round_up(procs, 2, 6), WITHIN, "round 2's 6 ranks after node 2 joined")
    mine = ups(procs[2:], 2)
    assert sorted(mine) == [4, 5], mine
    took = (max(mine.values()) - t0) / 1e6
    every = (max(ups(procs, 2).values()) - t0) / 1e6
    stop_job(procs, 0)
    empty(net)
    return took, every


def alone_case(net):
    t0 = time.time_ns()
    p = Proc(net.prefix(2) + [SR, "--nnodes", "1", "--slots", "2", "--", "sh", "-c", UP], environ=env())
    pump([p], round_up([p], None, 2), WITHIN, "a one-node slotrun's 2 ranks")
    took = (max(ups([p], None).values()) - t0) / 1e6
    p.signal(signal.SIGTERM)
    p.finish(WITHIN)
    empty(net)
    return took


# ---- torchrun ----

def torch_missing():
    if not (os.path.exists(TORCH_PY) and os.path.exists(TORCHRUN)):
        return f"no {TORCHRUN} (Debian: python3-torch)"
    r = subprocess.run([TORCH_PY, "-c", "import torch.distributed as d; assert d.is_gloo_available()"],
                       capture_output=True, timeout=300)
    if r.returncode != 0:
        last = (r.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        return f"{TORCH_PY} has no PyTorch with gloo: {last}"
    if not shutil.which("unshare"):
        return "no unshare(1) for the nodes' host names"
    return None


class TorchNodes:
    """torchrun on each node in a UTS namespace of its own (host name
    tnode<i>), with an /etc/hosts of its network namespace that names every
    node (`ip netns exec` binds /etc/netns/NS/hosts over /etc/hosts)."""

    def __init__(self, net):
        self.net = net
        self.dirs = [os.path.join("/etc/netns", ns) for ns in net.nodes]
        hosts = "127.0.0.1 localhost\n" + "".join(f"{a} tnode{i}\n" for i, a in enumerate(net.addrs))
        for d in self.dirs:
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "hosts"), "w") as f:
                f.write(hosts)

    def start(self, i, pg_timeout=None, alone=False):
        """alone: a one-node torchrun (--standalone) instead."""
        e = job_env({"GLOO_SOCKET_IFNAME": "eth0", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"})
        if pg_timeout:
            e["BENCH_PG_TIMEOUT"] = str(pg_timeout)
        where = ["--standalone", "--nnodes", "1"] if alone else \
            ["--nnodes", "2:3", "--rdzv_backend", "c10d", "--rdzv_endpoint", f"{self.net.addrs[0]}:29500"]
        run = [TORCHRUN, *where, "--nproc_per_node", "2", "--max_restarts", "5", *TORCH_STD, TORCH_LOOP]
        return Proc(self.net.prefix(i) + ["unshare", "--uts", "sh", "-c",
                                           f'hostname tnode{i} && exec "$@"', "sh", *run], environ=e)

    def close(self):
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)


def steps(procs):
    """(restart, rank, world) -> the first clock reading of that rank in
    that restart."""
    first = {}
    for p in procs:
        for restart, ns, rank, world in STEP_RE.findall(p.out):
            first.setdefault((int(restart), int(rank), int(world)), int(ns))
    return first


def torch_case(net, tn, how, pg_timeout=None, deadline=TORCH_WITHIN):
    """how: 'kill' or 'cut'.  Milliseconds to the survivors' 4 ranks'
    first step in the next restart, or None when it did not come by the
    deadline (seconds)."""
    procs = [tn.start(i, pg_timeout) for i in range(3)]
    try:
        pump(procs, lambda: sum(1 for k in steps(procs) if k[2] == 6) >= 6, TORCH_WITHIN,
             "torchrun's first round of 6 ranks stepping")
        before = max(k[0] for k in steps(procs))
        t0 = time.time_ns()
        if how == "kill":
            kill_pids(net.pids(2))
        else:
            net.cut(2)
        after = lambda: [v for k, v in steps(procs[:2]).items() if k[0] > before and k[2] == 4]  # noqa: E731
        try:
            pump(procs[:2], lambda: len(after()) >= 4, deadline, f"torchrun's survivors stepping after the {how}")
        except AssertionError as e:
            print(f"# torchrun {how}: {str(e).splitlines()[0]}", flush=True)
            return None
        return (max(after()) - t0) / 1e6
    finally:
        if how == "cut":
            net.restore(2)
        for i in range(3):
            kill_pids(net.pids(i))
        for p in procs:
            p.finish(WITHIN)
        empty(net)


def torch_alone(net, tn):
    """The workers' own start under torchrun: a one-node torchrun on node 2
    from launch to its 2 ranks' first step (ms)."""
    t0 = time.time_ns()
    p = tn.start(2, alone=True)
    try:
        pump([p], lambda: sum(1 for k in steps([p]) if k[2] == 2) >= 2, TORCH_WITHIN,
             "a one-node torchrun's 2 ranks stepping")
        return (max(v for k, v in steps([p]).items() if k[2] == 2) - t0) / 1e6
    finally:
        kill_pids(net.pids(2))
        p.finish(WITHIN)
        empty(net)


def torch_figures(net):
    why = torch_missing()
    if why:
        return {"skipped": why}
    tn = TorchNodes(net)
    try:
        out = {"alone_ms": torch_alone(net, tn), "kill_ms": torch_case(net, tn, "kill")}
        out["cut_default_ms"] = torch_case(net, tn, "cut", deadline=TORCH_CUT_DEADLINE)
        out["cut_default_deadline_s"] = TORCH_CUT_DEADLINE
        out["cut_pg_timeout_ms"] = torch_case(net, tn, "cut", pg_timeout=TORCH_PG_TIMEOUT)
        out["pg_timeout_s"] = TORCH_PG_TIMEOUT
        r = subprocess.run([TORCH_PY, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                           text=True, timeout=300)
        out["version"] = r.stdout.strip()
        return out
    finally:
        tn.close()


# ---- the report ----

def summary(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "runs": xs}


def fmt(s):
    return f"{s['median']:.0f} ms ({s['min']:.0f}..{s['max']:.0f})"


def main():
    res = {"runs": args.runs, "heartbeat_timeout_s": HEARTBEAT, "nodes": 3, "slots": 2,
           "load_before": os.getloadavg()[0]}
    try:
        with Cluster(3, "bel") as net:
            kill, cut, chief, join, join_all, alone = [], [], [], [], [], []
            for r in range(args.runs):
                kill.append(kill_case(net))
                cut.append(cut_case(net))
                chief.append(chief_case(net))
                # the join and its baseline alternate which goes first
                if r % 2:
                    alone.append(alone_case(net))
                j = join_case(net)
                join.append(j[0])
                join_all.append(j[1])
                if not r % 2:
                    alone.append(alone_case(net))
                print(f"# run {r + 1}/{args.runs}: kill {kill[-1]:.0f} ms, cut {cut[-1]:.0f} ms, chief "
                      f"{chief[-1]:.0f} ms, join {join[-1]:.0f} ms, one-node start {alone[-1]:.0f} ms",
                      flush=True)
            res.update(kill_ms=summary(kill), cut_ms=summary(cut), chief_ms=summary(chief),
                       join_ms=summary(join), join_all_ms=summary(join_all), alone_ms=summary(alone))
            res["torchrun"] = {"skipped": "--skip-torch"} if args.skip_torch else torch_figures(net)
            res["load_after"] = os.getloadavg()[0]
    except Skip as e:
        print(f"skipped: {e}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"skipped": str(e)}, f)
        return
    w = res["alone_ms"]["median"]
    goal = (HEARTBEAT + 2) * 1000
    print(f"# elastic jobs, 3 namespace nodes x 2 slots, {args.runs} runs: median (min..max); "
          f"the workers' own start (one-node slotrun, launch to its ranks up): {fmt(res['alone_ms'])}")
    print("| figure | slotrun | goal | baseline (same invocation) |")
    print("|---|---|---|---|")
    print(f"| kill: node 2's SIGKILL to the survivors' 4 ranks up in round 2 | {fmt(res['kill_ms'])} | "
          f"<= {goal:.0f} ms | {res['kill_ms']['median'] / w:.2f}x the workers' own start |")
    print(f"| cut: node 2's cable pulled to the same | {fmt(res['cut_ms'])} | <= {goal:.0f} ms | "
          f"{res['cut_ms']['median'] - HEARTBEAT * 1000:.0f} ms after the {HEARTBEAT:.0f} s timeout |")
    print(f"| chief: node 0's SIGKILL to nodes 1 and 2's 4 ranks up in round 2 | {fmt(res['chief_ms'])} | - | "
          f"{res['chief_ms']['median'] / w:.2f}x the workers' own start |")
    print(f"| join: node 2's launch to its 2 ranks up in round 2 | {fmt(res['join_ms'])} | <= {2000 + w:.0f} ms "
          f"| {res['join_ms']['median'] / w:.2f}x the workers' own start, +{res['join_ms']['median'] - w:.0f} ms |")
    t = res["torchrun"]
    if "skipped" in t:
        print(f"torchrun: skipped: {t['skipped']}")
    else:
        def ms(v):
            return f"{v:.0f} ms" if v is not None else "none"
        k = res["kill_ms"]["median"]
        print(f"| torchrun {t['version']}: node 2's SIGKILL to the survivors' first step | {ms(t['kill_ms'])} "
              f"(1 run) | - | {t['kill_ms'] / k:.1f}x slotrun's kill |" if t["kill_ms"] else
              f"| torchrun: kill | none within {TORCH_WITHIN} s | - | - |")
        print(f"| torchrun: a one-node torchrun's launch to its 2 ranks' first step | {ms(t['alone_ms'])} | - | "
              f"{t['alone_ms'] / w:.1f}x slotrun's workers' own start |")
        print(f"| torchrun: cut, gloo's default timeout | {ms(t['cut_default_ms'])} within "
              f"{t['cut_default_deadline_s']} s | - | - |")
        print(f"| torchrun: cut, process group timeout {t['pg_timeout_s']} s | {ms(t['cut_pg_timeout_ms'])} | - | "
              f"- |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


main()
