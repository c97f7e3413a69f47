#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Puts bench/run's pieces together: merges the JSON each benchmark wrote
into one results file, draws the all-reduce plots with gnuplot (PNG), and
prints the summary table.

Usage: bench/report.py --dir DIR [--results bench/results.json] [--plots bench]

DIR holds launch.json, wrap_rank.json, job_plane.json, allreduce.json and
allreduce_nodes.json (any may be missing)."""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys


def load(d, name):
    try:
        with open(os.path.join(d, name + ".json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def human(size):
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << k and size % (1 << k) == 0:
            return f"{size >> k} {unit}"
    return f"{size} B"


LABEL = {"ours-shm": "slotrun shm", "ours-tcp": "slotrun tcp", "openmpi": "Open MPI (default, shared memory)",
         "auto": "slotrun shm+tcp (hierarchical)", "tcp": "slotrun tcp ring"}


def plot(res, key, ranks, png, title, tmp, panel="n = {}"):
    """busbw against size, log-log, a panel per n, a line per contender."""
    if not shutil.which("gnuplot"):
        print(f"report: no gnuplot, {png} not drawn", file=sys.stderr)
        return False
    lines = ["set terminal pngcairo size 1400,600 font ',11'" if _has_cairo() else
             "set terminal png size 1400,600",
             f"set output '{png}'",
             f"set multiplot layout 1,{len(ranks)} title '{title}'",
             "set logscale xy 2", "set grid", "set key below",
             "set xlabel 'message size'", "set ylabel 'busbw (GB/s)'", "set format y '%.3g'"]
    sizes = sorted({int(s) for per_n in res[key].values() for v in per_n.values() for s in v})
    lines.append("set xtics (" + ", ".join(f"'{human(s).replace(' ', '')}' {s}" for s in sizes[::2]) + ")")
    for n in ranks:
        curves = []
        for c, per_n in res[key].items():
            pts = sorted((int(s), v["busbw"]) for s, v in per_n.get(str(n), {}).items() if v["busbw"] > 0)
            if not pts:
                continue
            dat = os.path.join(tmp, f"{key}-{c}-{n}.dat")
            with open(dat, "w") as f:
                f.writelines(f"{s} {b}\n" for s, b in pts)
            curves.append(f"'{dat}' using 1:2 with linespoints lw 2 title '{LABEL.get(c, c)}'")
        lines.append(f"set title '{panel.format(n)}'")
        lines.append("plot " + ", ".join(curves))
    lines.append("unset multiplot")
    script = os.path.join(tmp, os.path.basename(png) + ".gp")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run(["gnuplot", script], check=True)
    return True


def _has_cairo():
    r = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
    return "pngcairo" in r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--results", default=os.path.join(os.path.dirname(__file__), "results.json"))
    ap.add_argument("--plots", default=os.path.dirname(os.path.abspath(__file__)))
    a = ap.parse_args()
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "machine": f"{os.cpu_count()} CPUs, {os.uname().release}"}
    for name in ("launch", "wrap_rank", "job_plane", "allreduce", "allreduce_nodes"):
        doc[name] = load(a.dir, name)
    with open(a.results, "w") as f:
        json.dump(doc, f, indent=1)

    rows = []
    L = doc["launch"]
    if L:
        base = L["launch_ms"].get("slotrun --slots 8")
        for k, v in L["launch_ms"].items():
            rows.append(("launch 8 x /bin/true (ms)", k, f"{v:.2f}", f"{v / base:.2f} x slotrun"))
        for k, v in L["teardown_ms"].items():
            rows.append(("teardown after a failure (ms)", k, f"{v:.1f}", ""))
        for k, v in L["peak_mib"].items():
            rows.append(("launcher peak memory (MiB)", k, f"{v:.1f}", ""))
    W = doc["wrap_rank"]
    if W:
        base = W["gbps"]["cat"]
        for k, v in W["gbps"].items():
            rows.append(("1 GiB of lines through a pipe (GB/s)", k, f"{v:.2f}", f"{v / base:.2f} x cat"))
    J = doc["job_plane"]
    if J and "skipped" not in J:
        rows.append(("job plane: rank failure to every node's exit (ms)", "slotrun",
                     f"{J['failure_to_every_exit_ms']:.0f}", "without the plane: never"))
        for hb, v in J["cut_link_lost_s"].items():
            rows.append((f"job plane: cut link to lost, heartbeat {hb} s (s)", "slotrun", f"{v:.2f}",
                         f"timeout {hb} s"))
        rows.append(("job plane: 3 nodes start to exit (ms)", "slotrun", f"{J['start_ms']['joined']:.1f}",
                     f"{J['start_ms']['alone']:.1f} as single-node jobs"))
    A = doc["allreduce"]
    if A:
        res = A["results"]
        ranks = sorted({int(n) for c in res.values() for n in c})
        for n in ranks:
            for c in res:
                if c == "openmpi":
                    continue
                for s, v in sorted(res[c][str(n)].items(), key=lambda kv: int(kv[0])):
                    m = res.get("openmpi", {}).get(str(n), {}).get(s)
                    ratio = f"{m['time_us'] / v['time_us']:.2f} x Open MPI ({m['busbw']:.2f} GB/s, " \
                            f"{m['time_us']:.1f} us)" if m and v["time_us"] else ""
                    rows.append((f"all-reduce n={n} {human(int(s))} busbw GB/s (us)", c,
                                 f"{v['busbw']:.2f} ({v['time_us']:.1f})", ratio))
        plot(A, "results", ranks, os.path.join(a.plots, "allreduce.png"),
             f"all-reduce float32 sum on {os.cpu_count()} cores, median of {A['rounds']} rounds "
             f"(load {A['load_before']:.2f})", a.dir)
    N = doc["allreduce_nodes"]
    if N and "skipped" not in N:
        res = N["results"]
        for c in res:
            if c == "tcp":
                continue
            for s, v in sorted(res[c].items(), key=lambda kv: int(kv[0])):
                t = res.get("tcp", {}).get(s)
                rows.append((f"{N['nodes']} ns nodes x {N['slots']} {human(int(s))} busbw GB/s (us)", c,
                             f"{v['busbw']:.2f} ({v['time_us']:.1f})",
                             f"{t['time_us'] / v['time_us']:.2f} x tcp ring" if t else ""))
        nodes_doc = {"results": {c: {N["slots"]: per} for c, per in res.items()}}
        plot(nodes_doc, "results", [N["slots"]], os.path.join(a.plots, "allreduce_nodes.png"),
             f"all-reduce float32 sum across {N['nodes']} namespace nodes x {N['slots']} ranks on "
             f"{os.cpu_count()} cores, median of {N['rounds']} rounds", a.dir, panel="{} ranks per node")

    w = [max(len(r[i]) for r in rows) if rows else 0 for i in range(4)]
    print(f"# summary ({doc['date']}); every figure with its baseline from the same run")
    for r in rows:
        print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:>{w[2]}}  {r[3]}")


if __name__ == "__main__":
    main()
