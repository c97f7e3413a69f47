# SPDX-License-Identifier: MIT
"""The fault matrix, as a user meets it: a reader that stops reading or goes
away, a full disk under --log-dir and --error-file, stopped and hung
workers, a worker that must be killed, an fd limit near the need, and the
small findings of the hardening review.  For each: the exit status, what
slotrun says, and that it never hangs.  (Containment after a SIGKILL of
slotrun: test_slotrun.py.)"""

import fcntl
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import termios
import time

from harness import Proc, Skip, binary, case, job_env, run, run_cmd, wait_for

SR = binary("slotrun")
TMP = tempfile.mkdtemp(prefix="test_faults.")


def start(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=None):
    return subprocess.Popen([SR, *args], stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                            env=job_env(env))


def wait_exit(p, timeout, what):
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"slotrun did not exit within {timeout}s: {what}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def cleanup(p):
    """However a case ends, its slotrun (and so its workers) ends too."""
    if p.poll() is None:
        p.kill()
        p.wait()


def pipe_held(fd):
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def read(path):
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")


@case
def an_unread_stdout_does_not_hold_back_a_failure():
    # stdout is a pipe nobody reads; rank 1 fails once rank 0 has filled it
    # (rank 1 waits for the file `go`, made when the pipe is full)
    r, w = os.pipe()
    errf = os.path.join(TMP, "unread.err")
    go = os.path.join(TMP, "unread.go")
    with open(errf, "wb") as err:
        p = start(["--slots", "2", "--grace", "1", "--", "sh", "-c",
                   f'if [ "$RANK" = 1 ]; then while [ ! -e {go} ]; do sleep 0.01; done; '
                   'echo fail >&2; exit 7; fi; exec yes line'],
                  stdout=w, stderr=err)
    os.close(w)
    try:
        wait_for(lambda: pipe_held(r) >= 65536 - 4096, 20, "the unread pipe to fill")
        open(go, "w").close()
        code = wait_exit(p, 20, "with an unread stdout after a failure")
    finally:
        cleanup(p)
        os.close(r)
    e = read(errf)
    assert code == 7, (code, e)
    assert "job failed: rank 1 (node 0, local rank 1" in e and "[rank=1] fail" in e, e
    assert "exit 143 (SIGTERM), stopped by slotrun" in e, "rank 0 exits at SIGTERM, not at SIGKILL\n" + e
    assert "bytes for slotrun's stdout were dropped" in e, e


@case
def sigterm_with_an_unread_stdout_stops_within_the_grace():
    r, w = os.pipe()
    errf = os.path.join(TMP, "term.err")
    with open(errf, "wb") as err:
        p = start(["--slots", "2", "--grace", "1", "--", "sh", "-c", "echo up >&2; exec yes line"],
                  stdout=w, stderr=err)
    os.close(w)
    try:
        wait_for(lambda: read(errf).count("up") == 2, 20, "both ranks up")
        # the pipe is full (whole-line writes leave up to a page): every
        # write to it would block from here on
        wait_for(lambda: pipe_held(r) >= 65536 - 4096, 20, "the unread pipe to fill")
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        code = wait_exit(p, 20, "SIGTERM with an unread stdout")
    finally:
        cleanup(p)
        os.close(r)
    assert code == 143, read(errf)
    assert time.monotonic() - t0 < 10, "not bounded by the grace"
    assert "were dropped" in read(errf), read(errf)


@case
def a_reader_that_goes_away_is_said_once_and_the_job_goes_on():
    r, w = os.pipe()
    os.close(r)  # EPIPE from the first write
    errf = os.path.join(TMP, "epipe.err")
    with open(errf, "wb") as err:
        p = start(["--slots", "2", "--", "sh", "-c", "seq 1 1000; echo done >&2"], stdout=w, stderr=err)
    os.close(w)
    code = wait_exit(p, 20, "with a closed stdout")
    e = read(errf)
    assert code == 0, e
    assert e.count("slotrun: stdout: Broken pipe: the workers' output to it is dropped from now on") == 1, e
    assert "[rank=0] done" in e and "[rank=1] done" in e, "stderr is unharmed\n" + e
    assert "output lost:" in e and "slotrun's stdout were dropped (Broken pipe)" in e, e


@case
def a_file_size_limit_on_stdout_is_said_and_the_job_goes_on():
    """ulimit -f: a write past it raises SIGXFSZ, which would kill slotrun
    and leave its workers to its death signal; slotrun takes the EFBIG
    instead, and its workers still get the default SIGXFSZ."""
    import resource
    outf, errf = os.path.join(TMP, "fsize.out"), os.path.join(TMP, "fsize.err")
    limit = 16384

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    script = os.path.join(TMP, "fsize.sh")
    with open(script, "w") as f:  # SIGXFSZ is signal 25: bit 24 of SigIgn
        f.write("ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status)\n"
                "echo \"xfsz ignored: $(( 0x$ign >> 24 & 1 ))\" >&2\n"
                "seq 1 20000\necho done >&2\n")
    with open(outf, "wb") as out, open(errf, "wb") as err:
        p = subprocess.Popen([SR, "--slots", "2", "--", "sh", script], stdout=out,
                             stderr=err, env=job_env(), preexec_fn=small_files)
    code = wait_exit(p, 20, "with a file size limit on stdout")
    e = read(errf)
    assert code == 0, f"exit {code}\n{e}"
    assert os.path.getsize(outf) <= limit, os.path.getsize(outf)
    assert e.count("slotrun: stdout: File too large") == 1, e
    assert "slotrun's stdout were dropped (File too large)" in e, e
    assert "[rank=0] xfsz ignored: 0" in e and "[rank=1] xfsz ignored: 0" in e, e
    assert "[rank=0] done" in e and "[rank=1] done" in e, e

def tiny_tmpfs(size="64k"):
    if os.geteuid() != 0 or not shutil.which("mount"):
        raise Skip("needs root to mount a small tmpfs")
    d = tempfile.mkdtemp(prefix="full.", dir=TMP)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", d], capture_output=True)
    if r.returncode != 0:
        raise Skip(f"cannot mount a tmpfs: {r.stderr.decode().strip()}")
    return d


def unmount(d):
    subprocess.run(["umount", "-l", d], capture_output=True)


@case
def a_full_disk_under_log_dir_is_said_and_counted():
    d = tiny_tmpfs()
    try:
        code, out, err = run_cmd([SR, "--log-dir", os.path.join(d, "logs"), "--", "sh", "-c",
                                  "seq 1 50000; echo done >&2"], env=job_env(), timeout=30)
        e = err.decode()
        assert code == 0, e
        assert "slotrun: rank 0 (node 0): log file " in e and "rank-0.stdout: No space left on device: " \
            "retrying until there is room; its lines meanwhile are dropped and counted" in e, e
        assert "output lost: rank 0's stdout log (No space left on device):" in e, e
        assert out.count(b"\n") == 50000, "the console got everything"
    finally:
        unmount(d)


@case
def error_file_is_whole_or_absent_and_never_stale():
    d = tiny_tmpfs("16k")
    try:
        ef = os.path.join(d, "err.json")
        with open(os.path.join(d, "filler"), "wb") as f:  # leave no room
            try:
                f.write(b"x" * (64 << 10))
            except OSError:
                pass
        code, _, err = run_cmd([SR, "--error-file", ef, "--", "sh", "-c", "exit 3"], env=job_env(), timeout=30)
        assert code == 3, err
        assert f"cannot write --error-file {ef}: No space left on device".encode() in err, err
        assert not os.path.exists(ef), "no half-written file"
        assert [n for n in os.listdir(d) if n.startswith("err.json")] == [], os.listdir(d)
    finally:
        unmount(d)
    ef = os.path.join(TMP, "stale.json")
    with open(ef, "w") as f:
        f.write('{"exit_status": 9}')
    code, _, err = run_cmd([SR, "--error-file", ef, "--", "true"], env=job_env(), timeout=30)
    assert code == 0 and not os.path.exists(ef), "an old error file does not pass for this run's"
    code, _, err = run_cmd([SR, "--error-file", ef, "--", "sh", "-c", "exit 4"], env=job_env(), timeout=30)
    with open(ef) as f:
        assert json.load(f)["exit_status"] == 4


@case
def a_stopped_wrap_rank_is_said_and_the_hang_timeout_ends_the_wait():
    p = Proc([SR, "--slots", "2", "--grace", "1", "--hang-timeout", "2", "--", "sh", "-c",
              "echo up; exec sleep 60"], environ=job_env())
    try:
        p.wait_output(lambda s: s.out.count(b"up") == 2, 20, "both ranks up")
        wrap = [int(x) for x in subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True,
                                               text=True).stdout.split()]
        assert len(wrap) == 2, wrap
        os.kill(wrap[1], signal.SIGSTOP)
        p.wait_line(b"stopped by SIGSTOP (not by slotrun): the job waits for it until it is continued "
                    b"(SIGCONT) or --hang-timeout runs out", stream="err", timeout=20)
        code = p.finish(30)
    finally:
        p.kill()
    assert code == 124, p.err[-2000:]
    assert b"no output and no exit for 2 s (--hang-timeout)" in p.err, p.err[-2000:]


@case
def a_stopped_worker_under_wrap_rank_fails_the_job_at_the_hang_timeout():
    p = Proc([SR, "--slots", "2", "--grace", "1", "--hang-timeout", "1.5", "--", "sh", "-c",
              'if [ "$RANK" = 1 ]; then kill -STOP $$; fi; while :; do echo tick; sleep 0.2; done'],
             environ=job_env())
    code = p.finish(30)
    assert code == 124, p.err[-2000:]
    assert b"job failed: rank 1 (node 0, local rank 1" in p.err, p.err[-2000:]
    assert b"state T" in p.err, "the summary shows the stopped process\n" + p.err[-3000:].decode()


@case
def a_worker_killed_after_the_grace_shows_what_it_was_doing():
    p = Proc([SR, "--slots", "1", "--grace", "0.5", "--", "python3", "-c",
              "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
              "time.sleep(60)"], environ=job_env())
    try:
        p.wait_line(b"[rank=0] up", timeout=20)
        p.signal(signal.SIGTERM)
        code = p.finish(30)
    finally:
        p.kill()
    e = p.err.decode()
    assert code == 143, e
    assert "exit 137 (SIGKILL), stopped by slotrun" in e and "at the grace's end:" in e, e
    assert "(python3) state S" in e, e
    assert "clock_nanosleep" in e, "the native stack\n" + e


@case
def an_fd_limit_near_the_need_is_enough():
    if not shutil.which("prlimit"):
        raise Skip("needs prlimit")
    code, out, err = run_cmd(["prlimit", "--nofile=64:64", SR, "--slots", "4", "--", "true"], env=job_env(),
                             timeout=30)
    assert code == 0, err


@case
def log_dir_naming_a_file_is_a_usage_error():
    f = os.path.join(TMP, "a-file")
    open(f, "w").close()
    code, out, err = run_cmd([SR, "--log-dir", f, "--", "true"], env=job_env(), timeout=30)
    assert code == 2 and err == f"slotrun: --log-dir {f}: cannot create or write it: Not a directory\n".encode(), \
        (code, err)


@case
def a_multi_node_dry_run_needs_no_name_resolved():
    code, out, err = run_cmd([SR, "--nnodes", "2", "--node-rank", "1", "--addrs", "chief.invalid,b",
                              "--dry-run"], env=job_env(), timeout=30)
    assert code == 0, err
    row = json.loads(out.decode().splitlines()[0])
    assert row["env"]["MASTER_ADDR"] == "chief.invalid" and "NCCL_SOCKET_IFNAME" not in row["env"], row


run()
