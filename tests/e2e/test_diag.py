# SPDX-License-Identifier: MIT
"""What slotrun collects about a worker it must kill (its processes' state,
wait channel and stacks) never holds up the node's event loop, and a rank
that does not stop for its stack to be taken holds up nothing: the other
nodes must not call the collecting node lost.

Two nodes in network namespaces (netns.Cluster), one slot each.  Rank 1
ignores SIGTERM, so at the grace's end node 1 collects its diagnostics
before the SIGKILL; its threads sit in uninterruptible sleep (stack_target
blocked), so each is waited for and skipped.  Meanwhile the heartbeats must
go on."""
import os
import re
import signal
import time

from harness import binary, case, run
from jobs import clean_env, job_on

TARGET = binary("stack_target")
HEARTBEAT = 2
GRACE = 0.5
OPTS = ["--join-timeout", "10", "--heartbeat-timeout", str(HEARTBEAT), "--grace", str(GRACE)]

RANK0 = ["sh", "-c", 'echo ready; while [ ! -e "$DIAG_DIR/go" ]; do sleep 0.05; done; '
         'echo "bad batch" >&2; exit 3']
# A rank stuck in a collective ignores SIGTERM; this one's threads are
# also in uninterruptible sleep, which no tracer can stop.
RANK1 = [TARGET, "--stubborn", "blocked", "3"]


def traced(pid):
    """Whether a thread of pid has a tracer now."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                if re.search(r"^TracerPid:\s*[1-9]", f.read(), re.M):
                    return True
    except OSError:
        pass
    return False


def ready_pid(out):
    m = re.search(rb"\] ready (\d+)", out)
    return int(m.group(1)) if m else None


@case
def a_rank_that_does_not_stop_on_one_node_does_not_lose_it():
    with job_on(2, "dg") as job:
        for i, cmd in enumerate([RANK0, RANK1]):
            env = clean_env({"DIAG_DIR": job.dir, "SLOTRUN_JOB_SECRET": "diag-e2e-secret"})
            job.spawn(i, ["--nnodes", "2", "--node-rank", str(i), "--addrs", ",".join(job.cl.addrs),
                          "--slots", "1", *OPTS, "--", *cmd], env)
        job.wait(lambda: all(b"[rank=%d] ready" % i in job.out(i) for i in range(2)), 30,
                 "both ranks ready")
        open(os.path.join(job.dir, "go"), "w").close()
        job.expect_exit([3, 3], timeout=60)
        for i in range(2):
            assert b" lost" not in job.err(i), f"node {i} speaks of a lost node\n" + job.describe()
        job.assert_err_everywhere(f"job failed: rank 0 on node 0 ({job.cl.addr(0)}) exit 3", nodes=range(2))
        job.assert_err_everywhere("slotrun: | [rank=0] bad batch", nodes=range(2))
        # what node 1 did collect is shown, the threads it waited for too
        e = job.err(1)
        assert b"at the grace's end:" in e and b"(stack_target) state D" in e, job.describe()
        assert b"did not stop within 0.2 s" in e, job.describe()
        job.assert_nothing_left()


# Both signals a user's Ctrl-C may bring are ignored, as by a rank stuck in
# a collective under a framework that handles SIGINT itself.
STUBBORN = [TARGET, "--stubborn", "blocked", "3"]


@case
def a_second_ctrl_c_on_the_chief_cuts_every_node_s_collection_short():
    # The first SIGINT stops the job everywhere; at the grace's end each
    # node collects before its SIGKILL, from a rank whose threads do not
    # stop.  The second SIGINT means "kill now": the chief gets it itself, a
    # member through the job plane, and neither may sit out the collection.
    with job_on(2, "dc") as job:
        for i in range(2):
            env = clean_env({"SLOTRUN_JOB_SECRET": "diag-e2e-secret"})
            job.spawn(i, ["--nnodes", "2", "--node-rank", str(i), "--addrs", ",".join(job.cl.addrs),
                          "--slots", "1", *OPTS, "--", *STUBBORN], env)
        job.wait(lambda: all(ready_pid(job.out(i)) for i in range(2)), 30, "both ranks ready")
        pids = [ready_pid(job.out(i)) for i in range(2)]
        job.procs[0].p.send_signal(signal.SIGINT)
        seen = set()
        job.wait(lambda: seen.update(i for i in range(2) if traced(pids[i])) or len(seen) == 2,
                 30, "both nodes taking their stacks")
        job.procs[0].p.send_signal(signal.SIGINT)
        second = time.monotonic()
        job.expect_exit([130, 130], timeout=30)
        job.exited_within([0, 1], second, 5)
        job.assert_nothing_left()


if __name__ == "__main__":
    run()
