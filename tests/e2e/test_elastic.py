# SPDX-License-Identifier: MIT
"""Elastic jobs (--nnodes MIN:MAX) on network-namespace nodes: the job
forms in rounds, re-forms on the nodes that remain when one is lost
(killed, cut off), takes new nodes in, survives the chief's loss by
failover, never splits into two jobs, and ends when fewer than MIN nodes
or no restart is left.  The training demo (slotcomm_train) runs across the
rounds from its periodic checkpoints, with another world size each time.

Each node gets the chief's address and asks for a rank (a preference the
chief honours in the first round) so that the cases know who is who; one
case gives no rank at all.  Timeouts are short (--heartbeat-timeout 1,
--grace 1, --settle-time 1); the bounds on how fast a node reacts are
generous: timings are benchmarks (bench/elastic.py)."""
import contextlib
import json
import os
import re
import signal
import time

from harness import binary, case, kill_pids, run
from jobs import Job, clean_env, job_on

TRAIN = binary("slotcomm_train")
SECRET = "elastic-e2e-secret"
HEARTBEAT = 1
FAST = ["--heartbeat-timeout", str(HEARTBEAT), "--grace", "1", "--settle-time", "1", "--join-timeout", "30"]
WITHIN = 40                 # a round's formation, six ranks starting on two cores
LINE = "slotrun: round {}: {} nodes, {} ranks"


class ElasticJob(Job):
    """Node i runs slotrun --nnodes MIN:MAX --master-addr <node 0's address>
    with two slots and its own --error-file; the demo's checkpoints are in
    the job's folder, which every node shares."""

    def start(self, i, cmd, *, nnodes="2:3", restarts=3, extra=(), prefer=True, addrs=False, slots=2):
        """prefer: node i asks for rank i (a preference, which the chief
        honours in the first round), so that the cases know who is who.
        addrs: every node's address (--addrs), not the chief's alone."""
        rank = ["--node-rank", str(i)] if prefer else []
        where = ["--addrs", ",".join(self.cl.addrs)] if addrs else ["--master-addr", self.cl.addr(0)]
        args = ["--nnodes", nnodes, *where, *rank, "--slots", str(slots),
                "--max-restarts", str(restarts), "--error-file", self.efile(i), *FAST, *extra, "--", *cmd]
        return self.spawn(i, args, clean_env({"SLOTRUN_JOB_SECRET": SECRET, "EJ_DIR": self.dir}))

    def efile(self, i):
        return os.path.join(self.dir, f"error.{i}.json")

    def rounds(self, i):
        with open(self.efile(i)) as f:
            return json.load(f)["rounds"]

    def wait_err(self, nodes, text, timeout=WITHIN):
        t = text.encode()
        self.wait(lambda: all(t in self.err(i) for i in nodes), timeout, f"{text!r} from nodes {list(nodes)}",
                  must_run=nodes)


def elastic(nodes=3, tag="el"):
    return job_on(nodes, tag, ElasticJob)


def train(steps=80, every=5):
    """The demo, one command line for every round: periodic checkpoints in
    the job's folder, resumed from when there is one, 50 ms a step."""
    return ["sh", "-c", f'exec "{TRAIN}" --steps {steps} --grad-bytes 4K --global-batch-size 48 '
            f'--checkpoint-dir "$EJ_DIR/ckpt" --checkpoint-every {every} --resume-if-present --step-time 50']


def checkpointed(job, node, step):
    """rank 0 on `node` wrote the checkpoint of `step` (or a later one)."""
    found = re.findall(rb"checkpoint \S+: step (\d+)", job.out(node))
    return found and int(found[-1]) >= step


def kill_node(job, i):
    """Everything on node i dies at once: its slotrun and its workers."""
    kill_pids(job.cl.pids(i))


def final_checksums(job, nodes):
    return {m for i in nodes for m in re.findall(rb"final step=(\d+) checksum=(\w+)", job.out(i))}


@case
def a_killed_node_re_forms_the_job_and_a_new_one_is_taken_in():
    """SIGKILL of node 2 (slotrun and workers) mid-run: nodes 0 and 1
    re-form with world 4 and resume from the checkpoint; node 2 started
    again later is taken in (world 6 again); all finish with 0."""
    with elastic() as job:
        for i in range(3):
            job.start(i, train(steps=160))
        job.wait_err(range(3), LINE.format(1, 3, 6))
        job.wait(lambda: checkpointed(job, 0, 10), WITHIN, "the checkpoint of step 10")
        kill_node(job, 2)
        job.wait_err([0, 1], LINE.format(2, 2, 4) + " (node 2 (10.213.0.3) lost: connection closed)")
        job.wait(lambda: b"(world size 6 -> 4" in job.out(0), WITHIN, "the resume at world size 4")
        job.start(2, train(steps=160))
        job.wait_err([0], "a new node (10.213.0.3) joined: the job re-forms to take it in")
        job.wait_err([1], "stopping this node's workers: a new node (10.213.0.3) joined")
        job.wait_err(range(3), LINE.format(3, 3, 6) + " (a new node (10.213.0.3) joined)")
        job.wait(lambda: b"(world size 4 -> 6" in job.out(0), WITHIN, "the resume at world size 6")
        job.expect_exit([0, 0, 0], timeout=60)
        sums = final_checksums(job, range(3))
        assert len(sums) == 1, sums                   # one final state, said by rank 0
        r = job.rounds(0)
        assert [(x["round"], x["nodes"], x["ranks"]) for x in r] == [(1, 3, 6), (2, 2, 4), (3, 3, 6)], r
        assert r[0]["ended"] == "node 2 (10.213.0.3) lost: connection closed", r
        assert r[1]["ended"] == "a new node (10.213.0.3) joined", r
        assert job.rounds(2)[0]["round"] == 3, job.rounds(2)   # the new node was in round 3 only
        job.assert_nothing_left()


@case
def the_workers_see_each_round():
    """RANK, WORLD_SIZE, GROUP_RANK, MASTER_ADDR, SLOTRUN_ROUND and
    TORCHELASTIC_RESTART_COUNT follow the round; node 1's ranks move from
    2-3 to 0-1 when node 0, the chief, is lost and node 1 takes over."""
    show = ["sh", "-c", 'echo "env $RANK $WORLD_SIZE $GROUP_RANK $MASTER_ADDR $SLOTRUN_ROUND '
            '$TORCHELASTIC_RESTART_COUNT"; exec sleep 60']
    with elastic() as job:
        for i in range(3):
            job.start(i, show)
        job.wait(lambda: all(b"[rank=%d] env" % r in job.out(r // 2) for r in range(6)), WITHIN, "round 1")
        assert b"[rank=3] env 3 6 1 10.213.0.1 1 0\n" in job.out(1), job.describe()
        kill_node(job, 0)
        job.wait_err([1, 2], LINE.format(2, 2, 4))
        job.wait(lambda: b"[rank=1] env 1 4 0 10.213.0.2 2 1\n" in job.out(1) and
                 b"[rank=3] env 3 4 1 10.213.0.2 2 1\n" in job.out(2), WITHIN, "round 2's environment")
        job.procs[1].signal(signal.SIGTERM)
        job.expect_exit([143, 143], nodes=[1, 2])
        job.assert_nothing_left()


@case
def the_chief_s_loss_is_survived_by_failover():
    """SIGKILL of node 0 (the chief): node 1, the lowest survivor, takes
    over; the job re-forms on nodes 1 and 2 with MASTER_ADDR at node 1,
    resumes from the checkpoint and finishes.  A node started again on
    node 0's host, with every node's address, finds the job at node 1
    (rather than becoming a chief of its own) and is taken in."""
    with elastic() as job:
        for i in range(3):
            job.start(i, train(steps=160))
        job.wait_err(range(3), LINE.format(1, 3, 6))
        job.wait(lambda: checkpointed(job, 0, 10), WITHIN, "the checkpoint of step 10")
        t0 = time.monotonic()
        kill_node(job, 0)
        job.wait_err([1], "this node, node 1 (10.213.0.2), takes over as the chief")
        job.wait_err([1, 2], LINE.format(2, 2, 4) + " (node 0 (10.213.0.1) lost: connection closed; "
                     "node 1 (10.213.0.2) took over as the chief)")
        took = time.monotonic() - t0
        job.wait(lambda: b"(world size 6 -> 4" in job.out(1), WITHIN, "rank 0 on node 1 resuming")
        job.start(0, train(steps=160), prefer=False, addrs=True)
        job.wait_err([0, 1, 2], LINE.format(3, 3, 6) + " (a new node (10.213.0.1) joined)")
        job.wait(lambda: b"(world size 4 -> 6" in job.out(1), WITHIN, "the resume at world size 6")
        job.expect_exit([0, 0, 0], timeout=60)
        assert final_checksums(job, [1]), job.describe()
        print(f"# failover: round 2 said {took:.2f} s after the chief's SIGKILL", flush=True)
        job.assert_nothing_left()


@case
def a_node_cut_off_alone_stops_and_the_rest_go_on():
    """Node 2's cable is pulled: it cannot tell whether it or the others are
    cut off, takes over as the chief of what it can reach, finds itself
    alone (1 of 3 nodes) and stops with 1; nodes 0 and 1 (2 of 3) go on.
    Never two jobs: node 2 starts no round of its own."""
    idle = ["sh", "-c", 'echo "up in round $SLOTRUN_ROUND"; exec sleep 60']
    with elastic() as job:
        for i in range(3):
            job.start(i, idle)
        job.wait_err(range(3), LINE.format(1, 3, 6))
        job.cl.cut(2)
        job.wait_err([0, 1], LINE.format(2, 2, 4) + " (node 2 (10.213.0.3) lost: no heartbeat for 1 s)")
        code, = job.finish([2], timeout=30)
        assert code == 1, job.describe()
        assert b"this side of the job holds 1 of the last round's 3 nodes" in job.err(2), job.describe()
        assert b"round 2" not in job.err(2) and b"up in round 2" not in job.out(2), job.describe()
        job.wait(lambda: job.out(0).count(b"up in round 2") == 2, WITHIN, "round 2's ranks on node 0")
        assert job.running(0) and job.running(1), job.describe()
        job.procs[0].signal(signal.SIGTERM)
        job.expect_exit([143, 143], nodes=[0, 1])
        job.assert_nothing_left()


@case
def a_chief_cut_off_alone_stops_and_the_others_fail_over():
    """Node 0, the chief, is cut off: it holds 1 of 3 nodes and stops with
    1; nodes 1 and 2 (2 of 3) elect node 1 and go on."""
    idle = ["sh", "-c", 'echo "up in round $SLOTRUN_ROUND"; exec sleep 60']
    with elastic() as job:
        for i in range(3):
            job.start(i, idle)
        job.wait_err(range(3), LINE.format(1, 3, 6))
        job.cl.cut(0)
        code, = job.finish([0], timeout=30)
        assert code == 1, job.describe()
        assert b"this side of the job holds 1 of the last round's 3 nodes" in job.err(0), job.describe()
        job.wait_err([1, 2], LINE.format(2, 2, 4) + " (node 0 (10.213.0.1) lost: no heartbeat for 1 s; "
                     "node 1 (10.213.0.2) took over as the chief)")
        assert b"round 2" not in job.err(0), job.describe()
        job.procs[2].signal(signal.SIGTERM)
        job.expect_exit([143, 143], nodes=[1, 2])
        job.assert_nothing_left()


@case
def fewer_than_min_nodes_left_ends_the_job_naming_the_lost():
    """--nnodes 2:3 on two nodes (the first round starts once no node came
    for the settle time): node 1 is killed and one node is left, below MIN."""
    idle = ["sh", "-c", "echo up; exec sleep 60"]
    with elastic(nodes=2) as job:
        for i in range(2):
            job.start(i, idle)
        job.wait_err([0], "2 of at most 3 nodes are in: the first round starts when 3 are, or when no "
                     "other node has come for 1 s (--settle-time)")
        job.wait_err(range(2), LINE.format(1, 2, 4))
        kill_node(job, 1)
        code, = job.finish([0], timeout=30)
        assert code == 1, job.describe()
        assert (b"slotrun: the job ends: 1 node left, fewer than --nnodes' MIN 2 (lost: node 1 "
                b"(10.213.0.2))") in job.err(0), job.describe()
        assert b"slotrun: job failed: node 1 (10.213.0.2) lost: connection closed" in job.err(0), job.describe()
        job.assert_nothing_left()


@case
def a_node_that_keeps_crashing_uses_up_max_restarts():
    """Rank 2 (on node 1) exits 3 in every round: the job re-forms twice
    (--max-restarts 2), then ends with 3 on both nodes."""
    crash = ["sh", "-c", '[ "$RANK" = 2 ] && exit 3; exec sleep 60']
    with elastic(nodes=2) as job:
        for i in range(2):
            job.start(i, crash, nnodes="1:2", restarts=2,
                      extra=["--restart-delay", "0.1"])
        job.expect_exit([3, 3], timeout=60)
        for i in range(2):
            assert LINE.format(3, 2, 4).encode() in job.err(i), job.describe()
            assert b"round 4" not in job.err(i), job.describe()
            assert b"the job ends: no restart left (--max-restarts 2)" in job.err(i), job.describe()
        assert [x["round"] for x in job.rounds(1)] == [1, 2, 3], job.rounds(1)
        job.assert_nothing_left()


@case
def a_stop_between_rounds_ends_the_job_at_once():
    """SIGTERM to node 1 while the job waits out the restart delay after a
    failed rank: every node exits 143 at once, without the next round."""
    crash = ["sh", "-c", '[ "$RANK" = 2 ] && [ "$SLOTRUN_ROUND" = 1 ] && exit 3; exec sleep 60']
    with elastic(nodes=2) as job:
        for i in range(2):
            job.start(i, crash, nnodes="1:2", extra=["--restart-delay", "30"])
        job.wait_err([1], "slotrun: round 1: 2 nodes, 4 ranks")
        job.wait(lambda: b"rank 2 on node 1 (10.213.0.2) exit 3" in job.err(0), WITHIN, "the failure")
        # between rounds: every worker is gone, the slotruns wait out the delay
        job.wait(lambda: all(len(job.cl.pids(i)) == 1 for i in range(2)), WITHIN, "the workers to be reaped")
        t0 = time.monotonic()
        job.procs[1].signal(signal.SIGTERM)
        job.expect_exit([143, 143], timeout=20)
        job.exited_within([0, 1], t0, 10)
        for i in range(2):
            assert b"round 2" not in job.err(i), job.describe()
            assert b"SIGTERM to node 1 (10.213.0.2)" in job.err(i), job.describe()
        job.assert_nothing_left()


@case
def next_round_admission_waits_and_the_job_ends_whole():
    """With --admit next-round a node that arrives mid-round waits; the job
    ends as it would have (0), and the waiting node ends with it."""
    short = ["sh", "-c", 'echo up; while [ ! -e "$EJ_DIR/go" ]; do sleep 0.05; done; echo done']
    with elastic(nodes=3) as job:
        for i in range(2):
            job.start(i, short, extra=["--admit", "next-round"])
        job.wait_err(range(2), LINE.format(1, 2, 4))
        job.start(2, short, extra=["--admit", "next-round"])
        job.wait_err([0], "a new node (10.213.0.3) joined: it waits for the next round (--admit next-round)")
        # waiting is being in the job: heartbeats go both ways meanwhile
        assert job.stays_running(range(3), 4 * HEARTBEAT), job.describe()
        open(os.path.join(job.dir, "go"), "w").close()
        job.expect_exit([0, 0, 0], timeout=30)
        assert b"up" not in job.out(2), job.describe()       # it never ran a rank
        job.assert_nothing_left()


@case
def nodes_need_only_the_chief_s_address():
    """No --node-rank anywhere: node 0 is the chief (the chief's address is
    its own), the others get ranks 1 and 2 in the order they came."""
    show = ["sh", "-c", 'echo "group $GROUP_RANK of $GROUP_WORLD_SIZE"']
    with elastic() as job:
        for i in range(3):
            job.start(i, show, prefer=False)
        job.expect_exit([0, 0, 0], timeout=WITHIN)
        groups = [set(re.findall(rb"group (\d) of 3", job.out(i))) for i in range(3)]
        assert groups[0] == {b"0"}, groups
        assert sorted(g.pop() for g in groups[1:]) == [b"1", b"2"], groups
        job.assert_nothing_left()


@case
def nodes_with_different_slot_counts_share_one_rank_space():
    """Nodes of 1, 3 and 2 slots: ranks 0, 1-3 and 4-5, world 6 in every
    worker; when the node of 3 is lost, the next round has ranks 0 and 1-2,
    world 3."""
    show = ["sh", "-c", 'echo "rank $RANK of $WORLD_SIZE local $LOCAL_RANK/$LOCAL_WORLD_SIZE round '
            '$SLOTRUN_ROUND"; exec sleep 60']
    with elastic() as job:
        for i, n in enumerate((1, 3, 2)):
            job.start(i, show, slots=n)
        job.wait_err(range(3), LINE.format(1, 3, 6))
        want = {0: [(0, 0, 1)], 1: [(1, 0, 3), (2, 1, 3), (3, 2, 3)], 2: [(4, 0, 2), (5, 1, 2)]}

        def seen(i, rnd, world):
            found = re.findall(rb"rank (\d+) of %d local (\d+)/(\d+) round %d" % (world, rnd), job.out(i))
            return sorted((int(a), int(b), int(c)) for a, b, c in found)
        job.wait(lambda: all(seen(i, 1, 6) == want[i] for i in range(3)), WITHIN, "round 1's ranks")
        kill_node(job, 1)
        job.wait_err([0, 2], LINE.format(2, 2, 3))
        job.wait(lambda: seen(0, 2, 3) == [(0, 0, 1)] and seen(2, 2, 3) == [(1, 0, 2), (2, 1, 2)], WITHIN,
                 "round 2's ranks")
        job.procs[0].signal(signal.SIGTERM)
        job.expect_exit([143, 143], nodes=[0, 2])
        job.assert_nothing_left()


@case
def nodes_that_disagree_on_the_range_start_nothing():
    idle = ["sh", "-c", "echo up; exec sleep 60"]
    with elastic(nodes=2) as job:
        job.start(0, idle)
        job.start(1, idle, nnodes="2:4")
        job.expect_exit([2, 2], timeout=30)
        for i in range(2):
            assert b"the node at 10.213.0.2 says --nnodes 2:4, node 0 was told 2:3" in job.err(i), job.describe()
        assert b"up" not in job.out(0) + job.out(1), job.describe()
        job.assert_nothing_left()


run()
