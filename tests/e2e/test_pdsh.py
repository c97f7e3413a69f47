# SPDX-License-Identifier: MIT
"""A whole job in one pdsh line, against real sshds on the three nodes of a
netns.Cluster (10.213.0.1-3): every node finds its own rank in --addrs,
pdsh -S returns the job's status, and a job ends with the ssh sessions
that started it: a Ctrl-C on pdsh, or one ssh client killed, stops every
node with nothing left running; one node with no job plane too.  Under
nohup, or with only a stdout reader gone (| head), the job goes on."""
import os
import shlex
import signal
import shutil
import time

from harness import Proc, Skip, case, run, wait_for
from jobs import clean_env, job_on
from ssh_nodes import SshNodes

HOSTS = "10.213.0.[1-3]"
GRACE = 5


def pdsh(sshd, remote):
    """pdsh -S on node 0 (the login node) over the test's sshds, in a
    process group of its own as a terminal's foreground job is; remote is
    argv, quoted for the remote shell as a user would."""
    if not shutil.which("pdsh"):
        raise Skip("needs pdsh (Debian: pdsh)")
    e = clean_env({"PDSH_RCMD_TYPE": "ssh", "PDSH_SSH_ARGS": f"-F {sshd.client_config} %h"})
    return Proc(sshd.cl.prefix(0) + ["pdsh", "-S", "-w", HOSTS, shlex.join(remote)], environ=e,
                start_new_session=True)


def slotrun(sshd, *args):
    """slotrun on every node, with one secret from a file they share."""
    secret = os.path.join(sshd.dir, "secret")
    if not os.path.exists(secret):
        with open(secret, "w") as f:
            f.write(os.urandom(16).hex() + "\n")
    return [sshd.slotrun, "--secret-file", secret, "--addrs", HOSTS, *args]


def nothing_left(sshd, within):
    try:
        wait_for(lambda: not sshd.job_processes(), within, "every process of the job to end")
    except AssertionError:
        raise AssertionError(f"left on the nodes: {sshd.job_processes()}") from None


def stopped_by_hangup(sshd, job, within):
    """Every node's --error-file says the job stopped with SIGHUP, all
    naming the same node, and exit 129."""
    wait_for(lambda: all(sshd.error_file(i) for i in range(3)), within, "every node's --error-file")
    files = [sshd.error_file(i) for i in range(3)]
    for f in files:
        assert f["exit_status"] == 129 and f["stop_signal"] == "SIGHUP", files
    causes = {(f["root_cause"]["node_rank"], f["root_cause"]["host"]) for f in files}
    assert len(causes) == 1, files
    (node, host), = causes
    assert host == job.cl.addr(node), files


def ctrl_c(p):
    """A user's Ctrl-C on pdsh: SIGINT to its process group.  pdsh says its
    threads' status on the first and aborts on a second within a second,
    which a user then presses."""
    os.killpg(p.pid, signal.SIGINT)
    p.wait_output(lambda s: b"within 1 sec" in s.err or s.p.poll() is not None, 10, "pdsh's answer to a Ctrl-C")
    if p.p.poll() is None:
        os.killpg(p.pid, signal.SIGINT)


def ready_file(d, r):
    return os.path.join(d, f"ready.{r}")


# Each worker says it is up in a file (pdsh's own output may be lost with
# the session) and, on SIGHUP, that it got one, then exits.
WORKER = ["sh", "-c", "trap 'echo HUP > \"$0/hup.$RANK\"; exit 129' HUP; "
          "echo up > \"$0/ready.$RANK\"; sleep 60 & wait $!; exit 1"]


def start_job(job, sshd):
    p = pdsh(sshd, slotrun(sshd, "--slots", "2", "--grace", str(GRACE), "--", *WORKER, job.dir))
    try:
        wait_for(lambda: all(os.path.exists(ready_file(job.dir, r)) for r in range(6)), 60, "every rank to be up")
    except AssertionError:
        p.kill()
        p.finish(10)
        raise AssertionError(f"not every rank came up: {p.out[-2000:]!r} {p.err[-2000:]!r}") from None
    return p


@case
def pdsh_one_line_starts_a_whole_job_without_node_rank():
    with job_on(3, "pdsh") as job:
        sshd = SshNodes(job.cl, job.dir)
        p = pdsh(sshd, slotrun(sshd, "--slots", "2", "--", "sh", "-c",
                               'echo "rank $RANK of $WORLD_SIZE node $NODE_RANK"'))
        try:
            assert p.finish(60) == 0, (p.out[-2000:], p.err[-2000:])
        finally:
            p.kill()
        out = p.out.decode(errors="replace")
        for r in range(6):
            assert f"{HOSTS[:-5]}{r // 2 + 1}: [rank={r}] rank {r} of 6 node {r // 2}" in out, out
        # pdsh -S returns the job's status, which every node exits with
        p = pdsh(sshd, slotrun(sshd, "--slots", "2", "--grace", "1", "--", "sh", "-c",
                               '[ "$RANK" = 3 ] && exit 4; exec sleep 60'))
        try:
            assert p.finish(60) == 4, (p.out[-2000:], p.err[-2000:])
        finally:
            p.kill()
        assert "job failed: rank 3 on node 1 (10.213.0.2) exit 4" in p.out.decode(errors="replace") + \
            p.err.decode(errors="replace"), (p.out[-2000:], p.err[-2000:])
        nothing_left(sshd, 10)


@case
def ctrl_c_on_pdsh_stops_every_node():
    with job_on(3, "pdshc") as job:
        sshd = SshNodes(job.cl, job.dir)
        p = start_job(job, sshd)
        t0 = time.monotonic()
        ctrl_c(p)
        try:
            p.finish(30)
        finally:
            p.kill()
        nothing_left(sshd, GRACE + 10)
        assert time.monotonic() - t0 < GRACE + 10, "not stopped within the grace"
        for r in range(6):   # an orderly stop: every rank had its SIGHUP
            assert os.path.exists(os.path.join(job.dir, f"hup.{r}")), f"rank {r} got no SIGHUP"
        stopped_by_hangup(sshd, job, 10)


@case
def a_killed_ssh_client_ends_the_job_on_every_node():
    with job_on(3, "pdshk") as job:
        sshd = SshNodes(job.cl, job.dir)
        p = start_job(job, sshd)
        ssh = [pid for pid in job.cl.pids(0) if _comm(pid) == "ssh" and f"10.213.0.2" in _cmdline(pid)]
        assert len(ssh) == 1, (ssh, p.err[-2000:])
        os.kill(ssh[0], signal.SIGKILL)
        try:
            code = p.finish(GRACE + 20)
        finally:
            p.kill()
        assert code != 0, (code, p.out[-2000:], p.err[-2000:])
        nothing_left(sshd, GRACE + 10)
        stopped_by_hangup(sshd, job, 10)
        assert sshd.error_file(0)["root_cause"]["node_rank"] == 1, sshd.error_file(0)
        # the nodes whose sessions stayed say how it ended
        out = p.out.decode(errors="replace") + p.err.decode(errors="replace")
        assert "slotrun: job stopped: node 1 (10.213.0.2): the session that started it ended (SIGHUP)" \
            in out, out[-2000:]


@case
def nohup_keeps_a_job_past_its_session():
    with job_on(3, "pdshn") as job:
        sshd = SshNodes(job.cl, job.dir)
        p = pdsh(sshd, ["nohup", *slotrun(sshd, "--slots", "2", "--grace", "1", "--", *WORKER, job.dir)])
        wait_for(lambda: all(os.path.exists(ready_file(job.dir, r)) for r in range(6)), 60, "every rank to be up")
        ctrl_c(p)
        try:
            p.finish(30)
        finally:
            p.kill()
        # still running: a SIGHUP for a rank or a node's end (its
        # --error-file) is what is awaited here; its absence is the assertion
        wait_for(lambda: sum("slotrun" in c for c in sshd.job_processes().values()) >= 3, 10, "the slotruns")
        try:
            wait_for(lambda: any(os.path.exists(os.path.join(job.dir, f"hup.{r}")) for r in range(6))
                     or any(sshd.error_file(i) for i in range(3)), 2 * GRACE, "the job to end")
        except AssertionError:
            return
        raise AssertionError(f"the job ended with its session under nohup: {[sshd.error_file(i) for i in range(3)]}")


def ssh(sshd, node, remote):
    """Plain ssh from node 0 to node `node`, remote quoted for its shell."""
    return Proc(sshd.cl.prefix(0) + ["ssh", "-F", sshd.client_config, sshd.cl.addr(node), remote],
                environ=clean_env())


@case
def one_node_ends_with_its_session_but_not_with_a_reader_that_leaves():
    with job_on(2, "sshone") as job:
        sshd = SshNodes(job.cl, job.dir)
        # stdout into a reader that leaves (| head) while the session stays:
        # the job goes on to its end.  Far more output than the pipe holds,
        # so that the reader has certainly left before slotrun's last write
        # (the EPIPE, and so the --error-file that records the loss)
        p = ssh(sshd, 1, shlex.join([sshd.slotrun, "--slots", "2", "--", "sh", "-c",
                                     'echo one; echo up > "$0/ready.$RANK"; seq 1 100000; exec sleep 3',
                                     job.dir])
                + " | head -n 1")
        try:
            assert p.finish(60) == 0, (p.out[-2000:], p.err[-2000:])
        finally:
            p.kill()
        wait_for(lambda: sshd.error_file(1), 10, "the node's --error-file")
        assert sshd.error_file(1)["exit_status"] == 0, sshd.error_file(1)
        os.remove(os.path.join(job.dir, f"error.{job.cl.addr(1)}"))
        for r in range(2):
            os.remove(ready_file(job.dir, r))
        # one node, no job plane: its ssh client killed, it stops all the same
        p = ssh(sshd, 1, shlex.join([sshd.slotrun, "--slots", "2", "--grace", str(GRACE), "--", *WORKER, job.dir]))
        try:
            wait_for(lambda: all(os.path.exists(ready_file(job.dir, r)) for r in range(2)), 60, "every rank to be up")
            p.kill()
            p.finish(10)
        finally:
            p.kill()
        nothing_left(sshd, GRACE + 10)
        wait_for(lambda: sshd.error_file(1), 10, "the node's --error-file")
        f = sshd.error_file(1)
        assert f["exit_status"] == 129 and f["stop_signal"] == "SIGHUP", f
        assert all(os.path.exists(os.path.join(job.dir, f"hup.{r}")) for r in range(2)), "every rank got SIGHUP"


def _comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


run()
