# SPDX-License-Identifier: MIT
"""The workers' failure reports (SLOTRUN_ERROR_FILE): a rank that stops
taking part in the collectives is named as the root cause by the rank that
found it, in the summary's headline and in --error-file, on one node and
across two (on loopback, and as network-namespace nodes, netns.py); a
restart's history names it too; torch's @record form gives its message; a
report that is not one is ignored."""

import json
import os
import re
import signal
import tempfile
import uuid

from harness import Proc, binary, case, free_ports, job_env, pids_with_env, run, wait_for
from jobs import clean_env, job_on

SR = binary("slotrun")
NW = binary("nccl_worker")
TMP = tempfile.mkdtemp(prefix="test_blame.")
# all-reduces until the job is stopped, a few KiB each
ENDLESS = [NW, "--backend", "cpu", "-b", "4K", "-e", "4K", "-n", "1000000000", "-w", "0"]


def stop_rank(tag, rank):
    """SIGSTOP to this job's nccl_worker of `rank`, once it runs."""
    pid = wait_for(lambda: pids_with_env("nccl_worker", RANK=str(rank), BLAME_TAG=tag), 30,
                   f"rank {rank}'s nccl_worker")
    assert len(pid) == 1, pid
    os.kill(pid[0], signal.SIGSTOP)


# The comm library's one timeout (SLOTRUN_TIMEOUT) bounds both its start
# and the wait on a stuck peer: short, so a stuck rank is named soon, but
# not so short that a rank on a loaded machine (the ASan leg of CI) fails to
# reach rank 0 before rank 0 listens (2 s did: "cannot reach rank 0 ...
# within 2s").
COMM_TIMEOUT = "5"


def endless_job(argv_head, tag, out, tmpdir=None):
    """Starts slotrun (argv_head) on ENDLESS with a short SLOTRUN_TIMEOUT."""
    extra = {"TMPDIR": tmpdir} if tmpdir else {}
    return Proc([*argv_head, "--grace", "1", "--error-file", out, "--", *ENDLESS],
                environ=job_env({"SLOTRUN_TIMEOUT": COMM_TIMEOUT, "BLAME_TAG": tag,
                                 "SLOTRUN_JOB_SECRET": "blame-e2e", **extra}))


@case
def a_stuck_rank_is_the_root_cause_named_by_the_one_that_found_it():
    tag, ef, tmpdir = uuid.uuid4().hex, f"{TMP}/one.json", f"{TMP}/tmpdir"
    os.mkdir(tmpdir)
    # two ranks: a third, slow on a loaded machine, could be named beside it
    p = endless_job([SR, "--slots", "2"], tag, ef, tmpdir)
    try:
        p.wait_output(lambda s: b"# ranks 2" in s.out, 30, "the table's header")
        stop_rank(tag, 1)
        code = p.finish(60)
    finally:
        p.kill()
    err = p.err.decode(errors="replace")
    # the reporter's status stays the job's
    assert code == 1, err[-3000:]
    head = re.search(r"^slotrun: job failed: (.*)$", err, re.M)
    assert head, err[-3000:]
    assert re.match(r"rank 1 \(node 0, local rank 1\), named by rank 0: .*did not answer",
                    head.group(1)), head.group(0)
    assert re.search(r"^slotrun: rank 0 \(node 0, local rank 0, pid \d+\) named it: exit 1 at ", err,
                     re.M), err[-3000:]
    doc = json.load(open(ef))
    rc = doc["root_cause"]
    assert rc["rank"] == 1 and rc["node_rank"] == 0 and "did not answer" in rc["message"], rc
    assert rc["named_by"]["rank"] == 0 and rc["named_by"]["exit_code"] == 1, rc
    assert doc["exit_status"] == 1, doc
    # the reports' folder is gone with the job
    assert os.listdir(tmpdir) == [], os.listdir(tmpdir)


@case
def a_stuck_rank_on_the_other_node_is_named_on_both():
    tag = uuid.uuid4().hex
    mport, cport = free_ports(2)
    common = [SR, "--nnodes", "2", "--addrs", "127.0.0.1,127.0.0.1", "--master-port", str(mport),
              "--control-port", str(cport), "--slots", "1", "--join-timeout", "30"]
    efs = [f"{TMP}/node0.json", f"{TMP}/node1.json"]
    nodes = [endless_job([*common, "--node-rank", str(k)], tag, efs[k]) for k in range(2)]
    try:
        nodes[0].wait_output(lambda s: b"# ranks 2" in s.out, 60, "the table's header")
        stop_rank(tag, 1)  # on node 1
        codes = [n.finish(60) for n in nodes]
    finally:
        for n in nodes:
            n.kill()
    errs = [n.err.decode(errors="replace") for n in nodes]
    assert codes == [1, 1], (codes, errs[0][-3000:], errs[1][-3000:])
    for k in range(2):
        head = re.search(r"^slotrun: job failed: (.*)$", errs[k], re.M)
        assert head, errs[k][-3000:]
        assert re.match(r"rank 1 on node 1 \(127\.0\.0\.1\), named by rank 0 on node 0 "
                        r"\(127\.0\.0\.1\): .*did not answer", head.group(1)), head.group(0)
        assert re.search(r"^slotrun: rank 0 on node 0 \(127\.0\.0\.1\) named it: exit 1 at ",
                         errs[k], re.M), errs[k][-3000:]
        rc = json.load(open(efs[k]))["root_cause"]
        assert (rc["kind"], rc["rank"], rc["node_rank"]) == ("rank", 1, 1), rc
        assert rc["named_by"]["rank"] == 0 and rc["named_by"]["exit_code"] == 1, rc


@case
def a_stuck_rank_on_another_network_node_is_named_on_both():
    # two network-namespace nodes (netns.py): addresses of their own, and
    # the ranks of a node share memory while their leaders form the ring
    tag = uuid.uuid4().hex
    with job_on(2, "bl") as job:
        efs = [os.path.join(job.dir, f"node{k}.json") for k in range(2)]
        for k in range(2):
            job.spawn(k, ["--nnodes", "2", "--node-rank", str(k), "--addrs", ",".join(job.cl.addrs),
                          "--slots", "2", "--grace", "1", "--join-timeout", "30", "--error-file", efs[k],
                          "--", *ENDLESS],
                      clean_env({"SLOTRUN_JOB_SECRET": "blame-e2e", "SLOTRUN_TIMEOUT": COMM_TIMEOUT,
                                 "BLAME_TAG": tag}))
        job.wait(lambda: b"# ranks 4" in job.out(0), 60, "the table's header")
        stop_rank(tag, 3)  # on node 1, not its leader
        codes = job.finish(timeout=60)
        assert codes == [1, 1], job.describe()
        a = [re.escape(x) for x in job.cl.addrs]
        for k in range(2):
            err = job.err(k).decode(errors="replace")
            assert re.search(rf"^slotrun: job failed: rank 3 on node 1 \({a[1]}\), named by rank [012] on "
                             rf"node [01] \(({a[0]}|{a[1]})\): .*did not answer", err, re.M), job.describe()
            rc = json.load(open(efs[k]))["root_cause"]
            assert (rc["rank"], rc["node_rank"], rc["host"]) == (3, 1, job.cl.addrs[1]), rc
        job.assert_nothing_left()


@case
def a_restart_names_the_culprit_in_its_history_and_forgets_the_report():
    # attempt 1: rank 0 names rank 1 and fails; attempt 2: it fails saying nothing
    ef = f"{TMP}/restart.json"
    p = Proc([SR, "--slots", "2", "--max-restarts", "1", "--restart-delay", "0", "--error-file", ef,
              "--", "sh", "-c",
              'if [ "$RANK" = 0 ]; then [ "$SLOTRUN_RESTART_COUNT" = 0 ] && '
              'printf \'{"message": "peer rank 1 is stuck", "culprit_rank": 1}\' > "$SLOTRUN_ERROR_FILE"; '
              "exit 1; fi; exec sleep 60"], environ=job_env())
    code = p.finish(60)
    err = p.err.decode(errors="replace")
    assert code == 1, err[-3000:]
    assert re.search(r"^slotrun: attempt 1 of 2 failed: rank 1 on node 0 \(127\.0\.0\.1\), named by rank 0 "
                     r"on node 0 \(127\.0\.0\.1\) \(exit 1\)$", err, re.M), err[-3000:]
    assert re.search(r"^slotrun: job failed: rank 0 \(node 0, local rank 0, pid \d+\) exit 1 at [0-9:.]+, "
                     r"[0-9.]+ s after start$", err, re.M), err[-3000:]
    doc = json.load(open(ef))
    assert [a["rank"] for a in doc["attempts"]] == [1, 0], doc["attempts"]
    assert doc["attempts"][0]["named_by"]["rank"] == 0, doc["attempts"]


@case
def torch_record_message_is_in_the_headline_and_the_json():
    ef = f"{TMP}/torch.json"
    report = ('{"message": {"message": "RuntimeError: boom\\nsecond line", '
              '"extraInfo": {"py_callstack": "Traceback ...", "timestamp": "1"}}}')
    p = Proc([SR, "--slots", "1", "--error-file", ef, "--", "sh", "-c",
              f"printf '%s' '{report}' > \"$TORCHELASTIC_ERROR_FILE\"; exit 3"], environ=job_env())
    code = p.finish(30)
    assert code == 3, p.err[-2000:]
    assert re.search(rb"^slotrun: job failed: rank 0 \(node 0, local rank 0, pid \d+\) exit 3 at .* "
                     rb"after start: RuntimeError: boom\\x0asecond line$", p.err, re.M), p.err[-2000:]
    assert json.load(open(ef))["root_cause"]["message"] == "RuntimeError: boom\nsecond line"


@case
def a_report_that_is_not_one_is_ignored():
    # per rank: not JSON, a wrong type, a rank outside the job, itself, a
    # FIFO, a folder, a link to something large; each rank exits 3 after
    cases = [
        "printf 'not json' > \"$F\"",
        "printf '{\"message\": 7, \"culprit_rank\": 1}' > \"$F\"",
        "printf '{\"message\": \"m\", \"culprit_rank\": 99}' > \"$F\"",
        "printf '{\"culprit_rank\": %s}' \"$RANK\" > \"$F\"",
        "mkfifo \"$F\"",
        "mkdir \"$F\"",
        "ln -s /dev/zero \"$F\"",
    ]
    script = "; ".join(f'if [ "$RANK" = {r} ]; then {c}; fi' for r, c in enumerate(cases))
    for first in range(len(cases)):
        ef = f"{TMP}/bad{first}.json"
        # rank `first` fails first, the others once it is reaped
        p = Proc([SR, "--slots", str(len(cases)), "--error-file", ef, "--", "sh", "-c",
                  f'F=$SLOTRUN_ERROR_FILE; {script}; [ "$RANK" = {first} ] && exit 3; exec sleep 60'],
                 environ=job_env())
        code = p.finish(60)
        err = p.err.decode(errors="replace")
        assert code == 3, (first, err[-2000:])
        assert re.search(rf"^slotrun: job failed: rank {first} \(node 0, local rank {first}, pid \d+\) "
                         r"exit 3 at [0-9:.]+, [0-9.]+ s after start(: m)?$", err, re.M), (first, err[-2000:])
        assert "named by" not in err, (first, err[-2000:])
        assert json.load(open(ef))["root_cause"]["rank"] == first


if __name__ == "__main__":
    run()
