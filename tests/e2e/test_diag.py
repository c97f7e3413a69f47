# SPDX-License-Identifier: MIT
"""What slotrun collects about a worker it must kill (its processes' state,
wait channel and native stack) never holds up the node's event loop: a slow
stack source on one node must not make the other nodes call it lost.

Two nodes in network namespaces (netns.Cluster), one slot each.  Rank 1
ignores SIGTERM, so at the grace's end node 1 collects its diagnostics
before the SIGKILL; the `eu-stack` found first in node 1's PATH is a stand-in
that never answers, so the collection runs into its deadline.  Meanwhile the
heartbeats must go on."""
import os
import signal
import stat
import time

from harness import case, run
from jobs import Job, clean_env, job_on

HEARTBEAT = 2
GRACE = 0.5
OPTS = ["--join-timeout", "10", "--heartbeat-timeout", str(HEARTBEAT), "--grace", str(GRACE)]

SLOW_EU_STACK = """#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# A stack source that never answers: it notes that it was asked, then waits.
import os, time
open(os.path.join(os.environ["DIAG_DIR"], "asked.%s.%d" % (os.environ.get("DIAG_NODE", "1"), os.getpid())),
     "w").close()
time.sleep(120)
"""

RANK0 = ["sh", "-c", 'echo ready; while [ ! -e "$DIAG_DIR/go" ]; do sleep 0.05; done; '
         'echo "bad batch" >&2; exit 3']
# Many threads make a process slow to take a stack of; this one also
# ignores SIGTERM, as a rank stuck in a collective does.
RANK1 = ["python3", "-c",
         "import signal, threading, time\n"
         "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
         "for _ in range(16): threading.Thread(target=time.sleep, args=(120,), daemon=True).start()\n"
         "print('ready', flush=True)\n"
         "time.sleep(120)\n"]


def slow_stack_path(d):
    bin_dir = os.path.join(d, "bin")
    os.mkdir(bin_dir)
    path = os.path.join(bin_dir, "eu-stack")
    with open(path, "w") as f:
        f.write(SLOW_EU_STACK)
    os.chmod(path, stat.S_IRWXU)
    return bin_dir


@case
def slow_diagnostics_on_one_node_do_not_lose_it():
    with job_on(2, "dg") as job:
        bin_dir = slow_stack_path(job.dir)
        for i, cmd in enumerate([RANK0, RANK1]):
            env = clean_env({"DIAG_DIR": job.dir, "SLOTRUN_JOB_SECRET": "diag-e2e-secret"})
            if i == 1:
                env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "/usr/bin:/bin")
            job.spawn(i, ["--nnodes", "2", "--node-rank", str(i), "--addrs", ",".join(job.cl.addrs),
                          "--slots", "1", *OPTS, "--", *cmd], env)
        job.wait(lambda: all(b"[rank=%d] ready\n" % i in job.out(i) for i in range(2)), 30,
                 "both ranks ready")
        open(os.path.join(job.dir, "go"), "w").close()
        job.expect_exit([3, 3], timeout=60)
        asked = [f for f in os.listdir(job.dir) if f.startswith("asked.")]
        assert asked, "node 1 never asked for a stack: the case tests nothing\n" + job.describe()
        for i in range(2):
            assert b" lost" not in job.err(i), f"node {i} speaks of a lost node\n" + job.describe()
        job.assert_err_everywhere(f"job failed: rank 0 on node 0 ({job.cl.addr(0)}) exit 3", nodes=range(2))
        job.assert_err_everywhere("slotrun: | [rank=0] bad batch", nodes=range(2))
        # what node 1 did collect is still shown
        assert b"at the grace's end:" in job.err(1) and b"(python3) state " in job.err(1), job.describe()
        job.assert_nothing_left()


# Both signals a user's Ctrl-C may bring are ignored, as by a rank stuck in
# a collective under a framework that handles SIGINT itself.
STUBBORN = ["python3", "-c",
            "import signal, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "print('ready', flush=True)\n"
            "time.sleep(120)\n"]


@case
def a_second_ctrl_c_on_the_chief_cuts_every_node_s_collection_short():
    # The first SIGINT stops the job everywhere; at the grace's end each
    # node collects before its SIGKILL, from a stack source that never
    # answers.  The second SIGINT means "kill now": the chief gets it
    # itself, a member through the job plane, and neither may sit out the
    # collection's deadline (launcher/diag.h: 8 s).
    with job_on(2, "dc") as job:
        bin_dir = slow_stack_path(job.dir)
        for i in range(2):
            env = clean_env({"DIAG_DIR": job.dir, "DIAG_NODE": str(i), "SLOTRUN_JOB_SECRET": "diag-e2e-secret"})
            env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "/usr/bin:/bin")
            job.spawn(i, ["--nnodes", "2", "--node-rank", str(i), "--addrs", ",".join(job.cl.addrs),
                          "--slots", "1", *OPTS, "--", *STUBBORN], env)
        job.wait(lambda: all(b"[rank=%d] ready\n" % i in job.out(i) for i in range(2)), 30,
                 "both ranks ready")
        job.procs[0].p.send_signal(signal.SIGINT)
        job.wait(lambda: all(any(f.startswith("asked.%d." % i) for f in os.listdir(job.dir)) for i in range(2)),
                 30, "both nodes collecting their stacks")
        job.procs[0].p.send_signal(signal.SIGINT)
        second = time.monotonic()
        job.expect_exit([130, 130], timeout=30)
        job.exited_within([0, 1], second, 5)
        job.assert_nothing_left()


if __name__ == "__main__":
    run()
