#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""slotrun's launch time, teardown time and peak memory, against baselines
run in the same invocation.

Usage: bench/launch_teardown.py [--slotrun PATH] [--runs N] [--json FILE]

launch    `slotrun --slots 8 -- /bin/true`, start to exit (median of N);
          baselines: a shell starting 8 /bin/true in parallel, and
          `mpirun -np 8 /bin/true` when Open MPI is installed.
teardown  rank 0 exits 1 after 200 ms while 7 others `sleep 60`: time from
          rank 0's exit (its own clock reading, printed last) to the
          launcher's exit; baseline mpirun when installed.
memory    the launcher's peak RSS (VmHWM) with 8 workers running."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--slotrun", default=os.path.join(os.path.dirname(__file__), "..", "build", "launcher", "slotrun"))
ap.add_argument("--runs", type=int, default=30)
ap.add_argument("--json", help="also write the figures here")
args = ap.parse_args()
doc = {"runs": args.runs, "launch_ms": {}, "teardown_ms": {}, "peak_mib": {}}
SR = os.path.abspath(args.slotrun)
MPI = shutil.which("mpirun")
MPI_FLAGS = ["--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "8"]
env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "DET_", "SLOTRUN_"))}
env.update({"OMPI_MCA_btl_vader_single_copy_mechanism": "none", "PRTE_MCA_prte_silence_shared_fs": "1"})


def timed(cmd, runs):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3, min(ts) * 1e3


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

print(f"# launch: 8 x /bin/true, start to exit, median (min) of {args.runs} runs, ms")
rows = [("slotrun --slots 8", [SR, "--slots", "8", "--", "/bin/true"]),
        ("sh: 8 x /bin/true &; wait", ["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do /bin/true & done; wait"])]
if MPI:
    rows.append(("mpirun -np 8", [MPI, *MPI_FLAGS, "/bin/true"]))
base = None
for name, cmd in rows:
    med, mn = timed(cmd, args.runs if "mpirun" not in name else max(5, args.runs // 3))
    base = base or med
    doc["launch_ms"][name] = med
    print(f"{name:<28} {med:8.2f} ({mn:.2f})  x slotrun {med / base:6.2f}")

runs = max(5, args.runs // 3)
print(f"# teardown: rank 0 exits 1 after 200 ms, 7 others sleep 60; rank 0's exit to launcher's exit, "
      f"median (max) of {runs} runs, ms")
rows = [("slotrun --slots 8", [SR, "--slots", "8", "--", "sh", "-c", WORKER])]
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
