# SPDX-License-Identifier: MIT
"""bench/scale.py's part of bench/README.md and its curves against N
(bench/scale.png, gnuplot), for bench/report.py."""
import os
import shutil
import subprocess

GOALS = "1024 nodes join within 5 s of the last one's start, a failure reaches all within 1 s, " \
        "the chief holds at most 10 KiB per node"


_FLOOR = ("  `floor`: the same fail job, in turns with slotrun, with `bench/floor_node.c` in "
          "slotrun's place: the same star on loopback, START and STOP one byte each, and the same four "
          "processes a node (the node, two relays standing for wrap_rank and its guard, the worker), "
          "with nothing else (no handshake, seal, heartbeat, output or bookkeeping): what any launcher "
          "of that shape costs this machine.  `floor, no relays`: the node starts the worker itself "
          "(two processes a node, no containment).  Where the floor misses a goal, no launcher of "
          "that shape meets it in this simulation on this machine.")


_TREE = ("  `slotrun, tree`: the same jobs with the plane as a relay tree (docs/job-plane.md, \"The tree\"): "
         "each group of F nodes (the fan-out, in the flags column) in a network namespace of its own on one "
         "bridge, every node given every address; the chief holds its own group and one relay per other "
         "group, the relay (node F) its group.  Its chief's figures per node are still its excess over "
         "node 1 divided by N-1: what one more node costs the chief when most of them are behind relays.")


def _tree_rows(S):
    """The tree's relay and chief beside the star's chief, per N."""
    out = []
    for n in _sizes(S):
        per = S["nodes"][n]
        t, star = per.get("slotrun, tree"), per.get("slotrun")
        if not t or not t.get("relay"):
            continue
        rl = t["relay"]

        def ratio(a, b):
            return f" ({a / b:.2f}x the star's)" if a and b else ""
        cj, sj = t.get("chief_join_cpu_s"), star and star.get("chief_join_cpu_s")
        ch, sh = t.get("chief_heartbeat_cpu_s_per_s"), star and star.get("chief_heartbeat_cpu_s_per_s")
        out.append(f"| {n} | {t.get('fanout', '?')} | {_f(cj, 's', 3)}{ratio(cj, sj)} | "
                   f"{_f(ch and ch * 100, '% of a core', 1)}{ratio(ch, sh)} | {_f(t.get('chief_fds'), '', 0)} | "
                   f"{_f(rl.get('join_cpu_s'), 's', 3)} | {_f(rl.get('heartbeat_cpu_s_per_s') and rl['heartbeat_cpu_s_per_s'] * 100, '% of a core', 1)} | "
                   f"{_f(rl.get('fds'), '', 0)} | {_f(rl.get('rss_kib') and rl['rss_kib'] / 1024, 'MiB', 1)} |")
    if not out:
        return []
    return ["", "The tree's chief and one relay (node F), beside the star's chief (medians; the chief's CPU to "
            "join is its whole CPU once every worker runs, heartbeats its CPU per second idle):", "",
            "| N | fan-out | chief: CPU to join | chief: heartbeats | chief fds | relay: CPU to join | "
            "relay: heartbeats | relay fds | relay RSS |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"] + out


def _sizes(S):
    return sorted(S.get("nodes", {}), key=int)


def _contenders(S):
    seen = []
    for per in S.get("nodes", {}).values():
        for name in per:
            if name not in seen:
                seen.append(name)
    return seen


def _curve(S, name, key, scale=1.0, sub=None):
    pts = []
    for n in _sizes(S):
        r = S["nodes"][n].get(name, {})
        v = (r.get(sub) or {}).get(key) if sub else r.get(key)
        if v is not None:
            pts.append((int(n), v * scale))
    return pts


def plot_scale(S, png, tmp, terminal):
    """Two panels against N (log scale): the times (join, reach, exit,
    restart) with the goals, and the chief's memory and CPU per node."""
    if not shutil.which("gnuplot") or not _sizes(S):
        return False
    names = _contenders(S)
    lo, hi = int(_sizes(S)[0]), int(_sizes(S)[-1])
    lines = [terminal, f"set output '{png}'",
             "set multiplot layout 1,2 title 'the job plane against N simulated nodes (loopback, one machine)'",
             "set logscale x 2", "set grid", "set key below", "set xlabel 'nodes'",
             f"set xrange [{lo / 1.4}:{hi * 1.4}]",
             "set xtics (" + ", ".join(f"'{n}' {n}" for n in _sizes(S)) + ")"]
    colors = ["#9400d3", "#009e73", "#56b4e9", "#e69f00", "#cc79a7", "#0072b2", "#d55e00"]

    def style(metric, contender):
        return (f"lc rgb '{colors[metric % len(colors)]}' dt {1 + contender} pt {1 + contender} "
                f"lw {2 if contender == 0 else 1}")

    def dat(tag, pts):
        path = os.path.join(tmp, f"scale-{tag}.dat")
        with open(path, "w") as f:
            f.writelines(f"{x} {y}\n" for x, y in pts)
        return path

    curves = []
    for c, name in enumerate(names):
        for m, (key, what) in enumerate((("join_s", "join"), ("join_chief_s", "join, the chief's part"),
                                         ("reach_s", "failure reaches all"),
                                         ("reach_chief_s", "reach, the chief's part"),
                                         ("restart_s", "next attempt on all"))):
            pts = _curve(S, name, key)
            if pts:
                curves.append(f"'{dat(name + key, pts)}' using 1:2 with linespoints {style(m, c)} "
                              f'title "{what} ({name})"')  # the chief's: no single quotes
    lines += ["set title 'seconds'", "set ylabel 'seconds'", "set yrange [0:*]",
              "plot " + ", ".join(curves + ["5 with lines dt 2 lc rgb 'gray' title 'join goal 5 s'",
                                            "1 with lines dt 3 lc rgb 'gray' title 'reach goal 1 s'"])]
    curves = []
    for c, name in enumerate(names):
        for m, (key, what, scale) in enumerate((("rss_kib", "RSS, KiB", 1.0), ("join_cpu_ms", "CPU to join, us", 1000.0),
                                                ("heartbeat_cpu_us_per_s", "CPU of heartbeats, us/s", 1.0))):
            pts = _curve(S, name, key, scale, sub="per_node")
            if pts:
                curves.append(f"'{dat(name + key, pts)}' using 1:2 with linespoints {style(m, c)} "
                              f'title "{what} ({name})"')  # the chief's: no single quotes
    lines += ["set title 'the chief, per node (its excess over a member)'", "set ylabel 'per node'",
              "set logscale y 10", "set yrange [*:*]",
              "plot " + ", ".join(curves + ["10 with lines dt 2 lc rgb 'gray' title 'memory goal 10 KiB'"]),
              "unset multiplot"]
    script = os.path.join(tmp, "scale.gp")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run(["gnuplot", script], check=True)
    return True


def _f(v, unit, d=2):
    return "-" if v is None else f"{v:.{d}f} {unit}".rstrip()


def readme_scale(S):
    out = ["## The job plane at scale", "",
           "`bench/scale.py`: N nodes simulated on this one machine (`tests/e2e/sim_nodes.py`): N slotruns "
           "of one slot each on loopback, `--bind none`, the chief's slotrun holding N-1 connections as on "
           "N hosts; the worker (`tests/e2e/scale_worker.c`) stamps its start, its failure and the stop "
           "that reached it with the monotonic clock.  join: from the last slotrun's start to the last "
           "worker's start.  reach: from one rank's failure (node 3N/4) to the last other worker's "
           "SIGTERM.  The chief's part of each: to its own worker's start, which follows its last START, "
           "and to its own worker's SIGTERM, which follows its last STOP; the rest is every other node's "
           "work, which N hosts do at once and this machine's cores one after another.  exit: to the last "
           "slotrun's exit (every node with the job's status).  restart: with "
           "`--max-restarts 1 --restart-delay 0`, from the failure to the last start of the next "
           "attempt.  The chief's costs per node are its excess over a member's (node 1: the same slot "
           "and worker) divided by N-1: RSS and fds once every worker runs, CPU to that point, CPU per "
           f"second of heartbeats alone (an idle window of {S.get('idle_s', '?')} s), and CPU from the "
           "failure to its exit.  Every process of all N nodes (slotrun, wrap_rank, its guard, the "
           "worker) shares the machine's cores, so the simulation starts 4N processes; the join is timed "
           "from the last start, after the forking.  On N hosts no node's work would take the chief's "
           "CPU; here the chief runs under SCHED_FIFO (where it may: root) and the other nodes under "
           "SCHED_BATCH, so that the nodes its messages wake do not keep it waiting" +
           ("" if all(r.get("chief_fifo") is not False for per in S.get("nodes", {}).values()
                      for r in per.values()) else " (it could not here: not root)") + ".  Medians of "
           f"{S.get('runs', '?')} runs" + (f"; `{S['before']}`: slotrun built from that commit, in turns "
                                            "with this one" if S.get("before") else "") + ".  The goals: "
           + GOALS + "." + (_FLOOR if any("floor_relays" in r for per in S.get("nodes", {}).values()
                                          for r in per.values()) else "")
           + (_TREE if any("fanout" in r for per in S.get("nodes", {}).values() for r in per.values()) else ""),
           "", "![the job plane against N](scale.png)", "",
           "| N | contender | join | chief's part | reach | chief's part | exit | restart | chief RSS | "
           "per node | fds per node | CPU per join | heartbeats per node | fan-out to the end per node | "
           "load | flags |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    notes = []
    for n in _sizes(S):
        for name, r in S["nodes"][n].items():
            pn = r.get("per_node", {})
            failed = len(r.get("errors", []))
            fan = f"fan-out {r['fanout']}" if r.get("fanout") else ""
            jobs = failed + sum(r.get("ok", {}).values())
            out.append(f"| {n} | `{name}` | {_f(r.get('join_s'), 's')} | {_f(r.get('join_chief_s'), 's')} | "
                       f"{_f(r.get('reach_s'), 's')} | {_f(r.get('reach_chief_s'), 's')} | "
                       f"{_f(r.get('exit_s'), 's')} | {_f(r.get('restart_s'), 's')} | "
                       f"{_f(r.get('chief_rss_kib') and r['chief_rss_kib'] / 1024, 'MiB', 1)} | "
                       f"{_f(pn.get('rss_kib'), 'KiB', 1)} | {_f(pn.get('fds'), '', 2)} | "
                       f"{_f(pn.get('join_cpu_ms'), 'ms', 2)} | {_f(pn.get('heartbeat_cpu_us_per_s'), 'us/s', 0)} | "
                       f"{_f(pn.get('end_cpu_ms'), 'ms', 2)} | {r.get('load', 0):.1f} | "
                       f"{('`' + r['args'] + '`') if r.get('args') else ''}"
                       f"{fan}"
                       f"{f' ({failed} of {jobs} jobs failed)' if failed else ''} |")
            for e in r.get("errors", [])[:2]:
                notes.append(f"- N = {n}, `{name}`: {e[:400]}")
    out += _tree_rows(S)
    if notes:
        out += ["", "Jobs that failed (the first two per row):", ""] + notes
    return out + [""]


def summary_rows(S):
    rows = []
    for n in _sizes(S):
        for name, r in S["nodes"][n].items():
            pn = r.get("per_node", {})
            rows.append((f"job plane, {n} simulated nodes: join / reach / restart (s)", name,
                         f"{_f(r.get('join_s'), '')} / {_f(r.get('reach_s'), '')} / {_f(r.get('restart_s'), '')}",
                         f"chief {_f(pn.get('rss_kib'), 'KiB', 1)} a node" + _over_floor(S["nodes"][n], name)))
    return rows


def _over_floor(per, name):
    """slotrun's join and reach over the floor's (same N, same run)."""
    f, r = per.get("floor"), per.get(name)
    if not f or "floor_relays" in r:
        return ""
    out = []
    for key, what in (("join_s", "join"), ("reach_s", "reach")):
        if r.get(key) and f.get(key):
            out.append(f"{what} {r[key] / f[key]:.2f}x")
    return ("; over the floor: " + ", ".join(out)) if out else ""
