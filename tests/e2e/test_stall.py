# SPDX-License-Identifier: MIT
"""Nobody is blamed for a stall that is not theirs (docs/job-plane.md,
"Heartbeats and loss"), on three network-namespace nodes with
--heartbeat-timeout 2: a slotrun stopped (SIGSTOP, then SIGCONT) for twice
the heartbeat timeout, the chief's or another node's, ends nothing, since
its host still answers and it notices its own stall when it runs again; one
stopped for longer than the peers wait (3 heartbeat timeouts) is named by
every node, itself included, and no healthy node is."""
import os
import re
import signal
import time

from harness import case, run
from jobs import Job, clean_env, job_on

SECRET = "stall-e2e-secret"
HB = 2
BOUND = 3 * HB
WAIT = ["sh", "-c", 'echo ready; while [ ! -e "$ST_DIR/go" ]; do sleep 0.1; done; echo done']


class StallJob(Job):
    def start(self, i, cmd=WAIT):
        args = ["--nnodes", "3", "--node-rank", str(i), "--addrs", ",".join(self.cl.addrs), "--slots", "2",
                "--heartbeat-timeout", str(HB), "--grace", "1", "--join-timeout", "30", "--", *cmd]
        return self.spawn(i, args, clean_env({"SLOTRUN_JOB_SECRET": SECRET, "ST_DIR": self.dir}))

    def ready(self):
        self.wait(lambda: all(self.out(r // 2).count(b"[rank=%d] ready" % r) for r in range(6)), 60,
                  "every rank ready")


def stopped_for(job, i, seconds):
    """node i's slotrun does not run for `seconds` (its workers do)."""
    job.procs[i].signal(signal.SIGSTOP)
    time.sleep(seconds)  # the stall itself is what is tested: its length is the input, not a wait
    job.procs[i].signal(signal.SIGCONT)


def goes_on(victim):
    with job_on(3, "st", StallJob) as job:
        for i in range(3):
            job.start(i)
        job.ready()
        stopped_for(job, victim, 2 * HB)
        assert job.stays_running(range(3), HB + 1), job.describe()
        open(os.path.join(job.dir, "go"), "w").close()
        job.expect_exit([0, 0, 0], timeout=30)
        for i in range(3):
            assert b"lost" not in job.err(i), job.describe()
        job.assert_nothing_left()


@case
def the_chief_stopped_for_twice_the_heartbeat_timeout_ends_nothing():
    goes_on(0)


@case
def a_node_stopped_for_twice_the_heartbeat_timeout_ends_nothing():
    goes_on(1)


@case
def a_chief_stopped_past_the_bound_is_named_by_every_node_itself_included():
    with job_on(3, "sb", StallJob) as job:
        for i in range(3):
            job.start(i)
        job.ready()
        stopped_for(job, 0, BOUND + 3)
        job.expect_exit([1, 1, 1], timeout=30)
        others = re.compile(rb"job failed: node 0 \(10\.213\.0\.1\) lost: it did not answer for 6 s \(its host "
                            rb"did: its slotrun is stopped or starved\)")
        for i in (1, 2):
            assert others.search(job.err(i)), job.describe()
        own = re.search(rb"job failed: node 0 \(10\.213\.0\.1\) lost: it did not run for (\d+\.\d) s \(its "
                        rb"slotrun was stopped or starved\), longer than the other nodes wait", job.err(0))
        assert own and float(own.group(1)) >= BOUND, job.describe()
        assert b"this node, node 0 (10.213.0.1), did not run for" in job.err(0), job.describe()
        for i in range(3):
            assert not re.search(rb"node [12] \(10\.213\.0\.[23]\) lost", job.err(i)), job.describe()
        job.assert_nothing_left()


run()
