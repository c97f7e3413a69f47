#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Puts bench/run's pieces together: merges the JSON each benchmark wrote
into one results file (with the date, the CPU model and the core count),
draws the all-reduce plots with gnuplot (PNG), prints the summary table, and
writes bench/README.md, every figure beside its baseline.

Usage: bench/report.py --dir DIR [--results bench/results.json] [--plots bench]
                       [--readme bench/README.md]
       bench/report.py [--results bench/results.json] [--readme bench/README.md]

DIR holds launch.json, wrap_rank.json, job_plane.json, scale.json,
allreduce.json, allreduce_nodes.json, gpu_allreduce.json, elastic.json,
seal.json and rdv_scale.json (any may be missing).  A
section whose JSON is in DIR replaces the results file's, stamped with this
run's date and machine; the others are kept as they were, with the date
and machine they were measured on (said in the README where it differs).
Without --dir nothing is measured, merged or drawn: bench/README.md is
written again from the results file as it is."""
import argparse
import datetime
import json
import os
import re

from report_notes import NOTES
from report_plot import has_cairo, plot, plot_rdv
from report_sections import (NOT_RECORDED, gratio, human, machine_line, readme_allreduce, readme_elastic, readme_gpu,
                             readme_launch, readme_nodes, readme_plane, readme_rdv, readme_seal, readme_status_poll,
                             readme_wrap)
from scale_report import plot_scale, readme_scale, summary_rows as scale_rows


def load(d, name):
    try:
        with open(os.path.join(d, name + ".json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def write_readme(doc, path):
    """bench/README.md from a results document: the machine and date, every
    figure beside its baseline and the ratio, then the lab log's notes."""
    out = ["<!-- Written by bench/report.py from bench/results.json: edit those, not this file. -->",
           "# Benchmarks", "",
           "`bench/run` runs every benchmark with its baselines in one go and writes "
           "`bench/results.json`, the plots and this file (`bench/run --quick` is a smoke test; it "
           "installs gnuplot and Open MPI where missing).  `bench/report.py` alone writes this file "
           "again from `bench/results.json`.  Run them on an otherwise idle machine: every figure "
           "here moves with the machine's load.", "",
           f"Measured {doc.get('date') or NOT_RECORDED} on {machine_line(doc)}" +
           (" (the newest run; a section from an earlier one says when)." if any(
               (doc.get(k) or {}).get("measured", {}).get("date") not in (None, doc.get("date"))
               for k in SECTIONS) else "."), ""]
    for key, fn in (("allreduce", readme_allreduce), ("allreduce_nodes", readme_nodes), ("gpu_allreduce", readme_gpu),
                    ("launch", readme_launch), ("status_poll", readme_status_poll), ("wrap_rank", readme_wrap),
                    ("job_plane", readme_plane), ("scale", readme_scale), ("elastic", readme_elastic),
                    ("seal", readme_seal), ("rdv_scale", readme_rdv)):
        if doc.get(key):
            sec = fn(doc[key])
            when = doc[key].get("measured") or {}
            if when.get("date") and when.get("date") != doc.get("date"):
                sec[2:2] = [f"Measured {when['date']} on {machine_line(when)}.", ""]
            out += sec
    text = "\n".join(out) + "\n" + NOTES
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def cpu_model():
    """The CPU's model name as /proc/cpuinfo gives it, or None."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                m = re.match(r"model name\s*:\s*(.*\S)", line)
                if m:
                    return m.group(1)
    except OSError:
        pass
    return None


SECTIONS = ("launch", "status_poll", "wrap_rank", "job_plane", "scale", "allreduce", "allreduce_nodes",
            "gpu_allreduce", "elastic", "seal", "rdv_scale")


def merge(d, results):
    """The results document: the sections whose JSON is in d, stamped with
    this run's date and machine, and the results file's others as they were
    (stamped with the date and machine they were measured on).  Returns it
    and the names of the sections measured now."""
    now = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "kernel": os.uname().release}}
    try:
        with open(results) as f:
            old = json.load(f)
    except FileNotFoundError:
        old = {}
    doc, fresh = dict(now), set()
    for name in SECTIONS:
        sec = load(d, name)
        if sec is not None:
            sec["measured"] = now
            if sec.get("gpu"):   # the machine is named by its GPU too
                sec["measured"] = dict(now, machine=dict(now["machine"], gpu=sec["gpu"].get("name")))
            fresh.add(name)
        elif old.get(name):
            sec = old[name]
            sec.setdefault("measured", {"date": old.get("date"), "machine": old.get("machine")})
        doc[name] = sec
    return doc, fresh


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", help="the benchmarks' JSON files; without it only --readme is written")
    ap.add_argument("--results", default=os.path.join(here, "results.json"))
    ap.add_argument("--plots", default=here)
    ap.add_argument("--readme", default=os.path.join(here, "README.md"))
    a = ap.parse_args()
    if not a.dir:
        with open(a.results) as f:
            doc = json.load(f)
        write_readme(doc, a.readme)
        print(f"report: {a.readme} written from {a.results}")
        return
    doc, fresh = merge(a.dir, a.results)
    with open(a.results, "w") as f:
        json.dump(doc, f, indent=1)

    rows = []
    full, doc = doc, {k: (v if k in fresh else None) if k in SECTIONS else v for k, v in doc.items()}
    L = doc["launch"]
    if L:
        for n, per in sorted(L["launch"].items(), key=lambda kv: int(kv[0])):
            fw, fc = per["wall_ms"]["floor"], per["cpu_ms"]["floor"]
            for k, v in per["wall_ms"].items():
                c = per["cpu_ms"][k]
                rows.append((f"launch {n} x /bin/true, wall (CPU) ms", k, f"{v:.2f} ({c:.2f})",
                             f"{v / fw:.2f} x floor ({c / fc:.2f} in CPU)"))
        for k, v in L["teardown_ms"].items():
            rows.append(("teardown after a failure (ms)", k, f"{v:.1f}", ""))
        for k, v in L["peak_mib"].items():
            rows.append(("launcher peak memory (MiB)", k, f"{v:.1f}", ""))
    S = doc["status_poll"]
    if S:
        for key, what in (("launch_ms", "launch 8 x /bin/true"), ("teardown_ms", "teardown after a failure")):
            v = S[key]
            rows.append((f"{what} with status every second (ms)", "slotrun", f"{v['with']:.2f}",
                         f"{v['with'] / v['without']:.2f} x without ({v['without']:.2f})"))
        A = S["allreduce_us"]
        for size in sorted(A["without"], key=int):
            a_, b_ = A["without"][size], A["with"][size]
            rows.append((f"all-reduce {human(int(size))} with status every second (us)", "slotrun", f"{b_:.1f}",
                         f"{b_ / a_:.2f} x without ({a_:.1f})"))
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
    if doc.get("scale"):
        rows += scale_rows(doc["scale"])
        plot_scale(doc["scale"], os.path.join(a.plots, "scale.png"), a.dir,
                   "set terminal pngcairo size 1400,750 font ',11'" if has_cairo() else
                   "set terminal png size 1400,750")
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

    G = doc.get("gpu_allreduce")
    if G:
        res = G["results"]
        for s, v in sorted(res.get("ours", {}).items(), key=lambda kv: int(kv[0])):
            base = [f"{gratio(v, res[k].get(s))} {name}" for k, name in (("nccl_tests", "nccl-tests"),
                                                                          ("d2d", "d2d copy")) if k in res]
            rows.append((f"GPU all-reduce out of place {human(int(s))} algbw GB/s (us)", "nccl_worker -O",
                         f"{v['algbw']:.2f} ({v['time_us']:.1f})", ", ".join(base)))
    E = doc.get("elastic")
    if E and "skipped" not in E:
        w = E["alone_ms"]["median"]
        hb = E.get("heartbeat_timeout_s", 5) * 1000
        for key, what in (("kill_ms", "a node's SIGKILL"), ("cut_ms", "a node's cable pulled"),
                          ("chief_ms", "the chief's SIGKILL"), ("join_ms", "a new node's launch")):
            v = E[key]["median"]
            rows.append((f"elastic: {what} to ranks up in the next round (ms)", "slotrun", f"{v:.0f}",
                         f"the {hb:.0f} ms timeout + {v - hb:.0f}" if key == "cut_ms" else
                         f"{v / w:.2f} x the workers' own start ({w:.0f})"))
        T = E.get("torchrun") or {}
        if T.get("kill_ms"):
            rows.append(("elastic: a node's SIGKILL to the next step (ms)", "torchrun", f"{T['kill_ms']:.0f}",
                         f"{T['kill_ms'] / E['kill_ms']['median']:.1f} x slotrun"))
    S = doc.get("seal")
    if S:
        for k in ("ping", "stop"):
            c = S["seal_cost"][k]
            rows.append((f"seal: {k} frame, {c['bytes']} B, encode+decode (ns)", "+seal+open",
                         f"{c['sealed_ns']:.0f}", f"{c['plain_ns']:.0f} without"))
        J = S.get("job_plane") or {}
        for k, v in (J.get("sealed") or {}).items():
            b = J["before"][k]
            rows.append((f"seal: job plane {k}", "sealed", f"{v:.3g}", f"{v / b:.2f} x before ({b:.3g})"))
    R = doc.get("rdv_scale")
    if R:
        ours = R["contenders"][0]
        for n in R["sizes"]:
            v = R["results"][ours].get(str(n), {})
            if "init_s" not in v:
                continue
            for c in R["contenders"][1:]:
                b = R["results"].get(c, {}).get(str(n), {})
                rows.append((f"rendezvous n={n}: init s / barrier ms / allgather ms", ours,
                             f"{v['init_s']:.3f} / {v['barrier_ms']:.1f} / {v['allgather_ms']:.1f}",
                             f"{b['init_s'] / v['init_s']:.2f}x {c}" if "init_s" in b else f"{c} failed"))
        plot_rdv(R, os.path.join(a.plots, "rdv_scale.png"), a.dir)
    w = [max(len(r[i]) for r in rows) if rows else 0 for i in range(4)]
    print(f"# summary ({doc['date']}) of what ran now; every figure with its baseline from the same run")
    for r in rows:
        print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:>{w[2]}}  {r[3]}")
    write_readme(full, a.readme)
    print(f"report: {a.readme} written")


if __name__ == "__main__":
    main()
