# SPDX-License-Identifier: MIT
"""A rank the kernel's OOM killer kills is said to be, in the root cause's
line and in --error-file; a plain SIGKILL of a rank is not.  slotrun runs
in a memory cgroup of its own with a small limit (cgroup v1's memory
controller, or cgroup v2's), made and removed here; needs root."""
import json
import os
import shutil
import signal
import sys
import tempfile
import uuid

from harness import Proc, Skip, binary, case, cleanup_at_exit, job_env, run, run_cmd, wait_for

SR = binary("slotrun")
WR = binary("wrap_rank")
LIMIT = 64 << 20

# Rank 1 eats memory past the limit, touching every page; rank 0 waits
# to be stopped.  Each says when it runs, with its pid.
EATER = r"""
import os, sys, time
print("up", os.environ["RANK"], os.getpid(), flush=True)
if os.environ["RANK"] == "1":
    chunks = []
    for _ in range(64):
        b = bytearray(16 << 20)
        for i in range(0, len(b), 4096):
            b[i] = 1
        chunks.append(b)
    print("not killed", flush=True)
time.sleep(120)
"""


def memory_cgroup_parent():
    """(kind, folder) where a memory cgroup of ours can be made, or raises
    Skip with the reason.  cgroup v2: our own cgroup when it hands the
    memory controller down, else the hierarchy's root."""
    if os.geteuid() != 0:
        raise Skip("needs root to make a memory cgroup")
    with open("/proc/self/cgroup") as f:
        lines = [ln.rstrip("\n").split(":", 2) for ln in f]
    for _, ctl, path in lines:
        if "memory" in ctl.split(","):
            base = "/sys/fs/cgroup/memory" + (path if path != "/" else "")
            if os.path.isdir(base):
                return "v1", base
    for ident, ctl, path in lines:
        if ident != "0" or ctl != "":
            continue
        for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
            for base in (root + (path if path != "/" else ""), root):
                ctls = os.path.join(base, "cgroup.subtree_control")
                if os.path.exists(ctls) and "memory" in open(ctls).read().split():
                    return "v2", base
    raise Skip("no memory controller handed down: neither cgroup v1's memory nor cgroup v2's")


class Cgroup:
    """A memory cgroup with LIMIT bytes, removed by close() whatever is
    left in it."""

    def __init__(self):
        self.kind, parent = memory_cgroup_parent()
        self.path = os.path.join(parent, "slotrun-oom-" + uuid.uuid4().hex[:12])
        try:
            os.mkdir(self.path)
        except OSError as e:
            raise Skip(f"cannot make a cgroup in {parent}: {e}")
        cleanup_at_exit(self.close)
        try:
            if self.kind == "v1":
                self.write("memory.limit_in_bytes", LIMIT)
            else:
                self.write("memory.max", LIMIT)
                if os.path.exists(os.path.join(self.path, "memory.swap.max")):
                    self.write("memory.swap.max", 0)
        except Skip:
            self.close()
            raise

    def write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(f"{value}\n")

    def procs(self):
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                return [int(x) for x in f.read().split()]
        except FileNotFoundError:
            return []

    def close(self):
        if not os.path.isdir(self.path):
            return
        for pid in self.procs():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_for(lambda: not self.procs(), 30, f"{self.path} to empty")
        # rmdir may race the last exit's uncharge: EBUSY for a moment
        wait_for(lambda: self._rmdir(), 30, f"{self.path} to be removed")

    def _rmdir(self):
        try:
            os.rmdir(self.path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            return False

    def start(self, argv):
        """Starts argv (slotrun) inside the cgroup: the shell moves itself
        in, then execs."""
        script = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
        return Proc(["sh", "-c", script, self.path, *argv], environ=job_env())


def in_cgroup(fn):
    def body():
        cg = Cgroup()
        d = tempfile.mkdtemp()
        try:
            fn(cg, d)
        finally:
            cg.close()
            shutil.rmtree(d)
    body.__name__ = fn.__name__
    return case(body)


def slotrun(cg, d, *args, script=EATER):
    ef = os.path.join(d, "err.json")
    p = cg.start([SR, "--slots", "2", "--error-file", ef, *args, "--", sys.executable, "-c", script])
    return p, ef


def headline(err):
    return [ln for ln in err.decode().splitlines() if ln.startswith("slotrun: job failed:")]


@in_cgroup
def oom_killed_rank_is_said_so(cg, d):
    for wrap in ([], ["--no-wrap"]):
        p, ef = slotrun(cg, d, *wrap)
        code = p.finish(timeout=120)
        assert code == 137, (wrap, code, p.err)
        assert cg.procs() == [], "processes left behind"
        assert b"not killed" not in p.out, "the limit did not hold: " + repr(p.out)
        head = headline(p.err)
        assert len(head) == 1 and "rank 1 " in head[0] and "exit 137 (SIGKILL)" in head[0], (wrap, p.err)
        assert "OOM killer" in head[0], (wrap, head)
        with open(ef) as f:
            doc = json.load(f)
        root = doc["root_cause"]
        assert root["rank"] == 1 and root["oom_killed"] is True and "OOM killer" in root["note"], root
        if os.access("/dev/kmsg", os.R_OK):
            # the kernel log names the pid wrap_rank (with --no-wrap, the
            # guard's) told slotrun its command has
            cmd = [ln for ln in p.out.decode().splitlines() if "up 1 " in ln][0].split()[-1]
            assert root["note"] == f"killed by the OOM killer (pid {cmd}, python3)", (root, p.out)
            assert head[0].endswith(": killed by the OOM killer (pid %s, python3)" % cmd), head
        assert [r.get("oom_killed") for r in doc["ranks"]] == [None, True], doc["ranks"]


@in_cgroup
def plain_sigkill_is_not_oom(cg, d):
    quiet = 'import os, time\nprint("up", os.environ["RANK"], os.getpid(), flush=True)\ntime.sleep(120)\n'
    for wrap in ([], ["--no-wrap"]):
        p, ef = slotrun(cg, d, *wrap, script=quiet)
        p.wait_output(lambda s: b"up 1 " in s.out, 60, "rank 1 up")
        line = [ln for ln in p.out.decode().splitlines() if "up 1 " in ln][0]
        os.kill(int(line.split()[-1]), signal.SIGKILL)
        code = p.finish(timeout=60)
        assert code == 137, (wrap, code, p.err)
        assert cg.procs() == [], "processes left behind"
        assert b"OOM" not in p.err, (wrap, p.err)
        head = headline(p.err)
        assert len(head) == 1 and "rank 1 " in head[0] and head[0].rstrip().endswith("after start"), p.err
        with open(ef) as f:
            doc = json.load(f)
        assert "oom_killed" not in doc["root_cause"] and "note" not in doc["root_cause"], doc
        assert [r.get("oom_killed") for r in doc["ranks"]] == [None, None], doc["ranks"]


@case
def wrap_rank_tells_its_command_pid_on_pid_fd():
    r, w = os.pipe()
    try:
        code, out, err = run_cmd([WR, "--pid-fd", str(w), "0", "sh", "-c", "echo $$; ls /proc/$$/fd"],
                                 timeout=20, pass_fds=(w,))
        os.close(w)
        w = -1
        told = os.read(r, 64)
    finally:
        if w >= 0:
            os.close(w)
        os.close(r)
    assert code == 0, err
    lines = [ln.removeprefix("[rank=0] ") for ln in out.decode().splitlines()]
    assert told == lines[0].encode() + b"\n", (told, out)
    assert sorted(int(x) for x in lines[1:]) == [0, 1, 2], ("the command inherits no more", out)
    for bad in ("1", "x", "999"):
        code, _, err = run_cmd([WR, "--pid-fd", bad, "0", "true"], timeout=20)
        assert code == 2 and err.startswith(b"wrap_rank: --pid-fd wants an open fd above 2, not '%s'"
                                            % bad.encode()), (bad, code, err)


run()
