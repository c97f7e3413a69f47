#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The comm library's rendezvous at scale, simulated on this machine: N ranks
(processes on loopback, forked by bench/rdv_scale, no launcher) started at
once through slotcomm_init, barriers and allgathers of an 8-byte value, for
N = 16, 64, 256, 1024; the same driver linked against the library of earlier
commits is the baseline, run in the same invocation, the contenders taking
turns in every round.

Usage: bench/rdv_scale.py [--bin PATH] [--base REV:LABEL ...] [--sizes 16,64,...]
                          [--rounds N] [--iters N] [--json FILE]

Figures, the median over the rounds: init (from the last rank's start to
the last rank past slotcomm_init), barrier and allgather (from the last
rank's entry to the last rank's exit, the median of ITERS in a row), rank
0's CPU time (init and the collectives) and peak RSS, the heap slotcomm_init
left on rank 0 (per rank: divided by N), the descriptors it opened there,
and the CPU time of all ranks together (on 2 cores the simulation's wall
time is bounded by it).

A baseline REV is exported (git archive) and its library built once in
build-rdv-REV (release); bench/rdv_scale.c of this tree is compiled against
it.  Without --base: the commit before the scale work (where more than a
few hundred ranks fail under the join storm) and the commit with only the
join-storm fix, each skipped when this clone does not have it.  Every run
gets RLIMIT_NOFILE's soft limit raised to the hard one (the old library
does not raise it itself)."""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BASELINES = [("41ee2c9", "before"), ("eae6293", "storm fix only")]
METRICS = ("init_s", "barrier_ms", "allgather_ms")
RANK0 = ("cpu_s", "init_cpu_s", "peak_rss_kib", "heap_bytes", "fds")

ap = argparse.ArgumentParser()
ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bench", "rdv_scale"))
ap.add_argument("--base", action="append", help="REV:LABEL, a baseline (repeatable)")
ap.add_argument("--sizes", default="16,64,256,1024")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--iters", type=int, default=5)
ap.add_argument("--timeout", type=float, default=120, help="SLOTRUN_TIMEOUT of every rank")
ap.add_argument("--json", help="also write the figures here")
args = ap.parse_args()


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def rev_ok(rev):
    return subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "-q", rev + "^{commit}"],
                          capture_output=True).returncode == 0


def build_base(rev):
    """The driver linked against rev's library, the library built once in
    build-rdv-REV (the driver is compiled again every time: it is this
    tree's)."""
    full = subprocess.run(["git", "-C", ROOT, "rev-parse", rev], capture_output=True, text=True,
                          check=True).stdout.strip()
    d = os.path.join(ROOT, "build-rdv-" + full[:12])
    src, bld = os.path.join(d, "src"), os.path.join(d, "build")
    lib = os.path.join(bld, "nccl_worker")
    exe = os.path.join(d, "rdv_scale")
    if not os.path.exists(os.path.join(d, "built")):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(src)
        arch = subprocess.run(["git", "-C", ROOT, "archive", full], capture_output=True,
                              check=True).stdout
        tar = os.path.join(d, "src.tar")
        with open(tar, "wb") as f:
            f.write(arch)
        with tarfile.open(tar) as t:
            t.extractall(src)
        os.unlink(tar)
        log(f"rdv_scale: building {rev}'s library in {bld}")
        subprocess.run(["meson", "setup", bld, "-Dbuildtype=release", "-Dtests=false",
                        "-Db_sanitize=none"], cwd=src, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["meson", "compile", "-C", bld, "nccl_worker/slotcomm:shared_library"],
                       check=True, stdout=subprocess.DEVNULL)
        open(os.path.join(d, "built"), "w").close()
    subprocess.run(["cc", "-O2", "-D_GNU_SOURCE", "-I", os.path.join(lib, "include"), "-I",
                    os.path.join(src, "nccl_worker", "include"), os.path.join(HERE, "rdv_scale.c"),
                    "-L" + lib, "-lslotcomm", "-Wl,-rpath," + lib, "-o", exe], check=True)
    return exe


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def run_one(exe, n):
    argv = [exe, "-n", str(n), "-t", str(args.timeout), "-i", str(args.iters)]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, preexec_fn=raise_nofile,
                           timeout=args.timeout * 2 + 60)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"did not finish within {args.timeout * 2 + 60:.0f}s"}
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"ok": False, "error": f"exit {p.returncode}: {p.stderr.strip()[-300:]}"}


def median_of(runs):
    ok = [r for r in runs if r.get("ok")]
    out = {"runs": len(runs), "failures": len(runs) - len(ok)}
    if len(ok) < len(runs):
        out["error"] = next(r["error"] for r in runs if not r.get("ok"))
    if not ok:
        return out
    for k in METRICS + ("ranks_cpu_s",):
        out[k] = statistics.median(r[k] for r in ok)
    out["rank0"] = {k: statistics.median(r["rank0"][k] for r in ok) for k in RANK0}
    return out


def load1():
    return os.getloadavg()[0]


def main():
    sizes = [int(s) for s in args.sizes.split(",")]
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    contenders = [("ours", os.path.abspath(args.bin))]
    revs = {}
    bases = [b.split(":", 1) for b in args.base] if args.base else BASELINES
    for rev, label in bases:
        if not rev_ok(rev):
            log(f"rdv_scale: no commit {rev} here, baseline '{label}' left out")
            continue
        contenders.append((label, build_base(rev)))
        revs[label] = rev
    runs = {c: {n: [] for n in sizes} for c, _ in contenders}
    before = load1()
    for rnd in range(args.rounds):
        for n in sizes:
            if hard != resource.RLIM_INFINITY and hard < n + 100:
                log(f"rdv_scale: n={n} skipped: RLIMIT_NOFILE's hard limit is {hard}")
                continue
            turn = contenders[rnd % len(contenders):] + contenders[:rnd % len(contenders)]
            for label, exe in turn:
                t0 = time.monotonic()
                r = run_one(exe, n)
                runs[label][n].append(r)
                log(f"round {rnd + 1} n={n} {label}: "
                    + (f"init {r['init_s']:.3f}s barrier {r['barrier_ms']:.1f}ms allgather "
                       f"{r['allgather_ms']:.1f}ms rank 0 cpu {r['rank0']['cpu_s']:.3f}s"
                       if r.get("ok") else f"FAILED: {r.get('error')}")
                    + f" ({time.monotonic() - t0:.0f}s)")
    doc = {"sizes": sizes, "rounds": args.rounds, "iters": args.iters, "timeout_s": args.timeout,
           "contenders": [c for c, _ in contenders], "revs": revs, "load_before": before, "load_after": load1(),
           "nofile_hard": None if hard == resource.RLIM_INFINITY else hard,
           "results": {c: {str(n): median_of(runs[c][n]) for n in sizes if runs[c][n]}
                       for c, _ in contenders}}
    try:
        with open("/proc/sys/net/core/somaxconn") as f:
            doc["somaxconn"] = int(f.read())
    except OSError:
        pass
    for c in doc["contenders"]:
        for n, v in doc["results"][c].items():
            line = f"{c:>16} n={n:>5}: "
            line += (f"init {v['init_s']:.3f} s, barrier {v['barrier_ms']:.1f} ms, allgather "
                     f"{v['allgather_ms']:.1f} ms, rank 0 cpu {v['rank0']['cpu_s']:.3f} s, "
                     f"all ranks' cpu {v['ranks_cpu_s']:.1f} s" if "init_s" in v else "")
            if v["failures"]:
                line += f" [{v['failures']} of {v['runs']} failed: {v['error']}]"
            print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


main()
