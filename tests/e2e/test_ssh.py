# SPDX-License-Identifier: MIT
"""examples/ssh/launch.sh against real sshds: one in each node of a
netns.Cluster (three nodes, 10.213.0.1-3), with a key made for the test,
and launch.sh run on node 0 as the login node.  It starts one slotrun per
host with its node rank and one secret, brings back the job's status, and
its Ctrl-C stops every host in order."""
import os
import re
import shlex
import shutil
import signal
import subprocess
import time

from harness import Proc, Skip, case, run, wait_for
from jobs import SR, clean_env, job_on

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCH = os.path.join(HERE, "..", "..", "examples", "ssh", "launch.sh")
SSHD = "/usr/sbin/sshd"


class SshNodes:
    """An sshd on port 22 of every node of cl, keys and configs in d.  Each
    sshd runs in a mount namespace of its own with a private /run (for its
    /run/sshd), so nothing outside the test changes; Cluster.close kills
    them with everything else on the nodes."""

    def __init__(self, cl, d):
        if not os.path.exists(SSHD) or not shutil.which("ssh") or not shutil.which("unshare"):
            raise Skip(f"needs {SSHD} and ssh (Debian: openssh-server) and unshare")
        self.cl = cl
        for key in ("host_key", "id"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(d, key)], check=True,
                           timeout=30)
        shutil.copy(os.path.join(d, "id.pub"), os.path.join(d, "authorized_keys"))
        self.client_config = os.path.join(d, "ssh_config")
        with open(self.client_config, "w") as f:
            f.write(f"Host *\n  IdentityFile {d}/id\n  IdentitiesOnly yes\n  UserKnownHostsFile /dev/null\n"
                    "  StrictHostKeyChecking no\n  LogLevel ERROR\n  BatchMode yes\n  User root\n"
                    "  ConnectTimeout 10\n")
        # an ssh session starts from the login's environment, not ours: the
        # sanitizers' options of the ASan leg go along through a wrapper
        self.slotrun = SR
        sanitizers = {k: v for k, v in os.environ.items() if k in ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS")}
        if sanitizers:
            self.slotrun = os.path.join(d, "slotrun")
            with open(self.slotrun, "w") as f:
                f.write("#!/bin/sh\nexec env " + " ".join(shlex.quote(f"{k}={v}") for k, v in sanitizers.items())
                        + f" {shlex.quote(SR)} \"$@\"\n")
            os.chmod(self.slotrun, 0o755)
        self.sshd = []
        for i in range(cl.n):
            conf = os.path.join(d, f"sshd_config.{i}")
            with open(conf, "w") as f:
                f.write(f"ListenAddress {cl.addr(i)}:22\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n"
                        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\nLogLevel ERROR\n")
            self.sshd.append(Proc(cl.prefix(i) + [
                "unshare", "--mount", "sh", "-c",
                f"mount -t tmpfs -o mode=755 slotrun-sshd /run && mkdir -m 755 /run/sshd && exec {SSHD} -D -e -f {conf}"],
                environ=clean_env()))
        for i in range(cl.n):
            wait_for(lambda: self._listening(i), 20, f"sshd on {cl.addr(i)}:22")

    def _listening(self, i):
        if self.sshd[i].p.poll() is not None:
            self.sshd[i].finish(5)
            raise AssertionError(f"sshd on node {i} exited: {self.sshd[i].err[-1000:]!r}")
        s = self.cl.socket(0)
        try:
            s.settimeout(2)
            s.connect((self.cl.addr(i), 22))
            return True
        except OSError:
            return False
        finally:
            s.close()

    def launch(self, args):
        """launch.sh on node 0 (the login node), over our sshds."""
        return Proc(self.cl.prefix(0) + [LAUNCH, ",".join(self.cl.addrs), *args],
                    environ=clean_env({"SSH": f"ssh -F {self.client_config}", "SLOTRUN": self.slotrun}))

    def job_processes(self):
        """What runs on the nodes besides the sshds themselves."""
        keep = {p.pid for p in self.sshd}
        left = {}
        for i in range(self.cl.n):
            for pid in self.cl.pids(i):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                    with open(f"/proc/{pid}/stat") as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                except OSError:
                    continue
                if pid not in keep and ppid not in keep and not cmd.startswith("unshare"):
                    left[pid] = cmd
                elif ppid in keep and "sshd" in cmd and "[listener]" not in cmd:
                    left[pid] = cmd     # a session still open
        return left


def lines(proc):
    """launch.sh's stdout as lines: the remote terminals end them in \r\n
    and echo a Ctrl-C as ^C."""
    return proc.out.replace(b"\r", b"").replace(b"^C", b"").decode(errors="replace").splitlines()


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
def ssh_launch_ctrl_c_stops_every_host():
    with job_on(3, "sshc") as job:
        sshd = SshNodes(job.cl, job.dir)
        p = sshd.launch(["--slots", "2", "--grace", "5", "--", "sh", "-c",
                         "trap 'echo got INT; exit 130' INT; echo ready; sleep 60 & wait $!; exit 1"])
        try:
            p.wait_output(lambda s: all(f"[rank={r}] ready" in lines(s) for r in range(6)), 60,
                          "every rank to be ready")
            t0 = time.monotonic()
            p.signal(signal.SIGINT)
            code = p.finish(30)
        finally:
            p.kill()
        assert code == 130, (code, p.out[-2000:], p.err[-2000:])
        assert time.monotonic() - t0 < 15, "not stopped within the grace"
        for r in range(6):   # an orderly stop: every rank had its say
            assert f"[rank={r}] got INT" in lines(p), lines(p)
        assert "slotrun: job stopped: SIGINT to node 0 (10.213.0.1)" in lines(p), lines(p)
        try:
            wait_for(lambda: not sshd.job_processes(), 10, "every process of the job to end")
        except AssertionError:
            raise AssertionError(f"left on the nodes: {sshd.job_processes()}") from None


run()
