#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/report.py's plots: gnuplot scripts written to a temporary folder
and run, one PNG each (the all-reduce panels, the rendezvous curves)."""
import os
import shutil
import subprocess
import sys

from report_sections import human

LABEL = {"ours-shm": "slotrun shm", "ours-tcp": "slotrun tcp", "openmpi": "Open MPI (default, shared memory)",
         "auto": "slotrun shm+tcp (hierarchical)", "tcp": "slotrun tcp ring"}


def plot(res, key, ranks, png, title, tmp, panel="n = {}"):
    """busbw against size, log-log, a panel per n, a line per contender."""
    if not shutil.which("gnuplot"):
        print(f"report: no gnuplot, {png} not drawn", file=sys.stderr)
        return False
    lines = ["set terminal pngcairo size 1400,600 font ',11'" if has_cairo() else
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
    lines = ["set terminal pngcairo size 1400,500 font ',11'" if has_cairo() else
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


def has_cairo():
    r = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
    return "pngcairo" in r.stdout + r.stderr
