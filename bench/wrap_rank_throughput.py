#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""wrap_rank throughput through a pipe, against cat and sed in the same run.

Usage: bench/wrap_rank_throughput.py [--wrap-rank PATH] [--mib N] [--runs N] [--json FILE]

A log of ~100-byte lines (N MiB, default 1024) is made once in $TMPDIR and
read from the page cache.  Each contender writes into a pipe read by
`cat > /dev/null`; the median of --runs runs is reported in GB/s (1e9 B/s of
input) with its ratio to `cat FILE | cat`."""
import argparse
import json
import os
import random
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--wrap-rank", default=os.path.join(os.path.dirname(__file__), "..", "build", "wrap_rank", "wrap_rank"))
ap.add_argument("--mib", type=int, default=1024)
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--json", help="also write the figures here")
args = ap.parse_args()

path = os.path.join(tempfile.gettempdir(), f"slotrun-bench-lines-{args.mib}.log")
if not os.path.exists(path) or os.path.getsize(path) < args.mib << 20:
    rng = random.Random(1)
    alphabet = b"abcdefghijklmnopqrstuvwxyz     "
    block = b"".join(bytes(rng.choice(alphabet) for _ in range(rng.randint(60, 140))) + b"\n"
                     for _ in range(2000))
    with open(path + ".tmp", "wb") as f:
        for _ in range((args.mib << 20) // len(block) + 1):
            f.write(block)
    os.rename(path + ".tmp", path)
size = os.path.getsize(path)
subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)  # warm the page cache

wr = os.path.abspath(args.wrap_rank)
contenders = [
    ("cat", f"cat '{path}' | cat > /dev/null"),
    ("wrap_rank", f"'{wr}' 0 -- cat '{path}' | cat > /dev/null"),
    ("sed prefix", f"sed 's/^/[rank=0] /' '{path}' | cat > /dev/null"),
]
times = {name: [] for name, _ in contenders}
for _ in range(args.runs):
    for name, cmd in contenders:  # interleaved, so drift hits all alike
        t0 = time.perf_counter()
        subprocess.run(["sh", "-c", cmd], check=True)
        times[name].append(time.perf_counter() - t0)

base = size / statistics.median(times["cat"]) / 1e9
print(f"# {size / 1e6:.0f} MB of ~100-byte lines ({path}), median of {args.runs} runs, into `| cat > /dev/null`")
print(f"{'contender':<12} {'GB/s':>7} {'x cat':>7}")
doc = {"runs": args.runs, "bytes": size, "gbps": {}}
for name, _ in contenders:
    gbs = size / statistics.median(times[name]) / 1e9
    doc["gbps"][name] = gbs
    print(f"{name:<12} {gbs:7.2f} {gbs / base:7.2f}")
if args.json:
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)
