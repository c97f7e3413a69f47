# SPDX-License-Identifier: MIT
"""A job of 256 nodes, simulated on this machine (sim_nodes.py: 256
slotruns of one slot on loopback, the chief holding 255 connections): every
node joins and its worker runs; one rank's failure stops every node's
worker and every node exits with its status, naming it; with
--max-restarts 1 every node's next attempt runs after it.  The same
job as a relay tree of fan-out 16 (each group a network namespace, root
only: sim_nodes.py) joins, fails and restarts in step, the chief holding
15 nodes and 15 relays.  And the open files a job of many nodes needs are
the chief's alone.

How fast is bench/scale.py's (join, reach, restart, the chief's memory
against N); the deadlines here are generous, since 256 nodes share the
machine's cores with whatever else runs."""
import resource
import shutil
import tempfile

from harness import Skip, binary, case, job_env, run, run_cmd
import sim_nodes

SR = binary("slotrun")
WORKER = binary("scale_worker")
N = 256
VICTIM = 3 * N // 4
DEADLINE = 180   # seconds for each step of a job of 256 nodes on a loaded machine


def enough_files():
    """Raises Skip where this machine's hard limit cannot hold N nodes'
    open files (the chief's and ours); raises the soft limit to it."""
    need = sim_nodes.fds_needed(N)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        raise Skip(f"{N} simulated nodes need about {need} open files; the hard limit is {hard}")
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def run_job(extra, fanout=0):
    job = sim_nodes.Job(SR, WORKER, N, ["--grace", "10", *extra], folder=tempfile.gettempdir(), fanout=fanout)
    job.start()
    return job


@case
def a_job_of_256_nodes_joins_and_a_failure_stops_every_node_with_its_status():
    enough_files()
    job = run_job([])
    try:
        starts = job.wait_events("start", 0, N, DEADLINE, "every node's worker")
        assert sorted(e[1] for e in starts) == list(range(N)), "a rank ran twice or not at all"
        job.fail(VICTIM)
        assert job.wait_exit(DEADLINE), f"not every node exited: {job.story()}"
        assert job.codes() == [4] * N, job.story()
        stopped = {e[1] for e in job.of("term", 0)}
        assert stopped == set(range(N)) - {VICTIM}, f"{N - 1 - len(stopped)} workers were not stopped"
        cause = f"rank {VICTIM} on node {VICTIM} (127.0.0.1) exit 4"
        for i in (0, 1, N // 2, VICTIM, N - 1):
            assert cause in job.node_log(i), f"node {i} does not name the root cause: {job.node_log(i)[-500:]}"
    finally:
        job.close()


@case
def a_job_of_256_nodes_as_a_relay_tree_fails_and_restarts_in_step():
    enough_files()
    job = run_job(["--max-restarts", "1", "--restart-delay", "0"], fanout=16)
    try:
        job.wait_events("start", 0, N, DEADLINE, "every node's worker")
        chief_fds = sim_nodes.Job.proc(job.pids[0]).get("fds", 0)
        assert chief_fds < 100, f"the chief holds {chief_fds} open files: not a tree of 30 connections"
        job.fail(VICTIM)
        again = job.wait_events("start", 1, N, DEADLINE, "every node's next attempt")
        assert sorted(e[1] for e in again) == list(range(N))
        stopped = job.of("term", 0)
        assert len(stopped) == N - 1, f"{len(stopped)} of {N - 1} workers were stopped"
        assert min(e[3] for e in again) > max(e[3] for e in stopped), \
            "an attempt started before every worker of the last one was stopped"
        assert job.wait_exit(DEADLINE), f"not every node exited: {job.story()}"
        assert job.codes() == [0] * N, job.story()
        cause = f"rank {VICTIM} on node {VICTIM} (10.213.0.{VICTIM // 16 + 1}) exit 4"
        for i in (0, 1, 16, VICTIM, N - 1):
            assert cause in job.node_log(i), f"node {i} does not name the cause: {job.node_log(i)[-500:]}"
    finally:
        job.close()


@case
def a_job_of_256_nodes_restarts_in_step_after_a_failure():
    enough_files()
    job = run_job(["--max-restarts", "1", "--restart-delay", "0"])
    try:
        job.wait_events("start", 0, N, DEADLINE, "every node's worker")
        job.fail(VICTIM)
        again = job.wait_events("start", 1, N, DEADLINE, "every node's next attempt")
        assert sorted(e[1] for e in again) == list(range(N))
        t_fail = job.of("fail")[0][3]
        stopped = job.of("term", 0)
        assert len(stopped) == N - 1, f"{len(stopped)} of {N - 1} workers were stopped"
        assert min(e[3] for e in again) > max(e[3] for e in stopped) > t_fail, \
            "an attempt started before every worker of the last one was stopped"
        assert job.wait_exit(DEADLINE), f"not every node exited: {job.story()}"
        assert job.codes() == [0] * N, job.story()
    finally:
        job.close()


@case
def only_the_chief_needs_open_files_for_every_node():
    """A node of a 1000-node job needs a few open files; the chief one per
    node and as many handshakes: under a limit of 200 the chief refuses to
    start, naming the need, and another node goes on to its join."""
    if not shutil.which("prlimit"):
        raise Skip("needs prlimit")
    env = job_env({"SLOTRUN_JOB_SECRET": "scale-fds"})
    port = sim_nodes.free_port_pair()
    common = ["--nnodes", "1000", "--master-addr", "127.0.0.1", "--master-port", str(port), "--bind", "none",
              "--join-timeout", "1"]
    code, out, err = run_cmd(["prlimit", "--nofile=200:200", SR, *common, "--node-rank", "0", "--", "true"],
                             env=env, timeout=30)
    assert code == 2 and b"1 slot and the chief's connections to 999 other nodes need about" in err, (code, err)
    code, out, err = run_cmd(["prlimit", "--nofile=200:200", SR, *common, "--node-rank", "7", "--", "true"],
                             env=env, timeout=30)
    assert code == 2 and b"open files" not in err and b"could not join the chief" in err, (code, err)


if __name__ == "__main__":
    run()
