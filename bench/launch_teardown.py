#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""slotrun's launch time, teardown time and peak memory, against baselines
run in the same invocation.

Usage: bench/launch_teardown.py [--slotrun PATH] [--before PATH [--before-label TEXT]]
                                [--runs N] [--big-slots N] [--json FILE]

launch    `slotrun --slots 8 -- /bin/true`, start to exit; against the floor,
          8 plain fork+exec of /bin/true (`sh -c` starting them in the
          background and waiting: one launcher process, then one fork and
          one exec a rank), and `mpirun -np 8 /bin/true` when Open MPI is
          installed.  The contenders take turns, run after run; medians of
          the wall time and of the CPU time the whole process tree used
          (user + system, from the launcher's rusage of its children).
          --before: the same slotrun built from an earlier commit, in the
          same turns.  Then the same with --big-slots ranks (512: a node of
          many CPU slots), slotrun against the floor of as many fork+execs.
teardown  rank 0 exits 1 after 200 ms while 7 others `sleep 60`: time from
          rank 0's exit (its own clock reading, printed last) to the
          launcher's exit; baseline mpirun when installed.
memory    the launcher's peak RSS (VmHWM) with 8 workers running."""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--slotrun", default=os.path.join(os.path.dirname(__file__), "..", "build", "launcher", "slotrun"))
ap.add_argument("--before", help="a slotrun built from an earlier commit, launched in the same turns")
ap.add_argument("--before-label", default="before", help="what --before is (e.g. its commit)")
ap.add_argument("--runs", type=int, default=30)
ap.add_argument("--big-slots", type=int, default=512, help="the slot count of the large launch (0: none)")
ap.add_argument("--json", help="also write the figures here")
args = ap.parse_args()
doc = {"runs": args.runs, "launch": {}, "teardown_ms": {}, "peak_mib": {}}
if args.before:
    doc["before"] = args.before_label
SR = os.path.abspath(args.slotrun)
BEFORE = os.path.abspath(args.before) if args.before else None
MPI = shutil.which("mpirun")
MPI_FLAGS = ["--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "8"]
env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "DET_", "SLOTRUN_"))}
env.update({"OMPI_MCA_btl_vader_single_copy_mechanism": "none", "PRTE_MCA_prte_silence_shared_fs": "1"})


def teardown(cmd, runs):
    """ms from rank 0's last clock reading to the launcher's exit."""
    out = []
    for _ in range(runs):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        data = p.communicate(timeout=120)[0]
        t_exit = time.time_ns()
        stamps = [int(l.split()[-1]) for l in data.decode().splitlines() if "EXITING" in l]
        if stamps:
            out.append((t_exit - stamps[0]) / 1e6)
    return statistics.median(out), max(out)


# rank 0: sleep 200 ms, print the wall clock in ns, exit 1; the rest sleep 60.
WORKER = ('if [ "${RANK:-${OMPI_COMM_WORLD_RANK}}" = 0 ]; then sleep 0.2; echo EXITING $(date +%s%N); exit 1; '
          'fi; exec sleep 60')


def floor_cmd(n):
    """n plain fork+execs of /bin/true from one small launcher process."""
    return ["sh", "-c", f'i=0; while [ $i -lt {n} ]; do /bin/true & i=$((i+1)); done; wait']


def one_run(cmd):
    """Wall seconds and CPU seconds (user + system of the whole tree: every
    process is reaped by its parent, and the launcher by us) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return code, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def launch(n, runs, rows):
    """rows: (name, argv, every): every contender runs in turn, the ones
    with every k only on every k-th turn, in the other order every other
    turn (neither side always follows the same one).  Medians and minima in
    ms, and the ratios to the floor (the row named 'floor')."""
    wall = {name: [] for name, _, _ in rows}
    cpu = {name: [] for name, _, _ in rows}
    failed = set()
    for turn in range(runs):
        for name, cmd, every in (rows if turn % 2 == 0 else rows[::-1]):
            if turn % every:
                continue
            code, w, c = one_run(cmd)
            if code != 0:
                failed.add(name)
            wall[name].append(w * 1e3)
            cpu[name].append(c * 1e3)
    out = {"slots": n, "runs": runs, "wall_ms": {}, "wall_min_ms": {}, "cpu_ms": {}, "samples": {},
           "failed": sorted(failed)}
    for name, _, _ in rows:
        out["samples"][name] = len(wall[name])
        out["wall_ms"][name] = statistics.median(wall[name])
        out["wall_min_ms"][name] = min(wall[name])
        out["cpu_ms"][name] = statistics.median(cpu[name])
    fw, fc = out["wall_ms"]["floor"], out["cpu_ms"]["floor"]
    print(f"# launch: {n} x /bin/true, start to exit, median (min) of {runs} turns, ms; "
          "CPU: user + system of the whole tree")
    for name, _, _ in rows:
        w, c = out["wall_ms"][name], out["cpu_ms"][name]
        print(f"{name:<34} wall {w:9.2f} ({out['wall_min_ms'][name]:.2f})  x floor {w / fw:5.2f}   "
              f"cpu {c:9.2f}  x floor {c / fc:5.2f}{'  (FAILED)' if name in failed else ''}")
    return out


def limits():
    """What the large launch needs of the machine, beside what it has."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    return {"nofile_soft": soft, "nofile_hard": hard, "nproc_soft": nproc[0], "pid_max": pid_max}


def slotrun_rows(n):
    rows = [(f"slotrun --slots {n}", [SR, "--slots", str(n), "--", "/bin/true"], 1)]
    if BEFORE:
        rows.append((f"slotrun --slots {n} (before)", [BEFORE, "--slots", str(n), "--", "/bin/true"], 1))
    rows.append(("floor", floor_cmd(n), 1))
    return rows


doc["load_before"] = os.getloadavg()[0]
rows = slotrun_rows(8)
if MPI:
    rows.append(("mpirun -np 8", [MPI, *MPI_FLAGS, "/bin/true"], 3))
doc["launch"]["8"] = launch(8, args.runs, rows)
if args.big_slots:
    n = args.big_slots
    big = launch(n, max(3, args.runs // 6), slotrun_rows(n))
    # each rank: wrap_rank, its guard and the command; slotrun's open-file
    # budget (launcher/main.c): 3 fds a rank (5 with --log-dir) and 24
    big["needs"] = {"processes": 3 * n + 1, "nofile": 3 * n + 24, "nofile_log_dir": 5 * n + 24}
    big["has"] = limits()
    print(f"# {n} slots need {3 * n + 1} processes at once and {3 * n + 24} open files in slotrun "
          f"({5 * n + 24} with --log-dir); this machine: {big['has']}")
    doc["launch"][str(n)] = big
doc["load_after"] = os.getloadavg()[0]
print(f"# 1-minute load average {doc['load_before']:.2f} before the launches, {doc['load_after']:.2f} after")

runs = max(5, args.runs // 3)
print(f"# teardown: rank 0 exits 1 after 200 ms, 7 others sleep 60; rank 0's exit to launcher's exit, "
      f"median (max) of {runs} runs, ms")
rows = [("slotrun --slots 8", [SR, "--slots", "8", "--", "sh", "-c", WORKER])]
if BEFORE:
    rows.append(("slotrun --slots 8 (before)", [BEFORE, "--slots", "8", "--", "sh", "-c", WORKER]))
if MPI:
    rows.append(("mpirun -np 8", [MPI, *MPI_FLAGS, "sh", "-c", WORKER]))
for name, cmd in rows:
    med, mx = teardown(cmd, runs)
    doc["teardown_ms"][name] = med
    print(f"{name:<28} {med:8.2f} ({mx:.2f})")

print("# peak memory of the launcher (VmHWM) with 8 workers running, MiB")
d = tempfile.mkdtemp()
try:
    gate = os.path.join(d, "go")
    wait = f'while [ ! -e {gate} ]; do sleep 0.01; done'
    rows = [("slotrun --slots 8", [SR, "--slots", "8", "--", "sh", "-c", wait])]
    if BEFORE:
        rows.append(("slotrun --slots 8 (before)", [BEFORE, "--slots", "8", "--", "sh", "-c", wait]))
    if MPI:
        rows.append(("mpirun -np 8", [MPI, *MPI_FLAGS, "sh", "-c", wait]))
    for name, cmd in rows:
        if os.path.exists(gate):
            os.unlink(gate)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        # wait until 8 sleeping workers exist below it, then read its peak
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            n = subprocess.run(["pgrep", "-c", "-f", "while \\[ ! -e"], capture_output=True, text=True).stdout.strip()
            if n and int(n) >= 8:
                break
            time.sleep(0.01)
        with open(f"/proc/{p.pid}/status") as f:
            hwm = [l for l in f if l.startswith("VmHWM")][0].split()[1]
        open(gate, "w").close()
        p.wait(30)
        doc["peak_mib"][name] = int(hwm) / 1024
        print(f"{name:<28} {int(hwm) / 1024:8.1f}")
finally:
    shutil.rmtree(d)
if args.json:
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)
