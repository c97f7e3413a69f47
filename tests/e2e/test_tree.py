# SPDX-License-Identifier: MIT
"""The job plane as a relay tree (docs/job-plane.md, "The tree"), on
simulated nodes (sim_nodes.py): 8 nodes with --fanout 3 are the groups
{0, 1, 2}, {3, 4, 5} and {6, 7}, each group a host of its own (a network
namespace); nodes 3 and 6 relay for the rest of their group.  What a user
sees is what a star shows: a failure behind a relay stops every node with
its cause, a relay, a node behind one or the chief killed is named by
every node, another secret behind a relay ends the join on every node
naming it, nodes that disagree on the tree do not start, `slotrun status`
on a node behind a relay shows every rank, and a restart runs in step.
Needs root (network namespaces)."""
import json
import subprocess
import tempfile

import os
import signal
import time

from harness import binary, case, run, run_cmd, wait_for
import sim_nodes

SR = binary("slotrun")
WORKER = binary("scale_worker")
N, F = 8, 3
RELAYS = (3, 6)
DEADLINE = 60


def addr(k):
    return f"10.213.0.{k // F + 1}"


def start(extra=(), adjust=None, n=N, fanout=F):
    job = sim_nodes.Job(SR, WORKER, n, ["--grace", "10", "--heartbeat-timeout", "2", *extra],
                        folder=tempfile.gettempdir(), fanout=fanout, adjust=adjust)
    job.start()
    return job


def established(job, group):
    """Connections accepted on the control port in group's namespace."""
    r = subprocess.run(["ip", "netns", "exec", job.cluster.ns(group), "ss", "-Htn", "state", "established",
                        f"( sport = :{job.port + 1} )"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    return len(r.stdout.splitlines())


def logs_name(job, nodes, text):
    for i in nodes:
        assert text in job.node_log(i), f"node {i} does not say {text!r}: {job.node_log(i)[-600:]}"


@case
def a_failure_behind_a_relay_stops_every_node_with_its_cause():
    job = start()
    try:
        job.wait_events("start", 0, N, DEADLINE, "every node's worker")
        # the chief holds its group's two nodes and the two relays, not 7
        assert established(job, 0) == 4, f"the chief holds {established(job, 0)} connections, not 4"
        assert established(job, 1) == 2, "relay 3 does not hold its two nodes"
        job.fail(7)
        assert job.wait_exit(DEADLINE), f"not every node exited: {job.story()}"
        assert job.codes() == [4] * N, job.story()
        assert {e[1] for e in job.of("term", 0)} == set(range(N)) - {7}
        logs_name(job, range(N), f"rank 7 on node 7 ({addr(7)}) exit 4")
    finally:
        job.close()


def kill_node(job, i):
    """SIGKILL to node i's slotrun once every worker runs; every other node
    then exits 1."""
    job.wait_events("start", 0, N, DEADLINE, "every node's worker")
    os.kill(job.pids[i], signal.SIGKILL)
    assert job.wait_exit(DEADLINE), f"not every node exited: {job.story()}"
    codes = job.codes()
    assert codes[:i] + codes[i + 1:] == [1] * (N - 1), job.story()


@case
def a_relay_killed_is_named_by_every_node():
    job = start()
    try:
        kill_node(job, 3)
        lost = f"node 3 ({addr(3)}) lost"
        logs_name(job, [0, 1, 4, 5, 6, 7], lost)
        # every worker was stopped, those behind the dead relay too
        assert {e[1] for e in job.of("term", 0)} >= set(range(N)) - {3}
    finally:
        job.close()


@case
def a_node_behind_a_relay_killed_is_named_by_every_node():
    job = start()
    try:
        kill_node(job, 4)
        logs_name(job, [0, 2, 3, 5, 7], f"node 4 ({addr(4)}) lost")
    finally:
        job.close()


@case
def the_chief_killed_is_named_behind_the_relays():
    job = start()
    try:
        kill_node(job, 0)
        # behind a relay the cause is the chief's loss, not the relay's
        logs_name(job, [1, 3, 4, 5, 7], f"node 0 ({addr(0)}) lost")
    finally:
        job.close()


@case
def another_secret_behind_a_relay_ends_the_join_on_every_node():
    def other(i, argv, env):
        if i == 5:
            env["SLOTRUN_JOB_SECRET"] = "not-the-job-secret"

    job = start(adjust=other)
    try:
        assert job.wait_exit(DEADLINE), f"not every node exited: {job.story()}"
        assert job.codes() == [2] * N, job.story()
        logs_name(job, range(N), f"node 5 ({addr(5)}) presented another job secret")
        assert not job.of("start"), "a worker started"
    finally:
        job.close()


@case
def nodes_that_disagree_on_the_tree_do_not_start():
    def star(i, argv, env):
        if i == 7:
            k = argv.index("--fanout")
            argv[k + 1] = "0"

    job = start(adjust=star)
    try:
        assert job.wait_exit(DEADLINE), f"not every node exited: {job.story()}"
        assert job.codes() == [2] * N, job.story()
        logs_name(job, [0, 4, 7], "node 7 (10.213.0.3) joins a relay tree of fan-out 0, node 0 one of 3")
        assert not job.of("start"), "a worker started"
    finally:
        job.close()


@case
def nodes_of_one_host_in_a_tree_join_the_one_that_listens():
    """Every node on 127.0.0.1 with every address given: the relays cannot
    listen (the chief does, on the same port): they say so, their groups
    join the chief, and the job runs and fails as one."""
    def one_host(i, argv, env):
        k = argv.index("--master-addr")
        argv[k:k + 2] = ["--addrs", ",".join(["127.0.0.1"] * N), "--fanout", str(F)]

    job = sim_nodes.Job(SR, WORKER, N, ["--grace", "10"], folder=tempfile.gettempdir(), adjust=one_host)
    job.start()
    try:
        job.wait_events("start", 0, N, DEADLINE, "every node's worker")
        job.fail(4)
        assert job.wait_exit(DEADLINE), f"not every node exited: {job.story()}"
        assert job.codes() == [4] * N, job.story()
        logs_name(job, [3], "note: node 3 cannot relay for nodes 4-5: cannot listen on the control port")
        logs_name(job, [6], "note: node 6 cannot relay for nodes 7-7")
        logs_name(job, range(N), "rank 4 on node 4 (127.0.0.1) exit 4")
    finally:
        job.close()


@case
def status_behind_a_relay_shows_every_rank():
    job = start()
    try:
        job.wait_events("start", 0, N, DEADLINE, "every node's worker")

        def doc():
            code, out, err = run_cmd(job.cluster.prefix(1) + [SR, "status", "--json", str(job.pids[4])],
                                     timeout=40)
            rows = [json.loads(line) for line in out.splitlines() if line.strip()]
            ranks = {r.get("rank") for d in rows for r in d.get("rows", []) if r.get("up")}
            return ranks if code == 0 and ranks == set(range(N)) else None

        wait_for(doc, 40, "slotrun status on node 4 (behind relay 3) to list all 8 ranks")
    finally:
        job.close()


def state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


@case
def a_relay_stopped_from_its_terminal_pauses_every_node_and_resumes_them():
    """Ctrl-Z on relay 3's slotrun: every worker stops, those behind the
    relay too (it tells them before it stops: the chief's word would reach
    them only through it), and no node counts the stopped relay lost; SIGCONT
    resumes every worker, and the job still fails as one."""
    job = start()
    try:
        starts = job.wait_events("start", 0, N, DEADLINE, "every node's worker")
        workers = {e[1]: e[4] for e in starts}
        os.kill(job.pids[3], signal.SIGTSTP)
        wait_for(lambda: all(state(w) == "T" for w in workers.values()), 20, "every worker stopped")
        assert state(job.pids[3]) == "T", "relay 3's slotrun did not stop itself"
        # three heartbeat timeouts of the relay's silence: nobody is lost for it
        deadline = time.monotonic() + 7
        while time.monotonic() < deadline:
            assert not job.exits, f"a node exited while relay 3 was stopped: {job.story()}"
            time.sleep(0.2)  # samples a condition over a window (nothing to wait for), not a sync
        os.kill(job.pids[3], signal.SIGCONT)
        wait_for(lambda: all(state(w) in ("S", "R") for w in workers.values()), 20, "every worker continued")
        logs_name(job, [0, 4, 7], f"job paused: SIGTSTP to node 3 ({addr(3)})")
        job.fail(5)
        assert job.wait_exit(DEADLINE), f"not every node exited: {job.story()}"
        assert job.codes() == [4] * N, job.story()
    finally:
        job.close()


@case
def a_restart_runs_in_step_through_the_relays():
    job = start(["--max-restarts", "1", "--restart-delay", "0"])
    try:
        job.wait_events("start", 0, N, DEADLINE, "every node's worker")
        job.fail(5)
        again = job.wait_events("start", 1, N, DEADLINE, "every node's next attempt")
        assert sorted(e[1] for e in again) == list(range(N))
        assert min(e[3] for e in again) > max(e[3] for e in job.of("term", 0)), \
            "an attempt started before every worker of the last one was stopped"
        assert job.wait_exit(DEADLINE), f"not every node exited: {job.story()}"
        assert job.codes() == [0] * N, job.story()
    finally:
        job.close()


if __name__ == "__main__":
    run()
