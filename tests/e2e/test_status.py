# SPDX-License-Identifier: MIT
"""`slotrun status` as a user meets it: the table and the JSON of a
4-slot job where one rank is blocked in `read x < fifo` (marked lagging,
and no other), --watch's refreshes, --stacks' seam, no job (one line,
non-zero), two jobs (both listed), another uid (refused, and it cannot
even list the socket folder; the server's SO_PEERCRED check against a job
of that user), and the socket of a SIGKILLed slotrun removed by the next
`slotrun status` and by the next slotrun.

Every job here gets a private XDG_RUNTIME_DIR, so other tests' jobs (in
/tmp/slotrun-UID) are not seen."""

import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile

from harness import (Proc, Skip, binary, case, cleanup_at_exit, fifo_release, job_env, pid_alive, run,
                     run_cmd, wait_for)

SR = binary("slotrun")
TMP = tempfile.mkdtemp(prefix="test_status.")
os.chmod(TMP, 0o755)  # others may traverse it: only the slotrun folders are closed

# ranks but 2 print a line and burn CPU in turns; rank 2 blocks on its FIFO
BUSY = ('while :; do echo "tick $RANK"; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; done')


def runtime(name):
    d = os.path.join(TMP, name)
    os.makedirs(d, mode=0o700, exist_ok=True)
    return d


def start(xdg, script, slots=4, extra=()):
    """A job; killed at the test's exit, however a case ends."""
    p = Proc([SR, "--slots", str(slots), "--grace", "1", *extra, "--", "sh", "-c", script],
             environ=job_env({"XDG_RUNTIME_DIR": xdg}))
    cleanup_at_exit(p.kill)
    return p


def sock_of(xdg, p):
    return os.path.join(xdg, "slotrun", f"{p.pid}.sock")


def status(xdg, *args, timeout=30):
    return run_cmd([SR, "status", *args], timeout=timeout, environ=job_env({"XDG_RUNTIME_DIR": xdg}))


def status_json(xdg, *args):
    code, out, err = status(xdg, "--json", *args)
    assert code == 0, (code, err)
    return json.loads(out)


def stop(p):
    p.signal(signal.SIGTERM)
    return p.finish(30)


@case
def one_blocked_rank_of_four_lags_and_no_other():
    xdg = runtime("four")
    fifo = os.path.join(TMP, "four.fifo")
    os.mkfifo(fifo)
    p = start(xdg, f'if [ "$RANK" = 2 ]; then read x < {fifo}; exit 3; fi; {BUSY}')
    wait_for(lambda: os.path.exists(sock_of(xdg, p)), 10, "the status socket")
    assert os.stat(os.path.join(xdg, "slotrun")).st_mode & 0o777 == 0o700

    def lagging():
        d = status_json(xdg)
        return d if any(r["lag"] for r in d["rows"]) else None
    doc = wait_for(lagging, 40, "rank 2 to be marked lagging")
    rows = doc["rows"]
    assert [r["rank"] for r in rows] == [0, 1, 2, 3], rows
    assert [r["rank"] for r in rows if r["lag"]] == [2], rows
    r2 = rows[2]
    assert r2["why"].startswith("no output for ") and "while ranks 0-1,3 progress" in r2["why"], r2
    assert r2["state"] == "sleeping" and r2["cpu_pct"] is not None and r2["cpu_pct"] < 1, r2
    assert r2["silent_s"] >= 5 and not r2["wrote"] and r2["out_lines"] == 0, r2
    for r in rows:
        assert r["up"] and r["node"] == 0 and pid_alive(r["pid"]), r
        assert r["rss_bytes"] > 0 and r["threads"] >= 1 and r["cpu_s"] >= 0, r
        assert r["restarts"] == 0 and r["exit_code"] is None, r
    for r in (rows[0], rows[1], rows[3]):
        assert r["line"] == f"tick {r['rank']}" and r["out_lines"] > 0 and r["out_bytes"] > 0, r
    job = doc["job"]
    assert job["pid"] == p.pid and job["id"] == str(p.pid) and job["state"] == "running", job
    assert job["world_size"] == 4 and job["nnodes"] == 1 and job["attempt"] == 1, job

    # the table, by slotrun's pid and by the job's id
    for arg in ([], [str(p.pid)]):
        code, out, err = status(xdg, *arg)
        assert code == 0, err
        text = out.decode()
        assert text.startswith(f"job {p.pid}: slotrun {p.pid} on node 0"), text
        lines = text.splitlines()
        head = next(i for i, l in enumerate(lines) if l.startswith("NODE RANK"))
        table = lines[head + 1:head + 5]
        assert [l.split()[1] for l in table] == ["0", "1", "2", "3"], text
        assert [(" LAG " in l + " ") for l in table] == [False, False, True, False], text
        assert "sleeping" in table[2], text
        assert any(l.startswith("rank 2 (node 0) lags: no output for ") for l in lines), text

    assert fifo_release(fifo)()
    assert p.finish(30) == 3, p.err[-2000:]
    assert not os.path.exists(sock_of(xdg, p)), "the socket goes with slotrun"


@case
def watch_refreshes_until_the_job_ends():
    xdg = runtime("watch")
    p = start(xdg, "exec sleep 60", slots=2)
    wait_for(lambda: os.path.exists(sock_of(xdg, p)), 10, "the status socket")
    w = Proc([SR, "status", "--watch=0.2"], environ=job_env({"XDG_RUNTIME_DIR": xdg}))
    w.wait_output(lambda s: s.out.count(b"NODE RANK") >= 2, 20, "two refreshes")
    assert b"\033[" not in w.out, "no screen clearing when stdout is not a terminal"
    assert stop(p) == 143, p.err[-2000:]
    assert w.finish(20) == 0, w.err
    assert f"job {p.pid} ended".encode() in w.out, w.out[-500:]


@case
def stacks_of_every_rank_without_stopping_the_job():
    """--stacks: each rank's threads with their native frames (sleep sleeps in
    clock_nanosleep), taken while the job runs on: it still answers, and
    nothing is left traced or stopped."""
    xdg = runtime("stacks")
    p = start(xdg, 'echo up; exec sleep 60', slots=2)
    wait_for(lambda: os.path.exists(sock_of(xdg, p)), 10, "the status socket")
    p.wait_line("[rank=1] up", timeout=20)
    code, out, err = status(xdg, "--stacks")
    assert code == 0, err
    text = out.decode()
    assert "\nstacks:\n" in text, text
    assert text.count("nanosleep") >= 2, text
    doc = status_json(xdg, "--stacks")
    assert [s["rank"] for s in doc["stacks"]] == [0, 1], doc["stacks"]
    assert all("text" in s and "(sleep)" in s["text"] for s in doc["stacks"]), doc["stacks"]
    for s in doc["stacks"]:
        with open(f"/proc/{s['pid']}/status") as f:
            st = f.read()
        assert "\nTracerPid:\t0\n" in st and "\nState:\tt" not in st and "\nState:\tT" not in st, st
    assert stop(p) == 143


@case
def no_job_is_one_line_and_non_zero():
    xdg = runtime("none")
    code, out, err = status(xdg)
    assert code == 1, (code, out, err)
    assert out == b"", out
    assert err == b"slotrun: status: no slotrun job of yours runs on this node\n", err
    code, out, err = status(xdg, "12345")
    assert code == 1 and err.count(b"\n") == 1, err


@case
def two_jobs_are_both_listed():
    xdg = runtime("two")
    a = start(xdg, "exec sleep 60", slots=1)
    b = start(xdg, "exec sleep 60", slots=2)
    for p in (a, b):
        wait_for(lambda p=p: os.path.exists(sock_of(xdg, p)), 10, "the status sockets")
    code, out, err = status(xdg)
    assert code == 2, (code, err)
    text = out.decode()
    assert f"\n{a.pid} " in text and f"\n{b.pid} " in text, text
    assert err.startswith(b"slotrun: status: 2 jobs of yours run on this node: name one by its PID"), err
    assert err.count(b"\n") == 1, err
    doc = status_json(xdg, str(b.pid))
    assert doc["job"]["pid"] == b.pid and len(doc["rows"]) == 2, doc
    assert stop(a) == 143 and stop(b) == 143


def throwaway_user():
    """A user made for this test (no home), removed at exit."""
    if os.geteuid() != 0:
        raise Skip("needs root to create a user")
    name = "slotrun-t" + secrets.token_hex(3)
    subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", name], check=True, capture_output=True)

    def remove():
        subprocess.run(["userdel", name], capture_output=True)
    cleanup_at_exit(remove)
    pw = pwd.getpwnam(name)
    return pw.pw_uid, pw.pw_gid, remove


def as_user(uid, gid, argv):
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv]


@case
def another_user_is_refused_and_cannot_see_the_folder():
    uid, gid, remove = throwaway_user()
    procs = []
    try:
        # a job of ours: the other user finds our folder closed
        xdg = runtime("owner")
        os.chmod(xdg, 0o755)
        p = start(xdg, "exec sleep 60", slots=1)
        procs.append(p)
        wait_for(lambda: os.path.exists(sock_of(xdg, p)), 10, "the status socket")
        env = job_env({"XDG_RUNTIME_DIR": xdg})
        code, out, err = run_cmd(as_user(uid, gid, [SR, "status"]), environ=env)
        assert code == 1, (code, out, err)
        assert err == (f"slotrun: status: {xdg}/slotrun belongs to another user: only the user who "
                       f"started a job may see its status\n").encode(), err
        code, out, err = run_cmd(as_user(uid, gid, ["ls", f"{xdg}/slotrun"]), environ=env)
        assert code != 0 and b"Permission denied" in err, (code, out, err)
        code, out, err = run_cmd(as_user(uid, gid, [SR, "status", str(p.pid)]), environ=env)
        assert code == 1 and err.count(b"\n") == 1, err
        assert stop(p) == 143

        # a job of that user: we reach its socket (root may), its slotrun refuses us
        uenv = job_env()
        uenv.pop("XDG_RUNTIME_DIR", None)
        q = Proc(as_user(uid, gid, [SR, "--slots", "1", "--", "sleep", "60"]), environ=uenv)
        procs.append(q)
        folder = f"/tmp/slotrun-{uid}"
        cleanup_at_exit(lambda: shutil.rmtree(folder, ignore_errors=True))

        def their_socket():
            try:
                names = [n for n in os.listdir(folder) if n.endswith(".sock")]
            except FileNotFoundError:
                return None
            return os.path.join(folder, names[0]) if names else None
        path = wait_for(their_socket, 10, "the other user's status socket")
        st = os.stat(folder)
        assert st.st_uid == uid and st.st_mode & 0o777 == 0o700, oct(st.st_mode)
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(path)
        s.sendall(b'{"v":1,"want":"status"}\n')
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
        s.close()
        doc = json.loads(reply)
        assert doc["error"] == (f"refused: only the user who started the job (uid {uid}) may ask for its "
                                f"status"), doc
        code, out, err = run_cmd(as_user(uid, gid, [SR, "status", "--json"]), environ=uenv)
        assert code == 0 and json.loads(out)["job"]["pid"] > 0, (code, err)
        q.signal(signal.SIGTERM)
        assert q.finish(30) == 143, q.err[-2000:]
        assert their_socket() is None, "its socket went with it"
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        for x in procs:  # a user with a process left cannot be removed
            x.kill()
            x.finish(30)
        remove()


@case
def a_killed_slotruns_socket_is_removed_by_the_next_status_and_slotrun():
    xdg = runtime("stale")
    p = start(xdg, "exec sleep 60", slots=1)
    path = sock_of(xdg, p)
    wait_for(lambda: os.path.exists(path), 10, "the status socket")
    p.p.kill()
    p.finish(30)
    assert os.path.exists(path), "SIGKILL leaves it behind"
    code, out, err = status(xdg)
    assert code == 1 and b"no slotrun job of yours" in err, (code, err)
    assert not os.path.exists(path), "the next status removed it"

    q = start(xdg, "exec sleep 60", slots=1)
    wait_for(lambda: os.path.exists(sock_of(xdg, q)), 10, "the next job's socket")
    q.p.kill()
    q.finish(30)
    r = start(xdg, "exec sleep 60", slots=1)
    wait_for(lambda: os.path.exists(sock_of(xdg, r)), 10, "the third job's socket")
    assert not os.path.exists(sock_of(xdg, q)), "the next slotrun removed it"
    assert stop(r) == 143
    assert os.listdir(os.path.join(xdg, "slotrun")) == []


if __name__ == "__main__":
    cleanup_at_exit(lambda: shutil.rmtree(TMP, ignore_errors=True))
    run()
