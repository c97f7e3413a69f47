# SPDX-License-Identifier: MIT
"""Seeing inside a job of three network-namespace nodes: `slotrun status`
on any node shows every rank of every node (the chief gathers each node's
rows over the job plane and marks the lags over the whole job), --stacks
takes every rank's stacks on every node without stopping the job (Python
frames for a CPython rank, native ones for nccl_worker), and --timeline
on the chief holds every node's events.  Each node has a runtime folder of
its own, as separate machines would."""
import json
import os
import re
import signal

from harness import Skip, binary, case, run, run_cmd, wait_for
from jobs import SR, SYSTEM_PY, Job, clean_env, job_on, need_torch

HERE = os.path.dirname(os.path.abspath(__file__))
STUCK = os.path.join(HERE, "torch_stuck.py")
NW = binary("nccl_worker")
SECRET = "live-nodes-e2e-secret"
FAST = ["--join-timeout", "30", "--heartbeat-timeout", "2", "--grace", "1"]


class LiveJob(Job):
    def start(self, i, cmd, extra=(), env=None):
        xdg = self.xdg(i)
        os.makedirs(xdg, mode=0o700, exist_ok=True)
        e = clean_env({"SLOTRUN_JOB_SECRET": SECRET, "XDG_RUNTIME_DIR": xdg, **(env or {})})
        args = ["--nnodes", str(self.cl.n), "--node-rank", str(i), "--addrs", ",".join(self.cl.addrs),
                "--slots", "2", *FAST, *extra, "--", *cmd]
        return self.spawn(i, args, e)

    def xdg(self, i):
        return os.path.join(self.dir, f"xdg.{i}")

    def status(self, i, *args, timeout=40):
        """`slotrun status --json ARGS` on node i, as its user would run it."""
        code, out, err = run_cmd(self.cl.prefix(i) + [SR, "status", "--json", *args],
                                 environ=clean_env({"XDG_RUNTIME_DIR": self.xdg(i)}), timeout=timeout)
        assert code == 0, (code, out, err)
        return json.loads(out)


def live(n=3, tag="lv"):
    return job_on(n, tag, LiveJob)


def every_stack(job):
    """`slotrun status --stacks` on node 1, by rank, asked again while a
    thread is said not to have stopped: the machine's load (three tests at
    a time in CI) can keep a thread off the CPU for the 0.2 s it is given,
    and slotrun then says so, as documented."""
    def got():
        s = {x["rank"]: x for x in job.status(1, "--stacks", timeout=60)["stacks"]}
        return None if any("did not stop within" in x.get("text", "") for x in s.values()) else s
    return wait_for(got, 120, "every rank's stacks, each thread stopped")


@case
def status_on_a_member_names_the_one_stuck_rank_of_three_nodes():
    """Rank 4 (node 2) of a PyTorch gloo job is stuck in stuck_here() while
    the others go on: status on node 1 lists the six ranks and marks rank
    4, and no other; --stacks shows stuck_here with its file and line for
    rank 4; the job runs on and finishes once rank 4 is released."""
    need_torch()
    with live() as job:
        release = os.path.join(job.dir, "release")
        env = {"STUCK_RANK": "4", "STUCK_RELEASE": release}
        for i in range(3):
            job.start(i, [SYSTEM_PY, STUCK], env=env)
        job.wait(lambda: b"[rank=4] entering stuck_here" in job.out(2), 90, "rank 4 to get stuck")

        def marked():
            d = job.status(1)
            return d if any(r["lag"] for r in d["rows"]) else None
        doc = wait_for(marked, 40, "a lagging rank in the status of node 1")
        rows = doc["rows"]
        assert [(r["rank"], r["node"]) for r in rows] == [(r, r // 2) for r in range(6)], rows
        assert [r["rank"] for r in rows if r["lag"]] == [4], rows
        assert "while ranks 0-3,5 progress" in rows[4]["why"], rows[4]
        assert all(r["up"] and r["rss_bytes"] > 0 for r in rows), rows
        assert rows[5]["host"] == "10.213.0.3" and rows[0]["host"] == "10.213.0.1", rows

        stacks = every_stack(job)
        assert sorted(stacks) == list(range(6)), stacks
        text = stacks[4].get("text", "")
        assert re.search(r"stuck_here \(\S*torch_stuck\.py:\d+\)", text), text
        assert re.search(r"<module> \(\S*torch_stuck\.py:\d+\)", text), text
        for r in (0, 5):
            assert "text" in stacks[r] and "main (" in stacks[r]["text"], stacks[r]
        assert all(job.running(i) for i in range(3)), job.describe()

        open(release, "w").close()
        job.expect_exit([0, 0, 0], timeout=90)
        for r in range(6):
            assert b"[rank=%d] done" % r in job.out(r // 2), job.describe()
        job.assert_nothing_left()


@case
def stacks_of_nccl_worker_ranks_on_every_node():
    """nccl_worker ranks on two nodes: --stacks asked on node 1 gives the
    native frames of node 0's rank too, by function name."""
    with live(n=2, tag="lw") as job:
        for i in range(2):
            job.start(i, [NW, "-b", "1M", "-e", "1M", "-n", "200000", "-w", "1"])
        job.wait(lambda: b"size" in job.out(0), 60, "the table's header")
        stacks = every_stack(job)
        assert sorted(stacks) == [0, 1, 2, 3], stacks
        for r, s in stacks.items():
            assert "text" in s and re.search(r"\bmain\+0x[0-9a-f]+ \(nccl_worker\)", s["text"]), s
        assert all(job.running(i) for i in range(2)), job.describe()
        job.procs[0].signal(signal.SIGTERM)
        job.expect_exit([143, 143], timeout=30)
        job.assert_nothing_left()


@case
def the_chief_s_timeline_holds_every_node():
    """A failing job of three nodes, each given --timeline: the chief's file
    has one span per rank of every node and the failure marked; the other
    nodes write none (they ship their events to the chief)."""
    with live() as job:
        path = os.path.join(job.dir, "timeline.json")
        for i in range(3):
            job.start(i, ["sh", "-c", '[ "$RANK" = 5 ] && { sleep 1; exit 4; }; exec sleep 60'],
                      extra=["--timeline", path + f".{i}"])
        job.expect_exit([4, 4, 4], timeout=60)
        assert not os.path.exists(path + ".1") and not os.path.exists(path + ".2"), os.listdir(job.dir)
        with open(path + ".0") as f:
            events = json.load(f)["traceEvents"]
        procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
        assert set(procs.values()) >= {"node 0 (10.213.0.1)", "node 1 (10.213.0.2)", "node 2 (10.213.0.3)"}, procs
        spans = [e for e in events if e["ph"] == "X" and e.get("cat") == "rank"]
        assert sorted((e["pid"], e["tid"]) for e in spans) == [(k // 2 + 1, k + 1) for k in range(6)], spans
        fails = [e for e in events if e.get("cat") == "failure"]
        assert len(fails) == 1 and (fails[0]["pid"], fails[0]["tid"]) == (3, 6), fails
        job.assert_nothing_left()


run()
