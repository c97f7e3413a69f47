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
            if pts:
                curves.append(_curve(tmp, f"{key}-{c}-{n}", pts, LABEL.get(c, c)))
        lines.append(f"set title '{panel.format(n)}'")
        lines.append("plot " + ", ".join(curves))
    return _draw(lines, png, tmp)


def _curve(tmp, name, pts, title):
    """A data file of (x, y) points and the plot clause that draws it."""
    dat = os.path.join(tmp, name.replace(" ", "_") + ".dat")
    with open(dat, "w") as f:
        f.writelines(f"{x} {y}\n" for x, y in pts)
    return f"'{dat}' using 1:2 with linespoints lw 2 title '{title}'"


def _draw(lines, png, tmp):
    """Ends the multiplot and runs gnuplot on lines."""
    script = os.path.join(tmp, os.path.basename(png) + ".gp")
    with open(script, "w") as f:
        f.write("\n".join(lines + ["unset multiplot"]) + "\n")
    subprocess.run(["gnuplot", script], check=True)
    return True


def plot_rdv(R, png, tmp):
    """The rendezvous's times against N, log-log: a panel per figure, a
    line per contender (failed runs have no point)."""
    if not shutil.which("gnuplot"):
        print(f"report: no gnuplot, {png} not drawn", file=sys.stderr)
        return False
    panels = (("init_s", "init: last start to last rank past init (s)"),
              ("barrier_ms", "barrier (ms)"), ("allgather_ms", "allgather of 8 bytes (ms)"))
    lines = ["set terminal pngcairo size 1400,500 font ',11'" if _has_cairo() else
             "set terminal png size 1400,500",
             f"set output '{png}'",
             f"set multiplot layout 1,3 title 'rendezvous of N ranks on one machine "
             f"({os.cpu_count()} cores), median of {R['rounds']} rounds'",
             "set logscale xy 2", "set grid", "set key top left", "set xlabel 'ranks'",
             "set format y '%.3g'", "set xtics (" + ", ".join(f"'{n}' {n}" for n in R["sizes"]) + ")",
             f"set xrange [{min(R['sizes']) / 1.5}:{max(R['sizes']) * 1.5}]"]
    for key, title in panels:
        curves = []
        for c in R["contenders"]:
            pts = [(int(n), v[key]) for n, v in sorted(R["results"][c].items(), key=lambda kv: int(kv[0]))
                   if key in v and v[key] > 0]
            if pts:
                curves.append(_curve(tmp, f"rdv-{key}-{c}", pts, c))
        lines += [f"set title '{title}'", "plot " + ", ".join(curves)]
    return _draw(lines, png, tmp)


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

**Elastic jobs and the seal, first measured.**  On 2026-11-27 the machine was
shared with other agents' builds and tests: the 1-minute load went from 12 to
287 during `bench/elastic.py` and from 109 to 21 during `bench/seal.py`, on 2
cores, so those figures are upper bounds until measured on a quiet machine.
`bench/seal_cost` counts the thread's CPU time for that reason: timed by the
wall clock under a load of 287 it gave 7.8 and 252 us for a sealed PING and
STOP (2.2 and 68 us in CPU time).  A rank's failure to every node's exit came
out 1.3 to 1.4x slower on the sealed build than on 41ee2c9 in three runs of
`bench/seal.py`; the same case alone, 12 runs taking turns between 41ee2c9,
51bcb1e (the seal alone) and the elastic build, at a load of 160 to 200, gave
medians of 110, 94 and 129 ms: the seal itself does not show; what is left is
the load, or the elastic work.

**Rendezvous at scale, fix by fix.**  `bench/rdv_scale.py --sizes 1024` with each
commit of the scale work as a contender, 3 rounds taking turns, medians, on
2026-11-27 under a load average of 170 to 300 (other tenants): the wall times
moved by 2x from round to round, so the CPU times and the heap are the figures
to read.  Before the join-storm fix (41ee2c9) most runs of 256 ranks and every
run of 1024 failed: genuine ranks were dropped the moment newer connections
came.

| library | init | barrier | allgather | rank 0's CPU (in init) | rank 0's heap | all ranks' CPU |
|---|---:|---:|---:|---:|---:|---:|
| eae6293 join storm | 30.7 s | 324 ms | 306 ms | 0.786 s (0.446 s) | 465 KiB | 22.9 s |
| 6a6999c + table hashed once, sent to all at once | 32.7 s | 501 ms | 570 ms | 0.651 s (0.195 s) | 465 KiB | 20.9 s |
| 8419820 + sorts, O(N) watch list | 11.3 s | 441 ms | 280 ms | 0.625 s (0.189 s) | 466 KiB | 21.2 s |
| d8740d9 + node in the table | 15.4 s | 424 ms | 510 ms | 0.520 s (0.117 s) | 518 KiB | 20.4 s |
| c435051 + addresses formatted when asked | 20.4 s | 407 ms | 416 ms | 0.551 s (0.147 s) | 518 KiB | 21.9 s |
| 2b91fbf + host names in one buffer | 11.5 s | 371 ms | 339 ms | 0.462 s (0.129 s) | 276 KiB | 16.6 s |

One of d8740d9's three runs failed after 153 s: a ring neighbour not
scheduled for 5 s was dropped as a silent stranger (fixed in 39bfd4a, with
test_ring_connect).  On this VM a page fault costs about 25 us and a fork and
exit about 2.5 ms, so 1024 processes spend seconds of CPU on being processes;
rank 0 spends about 35 us of CPU per rank per control collective (a receive
and a send each).
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
    if isinstance(m, dict) and m.get("gpu"):
        parts.insert(0, f"GPU {m['gpu']}")
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


# What was checked and measured on the GPU by hand, beside the figures
# bench/gpu_allreduce regenerates: each says when and on what.
GPU_NOTES = """\
**Checked.**  On 2026-11-27, on the same H200, one rank, every type and op
from 4 B to 64 MiB by 4 (`nccl_worker --backend nccl -b 4 -e 64M -f 4 -d all
-o all`, the cases of `e2e_nccl_gpu`): 390 rows of 390 in place (built from
41ee2c9) and 390 of 390 out of place (`-O`, built from b4bc051), 0 wrong
elements.  With the test hook spoiling one element of the result and one of
the send buffer (`NCCL_WORKER_TEST_CORRUPT_RANK=0`), every row counted 2 wrong,
the changed send buffer was named, and nccl_worker exited 1.

**Abort on timeout.**  The same day and GPU, rank 0 of 2 with
`SLOTRUN_TIMEOUT=10`, against a rank 1 that joins the rendezvous and then never
reaches NCCL: rank 0 exited 1 after 10.4 s, naming the call:
`ncclCommInitRankConfig(...) did not finish within 10s (SLOTRUN_TIMEOUT)`.

**The wait for the GPU, before and after b4bc051.**  The NCCL backend spins
1 ms waiting for the GPU, then slept 1 ms at a time: 20 all-reduces of 256 MiB
(2.6 ms of work) ended up to 1 ms late.  The same sweep the day of the fix,
each build beside nccl-tests in its own invocation: out of place, 256 MiB
1631 against 2071 GB/s (0.79x nccl-tests) before, 2035 against 2072 (0.98x)
after; 1 GiB 1951 against 2109 (0.93x) before, 2097 against 2109 (0.995x)
after.  The wait now sleeps a 32nd of the time waited so far (20 us to 1 ms).

**Not measured.**  Several ranks on several GPUs: the machine had one GPU
(NCCL refuses two ranks on one: "Duplicate GPU detected").  So nothing here
measures NCCL between GPUs (NVLink, PCIe, the network) or a real all-reduce's
busbw; `bench/gpu_allreduce` runs one rank.

**How to run it.**  On a machine with an NVIDIA GPU, CUDA with nvcc, and NCCL:

```
meson setup build-rel -Dbuildtype=release -Dcuda=enabled -Dtests=false && ninja -C build-rel
bench/gpu_allreduce --bin build-rel/nccl_worker/nccl_worker --nccl-tests nccl-tests/build/all_reduce_perf
```

`--json FILE` keeps the figures; `bench/run --only gpu_allreduce` measures them
and writes them here (`all_reduce_perf` from PATH).  nccl-tests:
`make -C nccl-tests MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=<NCCL's folder>` in a clone of
github.com/NVIDIA/nccl-tests.  Where NCCL is not in the loader's path (PyTorch's
wheel: `.../site-packages/nvidia/nccl/lib`), set `LD_LIBRARY_PATH`.  The
checks: `meson test -C build e2e_nccl_gpu` in a build with `-Dcuda=enabled`.
"""


def readme_gpu(G):
    """The all-reduce on one GPU: bench/gpu_allreduce's table, then
    GPU_NOTES."""
    res = G["results"]
    ours, d2d, ip = res.get("ours", {}), res.get("d2d", {}), res.get("ours_in_place", {})
    T = G.get("nccl_tests") or {}
    nt, nt_ip = ({}, {}) if "skipped" in T else (res.get("nccl_tests", {}), res.get("nccl_tests_in_place", {}))
    gpu = G.get("gpu") or {}
    baseline, skipped = "", ""
    if "skipped" in T:
        skipped = f"  nccl-tests was not run ({T['skipped']}): its columns are left out."
    else:
        baseline = (" and beside the out-of-place column of nccl-tests' `all_reduce_perf -g 1` ("
                    + (T.get("version") or "version not recorded").split()[0]
                    + (f", commit {T['commit']}" if T.get("commit") else "") + ")")
    out = ["## On a GPU", "",
           f"`bench/gpu_allreduce`: one rank on one {gpu.get('name', 'GPU')}"
           + (f" (driver {gpu['driver']})" if gpu.get("driver") else "")
           + f", nccl_worker's NCCL backend ({', '.join((G.get('backend') or '').split(', ')[1:]) or '?'}), "
           f"{G.get('type', 'float32')} {G.get('op', 'sum')}, {G.get('iters', '?')} iterations after "
           f"{G.get('warmup', '?')} warm-up, median of {G.get('rounds', '?')} rounds in which the contenders "
           "take turns.  One rank's all-reduce is a copy of its buffer: out of place (`-O`) it is set beside "
           f"a plain device-to-device copy (`bench/gpu/d2d_copy.cu`: cudaMemcpyAsync, one stream){baseline}; "
           "in place it moves nothing, and its time is what a call costs.  algbw in GB/s, size / time "
           f"(time per all-reduce).  Ratio: ours over the baseline (above 1: ours is faster).{skipped}", ""]
    head = ["size", "nccl_worker -O"] + (["nccl-tests", "ours / nccl-tests"] if nt else []) + \
        ["d2d copy", "ours / copy", "in place: nccl_worker"] + (["in place: nccl-tests"] if nt else [])
    out += ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for s in sorted(ours, key=int):
        a = ours[s]
        cells = [human(int(s)), gcell(a)]
        if nt:
            cells += [gcell(nt.get(s)), gratio(a, nt.get(s))]
        cells += [gcell(d2d.get(s)), gratio(a, d2d.get(s)), f"{ip[s]['time_us']:.2f} us" if s in ip else "-"]
        if nt:
            cells.append(f"{nt_ip[s]['time_us']:.2f} us" if s in nt_ip else "-")
        out.append("| " + " | ".join(cells) + " |")
    return out + ["", GPU_NOTES]


def gcell(v):
    return f"{v['algbw']:.2f} ({fmt_time(v['time_us'])})" if v else "-"


def gratio(ours, base):
    """Ours over the baseline in algbw: above 1, ours is faster."""
    return f"{ours['algbw'] / base['algbw']:.3f}x" if ours and base and base["algbw"] else "-"


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


def span(s):
    """A benchmark's summary {median, min, max} as "681 ms (473..912)"."""
    return f"{s['median']:.0f} ms ({s['min']:.0f}..{s['max']:.0f})"


def load_line(doc):
    """ "  1-minute load average 0.97 before, 3.39 after." where recorded."""
    if "load_before" not in doc or "load_after" not in doc:
        return ""
    return f"  1-minute load average {doc['load_before']:.2f} before, {doc['load_after']:.2f} after."


def readme_elastic(E):
    if "skipped" in E:
        return ["## Elastic jobs", "", f"Skipped: {E['skipped']}", ""]
    hb = E.get("heartbeat_timeout_s", 5)
    w = E["alone_ms"]["median"]
    goal = (hb + 2) * 1000
    out = ["## Elastic jobs", "",
           f"`bench/elastic.py`: {E.get('nodes', 3)} network-namespace nodes x {E.get('slots', 2)} slots, "
           f"`slotrun --nnodes 2:3 --max-restarts 5`, the default `--heartbeat-timeout` ({hb:g} s) and "
           "grace; workers that print their round and their clock, then idle.  Times from the ranks' own "
           f"clock readings, median (min..max) of {E.get('runs', '?')} runs.  The baseline, the workers' own "
           "start: a one-node slotrun (`--nnodes 1 --slots 2`) from launch to its 2 ranks up, "
           f"{span(E['alone_ms'])}, taking turns with the join.  The goals are the ones elastic jobs were "
           "built to meet." + load_line(E), "",
           "| figure | slotrun | goal | against the baseline |", "|---|---:|---:|---|",
           f"| a node's SIGKILL (slotrun and workers) to the 4 survivors' ranks up in the next round | "
           f"{span(E['kill_ms'])} | <= {goal:.0f} ms (timeout + 2 s) | "
           f"{E['kill_ms']['median'] / w:.2f}x the workers' own start |",
           f"| a node's cable pulled, to the same | {span(E['cut_ms'])} | <= {goal:.0f} ms | "
           f"the {hb:g} s timeout + {E['cut_ms']['median'] - hb * 1000:.0f} ms |",
           f"| the chief's SIGKILL to the other 2 nodes' 4 ranks up (node 1 takes over) | "
           f"{span(E['chief_ms'])} | - | {E['chief_ms']['median'] / w:.2f}x the workers' own start |",
           f"| a new node's launch to its 2 ranks up in the re-formed job | {span(E['join_ms'])} | "
           f"<= {2000 + w:.0f} ms (2 s + the workers' own start) | {E['join_ms']['median'] / w:.2f}x "
           f"the workers' own start (+{E['join_ms']['median'] - w:.0f} ms) |"]
    T = E.get("torchrun") or {}
    if "skipped" in T:
        out += ["", f"torchrun: skipped ({T['skipped']})."]
    elif T:
        k = E["kill_ms"]["median"]

        def ms(v, deadline=None):
            if v is None:
                return f"none within {deadline} s" if deadline else "none"
            return f"{v:.0f} ms"
        own = T.get("alone_ms")
        out += [f"| torchrun {T.get('version', '')} (gloo, c10d): its workers' own start, a one-node "
                f"torchrun (`--standalone`) from launch to its 2 ranks' first step | {ms(own)} | - | "
                + (f"{own / w:.1f}x slotrun's |" if own else "- |"),
                f"| torchrun, a node's SIGKILL to the survivors' first training step, 1 run | "
                f"{ms(T['kill_ms'])} | - | "
                + (f"{T['kill_ms'] / k:.1f}x slotrun's" + (f", {T['kill_ms'] / own:.1f}x its workers' own "
                                                           "start |" if own else " |")
                   if T["kill_ms"] else "- |"),
                f"| torchrun, a node's cable pulled, gloo's default timeout (30 min) | "
                f"{ms(T['cut_default_ms'], T.get('cut_default_deadline_s'))} | - | - |",
                f"| torchrun, a node's cable pulled, `init_process_group(timeout={T['pg_timeout_s']} s)` | "
                f"{ms(T['cut_pg_timeout_ms'])} | - | "
                + (f"{T['cut_pg_timeout_ms'] / E['cut_ms']['median']:.1f}x slotrun's |"
                   if T["cut_pg_timeout_ms"] else "- |"),
                "", "torchrun: `torchrun --nnodes 2:3 --nproc_per_node 2 --rdzv_backend c10d --rdzv_endpoint "
                "<node 0>:29500 --max_restarts 5 --redirects 1 --tee 1 bench/torch_elastic_loop.py` (a DDP "
                "loop on gloo, 0.1 s a step), each node in a UTS namespace of its own with its own host name "
                "(torchrun hands its workers rank 0's host name as MASTER_ADDR).  Debian's torchrun 1.13 "
                "spells its flags with underscores, and on Python 3.11 it dies with its default "
                "`--redirects 0 --tee 0` (its `Std.from_str('0')` is None there), hence `--redirects 1 "
                "--tee 1`.  Its figures are to a training step, slotrun's to a worker's start.  With a "
                "cable pulled, the survivors wait in gloo's all-reduce until the process group's timeout "
                "(30 minutes by default); the benchmark gives up after the time shown and measures once more "
                "with a shorter timeout."]
    return out + [""]


def readme_seal(S):
    c = S["seal_cost"]
    out = ["## The job plane's seal", "",
           f"`bench/seal_cost`: {c['rounds']} batches of {c['frames']} frames, sealed and plain taking turns; "
           f"median ns per frame ({c.get('clock', 'wall-clock time')}).  Each frame sealed carries a "
           f"{c.get('tag_bytes', 16)}-byte tag "
           "(HMAC-SHA256 under the connection's key, cut to 128 bits)." + load_line(S), "",
           "| frame | bytes | encode + decode | + seal + open | the seal's cost |", "|---|---:|---:|---:|---:|"]
    names = {"ping": "PING", "stop": "STOP, a full cause with an 8 KiB tail"}
    for k in ("ping", "stop"):
        f = c[k]
        out.append(f"| {names[k]} | {f['bytes']} | {f['plain_ns']:.0f} ns | {f['sealed_ns']:.0f} ns | "
                   f"+{f['sealed_ns'] - f['plain_ns']:.0f} ns ({f['sealed_ns'] / f['plain_ns']:.1f}x) |")
    J = S.get("job_plane") or {}
    if "skipped" in J:
        return out + ["", f"The job plane before and after: skipped ({J['skipped']}).", ""]
    if not J:
        return out + [""]
    out += ["", f"`bench/job_plane.py` (above) against slotrun built from {J['old_commit']}, the commit before "
            f"the seal, and this build, {J['pairs']} invocations of {J['runs']} runs each, taking turns; the "
            "median of each side's invocations.  This build carries the elastic work as well.", "",
            "| figure | before the seal | sealed | sealed / before |", "|---|---:|---:|---:|"]
    labels = [("failure_to_every_exit_ms", "a rank's failure to every node's exit", "{:.0f} ms", 1),
              ("cut_link_lost_s_5", "a cut link to the node declared lost, heartbeat 5 s", "{:.2f} s", 1),
              ("cut_link_lost_s_2", "the same, heartbeat 2 s", "{:.2f} s", 1),
              ("start_joined_ms", "start to exit of 3 nodes x 2 `/bin/true`", "{:.1f} ms", 1),
              ("start_alone_ms", "the same as three single-node jobs (no plane)", "{:.1f} ms", 1)]
    for key, what, f, _ in labels:
        b, a = J["before"].get(key), J["sealed"].get(key)
        if b is None or a is None:
            continue
        out.append(f"| {what} | {f.format(b)} | {f.format(a)} | {a / b:.2f}x |")
    return out + [""]


def _rdv_cell(v, key, fmt, runs):
    """v[key] as fmt, or why there is none (runs: the figures' summary)."""
    if key not in v:
        return "failed" if runs.get("failures") else "-"
    return fmt.format(v[key])


def readme_rdv(R):
    res, cs = R["results"], R["contenders"]
    ours = cs[0]
    out = ["## Rendezvous at scale", "",
           f"`bench/rdv_scale.py`: N ranks of the comm library forked on this machine by `bench/rdv_scale` "
           "(no launcher; loopback; each rank its own host name) and released at once into "
           f"`slotcomm_init` (`SLOTRUN_TRANSPORT=tcp`), {R['iters']} barriers and {R['iters']} allgathers "
           "of 8 bytes checked on every rank; median of "
           f"{R['rounds']} rounds in which the contenders take turns.  Init: from the last rank's start "
           "to the last rank past init; barrier and allgather: from the last rank's entry to the last "
           "rank's exit.  The baselines are this driver linked against the library of earlier commits: "
           + ", ".join(f"`{c}`" + (f" ({R['revs'][c]})" if c in R.get("revs", {}) else "") for c in cs[1:])
           + ".  Ratio: the baseline's figure over ours.  With "
           "every rank on 2 cores, the wall times are bounded by the CPU time of all ranks together, "
           "and they move with the machine's load: 1-minute load average "
           f"{R.get('load_before', float('nan')):.2f} before, {R.get('load_after', float('nan')):.2f} "
           f"after (net.core.somaxconn {R.get('somaxconn', '?')}).  For scale, not comparison (their "
           "ranks run on thousands of hosts): torchrun's c10d rendezvous on the libuv TCPStore joins "
           "4,000 hosts in about 10 s and connects 96K ranks in about 100 s.", "",
           "![rendezvous times against N](rdv_scale.png)", ""]
    head = "| N | figure | " + " | ".join(f"`{c}`" for c in cs) + "".join(
        f" | `{c}` / ours" for c in cs[1:]) + " |"
    out += [head, "|---:|---|" + "---:|" * (2 * len(cs) - 1)]
    rows = (("init_s", "init (s)", "{:.3f}", None), ("barrier_ms", "barrier (ms)", "{:.1f}", None),
            ("allgather_ms", "allgather (ms)", "{:.1f}", None),
            ("cpu_s", "rank 0's CPU (s)", "{:.3f}", "rank0"),
            ("ranks_cpu_s", "all ranks' CPU (s)", "{:.2f}", None))
    for n in R["sizes"]:
        for key, what, fmt, sub in rows:
            vals = []
            for c in cs:
                v = res.get(c, {}).get(str(n), {})
                vals.append((v.get(sub, {}) if sub else v, v))
            cells = [_rdv_cell(x, key, fmt, v) for x, v in vals]
            mine = vals[0][0].get(key)
            ratios = [ratio(x.get(key), mine) for x, _ in vals[1:]]
            out.append(f"| {n} | {what} | " + " | ".join(cells) + "".join(f" | {r}" for r in ratios) + " |")
    out += ["", f"Rank 0 of `{ours}`: memory and descriptors (heap: what `slotcomm_init` left allocated).", "",
            "| N | peak RSS | heap | heap per rank | descriptors opened |", "|---:|---:|---:|---:|---:|"]
    for n in R["sizes"]:
        v = res.get(ours, {}).get(str(n), {}).get("rank0")
        if v:
            out.append(f"| {n} | {v['peak_rss_kib'] / 1024:.1f} MiB | {v['heap_bytes'] / 1024:.0f} KiB | "
                       f"{v['heap_bytes'] / n:.0f} B | {v['fds']:.0f} |")
    fails = [(c, n, v) for c in cs for n, v in res.get(c, {}).items() if v.get("failures")]
    if fails:
        out += ["", "Failed runs:", ""]
        out += [f"- `{c}`, N = {n}: {v['failures']} of {v['runs']}: {v.get('error', '?')}" for c, n, v in fails]
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
