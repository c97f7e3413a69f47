# SPDX-License-Identifier: MIT
"""slotrun's stdout, or a --log-dir file, is on a disk that fills up and
then has room again: the output waits, what cannot be kept (past the
console's bounded queue; a log file keeps nothing) is dropped whole lines
and counted, the wait is said when it begins and when it ends (with the
count), the file goes on where it stopped, and the job exits 0."""
import os
import re
import shutil
import subprocess
import tempfile
import uuid

from harness import Skip, binary, case, cleanup_at_exit, job_env, pids_with_env, run, wait_for

SR = binary("slotrun")
BURST = 4000      # lines of about 520 bytes: well past slotrun's 1 MiB queue bound

# Ticks until the test says the disk is full, then a burst larger than the
# queue bound, then tocks (what shows that writes resumed) until the test
# says go, then a last line with the number of tocks.
JOB = r"""
ctl=$1
pad=$(printf '%0500d' 0)
i=0
while [ ! -e "$ctl/full" ]; do i=$((i+1)); echo "tick $i $pad"; sleep 0.01; done
echo $i > "$ctl/ticks"
j=0
while [ $j -lt BURST ]; do j=$((j+1)); echo "burst $j $pad"; done
touch "$ctl/burst-done"
k=0
while [ ! -e "$ctl/go" ]; do k=$((k+1)); echo "tock $k $pad"; sleep 0.01; done
echo "the end $k"
""".replace("BURST", str(BURST))


def scratch(size):
    """A temporary folder with a tmpfs of `size` mounted at disk/ in it,
    unmounted and removed at exit."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        raise Skip("needs root to mount a small tmpfs")
    tmp = tempfile.mkdtemp(prefix="test_enospc.")
    disk = os.path.join(tmp, "disk")
    os.mkdir(disk)

    def remove():
        subprocess.run(["umount", "-l", disk], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", disk], capture_output=True)
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Skip(f"cannot mount a tmpfs: {r.stderr.decode().strip()}")
    cleanup_at_exit(remove)
    return tmp, disk


class Stderr:
    """slotrun's stderr through our own pipe, read without blocking."""

    def __init__(self, f):
        self.f = f
        self.text = b""
        os.set_blocking(f.fileno(), False)

    def read(self):
        try:
            while chunk := os.read(self.f.fileno(), 1 << 16):
                self.text += chunk
        except BlockingIOError:
            pass
        return self.text.decode(errors="replace")

    def has(self, text):
        return text in self.read()


def fill(path):
    """Writes path until the disk has no room left."""
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError as e:
            assert e.errno == 28, e  # ENOSPC


def lines(path):
    with open(path, "rb") as f:
        return f.read().decode().split("\n")


def check_file(path, ctl, prefix, lost_lines, lost_bytes):
    """Every line of the file is whole (never torn at the full disk), it
    ends with the job's last line, and the lines missing from it are
    exactly the ones said lost.  Returns slotrun's own lines in it."""
    got = lines(path)
    own = [line for line in got if line.startswith("slotrun: ")]
    got = [line for line in got if not line.startswith("slotrun: ")]
    m = re.fullmatch(re.escape(prefix) + r"the end (\d+)", got[-2])
    assert m and got[-1] == "", "the file goes on after the wait\n" + "\n".join(got[-5:])
    with open(os.path.join(ctl, "ticks")) as f:
        sent = {"tick": int(f.read()), "burst": BURST, "tock": int(m.group(1))}
    pad = "0" * 500
    seen = {"tick": set(), "burst": set(), "tock": set()}
    for n, line in enumerate(got[:-2]):
        m = re.fullmatch(re.escape(prefix) + r"(tick|burst|tock) (\d+) " + pad, line)
        assert m, f"line {n}: {line[:80]!r}..."
        seen[m.group(1)].add(int(m.group(2)))
    missing = [f"{prefix}{kind} {j} {pad}\n" for kind in ("tick", "burst", "tock")
               for j in range(1, sent[kind] + 1) if j not in seen[kind]]
    assert len(missing) == lost_lines, (len(missing), lost_lines)
    assert sum(map(len, missing)) == lost_bytes, (sum(map(len, missing)), lost_bytes)
    return own


def job_files(tmp):
    """The job's control folder and its script (JOB) in tmp."""
    ctl, script = os.path.join(tmp, "ctl"), os.path.join(tmp, "job.sh")
    os.mkdir(ctl)
    with open(script, "w") as f:
        f.write(JOB)
    return ctl, script


@case
def stdout_on_a_full_disk_resumes_when_there_is_room_and_counts_the_loss():
    tmp, disk = scratch("4m")
    ctl, script = job_files(tmp)
    out = os.path.join(disk, "out")
    tag = uuid.uuid4().hex
    with open(out, "wb") as f:
        p = subprocess.Popen([SR, "--slots", "1", "--", "sh", script, ctl], stdin=subprocess.DEVNULL,
                             stdout=f, stderr=subprocess.PIPE, env=job_env({"I21_TAG": tag}))
    cleanup_at_exit(lambda: p.poll() is None and (p.kill(), p.wait()))
    err = Stderr(p.stderr)
    try:
        wait_for(lambda: "tick 3 " in open(out).read(), 30, "the first lines in the file")
        fill(os.path.join(disk, "filler"))
        said = "slotrun: stdout: No space left on device: retrying until there is room; " \
            "meanwhile what exceeds 1024 KiB is dropped and counted"
        wait_for(lambda: err.has(said), 30, "slotrun to say stdout hit the full disk")
        open(os.path.join(ctl, "full"), "w").close()
        wait_for(lambda: os.path.exists(os.path.join(ctl, "burst-done")), 30, "the burst")
        os.unlink(os.path.join(disk, "filler"))
        resumed = re.compile(r"slotrun: stdout resumed after \d+\.\d s on a full disk \(No space left on "
                             r"device\); (\d+) lines \((\d+) bytes\) were lost\n")
        m = wait_for(lambda: resumed.search(err.read()), 30, "slotrun to say stdout resumed")
        open(os.path.join(ctl, "go"), "w").close()
        code = p.wait(30)
        e = err.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert code == 0, e
    assert e.count(said) == 1, "said once\n" + e
    assert len(resumed.findall(e)) == 1, e
    lost_lines, lost_bytes = int(m.group(1)), int(m.group(2))
    assert lost_lines > 0, e
    check_file(out, ctl, "[rank=0] ", lost_lines, lost_bytes)
    assert f"slotrun: output lost: {lost_bytes} bytes for slotrun's stdout were dropped " \
        "(No space left on device)" in e, e
    assert pids_with_env("", I21_TAG=tag) == [], "processes left behind"


@case
def a_log_file_on_a_full_disk_resumes_when_there_is_room_and_counts_the_loss():
    tmp, disk = scratch("1m")
    logs = os.path.join(disk, "logs")
    ctl, script = job_files(tmp)
    log = os.path.join(logs, "rank-0.stdout")
    tag = uuid.uuid4().hex
    p = subprocess.Popen([SR, "--log-dir", logs, "--", "sh", script, ctl], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=job_env({"I21_TAG": tag}))
    cleanup_at_exit(lambda: p.poll() is None and (p.kill(), p.wait()))
    err = Stderr(p.stderr)
    try:
        wait_for(lambda: os.path.exists(log) and "tick 3 " in open(log).read(), 30, "the first lines in the log")
        fill(os.path.join(disk, "filler"))
        said = f"slotrun: rank 0 (node 0): log file {log}: No space left on device: retrying until there is " \
            "room; its lines meanwhile are dropped and counted"
        wait_for(lambda: err.has(said), 30, "slotrun to say the log file hit the full disk")
        open(os.path.join(ctl, "full"), "w").close()
        wait_for(lambda: os.path.exists(os.path.join(ctl, "burst-done")), 30, "the burst")
        os.unlink(os.path.join(disk, "filler"))
        resumed = re.compile(re.escape(f"slotrun: rank 0 (node 0): log file {log} resumed after ") +
                             r"\d+\.\d s on a full disk \(No space left on device\); (\d+) lines \((\d+) "
                             r"bytes\) were lost\n")
        wait_for(lambda: resumed.search(err.read()), 30, "slotrun to say the log file resumed")
        open(os.path.join(ctl, "go"), "w").close()
        code = p.wait(30)
        e = err.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert code == 0, e
    assert e.count(said) == 1, "said once\n" + e
    m = resumed.findall(e)
    assert len(m) == 1, e
    lost_lines, lost_bytes = int(m[0][0]), int(m[0][1])
    assert lost_lines > 0, e
    check_file(log, ctl, "[rank=0] ", lost_lines, lost_bytes)
    assert f"slotrun: output lost: rank 0's stdout log (No space left on device): {lost_bytes} bytes not written" \
        in e, e
    assert pids_with_env("", I21_TAG=tag) == [], "processes left behind"


@case
def stderr_on_a_full_disk_says_its_wait_once_it_has_room():
    # slotrun cannot say on a full stderr that it is full: both lines come
    # out, in order, once it has room
    tmp, disk = scratch("4m")
    ctl, script = job_files(tmp)
    errf = os.path.join(disk, "err")
    tag = uuid.uuid4().hex
    with open(errf, "wb") as f:
        p = subprocess.Popen([SR, "--", "sh", "-c", 'exec sh "$0" "$1" >&2', script, ctl],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=f,
                             env=job_env({"I21_TAG": tag}))
    cleanup_at_exit(lambda: p.poll() is None and (p.kill(), p.wait()))
    resumed = re.compile(r"slotrun: stderr resumed after \d+\.\d s on a full disk \(No space left on "
                         r"device\); (\d+) lines \((\d+) bytes\) were lost\n")
    try:
        wait_for(lambda: "tick 3 " in open(errf).read(), 30, "the first lines in the file")
        fill(os.path.join(disk, "filler"))
        # the burst is larger than any room left: stderr is then full
        open(os.path.join(ctl, "full"), "w").close()
        wait_for(lambda: os.path.exists(os.path.join(ctl, "burst-done")), 30, "the burst")
        os.unlink(os.path.join(disk, "filler"))
        wait_for(lambda: resumed.search(open(errf).read()), 30, "slotrun to say stderr resumed")
        open(os.path.join(ctl, "go"), "w").close()
        code = p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert code == 0, lines(errf)[-5:]
    m = resumed.search(open(errf).read())
    lost_lines, lost_bytes = int(m.group(1)), int(m.group(2))
    own = check_file(errf, ctl, "[rank=0] ", lost_lines, lost_bytes)
    assert own == ["slotrun: stderr: No space left on device: retrying until there is room; meanwhile what "
                   "exceeds 1024 KiB is dropped and counted", m.group(0)[:-1],
                   f"slotrun: output lost: {lost_bytes} bytes for slotrun's stderr were dropped "
                   "(No space left on device)"], own
    assert pids_with_env("", I21_TAG=tag) == [], "processes left behind"


run()
