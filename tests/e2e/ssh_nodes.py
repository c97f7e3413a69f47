# SPDX-License-Identifier: MIT
"""Real sshds on the nodes of a netns.Cluster, for the tests that start
slotrun over ssh (test_ssh, test_pdsh): one on port 22 of every node, with
a key made for the test and a client config that uses it."""
import json
import os
import shlex
import shutil
import subprocess

from harness import Proc, Skip, wait_for
from jobs import SR, clean_env

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
            # aliases as a user's ssh_config has them: node0 is 10.213.0.1, ...
            for i in range(cl.n):
                f.write(f"Host node{i}\n  HostName {cl.addr(i)}\n")
            f.write(f"Host *\n  IdentityFile {d}/id\n  IdentitiesOnly yes\n  UserKnownHostsFile /dev/null\n"
                    "  StrictHostKeyChecking no\n  LogLevel ERROR\n  BatchMode yes\n  User root\n"
                    "  ConnectTimeout 10\n")
        # An ssh session starts from the login's environment, not ours: the
        # sanitizers' options of the ASan leg go along through a wrapper,
        # which also gives every node an --error-file of its own, named by
        # its address (SSH_CONNECTION's third word), for error_file().
        self.dir = d
        self.slotrun = os.path.join(d, "slotrun")
        keep = [f"{k}={v}" for k, v in os.environ.items() if k in ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS")]
        with open(self.slotrun, "w") as f:
            f.write("#!/bin/sh\naddr=${SSH_CONNECTION#* * }\naddr=${addr%% *}\n"
                    f"exec env {' '.join(shlex.quote(k) for k in keep)} "
                    f"SLOTRUN_ERROR_FILE={shlex.quote(d)}/error.$addr {shlex.quote(SR)} \"$@\"\n")
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

    def launch(self, args, hosts=None):
        """launch.sh on node 0 (the login node), over our sshds, to hosts
        (default: every node's address)."""
        return Proc(self.cl.prefix(0) + [LAUNCH, hosts or ",".join(self.cl.addrs), *args],
                    environ=clean_env({"SSH": f"ssh -F {self.client_config}", "SLOTRUN": self.slotrun}))

    def error_file(self, i):
        """Node i's --error-file as JSON, or None while there is none."""
        try:
            with open(os.path.join(self.dir, f"error.{self.cl.addr(i)}")) as f:
                return json.load(f)
        except (FileNotFoundError, ValueError):
            return None

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
