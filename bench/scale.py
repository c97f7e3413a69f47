#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The job plane at scale: N simulated nodes on one machine
(tests/e2e/sim_nodes.py: N slotruns of one slot on loopback, the chief's
slotrun holding N-1 connections as on N hosts; the worker stamps its events
with CLOCK_MONOTONIC and costs next to nothing).

Usage: bench/scale.py [--slotrun PATH] [--before PATH [--before-label TEXT]]
                      [--nodes 16,64,256,1024] [--runs R] [--args-from N ARGS]
                      [--idle S] [--json FILE] [--keep DIR] [--no-floor] [--tree F]

Each N runs two jobs, R times each (medians), with --before the same slotrun
built from an earlier commit in turns with this one:

fail     every worker holds; once all N run, the job idles --idle seconds,
         then the worker of node 3N/4 fails (exit 4).  join: from the last
         slotrun's start (its spawn) to the last worker's start.  reach:
         from the failure's stamp to the last other worker's SIGTERM stamp
         (the stop reached every node).  exit: to the last slotrun's exit
         (all with status 4).  The chief's part of each: the chief starts
         its own worker once it has sent every node START, and stops it
         once it has sent every node STOP: the stamps of its worker.
         The chief's (node 0) and a member's (node 1)
         RSS, fds and CPU once every worker runs, after the idle time, and
         at their exit.
restart  the same with --max-restarts 1 --restart-delay 0 and no idle time:
         from the failure's stamp to the last start of attempt 1 (every
         node's next attempt running); every node exits 0.

The floor (unless --no-floor), in turns with slotrun: the fail job with
bench/floor_node.c in slotrun's place, the same star, START and STOP as one
byte each, the same four processes per node (the node, two relays standing
for wrap_rank and its guard, the worker), and nothing else: no handshake,
seal, heartbeat, output or bookkeeping.  "floor, no relays": the worker
started by the node itself (two processes a node, no containment).  What
any launcher of that shape costs this machine: slotrun's figures over the
floor's say what is slotrun's own.

"slotrun, tree" (unless --tree 0, where N > F): the same jobs with the
plane as a relay tree of fan-out F (--tree, 64 by default;
docs/job-plane.md, "The tree"): each group of F nodes in a network
namespace of its own, given every node's address (sim_nodes.py); node F,
a relay, is measured beside the chief and node 1.  Needs root.

The chief's cost per node is its excess over a member (the same slot, the
same worker) divided by N-1: what one more node costs the chief, in memory,
fds, CPU to join, CPU per second of heartbeats (the idle time) and CPU of
the failure's fan-out to the end.  The chief runs under SCHED_FIFO where it
may (root) and the other nodes under SCHED_BATCH (sim_nodes.py says why);
the results say whether it did.  The machine's cores run all 4N processes
of the simulation (slotrun, wrap_rank, guard, worker per node): the join is
measured from the last start, when the forking is over.  The 1-minute load
average before each N is recorded: other tenants' load moves every figure
here.  --args-from N ARGS gives every slotrun ARGS from N nodes on (e.g.
1024 "--heartbeat-timeout 60"); the results say which."""
import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import sim_nodes  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--slotrun", default=os.path.join(HERE, "..", "build", "launcher", "slotrun"))
ap.add_argument("--before", help="a slotrun built from an earlier commit, run in turns with this one")
ap.add_argument("--before-label", default="before")
ap.add_argument("--nodes", default="16,64,256,1024")
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--args-from", nargs=2, action="append", default=[], metavar=("N", "ARGS"),
                help="more flags for every slotrun of jobs of N nodes or more")
ap.add_argument("--idle", type=float, default=3.0, help="seconds the fail job idles once joined")
ap.add_argument("--timeout", type=float, default=240, help="seconds each step of a job may take")
ap.add_argument("--json", help="also write the figures here")
ap.add_argument("--keep", help="keep each job's folder (node logs, events) under this folder")
ap.add_argument("--no-floor", action="store_true", help="without the floor (bench/floor_node.c)")
ap.add_argument("--tree", type=int, default=64, metavar="F",
                help="also slotrun as a relay tree of fan-out F where N > F (root: each group a network "
                     "namespace); 0: not")
args = ap.parse_args()
CONTENDERS = [("slotrun", os.path.abspath(args.slotrun))]
if args.before:
    CONTENDERS.append((args.before_label, os.path.abspath(args.before)))
# the floor's contenders: (name, relays per rank)
FLOORS = [] if args.no_floor else [("floor", 2), ("floor, no relays", 0)]


def extra_for(n):
    out = []
    for at, more in args.args_from:
        if n >= int(at):
            out += more.split()
    return out


def floor_command(floor, n, relays, worker):
    """Node i's argv for the floor."""
    def argv(i, port, log):
        return ([floor, "hub", str(port), str(n)] if i == 0 else [floor, "node", str(port), str(i)]) + \
            [str(relays), worker, log]
    return argv


def one_job(slotrun, n, worker, tmp, restart, command=None, fanout=0):
    """One job of n nodes: its figures; raises AssertionError with the
    nodes' story when it does not go as it should.  command: the floor's
    argv for each node instead of slotrun's (the fail job only).  fanout: a
    relay tree."""
    extra = extra_for(n) + ["--grace", "5"] + (["--max-restarts", "1", "--restart-delay", "0"] if restart else [])
    job = sim_nodes.Job(slotrun, worker, n, extra, folder=args.keep or tmp, keep=bool(args.keep), command=command,
                        fanout=fanout)
    chief = member = None
    relay = None
    try:
        job.start()
        chief, member = job.pids[0], job.pids[1]
        relay = job.pids[fanout] if fanout else None
        starts = job.wait_events("start", 0, n, args.timeout, "every worker's start")
        res = {"chief_fifo": job.chief_rt, "join_s": (max(e[3] for e in starts) - job.t_last) / 1e9,
               # the chief starts its own worker once it sent every START
               "join_chief_s": ([e[3] for e in starts if e[1] == 0][0] - job.t_last) / 1e9,
               "chief": {"joined": job.proc(chief)}, "member": {"joined": job.proc(member)}}
        if relay:
            res["relay"] = {"joined": job.proc(relay)}
        if not restart and args.idle > 0:
            time.sleep(args.idle)  # the window heartbeats alone are measured over
            res["chief"]["idle"], res["member"]["idle"] = job.proc(chief), job.proc(member)
            if relay:
                res["relay"]["idle"] = job.proc(relay)
        job.fail((3 * n) // 4)
        if restart:
            job.wait_events("start", 1, n, args.timeout, "every worker's next attempt")
        assert job.wait_exit(args.timeout), f"not every slotrun exited: {job.story()}"
        want = 0 if restart else 4
        assert all(c == want for c in job.codes()), f"wanted every status {want}: {job.story()}"
        t_fail = job.of("fail")[0][3]
        if restart:
            res["restart_s"] = (max(e[3] for e in job.of("start", 1)) - t_fail) / 1e9
        else:
            terms = job.of("term", 0)
            assert len(terms) == n - 1, f"{len(terms)} of {n - 1} workers were stopped"
            res["reach_s"] = (max(e[3] for e in terms) - t_fail) / 1e9
            # ... and stops it once it sent every STOP
            res["reach_chief_s"] = ([e[3] for e in terms if e[1] == 0][0] - t_fail) / 1e9
            res["exit_s"] = (max(job.exits[p][0] for p in job.pids) - t_fail) / 1e9
        res["chief"]["exit_cpu_s"] = job.exits[chief][2]
        res["member"]["exit_cpu_s"] = job.exits[member][2]
        if relay:
            res["relay"]["exit_cpu_s"] = job.exits[relay][2]
        return res
    finally:
        job.close()


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def per_node(runs, n, f):
    """The chief's excess over a member in f(side), per other node."""
    vals = []
    for r in runs:
        try:
            vals.append((f(r["chief"]) - f(r["member"])) / (n - 1))
        except (KeyError, TypeError):
            pass
    return med(vals)


def summarize(n, fails, restarts, errors, load):
    both = fails + restarts
    idle = args.idle
    return {
        "load": load, "args": " ".join(extra_for(n)), "ok": {"fail": len(fails), "restart": len(restarts)},
        "chief_fifo": all(x["chief_fifo"] for x in both) if both else None,
        "errors": errors,
        "join_s": med([x["join_s"] for x in both]), "join_max_s": max((x["join_s"] for x in both), default=None),
        "reach_s": med([x["reach_s"] for x in fails]), "exit_s": med([x["exit_s"] for x in fails]),
        "join_chief_s": med([x["join_chief_s"] for x in both]),
        "reach_chief_s": med([x["reach_chief_s"] for x in fails]),
        "restart_s": med([x["restart_s"] for x in restarts]),
        "chief_rss_kib": med([x["chief"]["joined"].get("rss_kib") for x in both]),
        "member_rss_kib": med([x["member"]["joined"].get("rss_kib") for x in both]),
        "chief_fds": med([x["chief"]["joined"].get("fds") for x in both]),
        "chief_join_cpu_s": med([x["chief"]["joined"].get("cpu_s") for x in both]),
        "member_join_cpu_s": med([x["member"]["joined"].get("cpu_s") for x in both]),
        "relay": {
            "rss_kib": med([x["relay"]["joined"].get("rss_kib") for x in both if "relay" in x]),
            "fds": med([x["relay"]["joined"].get("fds") for x in both if "relay" in x]),
            "join_cpu_s": med([x["relay"]["joined"].get("cpu_s") for x in both if "relay" in x]),
            "heartbeat_cpu_s_per_s": med([(x["relay"]["idle"]["cpu_s"] - x["relay"]["joined"]["cpu_s"]) / idle
                                          for x in fails if "relay" in x and "idle" in x["relay"]]) if idle > 0 else None,
        } if any("relay" in x for x in both) else None,
        "chief_heartbeat_cpu_s_per_s": med([(x["chief"]["idle"]["cpu_s"] - x["chief"]["joined"]["cpu_s"]) / idle
                                            for x in fails if "idle" in x["chief"]]) if idle > 0 else None,
        "per_node": {
            "rss_kib": per_node(both, n, lambda s: s["joined"]["rss_kib"]),
            "fds": per_node(both, n, lambda s: s["joined"]["fds"]),
            "join_cpu_ms": per_node(both, n, lambda s: 1000 * s["joined"]["cpu_s"]),
            "heartbeat_cpu_us_per_s": per_node(fails, n, lambda s: 1e6 * (s["idle"]["cpu_s"] - s["joined"]["cpu_s"])
                                               / idle) if idle > 0 else None,
            "end_cpu_ms": per_node(fails, n, lambda s: 1000 * (s["exit_cpu_s"] - s["idle"]["cpu_s"]))
            if idle > 0 else None,
        }}


def fmt(v, unit="s", d=2):
    return "-" if v is None else f"{v:.{d}f} {unit}".rstrip()


def main():
    tmp = tempfile.mkdtemp(prefix="slotrun-scale-")
    worker = sim_nodes.build_worker(tmp)
    if not worker:
        sys.exit("scale: no C compiler for tests/e2e/scale_worker.c")
    contenders = [(name, path, None, 0) for name, path in CONTENDERS]
    if args.tree:
        contenders.append(("slotrun, tree", CONTENDERS[0][1], None, args.tree))
    if FLOORS:
        floor = sim_nodes.build_worker(tmp, src=os.path.join(HERE, "floor_node.c"))
        if not floor:
            sys.exit("scale: bench/floor_node.c does not compile (--no-floor runs without it)")
        contenders += [(name, floor, relays, 0) for name, relays in FLOORS]
    sizes = [int(x) for x in args.nodes.split(",")]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = sim_nodes.fds_needed(max(sizes))
    if hard != resource.RLIM_INFINITY and hard < need:
        sys.exit(f"scale: {max(sizes)} nodes need about {need} open files, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    doc = {"runs": args.runs, "idle_s": args.idle, "nodes": {}}
    if args.before:
        doc["before"] = args.before_label
    print(f"# job plane at scale: N slotruns of 1 slot on loopback, {args.runs} runs each (medians)")
    print("| N | contender | join (chief's part) | reach (chief's part) | exit | restart | chief RSS | per node | "
          "fds per node | join CPU per node | heartbeats per node | load |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        load = os.getloadavg()[0]
        here = [c for c in contenders if not c[3] or n > c[3]]
        got = {name: ([], [], []) for name, _, _, _ in here}
        for _ in range(args.runs):
            for restart in (False, True):
                for name, path, relays, fanout in here:
                    if relays is not None and restart:
                        continue  # the floor does not restart
                    fails, restarts, errors = got[name]
                    cmd = floor_command(path, n, relays, worker) if relays is not None else None
                    try:
                        (restarts if restart else fails).append(one_job(path, n, worker, tmp, restart, cmd,
                                                                        fanout))
                    except AssertionError as e:
                        errors.append(f"{'restart' if restart else 'fail'}: {e}"[:2000])
                        print(f"scale: {name} N={n}: {errors[-1][:600]}", file=sys.stderr)
        doc["nodes"][str(n)] = {}
        for name, _, relays, fanout in here:
            r = doc["nodes"][str(n)][name] = summarize(n, *got[name], load)
            if relays is not None:
                r["args"], r["floor_relays"] = "", relays
            if fanout:
                r["fanout"] = fanout
            pn = r["per_node"]
            print(f"| {n} | {name} | {fmt(r['join_s'])} ({fmt(r['join_chief_s'])}) | "
                  f"{fmt(r['reach_s'])} ({fmt(r['reach_chief_s'])}) | {fmt(r['exit_s'])} | "
                  f"{fmt(r['restart_s'])} | {fmt(r['chief_rss_kib'] and r['chief_rss_kib'] / 1024, 'MiB', 1)} | "
                  f"{fmt(pn['rss_kib'], 'KiB', 1)} | {fmt(pn['fds'], '', 2)} | {fmt(pn['join_cpu_ms'], 'ms', 2)} | "
                  f"{fmt(pn['heartbeat_cpu_us_per_s'], 'us/s', 1)} | {load:.1f} |"
                  + (f" {len(r['errors'])} failed" if r["errors"] else "") + (f" ({r['args']})" if r["args"] else ""),
                  flush=True)
        if args.json:  # after every N: a long sweep keeps what it measured
            with open(args.json, "w") as fh:
                json.dump(doc, fh, indent=1)


main()
