#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What sealing every job-plane frame (an HMAC tag per frame) costs, each
figure beside its baseline from the same invocation.

Usage: bench/seal.py --seal-cost PATH [--slotrun PATH] [--old-commit C | --old-slotrun PATH]
                     [--pairs N] [--runs N] [--rounds N] [--json FILE]

per frame   bench/seal_cost (built with `ninja -C BUILD bench/seal_cost`):
            encode+seal+open+decode against encode+decode alone of the same
            frames (a PING; a STOP with a full cause and an 8 KiB tail),
            alternating, CPU ns per frame.
job plane   bench/job_plane.py against the slotrun of the commit before the
            seal (--old-commit, default 41ee2c9: exported with git archive
            and built, release, in a temporary folder outside the repository
            and removed afterwards; or --old-slotrun, one built already) and
            against --slotrun, taking turns (N pairs, the order swapped every
            pair), --runs runs each; the median of each side's invocations.
            The newer build carries more than the seal (the commits after
            it): what the comparison can show is that the seal does not show
            in the figures."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

ap = argparse.ArgumentParser()
ap.add_argument("--seal-cost", required=True, help="the built bench/seal_cost")
ap.add_argument("--slotrun", default=os.path.join(ROOT, "build", "launcher", "slotrun"))
ap.add_argument("--old-commit", default="41ee2c9")
ap.add_argument("--old-slotrun", help="a slotrun built from before the seal (else --old-commit is built)")
ap.add_argument("--pairs", type=int, default=3)
ap.add_argument("--runs", type=int, default=4, help="bench/job_plane.py --runs")
ap.add_argument("--rounds", type=int, default=21, help="seal_cost --rounds")
ap.add_argument("--json", help="also write the figures here")
args = ap.parse_args()


def seal_cost():
    r = subprocess.run([args.seal_cost, "--rounds", str(args.rounds), "--json"], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"seal.py: {args.seal_cost} failed ({r.returncode}): {r.stderr.strip()}")
    lines = r.stdout.strip().splitlines()
    print("\n".join(lines[:-1]), flush=True)
    return json.loads(lines[-1])


def build_old(tmp):
    """slotrun of args.old_commit, release, under tmp; its path."""
    src, bld = os.path.join(tmp, "src"), os.path.join(tmp, "build")
    os.makedirs(src)
    arch = subprocess.run(["git", "-C", ROOT, "archive", args.old_commit], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", src], input=arch.stdout, check=True)
    subprocess.run(["meson", "setup", bld, src, "-Dbuildtype=release", "-Db_sanitize=none", "-Dtests=false"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", bld, "launcher/slotrun", "wrap_rank/wrap_rank"], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(bld, "launcher", "slotrun")


def job_plane(slotrun, out):
    subprocess.run([sys.executable, os.path.join(HERE, "job_plane.py"), "--slotrun", slotrun,
                    "--runs", str(args.runs), "--json", out], check=True)
    with open(out) as f:
        return json.load(f)


def figures(doc):
    """The job plane's figures of one invocation, flat: name -> value."""
    return {"failure_to_every_exit_ms": doc["failure_to_every_exit_ms"],
            **{f"cut_link_lost_s_{hb}": v for hb, v in doc["cut_link_lost_s"].items()},
            "start_joined_ms": doc["start_ms"]["joined"], "start_alone_ms": doc["start_ms"]["alone"]}


def main():
    res = {"load_before": os.getloadavg()[0], "seal_cost": seal_cost()}
    tmp = tempfile.mkdtemp(prefix="slotrun-seal-")
    try:
        old = os.path.abspath(args.old_slotrun) if args.old_slotrun else build_old(tmp)
        new = os.path.abspath(args.slotrun)
        sides = {"before": [], "sealed": []}
        for p in range(args.pairs):
            order = [("before", old), ("sealed", new)]
            for side, sr in order if p % 2 == 0 else order[::-1]:
                print(f"== job plane, {side} ({sr}), pair {p + 1}/{args.pairs}", flush=True)
                doc = job_plane(sr, os.path.join(tmp, f"{side}-{p}.json"))
                if "skipped" in doc:
                    res["job_plane"] = {"skipped": doc["skipped"]}
                    return res
                sides[side].append(figures(doc))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    jp = {"old_commit": args.old_commit if not args.old_slotrun else f"--old-slotrun {args.old_slotrun}",
          "pairs": args.pairs,
          "runs": args.runs}
    for side, docs in sides.items():
        jp[side] = {k: statistics.median(d[k] for d in docs) for k in docs[0]}
        jp[side + "_each"] = docs
    res["job_plane"] = jp
    return res


res = main()
res["load_after"] = os.getloadavg()[0]
print(f"# the seal, {res['seal_cost']['rounds']} x {res['seal_cost']['frames']} frames per kind")
for k in ("ping", "stop"):
    c = res["seal_cost"][k]
    print(f"{k}: {c['bytes']} bytes, encode+decode {c['plain_ns']:.0f} ns, with seal+open {c['sealed_ns']:.0f} ns "
          f"(+{c['sealed_ns'] - c['plain_ns']:.0f} ns)")
jp = res["job_plane"]
if "skipped" in jp:
    print(f"job plane: skipped: {jp['skipped']}")
else:
    print(f"# job plane before the seal ({jp['old_commit']}) and sealed, {jp['pairs']} invocations each of "
          f"{jp['runs']} runs, alternating; median of the invocations")
    for k, v in jp["before"].items():
        s = jp["sealed"][k]
        print(f"{k}: before {v:.3f}, sealed {s:.3f} ({s / v:.2f}x)")
if args.json:
    with open(args.json, "w") as f:
        json.dump(res, f, indent=1)
