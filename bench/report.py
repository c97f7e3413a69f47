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
allreduce.json and allreduce_nodes.json (any may be missing).  Without --dir nothing is
measured, merged or drawn: bench/README.md is written again from the
results file as it is."""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys

from scale_report import plot_scale, readme_scale, summary_rows as scale_rows


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


# ---- bench/README.md ----

NOT_RECORDED = "not recorded"

# What earlier runs taught, kept beside the figures: each note says when
# and where it was measured, since the machine's speed moves from day to day.
NOTES = """\
## Notes from the lab log

These come from runs on the 2-core development machine (no GPU, a VM shared
with other tenants) in November 2026.  The figures above are regenerated with
every `bench/run`; these are not, so each says what it was measured against.

**Spread.**  Other tenants share the machine: a sweep under their load loses up
to half of its figures, and Open MPI's as much.  `bench/allreduce_sweep` waits
for the 1-minute load to fall below 1.0 before it starts and records the load
before and after.  Two runs of the all-reduce the same afternoon, the comm
library unchanged, gave 9.97 and 8.1 GB/s busbw at 64 MiB with n = 2.

**All-reduce within a node.**  At 64 MiB with n = 2 the shared-memory
all-reduce moves each rank's buffer through memory once in and once out, like a
memcpy of it (the reduce-scatter and all-gather traffic stays in the caches):
8.1 GB/s per rank against 17.5 GB/s for two 64 MiB memcpys running at once on
the same machine.  Open MPI falls off a cliff from 32 MiB: its large-message
algorithm allocates temporary buffers on every call, and a first touch of
memory cost about 11 us a page on that VM.  The TCP ring on one machine
(`SLOTRUN_TRANSPORT=tcp`) is shown for comparison only.

**Shared-memory design choices, measured.**  Reducing in place in the user's
buffer 64 KiB at a time, then copying the block into the slot, took the reduce
phase of a 64 MiB all-reduce (n = 2) from 5.8 to 3.0 ms against folding into
the slot with d = a + b and copying back.  Waiting: with n = 4 ranks on 2 cores,
spinning only 2 us before sleeping on the futex made 4 KiB all-reduces take
41 us instead of 12 us (a futex wake-up costs tens of microseconds there), and
spinning 50 to 200 us gained nothing over 20 us.  Across nodes, members that
wait for their leader's broadcast spin only 2 us: 4 KiB across 2 namespace
nodes x 2 ranks went from 137 to 81 us once they stopped taking the cores from
the leaders.

**Hierarchical against one ring.**  `shm+tcp` was chosen over one ring through
every rank (shared-memory hops within a node, TCP hops between; a prototype,
measured and reverted) on 2 namespace nodes x 2 ranks, median of 3 rounds,
load 0.86, `--bind none`:

| size | shm+tcp | one ring | TCP ring | one ring's time / shm+tcp's |
|---:|---:|---:|---:|---:|
| 4 KiB | 55 us | 817 us | 126 us | 14.86 |
| 64 KiB | 110 us | 284 us | 261 us | 2.58 |
| 256 KiB | 183 us | 1.8 ms | 432 us | 10.06 |
| 1 MiB | 1.1 ms | 2.6 ms | 2.6 ms | 2.34 |
| 4 MiB | 4.8 ms | 6.6 ms | 11.8 ms | 1.36 |
| 16 MiB | 19.5 ms | 21.8 ms | 40.7 ms | 1.12 |
| 64 MiB | 83.8 ms | 89.9 ms | 153.3 ms | 1.07 |

The prototype waited crudely (sleeps of up to 1 ms) and read through a staging
buffer, most of its loss up to 1 MiB; from 4 MiB on it still lost 7 to 36%,
because one ring sends 2(n-1)/n of the buffer over each TCP hop against
2(N-1)/N over each leader hop.  A first run without `--bind none` had one ring
ahead from 4 MiB on: each namespace node's slotrun pinned its leader to core 0
of the one machine they share.  The benchmark now passes `--bind none`.

**TCP ring tuning.**  Retrying a non-blocking recv/send for 20 to 50 us before
blocking in poll(2) took n = 4 4 KiB all-reduces from about 70 to 35 us and
helped every size.  Socket buffers of 1 MiB for all-reduces of up to 1 MiB
between ranks on one machine took 512 KiB and 1 MiB from about 3.0 to 5.0 GB/s
busbw with n = 2 (1.2 to 2.3 with n = 4); 128 KiB above that measured about 35%
faster over loopback than large buffers.  Tried and dropped for lack of gain:
slicing the buffer so that reduced data is forwarded while in cache,
vmsplice/splice sends, 2 MiB socket buffers at 2 MiB, minimum sends of 16 or
256 KiB instead of 64 KiB.  The reduction loops: d = a + b on float32 in L1 ran
at 16, 32 and 66 GB/s with SSE2, AVX2 and AVX-512.

**Launch and containment.**  Launch includes reading the hwloc topology and
starting three processes per worker (wrap_rank, its guard, the command).
Process start-up itself varies a lot on this VM: the shell's 8 `/bin/true`
took 41 ms on 2026-11-23 (slotrun's launch: 111 ms) and 4.8 ms on a day when slotrun's
launch measured 10.0 ms and mpirun's 51 ms.  Measured before and after the guard
process in one session (sh: 37 ms): launch went from 83 to 113 ms, teardown from
11.6 to 14.0 ms, and `--no-wrap` (now `wrap_rank --no-prefix` under slotrun)
from 52 to 108 ms.  The alternatives to a guard cost alike and little next to
starting a worker: a cgroup's mkdir, join, `cgroup.kill` and rmdir, or
`clone(CLONE_NEWPID)` and a wait, each took a few milliseconds.

**What a rank costs, and the floor.**  On this VM a page fault costs 25 to 90
us and a `cpuid` (which glibc's start-up runs some thirty times) 8 us to far
more, both traps to the hypervisor; so page faults (`perf stat -e
page-faults`, `perf record -e page-faults -d`) told where launch time went.
On 2026-11-27 (load average 20 to 120 from other tenants) `slotrun --slots 8 --
/bin/true` took 2150 page faults in all, against 670 for the floor (`sh`
starting 8 `/bin/true`: about 60 for sh, then 21 for each fork before its exec
and 48 for each `/bin/true`).  Per rank: slotrun's fork of itself (29
copy-on-write faults in the child before its exec, as many again in slotrun),
wrap_rank's dynamic linking (88 faults in the wrap_rank process), the guard's
fork (12) and its fork of the command (24 before the exec).  Each was cut in
turn, page faults of the 8-slot launch in all: starting programs with a
vfork-style clone instead of fork (no copy of the page tables, no
copy-on-write; slotrun and the guard) 2150 to 1508; wrap_rank a glibc static
PIE 1508 to 1020; its `_exit` and the worker's fields before its buffers 1020
to 964; wrap_rank against musl (5 faults to start an empty program against
27 for static glibc, and no `cpuid`) 965 to 765, against 686 for the floor.
In CPU time, the same alternating runs: `wrap_rank 0 -- raw` (raw: a command
without libc)
16.5 ms with the dynamic wrap_rank, 9.2 static glibc, 6.9 musl; the 8-slot
launch 2.8 times the floor's CPU before, 1.35 after.  What is left, from runs
of each part in turn on the loaded VM (CPU, so only roughly): the floor is
about 6 ms for sh and then 10 ms a rank (5.4 for the fork, the exec of a
program and its exit, 4.7 for `/bin/true`'s glibc start); slotrun adds about
8 ms once (its own start: six shared libraries, hwloc's topology, the loop,
the reports folder, `/dev/kmsg`) and 2.4 ms a rank (the exec of wrap_rank,
the fork of the guard, and their exits).  Each is a guarantee's price: the
guard is a process because wrap_rank must exit when its command does (slotrun
learns the rank's end from it) while what the command left running needs a
holder that outlives wrap_rank and still sees slotrun's death; wrap_rank is a
program of its own and not a fork of slotrun, which would copy slotrun's page
tables again.  Binding each rank (`--bind` against `--bind none`) cost nothing
measurable.  Linking slotrun's libevent, jansson, libsodium and hwloc
statically saved 20 page faults (about 1 ms) of its start in a trial, against
Debian's policy for libraries; not done.

**wrap_rank's ceiling.**  Its contract caps its throughput: every write is whole
lines of at most PIPE_BUF (4 KiB), so that ranks sharing a pipe never
interleave within a line, while `cat` writes 128 KiB at a time, and three
processes (cat, wrap_rank, cat) share the two cores against two.  An earlier
run had wrap_rank at 1.72 GB/s, twice a `cat | cat` that ran at 0.86 GB/s then;
on 2026-11-23, built from before and after the containment work and run side by
side, wrap_rank ran at 0.99 and 1.00 GB/s and `cat | cat` at 2.18 and 2.04: the
machine changed, not wrap_rank.

**Training loop.**  `nccl_worker train` with two ranks, 4 MiB of gradients,
50 steps, a per-slot batch of 2 (best of 3, load average 4.5): with
`--aggregation-frequency 1` a third of the time went to the all-reduce (0.166 of
0.505 s); with 1000, 0.027 of 0.303 s, 1.7 times as many steps per second.
`--fp16-compress` cut the all-reduce by a quarter (0.134 s) but packing and
unpacking cost about what it saved: over loopback compression pays only where
the wire is the bottleneck.  Dividing after unpacking in float32 took 1.4 ms
against 3.3 ms for an fp16 `avg` (1 Mi elements, 2 ranks).
"""


def fmt_time(us):
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.1f} us"


def cell(v):
    return f"{v['busbw']:.2f} ({fmt_time(v['time_us'])})"


def ratio(base, ours):
    """The baseline's time over ours: above 1, ours is faster."""
    return f"{base / ours:.2f}x" if base and ours else "-"


def machine_line(doc):
    m = doc.get("machine")
    if isinstance(m, dict):
        cpu = m.get("cpu") or NOT_RECORDED
        cores = m.get("cores")
        kernel = m.get("kernel")
    else:   # results.json before the CPU model was recorded: "N CPUs, kernel"
        cpu = NOT_RECORDED
        g = re.match(r"(\d+) CPUs?, (.*)", m or "")
        cores, kernel = (int(g.group(1)), g.group(2)) if g else (None, None)
    parts = [f"CPU {cpu}" if cpu != NOT_RECORDED else "CPU model not recorded",
             f"{cores} cores" if cores else "core count not recorded"]
    if kernel:
        parts.append(f"Linux {kernel}")
    return ", ".join(parts)


def readme_allreduce(A):
    res = A["results"]
    ranks = sorted({int(n) for c in res.values() for n in c})
    out = ["## All-reduce within a node", "",
           f"`bench/allreduce_sweep`: {A.get('type', 'float32')} {A.get('op', 'sum')}, "
           f"{A.get('iters', '?')} iterations after {A.get('warmup', '?')} warm-up, median of "
           f"{A.get('rounds', '?')} rounds in which the contenders take turns; busbw in GB/s "
           "(time per all-reduce).  Ours started directly (`--backend cpu`, unbound); the baseline: "
           f"{A.get('openmpi', 'Open MPI')}.  Ratio: the baseline's time over ours (above 1: ours "
           "is faster).  1-minute load average "
           f"{A.get('load_before', float('nan')):.2f} before, {A.get('load_after', float('nan')):.2f} after.",
           "", "![all-reduce busbw against size](allreduce.png)", ""]
    for n in ranks:
        out += [f"n = {n} ranks:", "",
                "| size | shm | Open MPI | Open MPI / shm | tcp ring | Open MPI / tcp |",
                "|---:|---:|---:|---:|---:|---:|"]
        shm = res.get("ours-shm", {}).get(str(n), {})
        tcp = res.get("ours-tcp", {}).get(str(n), {})
        mpi = res.get("openmpi", {}).get(str(n), {})
        for s in sorted({*shm, *tcp, *mpi}, key=int):
            a, t, m = shm.get(s), tcp.get(s), mpi.get(s)
            out.append(f"| {human(int(s))} | {cell(a) if a else '-'} | {cell(m) if m else '-'} | "
                       f"{ratio(m and m['time_us'], a and a['time_us'])} | {cell(t) if t else '-'} | "
                       f"{ratio(m and m['time_us'], t and t['time_us'])} |")
        out.append("")
    return out


def readme_nodes(N):
    if "skipped" in N:
        return ["## All-reduce across nodes", "", f"Skipped: {N['skipped']}", ""]
    res = N["results"]
    ours, base = res.get("auto", {}), res.get("tcp", {})
    out = ["## All-reduce across nodes", "",
           f"`bench/allreduce_nodes.py`: {N['nodes']} network-namespace nodes x {N['slots']} ranks on "
           f"one machine (`--bind none`), median of {N['rounds']} rounds; busbw in GB/s (time).  Ours: "
           "`shm+tcp` (shared memory within each node, the TCP ring across the leaders); the "
           "baseline: the TCP ring through every rank.  Ratio: the baseline's time over ours.", "",
           "![all-reduce across namespace nodes](allreduce_nodes.png)", "",
           "| size | shm+tcp | TCP ring | TCP ring / shm+tcp |", "|---:|---:|---:|---:|"]
    for s in sorted({*ours, *base}, key=int):
        a, b = ours.get(s), base.get(s)
        out.append(f"| {human(int(s))} | {cell(a) if a else '-'} | {cell(b) if b else '-'} | "
                   f"{ratio(b and b['time_us'], a and a['time_us'])} |")
    return out + [""]


FLOOR_TEXT = "floor: `sh -c` starting {n} `/bin/true` in the background, then `wait`"


def readme_launch(L):
    ours = "slotrun --slots 8"
    out = ["## slotrun: launch, teardown, memory", "",
           "`bench/launch_teardown.py`.  Launch: N workers running `/bin/true`, from the launcher's "
            "start to its exit, against the floor: one small launcher process that forks and execs "
            "`/bin/true` N times and waits, which no launcher can undercut.  The contenders take turns, "
            "run after run; medians of the wall time and of the CPU time (user + system) the whole "
            "process tree used.  Ratio: the contender's figure over the floor's (1.00 is the floor; "
            "the lower the better)."
            + (f"  `(before)`: slotrun built from {L['before']}, in the same turns." if L.get("before") else "")
            + (f"  1-minute load average {L['load_before']:.2f} before the launches, {L['load_after']:.2f} "
               "after." if "load_before" in L else ""),
            "", "| launch | contender | wall | x floor | CPU | x floor |", "|---|---|---:|---:|---:|---:|"]
    for n, per in sorted(L.get("launch", {}).items(), key=lambda kv: int(kv[0])):
        fw, fc = per["wall_ms"]["floor"], per["cpu_ms"]["floor"]
        for k in per["wall_ms"]:
            w, c = per["wall_ms"][k], per["cpu_ms"][k]
            if k == "floor":
                name = FLOOR_TEXT.format(n=n)
            else:
                name = shown(k)
            fail = " (failed)" if k in per.get("failed", []) else ""
            k_runs = per.get("samples", {}).get(k, per["runs"])
            out.append(f"| {n} slots | {name}{fail}, median of {k_runs} | {w:.1f} ms | {w / fw:.2f} | "
                       f"{c:.1f} ms | {c / fc:.2f} |")
    for n, per in L.get("launch", {}).items():
        need, has = per.get("needs"), per.get("has")
        if need and has:
            out += ["", f"{n} slots run up to {need['processes']} processes at once (wrap_rank, its guard "
                    f"and the command a rank, and slotrun) and hold about {need['nofile']} open files in "
                    f"slotrun ({need['nofile_log_dir']} with `--log-dir`): slotrun raises its soft limit to "
                    "the hard one when short, and refuses to start (status 2, naming the limit to set) when "
                    f"even that is too few.  This machine: open files {has['nofile_soft']} (hard "
                    f"{has['nofile_hard']}), processes {has['nproc_soft']}, pid_max {has['pid_max']}."]
    out += ["", "Teardown: from rank 0's `exit 1` to the launcher's exit while 7 ranks sleep.  Memory: the "
            "launcher's peak RSS with 8 workers.  Ratio: the baseline's figure over slotrun's (above 1: "
            "slotrun is faster or smaller).", "",
            "| figure | contender | value | baseline / slotrun |", "|---|---|---:|---:|"]
    for key, what, unit, fmt in (("teardown_ms", "teardown", "ms", "{:.1f}"),
                                 ("peak_mib", "peak memory", "MiB", "{:.1f}")):
        per = L.get(key, {})
        mine = per.get(ours)
        for k, v in per.items():
            r = "" if k == ours else ratio(v, mine)
            out.append(f"| {what} | {shown(k)} | {fmt.format(v)} {unit} | {r} |")
    return out + [""]


def readme_status_poll(S):
    out = ["## slotrun status polled every second", "",
           f"`bench/status_poll.py`: each figure without and with a `slotrun status --json` poller asking "
           "at every whole second (its every request keeps the job's sampler going), the two sides taking "
           f"turns run by run; median of {S.get('runs', '?')} runs each (the all-reduce: "
           f"{S.get('allreduce_us', {}).get('runs', '?')}).  Launch: `slotrun --slots 8 -- /bin/true`.  "
           "Teardown: rank 0's `exit 1` to slotrun's exit while 7 ranks sleep.  All-reduce: "
           "`slotrun --slots 4 -- nccl_worker --backend cpu -n 200`, time per all-reduce.  "
           "Ratio: with over without (1.00: no change).", "",
           "| figure | without | with the poller | with / without |", "|---|---:|---:|---:|"]
    for key, what in (("launch_ms", "launch"), ("teardown_ms", "teardown")):
        v = S.get(key)
        if v:
            out.append(f"| {what} | {v['without']:.1f} ms | {v['with']:.1f} ms | {v['with'] / v['without']:.2f} |")
    A = S.get("allreduce_us", {})
    for size in sorted(A.get("without", {}), key=int):
        a, b = A["without"][size], A["with"].get(size)
        if b:
            out.append(f"| all-reduce {human(int(size))} | {fmt_time(a)} | {fmt_time(b)} | {b / a:.2f} |")
    c = A.get("slotrun_cpu_ms")
    if c:
        out.append(f"| slotrun's own CPU over an all-reduce run | {c['without']:.0f} ms | {c['with']:.0f} ms | "
                   f"{c['with'] / c['without']:.2f} |" if c["without"] else
                   f"| slotrun's own CPU over an all-reduce run | 0 ms | {c['with']:.0f} ms | - |")
    return out + [""]


def shown(name):
    """A contender's name as code, "(before)" outside it."""
    if name.endswith(" (before)"):
        return f"`{name[:-len(' (before)')]}` (before)"
    return f"`{name}`"


def readme_wrap(W):
    g = W["gbps"]
    cat = g.get("cat")
    out = ["## wrap_rank throughput", "",
           f"`bench/wrap_rank_throughput.py`: {W.get('bytes', 0) / (1 << 30):.2f} GiB of ~100-byte "
           f"lines through a pipe into `cat > /dev/null`, median of {W.get('runs', '?')} runs.  "
           "The baseline is `cat FILE | cat`; `sed` adding the same prefix is the other way to do "
           "wrap_rank's job.", "",
           "| contender | GB/s | share of cat's |", "|---|---:|---:|"]
    names = {"cat": "`cat FILE | cat`", "wrap_rank": "`wrap_rank 0 -- cat FILE | cat`",
             "sed prefix": "`sed 's/^/[rank=0] /' FILE | cat`"}
    for k, v in g.items():
        out.append(f"| {names.get(k, k).replace('|', chr(92) + '|')} | {v:.2f} | "
                   f"{v / cat:.2f} |" if cat else f"| {k} | {v:.2f} | - |")
    return out + [""]


def readme_plane(J):
    if "skipped" in J:
        return ["## Job plane", "", f"Skipped: {J['skipped']}", ""]
    out = ["## Job plane", "",
           f"`bench/job_plane.py`: 3 network-namespace nodes x 2 slots, median of {J.get('runs', '?')} "
           "runs.", "", "| figure | slotrun | baseline |", "|---|---:|---|"]
    out.append(f"| a rank's failure to every node's exit (`--grace 1`) | "
               f"{J['failure_to_every_exit_ms']:.0f} ms | without the plane the other nodes run on "
               "until their ranks end by themselves |")
    for hb, v in sorted(J.get("cut_link_lost_s", {}).items(), key=lambda kv: float(kv[0])):
        out.append(f"| a cut link to the node declared lost, `--heartbeat-timeout {hb}` | {v:.2f} s | "
                   f"the timeout, {hb} s ({v / float(hb):.2f}x) |")
    st = J.get("start_ms")
    if st:
        out.append(f"| start to exit of 3 nodes x 2 `/bin/true` | {st['joined']:.1f} ms | "
                   f"{st['alone']:.1f} ms as three single-node jobs ({st['joined'] / st['alone']:.2f}x) |")
    return out + [""]


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
           f"Measured {doc.get('date') or NOT_RECORDED} on {machine_line(doc)}.", ""]
    for key, fn in (("allreduce", readme_allreduce), ("allreduce_nodes", readme_nodes),
                    ("launch", readme_launch), ("status_poll", readme_status_poll), ("wrap_rank", readme_wrap),
                    ("job_plane", readme_plane), ("scale", readme_scale)):
        if doc.get(key):
            section = fn(doc[key])
            when = doc[key].get("date")
            if when and when != doc.get("date"):  # kept from an earlier run
                section[2:2] = [f"Measured {when}.", ""]
            out += section
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
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    doc = {"date": now, "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "kernel": os.uname().release}}
    try:
        with open(a.results) as f:
            old = json.load(f)
    except FileNotFoundError:
        old = {}
    # A benchmark not run this time (bench/run --only) keeps its figures
    # from the results file, with the date they were measured.
    for name in ("launch", "status_poll", "wrap_rank", "job_plane", "scale", "allreduce", "allreduce_nodes"):
        doc[name] = load(a.dir, name)
        if doc[name] is not None:
            doc[name].setdefault("date", now)
        elif old.get(name):
            doc[name] = old[name]
            doc[name].setdefault("date", old.get("date"))
            print(f"report: {name}: kept from {a.results} (measured {doc[name]['date']})")
    with open(a.results, "w") as f:
        json.dump(doc, f, indent=1)

    rows = []
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
    if doc["scale"]:
        rows += scale_rows(doc["scale"])
        plot_scale(doc["scale"], os.path.join(a.plots, "scale.png"), a.dir,
                   "set terminal pngcairo size 1400,750 font ',11'" if _has_cairo() else
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

    w = [max(len(r[i]) for r in rows) if rows else 0 for i in range(4)]
    print(f"# summary ({doc['date']}); every figure with its baseline from the same run")
    for r in rows:
        print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:>{w[2]}}  {r[3]}")
    write_readme(doc, a.readme)
    print(f"report: {a.readme} written")


if __name__ == "__main__":
    main()
