# SPDX-License-Identifier: MIT
"""--timeline as a user meets it: a failing 4-slot job's trace parses as
Chrome/Perfetto trace-event JSON with one span per rank, the root cause
marked (on its span and as an instant) and the stall the sampler saw; a
job that restarts has a span per rank per attempt and the restart; a path
slotrun cannot write is refused before anything starts."""

import json
import os
import shutil
import tempfile

from harness import Proc, binary, case, cleanup_at_exit, fifo_release, job_env, run, run_cmd, wait_for

SR = binary("slotrun")
TMP = tempfile.mkdtemp(prefix="test_timeline.")
BUSY = 'while :; do echo "tick $RANK"; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; done'


def trace(path):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    return doc, [e for e in events if e["ph"] != "M"], names, procs


@case
def a_failed_job_has_a_span_per_rank_its_root_cause_and_the_stall():
    xdg = tempfile.mkdtemp(dir=TMP)
    fifo = os.path.join(TMP, "fail.fifo")
    path = os.path.join(TMP, "fail.json")
    os.mkfifo(fifo)
    env = job_env({"XDG_RUNTIME_DIR": xdg})
    p = Proc([SR, "--slots", "4", "--grace", "1", "--timeline", path, "--", "sh", "-c",
              f'if [ "$RANK" = 2 ]; then read x < {fifo}; exit 3; fi; {BUSY}'], environ=env)

    def stalled():
        code, out, _ = run_cmd([SR, "status", "--json"], environ=env)
        return code == 0 and json.loads(out)["rows"][2]["lag"]
    wait_for(stalled, 40, "rank 2 to stall")
    assert fifo_release(fifo)()
    assert p.finish(30) == 3, p.err[-2000:]

    doc, events, threads, procs = trace(path)
    assert doc["otherData"]["origin_us"] > 1.6e15, doc["otherData"]
    assert procs == {1: "node 0 (127.0.0.1)"}, procs
    assert {threads[(1, r + 1)] for r in range(4)} == {"rank 0", "rank 1", "rank 2", "rank 3"}, threads
    spans = [e for e in events if e["ph"] == "X" and e["cat"] == "rank"]
    assert sorted(e["tid"] for e in spans) == [1, 2, 3, 4], "one span per rank"
    for e in spans:
        assert e["pid"] == 1 and e["dur"] > 0 and e["ts"] >= 0, e
        a = e["args"]
        if e["tid"] == 3:
            assert a["exit_code"] == 3 and a["root_cause"] is True and "signal" not in a, e
        else:
            assert a["exit_code"] == 143 and a["signal"] == 15 and a["signal_name"] == "TERM", e
            assert a["root_cause"] is False, e
    fails = [e for e in events if e["cat"] == "failure"]
    assert len(fails) == 1 and fails[0]["tid"] == 3 and fails[0]["ph"] == "i", fails
    assert fails[0]["name"] == "failure (root cause)" and fails[0]["args"]["exit_code"] == 3, fails
    stalls = [e for e in events if e["cat"] == "stall"]
    assert len(stalls) == 1 and stalls[0]["tid"] == 3 and stalls[0]["ph"] == "X", stalls
    assert "while ranks 0-1,3 progress" in stalls[0]["args"]["why"], stalls
    stops = [e for e in events if e["cat"] == "stop"]
    assert len(stops) == 1 and stops[0]["args"]["note"] == "rank 2 failed", stops
    end = [e for e in events if e["cat"] == "job_end"]
    assert len(end) == 1 and end[0]["args"]["code"] == 3, end
    assert [e["cat"] for e in events if e["tid"] == 0][:2] == ["node_join", "job_start"], events


@case
def a_restarted_job_has_a_span_per_rank_per_attempt():
    path = os.path.join(TMP, "restart.json")
    p = Proc([SR, "--slots", "4", "--grace", "1", "--max-restarts", "1", "--restart-delay", "0",
              "--timeline", path, "--", "sh", "-c",
              'if [ "$SLOTRUN_RESTART_COUNT" = 0 ]; then [ "$RANK" = 1 ] && exit 1; exec sleep 60; fi; exit 0'],
             environ=job_env({"XDG_RUNTIME_DIR": tempfile.mkdtemp(dir=TMP)}))
    assert p.finish(60) == 0, p.err[-2000:]
    _, events, _, _ = trace(path)
    spans = [e for e in events if e["ph"] == "X" and e["cat"] == "rank"]
    assert len(spans) == 8, spans
    first = [e for e in spans if e["args"]["attempt"] == 0]
    second = [e for e in spans if e["args"]["attempt"] == 1]
    assert sorted(e["tid"] for e in first) == sorted(e["tid"] for e in second) == [1, 2, 3, 4], spans
    assert [e["tid"] for e in first if e["args"]["root_cause"]] == [2], first
    assert all(e["args"]["exit_code"] == 0 and not e["args"]["root_cause"] for e in second), second
    assert all(e["name"].endswith("attempt 2") for e in second), second
    restarts = [e for e in events if e["cat"] == "restart"]
    assert len(restarts) == 1 and restarts[0]["name"] == "restart: attempt 2", restarts
    assert "rank 1" in restarts[0]["args"]["note"], restarts
    assert max(e["ts"] for e in first) < restarts[0]["ts"] < min(e["ts"] for e in second), events


@case
def a_path_that_cannot_be_written_is_refused_before_the_start():
    code, out, err = run_cmd([SR, "--slots", "1", "--timeline", TMP, "--", "echo", "started"], environ=job_env())
    assert code == 2 and out == b"", (code, out)
    assert err.startswith(f"slotrun: --timeline {TMP}: is a folder: give a file's path".encode()), err
    code, out, err = run_cmd([SR, "--slots", "1", "--metrics-file", f"{TMP}/none/m.prom", "--", "true"],
                             environ=job_env())
    assert code == 2 and b"--metrics-file" in err and b"does not exist" in err, err


if __name__ == "__main__":
    cleanup_at_exit(lambda: shutil.rmtree(TMP, ignore_errors=True))
    run()
