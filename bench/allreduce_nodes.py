#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""All-reduce across network-namespace nodes on this machine (needs root
and iproute2): the hierarchical transport (SLOTRUN_TRANSPORT=auto: shared
memory within each node, the TCP ring across node leaders) against the TCP
ring through every rank (SLOTRUN_TRANSPORT=tcp), in the same invocation.

Usage: bench/allreduce_nodes.py [--slotrun PATH] [--bin PATH] [--nodes 2]
                                [--slots 2] [-b 4K] [-e 64M] [--repeat 3]
                                [--transports auto,tcp] [--json FILE]

Each node is a namespace of tests/e2e/netns.py on a private bridge; one
slotrun per node (--nnodes, --node-rank, --addrs, the same
SLOTRUN_JOB_SECRET) starts --slots ranks of nccl_worker --backend cpu, with
--bind none: the namespace nodes share this machine's cores, and each
slotrun would pin its ranks as if it had them all, which puts every node's
first rank -- the leader -- on the same core.  The
contenders take turns within each round; the median of --repeat rounds is
reported, busbw in GB/s and time in us."""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from harness import Proc, Skip, job_env  # noqa: E402
from netns import Cluster  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--slotrun", default=os.path.join(HERE, "..", "build-rel", "launcher", "slotrun"))
ap.add_argument("--bin", default=os.path.join(HERE, "..", "build-rel", "nccl_worker", "nccl_worker"))
ap.add_argument("--nodes", type=int, default=2)
ap.add_argument("--slots", default="2")
ap.add_argument("-b", default="4K")
ap.add_argument("-e", default="64M")
ap.add_argument("-n", default="20")
ap.add_argument("-w", default="5")
ap.add_argument("--repeat", type=int, default=3)
ap.add_argument("--transports", default="auto,tcp")
ap.add_argument("--json")
args = ap.parse_args()
SR, NW = os.path.abspath(args.slotrun), os.path.abspath(args.bin)


def one_run(cl, transport, port):
    env = job_env({"SLOTRUN_JOB_SECRET": "bench-nodes", "SLOTRUN_TIMEOUT": "120",
                   "SLOTRUN_TRANSPORT": transport})
    procs = [Proc(cl.prefix(i) + [SR, "--nnodes", str(cl.n), "--node-rank", str(i),
                                  "--addrs", ",".join(cl.addrs), "--slots", args.slots,
                                  "--master-port", str(port), "--bind", "none", "--", NW,
                                  "--backend", "cpu",
                                  "-b", args.b, "-e", args.e, "-n", args.n, "-w", args.w],
                  environ=env) for i in range(cl.n)]
    codes = [p.finish(900) for p in procs]
    if any(codes):
        sys.exit(f"allreduce_nodes: {transport}: exit {codes}: " +
                 " | ".join(p.err.decode(errors='replace')[-400:] for p in procs))
    res, how = {}, ""
    for line in procs[0].out.decode(errors="replace").splitlines():
        if not line.startswith("[rank=0] "):
            continue
        line = line[len("[rank=0] "):]
        if line.startswith("# backend"):
            how = line
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        res[int(f[0])] = (float(f[5]), float(f[7]))
    return res, how


transports = args.transports.split(",")
rounds = {t: [] for t in transports}
try:
    with Cluster(args.nodes, "bar") as cl:
        port = 29800
        for rep in range(args.repeat):
            for t in transports:
                port += 2   # the job plane takes the master port + 1
                res, how = one_run(cl, t, port)
                rounds[t].append(res)
                if rep == 0:
                    print(f"## {t}: {how}", flush=True)
except Skip as e:
    print(f"skipped: {e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"skipped": str(e)}, f)
    sys.exit(0)

med = {t: {} for t in transports}
for t in transports:
    for s in sorted({s for r in rounds[t] for s in r}):
        vals = [r[s] for r in rounds[t] if s in r]
        med[t][s] = (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals))
sizes = sorted({s for t in transports for s in med[t]})
print(f"## {args.nodes} namespace nodes x {args.slots} ranks, median of {args.repeat} rounds: "
      f"busbw GB/s (time us)")
print("## " + f"{'bytes':>10}" + "".join(f" {t:>22}" for t in transports) +
      (f" {transports[1] + '/' + transports[0] + ' time':>16}" if len(transports) > 1 else ""))
for s in sizes:
    cells = "".join(f" {med[t][s][1]:10.3f} ({med[t][s][0]:9.1f})" if s in med[t] else f" {'-':>22}"
                    for t in transports)
    if len(transports) > 1 and s in med[transports[0]] and s in med[transports[1]]:
        cells += f" {med[transports[1]][s][0] / med[transports[0]][s][0]:16.2f}"
    print(f"## {s:>10}{cells}")
if args.json:
    with open(args.json, "w") as f:
        json.dump({"nodes": args.nodes, "slots": args.slots, "rounds": args.repeat,
                   "results": {t: {str(s): {"time_us": v[0], "busbw": v[1]} for s, v in med[t].items()}
                               for t in transports}}, f, indent=1)
