#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/README.md's sections, one function per benchmark: each takes its
part of bench/results.json and returns the section's lines (a heading, what
was measured and how, the table with every figure beside its baseline)."""
import re

from report_notes import GPU_NOTES

NOT_RECORDED = "not recorded"


def human(size):
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << k and size % (1 << k) == 0:
            return f"{size >> k} {unit}"
    return f"{size} B"


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
           "`slotrun --slots 4 -- nccl_worker --backend cpu -n 200`, time per all-reduce, its 4 ranks spinning "
           "on the machine's cores; beside it, a bare process (`slotrun --version`) started at every whole "
           "second instead of the poller: what any process every second costs such a job.  Ratio: with over "
           "without (1.00: no change), and with the poller over with a bare process (the status request's own "
           "part).", "",
           "| figure | without | with the poller | with a bare process | with / without | with / bare |",
           "|---|---:|---:|---:|---:|---:|"]
    for key, what in (("launch_ms", "launch"), ("teardown_ms", "teardown")):
        v = S.get(key)
        if v:
            out.append(f"| {what} ({v.get('answered', '?')} of {v.get('polls', '?')} polls answered by a job) | "
                       f"{v['without']:.1f} ms | {v['with']:.1f} ms | - | {v['with'] / v['without']:.2f} | - |")
    A = S.get("allreduce_us", {})
    for size in sorted(A.get("without", {}), key=int):
        a, b, c = A["without"][size], A["with"].get(size), A.get("bare", {}).get(size)
        if b:
            out.append(f"| all-reduce {human(int(size))} | {fmt_time(a)} | {fmt_time(b)} | "
                       f"{fmt_time(c) if c else '-'} | {b / a:.2f} | {f'{b / c:.2f}' if c else '-'} |")
    c = A.get("slotrun_cpu_ms")
    if c:
        out.append(f"| slotrun's own CPU over an all-reduce run | {c['without']:.0f} ms | {c['with']:.0f} ms | - | "
                   + (f"{c['with'] / c['without']:.2f} | - |" if c["without"] else "- | - |"))
    if A.get("polls"):
        out += ["", f"{A.get('answered', '?')} of the {A['polls']} polls during the all-reduce runs were answered "
                "by the job; launch and teardown last well under a second, so few polls land in them."]
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
