# SPDX-License-Identifier: MIT
"""The stacks slotrun takes of its ranks (launcher/stacks.h), with no outside
program: a hung CPython 3.11 rank shows its Python frames (function, file,
line) among its native ones, a C rank its functions by name; a rank that
does not stop (uninterruptible sleep) or is stopped neither holds up the
collection nor the job's end; a collection on a job that keeps running
leaves nothing traced or stopped; and slotrun run by another user than root
still takes its own workers' stacks."""
import glob
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time

from harness import Proc, Skip, binary, case, cleanup_at_exit, job_env, run, wait_for

SR = binary("slotrun")
DUMP = binary("stacks_dump")
TARGET = binary("stack_target")
TMP = tempfile.mkdtemp(prefix="test_stacks.")
os.chmod(TMP, 0o755)  # the other user's rank reads its script here
# launcher/diag.h
DIAG_DEADLINE = 8.0
DIAG_THREAD_WAIT = 0.2

SCRIPT = """import time


def stuck_here():
    while True:
        time.sleep(0.1)


print("up", flush=True)
stuck_here()
"""
SLEEP_LINE, CALL_LINE = 6, 10


def python311():
    """/usr/bin/python3 when it is CPython 3.11 (Debian 12's), else skip."""
    py = "/usr/bin/python3"
    try:
        v = subprocess.run([py, "-c", "import sys; print(sys.version_info[:2] == (3, 11))"],
                           capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        v = ""
    if v != "True":
        raise Skip("needs /usr/bin/python3 as CPython 3.11 (Debian 12's python3)")
    return py


def script(name, text=SCRIPT):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
    return path


def hung(cmd, wrap=(), env=None, cwd=None, timeout=60):
    """slotrun (run by wrap, e.g. as another user) with one rank that
    --hang-timeout finds hung: its status and stderr."""
    p = Proc([*wrap, SR, "--slots", "1", "--grace", "1", "--hang-timeout", "1", "--", *cmd],
             environ=env or job_env(), cwd=cwd)
    try:
        code = p.finish(timeout)
    finally:
        p.kill()
    return code, p.err.decode(errors="replace")


@case
def a_hung_python_rank_shows_where_its_python_code_is_stuck():
    py = python311()
    path = script("hung.py")
    code, e = hung([py, path])
    assert code == 124, e
    assert "when it was found hung:" in e, e
    # the runner's reaper sees the stops of the collection: not the rank's own
    assert "stopped by SIG" not in e, e
    assert re.search(r"\(python3\) state S.*, Python 3\.11\.\d+", e), e
    assert f"stuck_here ({path}:{SLEEP_LINE})" in e, e
    assert f"<module> ({path}:{CALL_LINE})" in e, e
    # native frames around them, named from the ELF symbol tables
    assert re.search(r"#\d+ +0x[0-9a-f]{16} clock_nanosleep\+0x[0-9a-f]+ \(libc\.so\.6\)", e), e
    assert re.search(r"#\d+ +0x[0-9a-f]{16} _PyEval_EvalFrameDefault\+0x[0-9a-f]+ \(python3\.11\)", e), e
    # the Python frames run by that eval loop come just before it
    lines = e.splitlines()
    at = [i for i, line in enumerate(lines) if "stuck_here (" in line][0]
    assert "<module> (" in lines[at + 1] and "_PyEval_EvalFrameDefault" in lines[at + 2], "\n".join(lines[at:at + 3])


@case
def a_python_rank_of_another_version_has_native_frames_and_says_why_no_python_ones():
    other = None
    names = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[023].*/bin/python3")))
    names += [shutil.which(f"python3.{n}") for n in (12, 13, 10)]
    for name in names:
        try:  # the interpreter itself, not a launcher such as pyenv's shim
            other = name and subprocess.run([name, "-c", "import sys; print(sys.executable)"], capture_output=True,
                                            text=True, timeout=30).stdout.strip()
        except OSError:
            other = None
        if other:
            break
    if not other:
        raise Skip("no CPython other than 3.11 here (python3.12, python3.13, python3.10)")
    path = script("other.py")
    code, e = hung([other, path])
    assert code == 124, e
    assert re.search(r"Python frames need CPython 3\.11 \(this is 3\.1[023][.0-9a-z]*\)", e), e
    assert "stuck_here (" not in e, e
    assert re.search(r"#\d+ +0x[0-9a-f]{16} (clock_nanosleep|__select|time_sleep)", e), e


@case
def a_hung_c_rank_shows_its_functions_by_name():
    code, e = hung([TARGET, "sleep"])
    assert code == 124, e
    assert re.search(r"\(stack_target\) state S", e), e
    assert re.search(r"#\d+ +0x[0-9a-f]{16} stack_target_sleeps\+0x[0-9a-f]+ \(stack_target\)", e), e
    assert re.search(r"#\d+ +0x[0-9a-f]{16} main\+0x[0-9a-f]+ \(stack_target\)", e), e


def states(pid):
    """Each thread of pid: its /proc state letter and TracerPid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                st = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
            out[int(tid)] = (st["State"].split()[0], int(st["TracerPid"]))
        except (OSError, KeyError, ValueError):
            pass
    return out


def ready_pid(p):
    p.wait_line(b"ready ", timeout=20)
    return int(re.search(rb"ready (\d+)", p.out).group(1))


@case
def a_rank_that_does_not_stop_holds_up_neither_the_collection_nor_the_end():
    grace = 0.5
    p = Proc([SR, "--slots", "1", "--grace", str(grace), "--", TARGET, "--stubborn", "blocked", "3"],
             environ=job_env())
    try:
        pid = ready_pid(p)
        wait_for(lambda: [s for s, _ in states(pid).values()].count("D") == 3, 20, "3 threads in state D")
        p.signal(signal.SIGTERM)
        t0 = time.monotonic()
        code = p.finish(60)
        took = time.monotonic() - t0
    finally:
        p.kill()
    e = p.err.decode(errors="replace")
    assert code == 143, e
    assert "at the grace's end:" in e and "(stack_target) state D" in e, e
    assert f"did not stop within {DIAG_THREAD_WAIT:.1f} s" in e, e
    # a bound on a collection that would wait without one, not a timing
    assert took < grace + DIAG_DEADLINE + 5, (took, e)


@case
def a_stopped_rank_is_taken_as_it_is_and_the_job_still_ends():
    # stopped, it says nothing: --hang-timeout finds it hung, and its stack
    # is taken before the SIGCONT and SIGTERM of the stop
    code, e = hung([TARGET, "stop"])
    assert code == 124, e
    assert "(stack_target) state T" in e, e
    assert re.search(r"#\d+ +0x[0-9a-f]{16} main\+0x[0-9a-f]+ \(stack_target\)", e), e


TICKING = """import sys, time


def ticking():
    n = 0
    while True:
        n += 1
        print("tick", n, flush=True)
        time.sleep(0.05)


ticking()
"""


@case
def a_collection_on_a_running_job_leaves_nothing_traced_or_stopped():
    py = python311()
    path = script("ticking.py", TICKING)
    p = Proc([SR, "--slots", "2", "--", "sh", "-c", f'if [ "$RANK" = 0 ]; then exec {py} {path}; fi; '
              f"exec {TARGET} sleep"], environ=job_env())
    cleanup_at_exit(p.kill)
    try:
        p.wait_line(b"[rank=0] tick 1\n", timeout=20)
        target = ready_pid(p)
        code = subprocess.run([DUMP, "--descendants", str(p.pid)], capture_output=True, timeout=60)
        out = code.stdout.decode(errors="replace")
        assert code.returncode == 0 and out.endswith("whole\n"), out + code.stderr.decode(errors="replace")
        assert f"pid {p.pid} (slotrun)" in out, out
        assert re.search(rf"ticking \({re.escape(path)}:\d+\)", out), out
        assert "stack_target_sleeps+" in out, out
        # every thread of the job as it was: none traced, none stopped
        for pid in [p.pid, target] + [int(x) for x in re.findall(r"^pid (\d+) ", out, re.M)]:
            for tid, (state, tracer) in states(pid).items():
                assert tracer == 0 and state not in "tT", (pid, tid, state, tracer)
        # and the job goes on
        ticks = p.out.count(b"tick")
        p.wait_output(lambda s: s.out.count(b"tick") > ticks + 2, 20, "more ticks after the collection")
        p.signal(signal.SIGTERM)
        assert p.finish(30) == 143, p.err.decode(errors="replace")
    finally:
        p.kill()


USER = "slotrun-stacks-e2e"


def remove_user():
    subprocess.run(["userdel", USER], capture_output=True)


@case
def slotrun_run_by_another_user_takes_its_own_workers_stacks():
    # Under Yama's ptrace_scope 1 only an ancestor may trace: slotrun
    # traces from a thread of its own, never from a child.  This kernel may
    # have no Yama; the user is a plain one, without CAP_SYS_PTRACE.
    py = python311()
    if os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("setpriv"):
        raise Skip("needs root, useradd and setpriv to run slotrun as another user")
    remove_user()
    cleanup_at_exit(remove_user)
    made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    try:
        u = pwd.getpwnam(USER)
        path = script("user.py")
        code, e = hung([py, path], wrap=["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}", "--clear-groups",
                                         "--"], env=job_env({"HOME": TMP}), cwd=TMP)
        assert code == 124, e
        assert f"stuck_here ({path}:{SLEEP_LINE})" in e, e
        assert "cannot trace" not in e, e
    finally:
        remove_user()


if __name__ == "__main__":
    run()
