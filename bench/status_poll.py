#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What `slotrun status` polled every second costs a job: launch, teardown
and an all-reduce, each measured without and with a poller in the same
invocation, the two sides taking turns run by run (medians).

Usage: bench/status_poll.py [--slotrun PATH] [--nccl-worker PATH] [--runs N] [--json FILE]

launch     `slotrun --slots 8 -- /bin/true`, start to exit.
teardown   rank 0 exits 1 after 200 ms while 7 others `sleep 60`: rank 0's
           exit (its own clock reading, printed last) to slotrun's exit.
allreduce  `slotrun --slots 4 -- nccl_worker --backend cpu -b 1M -e 16M -n 200`
           (a few seconds: several polls land in it); rank 0's time per
           all-reduce at each size, and slotrun's own CPU time over the run
           (utime + stime of slotrun alone, read from /proc until it exits):
           what serving the poller and sampling cost it.
The poller runs `slotrun status --json` at every whole second, in the
same private XDG_RUNTIME_DIR as the jobs, for the whole "with" run; each
poll keeps the job's sampler going (it samples every second for 10 s
after a request).  A third side, "a bare process", runs `slotrun
--version` at every whole second instead: what any process started every
second costs a job whose ranks fill the machine's cores, so that the
status request's own part shows (status over the bare process).  Between
runs the machine is given a moment (no run starts within 0.2 s of the
last)."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--slotrun", default=os.path.join(HERE, "..", "build", "launcher", "slotrun"))
ap.add_argument("--nccl-worker", default=os.path.join(HERE, "..", "build", "nccl_worker", "nccl_worker"))
ap.add_argument("--runs", type=int, default=20)
ap.add_argument("--json", help="also write the figures here")
args = ap.parse_args()
SR = os.path.abspath(args.slotrun)
NW = os.path.abspath(args.nccl_worker)
XDG = tempfile.mkdtemp(prefix="bench-status.")
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "DET_", "SLOTRUN_"))}
ENV.update({"SLOTRUN_DET_INFO_DIR": "/nonexistent", "XDG_RUNTIME_DIR": XDG})


STATUS = ["status", "--json"]
BARE = ["--version"]


class Poller:
    """`slotrun ARGS` at every whole second until stopped."""

    def __init__(self, argv):
        self.argv = argv
        self.stop = threading.Event()
        self.polls = self.answered = 0
        self.t = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.wait(1 - time.time() % 1):
            r = subprocess.run([SR, *self.argv], env=ENV, capture_output=True, timeout=10)
            self.polls += 1
            self.answered += r.returncode == 0

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()


def alternate(runs, measure, sides=("without", "with")):
    """measure() without and with a poller (and with a bare process every
    second where sides names "bare"), taking turns, each side first as often
    as last; returns the lists of figures and the polls made (and answered)
    during the "with" runs."""
    out = {s: [] for s in sides}
    polls = answered = 0
    for r in range(runs):
        order = sides if r % 2 == 0 else sides[::-1]
        for side in order:
            time.sleep(0.2)
            if side == "without":
                out[side].append(measure())
                continue
            with Poller(STATUS if side == "with" else BARE) as p:
                out[side].append(measure())
            if side == "with":
                polls += p.polls
                answered += p.answered
    return out, polls, answered


def launch():
    t0 = time.perf_counter()
    subprocess.run([SR, "--slots", "8", "--", "/bin/true"], env=ENV, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1e3


WORKER = 'if [ "$RANK" = 0 ]; then sleep 0.2; echo EXITING $(date +%s%N); exit 1; fi; exec sleep 60'


def teardown():
    p = subprocess.Popen([SR, "--slots", "8", "--", "sh", "-c", WORKER], env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    data = p.communicate(timeout=120)[0]
    t_exit = time.time_ns()
    stamp = [int(line.split()[-1]) for line in data.decode().splitlines() if "EXITING" in line][0]
    return (t_exit - stamp) / 1e6


def own_cpu(pid):
    """slotrun's own CPU seconds so far (not its children's), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError):
        return None


def allreduce():
    p = subprocess.Popen([SR, "--slots", "4", "--bind", "none", "--", NW, "--backend", "cpu", "-b", "1M", "-e",
                          "16M", "-n", "200", "-w", "5"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cpu = [0.0]

    def watch():  # the last reading before it exits
        while p.poll() is None:
            v = own_cpu(p.pid)
            cpu[0] = v if v is not None else cpu[0]
            time.sleep(0.05)
    t = threading.Thread(target=watch)
    t.start()
    out, err = p.communicate(timeout=600)
    t.join()
    times = {"cpu_ms": cpu[0] * 1e3}
    for line in out.decode().splitlines():
        f = line.split()
        # "[rank=0]   1048576   262144  float  sum  -1  123.4  ..."
        if len(f) >= 8 and f[0] == "[rank=0]" and f[1].isdigit():
            times[int(f[1])] = float(f[6])
    assert len(times) > 1, err.decode()[-2000:]
    return times


doc = {"runs": args.runs}
print(f"# each figure without and with `slotrun status` every second; median of {args.runs} runs each, "
      "taking turns")
for name, fn, runs, unit in (("launch_ms", launch, args.runs, "ms"), ("teardown_ms", teardown, args.runs, "ms")):
    res, polls, answered = alternate(runs, fn)
    a, b = statistics.median(res["without"]), statistics.median(res["with"])
    doc[name] = {"without": a, "with": b, "polls": polls, "answered": answered}
    print(f"{name[:-3]:<10} without {a:8.2f} {unit}   with {b:8.2f} {unit}   with / without {b / a:5.2f}   "
          f"({polls} polls, {answered} answered by a job)")

runs = max(3, args.runs // 4)
res, polls, answered = alternate(runs, allreduce, ("without", "with", "bare"))
doc["allreduce_us"] = {"runs": runs, "polls": polls, "answered": answered, "without": {}, "with": {}, "bare": {}}
for size in sorted(k for k in res["without"][0] if k != "cpu_ms"):
    a, b, c = (statistics.median(r[size] for r in res[s]) for s in ("without", "with", "bare"))
    doc["allreduce_us"]["without"][str(size)] = a
    doc["allreduce_us"]["with"][str(size)] = b
    doc["allreduce_us"]["bare"][str(size)] = c
    print(f"allreduce {size >> 20:>3} MiB  without {a:9.1f} us   with {b:9.1f} us   a bare process {c:9.1f} us   "
          f"with / without {b / a:5.2f}   with / bare {b / c:5.2f}")
a = statistics.median(r["cpu_ms"] for r in res["without"])
b = statistics.median(r["cpu_ms"] for r in res["with"])
doc["allreduce_us"]["slotrun_cpu_ms"] = {"without": a, "with": b}
print(f"slotrun's own CPU over an all-reduce run  without {a:6.0f} ms   with {b:6.0f} ms")
print(f"# all-reduce: median of {runs} runs each, {polls} polls ({answered} answered by a job)")
if args.json:
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)
