#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The job plane's figures on 3 network-namespace nodes (needs root and
iproute2), each with its baseline measured in the same invocation.

Usage: bench/job_plane.py [--slotrun PATH] [--runs N] [--json FILE]

failure   rank 5 (node 2) prints its clock and exits 4 while the other five
          ranks sleep; time from that clock reading to each node's slotrun
          exit (--grace 1).  Without the plane (each node a job of its own)
          nodes 0 and 1 would run until their ranks end by themselves.
cut link  every rank sleeps; node 2's cable is pulled (its bridge port set
          down); time from the cut to the exit of nodes 0 and 1, which must
          declare node 2 lost, for --heartbeat-timeout 5 (the default) and 2.
start     3 nodes x 2 slots of /bin/true, launch of the three slotruns to
          the last exit; baseline: the same three slotruns each told it is
          a job of one node (no join)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from harness import Proc, Skip  # noqa: E402
from netns import Cluster  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--slotrun", default=os.path.join(HERE, "..", "build", "launcher", "slotrun"))
ap.add_argument("--runs", type=int, default=10)
ap.add_argument("--json", help="also write the figures here")
args = ap.parse_args()
SR = os.path.abspath(args.slotrun)
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "DET_", "SLOTRUN_"))}
ENV.update({"SLOTRUN_DET_INFO_DIR": "/nonexistent", "SLOTRUN_JOB_SECRET": "bench-job-plane"})


def start(net, cmd, extra=(), single=False):
    procs = []
    for i in range(net.n):
        where = ["--nnodes", "1"] if single else \
            ["--nnodes", str(net.n), "--node-rank", str(i), "--addrs", ",".join(net.addrs)]
        procs.append(Proc(net.prefix(i) + [SR, *where, "--slots", "2", *extra, "--", "sh", "-c", cmd],
                          env=ENV))
    return procs


def exit_times(procs, timeout=60):
    """Each process's exit as time.time_ns(), taken by a thread per process."""
    when = [None] * len(procs)

    def waiter(k):
        procs[k].finish(timeout)
        when[k] = time.time_ns()
    ts = [threading.Thread(target=waiter, args=(k,)) for k in range(len(procs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return when


def failure(net):
    cmd = 'if [ "$RANK" = 5 ]; then sleep 1; echo "FAILING $(date +%s%N)"; exit 4; fi; exec sleep 60'
    per_node = [[] for _ in range(net.n)]
    for _ in range(args.runs):
        procs = start(net, cmd, ["--grace", "1"])
        when = exit_times(procs)
        stamp = [int(l.split()[-1]) for l in procs[2].out.decode().splitlines() if "FAILING" in l][0]
        for k in range(net.n):
            assert procs[k].p.returncode == 4, (k, procs[k].p.returncode, procs[k].err[-500:])
            per_node[k].append((when[k] - stamp) / 1e6)
    return per_node


def cut_link(net, hb):
    res = []
    for _ in range(max(2, args.runs // 4)):
        procs = start(net, 'echo ready; exec sleep 60', ["--grace", "1", "--heartbeat-timeout", str(hb)])
        procs[0].wait_line("[rank=0] ready", timeout=30)
        procs[1].wait_line("[rank=2] ready", timeout=30)
        procs[2].wait_line("[rank=4] ready", timeout=30)
        t_cut = time.time_ns()
        net.cut(2)
        when = exit_times(procs[:2])
        net.restore(2)
        procs[2].finish(60)
        res.append(max(when[k] - t_cut for k in range(2)) / 1e6)
    return res


def start_cost(net, single):
    ts = []
    for _ in range(args.runs):
        t0 = time.time_ns()
        procs = start(net, "true", single=single)
        when = exit_times(procs)
        assert all(p.p.returncode == 0 for p in procs), [p.err for p in procs]
        ts.append((max(when) - t0) / 1e6)
    return ts


def med(xs):
    return statistics.median(xs)


try:
    with Cluster(3, "bjp") as net:
        fail = failure(net)
        cut5 = cut_link(net, 5)
        cut2 = cut_link(net, 2)
        joined = start_cost(net, single=False)
        alone = start_cost(net, single=True)
except Skip as e:
    print(f"skipped: {e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"skipped": str(e)}, f)
    sys.exit(0)

print(f"# job plane, 3 namespace nodes x 2 slots, {args.runs} runs (medians; max over the nodes where said)")
print("| figure | slotrun | baseline (same run) |")
print("|---|---|---|")
worst = [max(fail[k][r] for k in range(3)) for r in range(args.runs)]
print(f"| rank failure to every node's exit, --grace 1 | {med(worst):.0f} ms (node 0 {med(fail[0]):.0f}, "
      f"node 1 {med(fail[1]):.0f}, node 2 {med(fail[2]):.0f}) | without the plane nodes 0 and 1 run on "
      f"until their ranks end |")
print(f"| cut link to nodes 0 and 1 declaring node 2 lost, --heartbeat-timeout 5 | {med(cut5) / 1000:.2f} s "
      f"(max {max(cut5) / 1000:.2f}) | timeout 5 s |")
print(f"| the same, --heartbeat-timeout 2 | {med(cut2) / 1000:.2f} s (max {max(cut2) / 1000:.2f}) | timeout 2 s |")
print(f"| start to exit of 3 nodes x 2 /bin/true | {med(joined):.1f} ms | {med(alone):.1f} ms as three "
      f"single-node jobs (join adds {med(joined) - med(alone):.1f} ms) |")
if args.json:
    with open(args.json, "w") as f:
        json.dump({"runs": args.runs, "failure_to_every_exit_ms": med(worst),
                   "cut_link_lost_s": {"5": med(cut5) / 1000, "2": med(cut2) / 1000},
                   "start_ms": {"joined": med(joined), "alone": med(alone)}}, f, indent=1)
