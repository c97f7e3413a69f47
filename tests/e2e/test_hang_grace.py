# SPDX-License-Identifier: MIT
"""--hang-timeout and --grace as a user meets them: progress without
newlines is progress, a hung rank's root cause carries the time slotrun
decided and says slotrun killed it, and a finished job that waits out the
grace for a leftover process says what it waits for."""

import json
import os
import re
import signal
import tempfile

from harness import Proc, binary, case, free_ports, job_env, run

SR = binary("slotrun")
TMP = tempfile.mkdtemp(prefix="test_hang_grace.")


@case
def dots_without_newlines_are_progress():
    # a dot every 0.1 s for twice the limit, then the line's end
    p = Proc([SR, "--slots", "1", "--grace", "1", "--hang-timeout", "1", "--", "sh", "-c",
              "i=0; while [ $i -lt 20 ]; do printf .; sleep 0.1; i=$((i+1)); done; echo"],
             environ=job_env())
    code = p.finish(30)
    assert code == 0, p.err[-2000:]
    assert b"[rank=0] " + b"." * 20 + b"\n" in p.out, p.out
    assert b"--hang-timeout" not in p.err, p.err


@case
def a_silent_rank_is_still_hung():
    ef = f"{TMP}/silent.json"
    p = Proc([SR, "--slots", "2", "--grace", "1", "--hang-timeout", "1", "--error-file", ef,
              "--", "sh", "-c",
              'if [ "$RANK" = 0 ]; then exec sleep 60; fi; while :; do printf .; sleep 0.1; done'],
             environ=job_env())
    code = p.finish(30)
    assert code == 124, p.err[-2000:]
    assert b"job failed: rank 0 (node 0, local rank 0" in p.err, p.err[-2000:]
    # the JSON gives the hung rank's fate as the text does, not as "stopped"
    doc = json.load(open(ef))
    assert doc["root_cause"]["rank"] == 0 and doc["root_cause"]["fate"] == "hung", doc
    assert [r["fate"] for r in doc["ranks"]] == ["hung", "stopped"], doc


def decided_at(err):
    """The root cause's time of day and seconds after the start."""
    m = re.search(rb"exit 124 at (\d\d:\d\d:\d\d\.\d{3}), (\d+\.\d{3}) s after", err)
    assert m, err[-2000:]
    return m.group(1), float(m.group(2))


@case
def a_hung_rank_on_a_job_of_two_nodes_has_its_time_and_fate():
    mport, cport = free_ports(2)
    env = job_env({"SLOTRUN_JOB_SECRET": "hang-grace-e2e"})
    common = ["--nnodes", "2", "--addrs", "127.0.0.1,127.0.0.1", "--master-port", str(mport),
              "--control-port", str(cport), "--slots", "1", "--grace", "1", "--join-timeout", "20"]
    chief = Proc([SR, *common, "--node-rank", "0", "--hang-timeout", "1", "--", "sleep", "60"],
                 environ=env)
    member = Proc([SR, *common, "--node-rank", "1", "--", "sleep", "60"], environ=env)
    try:
        codes = [chief.finish(60), member.finish(60)]
    finally:
        chief.kill()
        member.kill()
    assert codes == [124, 124], (codes, chief.err[-2000:], member.err[-2000:])
    for err in (chief.err, member.err):
        when, after = decided_at(err)
        assert when != b"00:00:00.000" and after >= 1.0, err[-2000:]
    assert re.search(rb"rank 0 \(local rank 0, pid \d+\): exit 124, killed by slotrun for --hang-timeout",
                     chief.err), chief.err[-2000:]
    assert b"exited on its own" not in chief.err, chief.err[-2000:]


@case
def a_hung_rank_on_one_node_has_the_time_of_the_decision():
    p = Proc([SR, "--slots", "1", "--grace", "5", "--hang-timeout", "1", "--", "sh", "-c",
              "trap '' TERM; exec sleep 60"], environ=job_env())
    code = p.finish(60)
    assert code == 124, p.err[-2000:]
    _, after = decided_at(p.err)
    # the rank ignores SIGTERM and dies at the grace's end: the time is the decision's
    assert after < 5, p.err[-2000:]


@case
def a_finished_job_says_which_leftover_it_waits_for():
    pidf = f"{TMP}/leftover.pid"
    p = Proc([SR, "--slots", "2", "--grace", "30", "--", "sh", "-c",
              f'if [ "$RANK" = 1 ]; then setsid sh -c \'trap "" TERM; echo $$ > {pidf}; '
              "exec sleep 300' & fi; echo done"], environ=job_env())
    pid = None
    try:
        p.wait_line("they get SIGKILL in", stream="err", timeout=20)
        pid = int(open(pidf).read())
        line = [ln for ln in p.err.split(b"\n") if b"SIGKILL in" in ln][0]
        assert b"leftover process" in line and b"(--grace)" in line, line
        assert b"pid %d (sleep) of rank 1" % pid in line, line
        os.kill(pid, signal.SIGKILL)  # the wait ends with its leftover
        code = p.finish(30)
    finally:
        p.kill()
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert code == 0, p.err[-2000:]
    assert p.err.count(b"SIGKILL in") == 1, p.err


if __name__ == "__main__":
    run()
