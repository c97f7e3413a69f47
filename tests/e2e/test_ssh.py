# SPDX-License-Identifier: MIT
"""examples/ssh/launch.sh against real sshds: one in each node of a
netns.Cluster (three nodes, 10.213.0.1-3), with a key made for the test,
and launch.sh run on node 0 as the login node.  It starts one slotrun per
host with its node rank and one secret, with ssh_config aliases as hosts,
brings back the job's status as its own, in plain LF lines, and its Ctrl-C
or SIGTERM stops every host in order."""
import re
import signal
import time

from harness import case, run, wait_for
from jobs import job_on
from ssh_nodes import SshNodes


def lines(proc):
    """launch.sh's stdout as lines, which must end in LF alone, with no
    echo of a Ctrl-C, though they come through the remote terminals."""
    assert b"\r" not in proc.out and b"^C" not in proc.out, proc.out[-2000:]
    return proc.out.decode(errors="replace").splitlines()


@case
def ssh_launch_starts_every_host_with_its_rank_and_one_secret():
    with job_on(3, "ssh") as job:
        sshd = SshNodes(job.cl, job.dir)
        p = sshd.launch(["--slots", "2", "--", "sh", "-c",
                         'echo "rank $RANK of $WORLD_SIZE node $NODE_RANK master $MASTER_ADDR secret '
                         '$(printf %s "$SLOTRUN_JOB_SECRET" | cksum)"'])
        try:
            assert p.finish(60) == 0, (p.out[-2000:], p.err[-2000:])
        finally:
            p.kill()
        got = {}
        for line in lines(p):
            m = re.fullmatch(r"\[rank=(\d)\] rank (\d) of 6 node (\d) master (\S+) secret (.+)", line)
            if m:
                got[int(m.group(1))] = m.groups()[1:]
        assert sorted(got) == list(range(6)), lines(p)
        assert all(int(g[0]) == r and int(g[1]) == r // 2 and g[2] == job.cl.addr(0) for r, g in got.items()), got
        assert len({g[3] for g in got.values()}) == 1, f"one secret on every host: {got}"
        # the job's status comes back
        p = sshd.launch(["--slots", "2", "--grace", "1", "--", "sh", "-c", '[ "$RANK" = 3 ] && exit 4; exec sleep 60'])
        try:
            assert p.finish(60) == 4, (p.out[-2000:], p.err[-2000:])
        finally:
            p.kill()
        assert "job failed: rank 3 on node 1 (10.213.0.2) exit 4" in p.out.decode(errors="replace"), p.out[-2000:]
        wait_for(lambda: not sshd.job_processes(), 10, "the sessions to end")


@case
def ssh_launch_takes_ssh_config_aliases():
    with job_on(3, "ssha") as job:
        sshd = SshNodes(job.cl, job.dir)
        # node0..node2 are the client config's Host aliases: the nodes are
        # told the addresses behind them
        p = sshd.launch(["--slots", "1", "--", "sh", "-c", 'echo "rank $RANK master $MASTER_ADDR"'],
                        hosts="node0,node1,node2")
        try:
            assert p.finish(60) == 0, (p.out[-2000:], p.err[-2000:])
        finally:
            p.kill()
        for r in range(3):
            assert f"[rank={r}] rank {r} master {job.cl.addr(0)}" in lines(p), lines(p)
        # a host ssh cannot reach (no such address on the bridge) stops the
        # others, which would wait out the join timeout for its node: ssh's
        # 255 is launch.sh's
        p = sshd.launch(["--join-timeout", "300", "--", "true"], hosts="node0,10.213.0.9")
        try:
            assert p.finish(60) == 255, (p.out[-2000:], p.err[-2000:])
        finally:
            p.kill()
        wait_for(lambda: not sshd.job_processes(), 10, "the sessions to end")


def stop_with(sig):
    with job_on(3, "sshc") as job:
        sshd = SshNodes(job.cl, job.dir)
        p = sshd.launch(["--slots", "2", "--grace", "5", "--", "sh", "-c",
                         "trap 'echo got INT; exit 130' INT; echo ready; sleep 60 & wait $!; exit 1"])
        try:
            p.wait_output(lambda s: all(f"[rank={r}] ready" in lines(s) for r in range(6)), 60,
                          "every rank to be ready")
            t0 = time.monotonic()
            p.signal(sig)
            code = p.finish(30)
        finally:
            p.kill()
        # the nodes' status is launch.sh's: they were sent a Ctrl-C
        wait_for(lambda: all(sshd.error_file(i) for i in range(3)), 10, "every node's --error-file")
        assert {sshd.error_file(i)["exit_status"] for i in range(3)} == {130}, [sshd.error_file(i) for i in range(3)]
        assert code == 130, (code, p.out[-2000:], p.err[-2000:])
        assert time.monotonic() - t0 < 15, "not stopped within the grace"
        for r in range(6):   # an orderly stop: every rank had its say
            assert f"[rank={r}] got INT" in lines(p), lines(p)
        assert "slotrun: job stopped: SIGINT to node 0 (10.213.0.1)" in lines(p), lines(p)
        try:
            wait_for(lambda: not sshd.job_processes(), 10, "every process of the job to end")
        except AssertionError:
            raise AssertionError(f"left on the nodes: {sshd.job_processes()}") from None


@case
def ssh_launch_ctrl_c_stops_every_host():
    stop_with(signal.SIGINT)


@case
def ssh_launch_sigterm_stops_every_host_with_their_status():
    stop_with(signal.SIGTERM)


run()
