# SPDX-License-Identifier: MIT
"""slotrun and wrap_rank under valgrind's memcheck on representative end-to-end
paths, with zero findings allowed: invalid reads and writes, uses of
uninitialised values, bad frees and definite leaks.  The programs run under
valgrind; what they start (workers, commands) runs plain.  Each run's
valgrind output goes to files of its own, read after the run, so the
programs' own output stays theirs to check.

Skipped without valgrind, and in a sanitizer build (the binaries carry
ASan's runtime, which valgrind cannot run)."""

import json
import os
import re
import shutil
import signal
import sys
import tempfile

from harness import Proc, Skip, binary, case, free_ports, job_env, run

SR = binary("slotrun")
# wrap_rank built against the shared C library, which memcheck can follow
# (the shipped one may be static: wrap_rank/meson.build)
WR = binary("wrap_rank_memcheck")
HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
SIG_CHILD = os.path.join(HERE, "sig_child.py")
VALGRIND = shutil.which("valgrind")
# hwloc's x86 backend would say on stderr that it cannot work under valgrind
QUIET = {"HWLOC_COMPONENTS": "-x86"}


def need_valgrind():
    if not VALGRIND:
        raise Skip("valgrind is not installed (Debian: apt-get install valgrind)")
    if os.environ.get("SLOTRUN_SANITIZE", "none") != "none":
        raise Skip(f"a -Db_sanitize={os.environ['SLOTRUN_SANITIZE']} build: valgrind cannot run ASan's runtime")


class Memcheck:
    """Runs commands under memcheck, each process's report in its own file."""

    def __init__(self):
        need_valgrind()
        self.dir = tempfile.mkdtemp(prefix="slotrun-vg-")

    def argv(self, *cmd):
        return [VALGRIND, "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite",
                "--track-fds=no", "--trace-children=no", f"--log-file={self.dir}/vg.%p", *cmd]

    def start(self, *cmd, env=None, environ=None):
        return Proc(self.argv(*cmd), env=env, environ=environ)

    def run(self, *cmd, env=None, environ=None, timeout=60):
        p = self.start(*cmd, env=env, environ=environ)
        try:
            code = p.finish(timeout)
        finally:
            p.kill()
        return code, p.out, p.err

    def check(self):
        """Fails with every report that has a finding; removes the files.
        A report without a summary is a child that exec'd something else
        (not traced), or one that was killed."""
        bad = []
        for name in sorted(os.listdir(self.dir)):
            text = open(os.path.join(self.dir, name), errors="replace").read()
            errors = [int(n) for n in re.findall(r"ERROR SUMMARY: (\d+) errors", text)]
            if any(errors):
                bad.append(f"--- {name}\n{text}")
        shutil.rmtree(self.dir)
        assert not bad, "memcheck findings:\n" + "\n".join(bad)[-20000:]


@case
def slotrun_success_and_failure_with_siblings_stopped():
    vg = Memcheck()
    d = tempfile.mkdtemp()
    try:
        code, out, err = vg.run(SR, "--slots", "3", "--", "sh", "-c", "echo out $RANK; echo err $RANK >&2",
                                environ=job_env(QUIET))
        assert code == 0, (code, err)
        assert sorted(out.splitlines()) == [b"[rank=%d] out %d" % (r, r) for r in range(3)], out
        ef = os.path.join(d, "error.json")
        code, out, err = vg.run(SR, "--slots", "3", "--grace", "5", "--error-file", ef, "--", "sh", "-c",
                                '[ "$RANK" = 1 ] && { echo dying >&2; exit 5; }; exec sleep 60',
                                environ=job_env(QUIET))
        assert code == 5, (code, err)
        assert err.count(b"stopped by slotrun") == 2, err
        assert json.load(open(ef))["root_cause"]["rank"] == 1
    finally:
        shutil.rmtree(d)
    vg.check()


@case
def slotrun_stopped_by_sigterm():
    vg = Memcheck()
    p = vg.start(SR, "--slots", "2", "--", PY, SIG_CHILD, "SIGTERM=0", environ=job_env(QUIET))
    try:
        p.wait_output(lambda s: s.out.count(b"ready") == 2, 60, "both ranks ready")
        p.signal(signal.SIGTERM)
        code = p.finish(60)
    finally:
        p.kill()
    assert code == 143, (code, p.err)
    assert p.out.count(b"got SIGTERM") == 2, p.out
    vg.check()


@case
def slotrun_takes_a_hung_rank_s_stacks():
    # the stack collector's threads, ptrace and libdwfl, under memcheck
    vg = Memcheck()
    code, out, err = vg.run(SR, "--slots", "1", "--grace", "1", "--hang-timeout", "2", "--", "sh", "-c",
                            "echo up; exec sleep 60", environ=job_env(QUIET), timeout=120)
    assert code == 124, (code, err)
    assert b"when it was found hung:" in err and b"(sleep) state S" in err, err
    assert b"nanosleep" in err, err
    vg.check()


@case
def slotrun_log_dir_no_wrap_and_background_strays():
    vg = Memcheck()
    d = tempfile.mkdtemp()
    try:
        logs = os.path.join(d, "logs")
        code, out, err = vg.run(SR, "--slots", "2", "--log-dir", logs, "--ranks-filter", "0", "--", "sh", "-c",
                                "echo line $RANK; (sleep 0.2 &) ; exit 0", environ=job_env(QUIET))
        assert code == 0, (code, err)
        assert out == b"[rank=0] line 0\n", out
        assert open(os.path.join(logs, "rank-1.stdout"), "rb").read() == b"[rank=1] line 1\n"
        code, out, err = vg.run(SR, "--slots", "2", "--no-wrap", "--", "sh", "-c",
                                "echo plain $RANK; setsid sleep 30 & exit 0", environ=job_env(QUIET))
        assert code == 0, (code, err)
        assert sorted(out.splitlines()) == [b"plain 0", b"plain 1"], out
    finally:
        shutil.rmtree(d)
    vg.check()


@case
def slotrun_dry_run_with_determined_files():
    vg = Memcheck()
    d = tempfile.mkdtemp()
    try:
        with open(os.path.join(d, "rendezvous.json"), "w") as f:
            json.dump({"container_addrs": ["127.0.0.1", "127.0.0.3"], "container_rank": 1,
                       "container_slot_counts": [2, 3]}, f)
        with open(os.path.join(d, "cluster.json"), "w") as f:
            json.dump({"slot_ids": [0, 1, 2]}, f)
        code, out, err = vg.run(SR, "--dry-run", "--bind", "none",
                                environ=job_env({"SLOTRUN_DET_INFO_DIR": d, "C10D_PORT": "5555",
                                                 "DET_INTER_NODE_NETWORK_INTERFACE": "lo", **QUIET}))
        assert code == 0, (code, err)
        assert [json.loads(l)["rank"] for l in out.decode().splitlines()] == [2, 3, 4], out
        code, out, err = vg.run(SR, "--dry-run", environ=job_env({"DET_SLOT_IDS": "[0,x]", **QUIET}))
        assert code == 2 and b"DET_SLOT_IDS" in err, (code, err)
    finally:
        shutil.rmtree(d)
    vg.check()


@case
def slotrun_two_nodes_over_loopback():
    vg = Memcheck()
    master, control = free_ports(2)
    addrs = "127.0.0.1,127.0.0.2"
    env = job_env({"SLOTRUN_JOB_SECRET": f"vg-{os.getpid()}", **QUIET})
    procs = [vg.start(SR, "--nnodes", "2", "--node-rank", str(i), "--addrs", addrs, "--slots", "2",
                      "--master-port", str(master), "--control-port", str(control), "--join-timeout", "60",
                      "--heartbeat-timeout", "30", "--", "sh", "-c",
                      '[ "$RANK" = 3 ] && exit 3; echo rank $RANK of $WORLD_SIZE; exec sleep 60', environ=env)
             for i in range(2)]
    try:
        codes = [p.finish(120) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert codes == [3, 3], (codes, procs[0].err[-2000:], procs[1].err[-2000:])
    assert b"rank 3 on node 1" in procs[0].err, procs[0].err[-2000:]
    vg.check()


@case
def wrap_rank_paths():
    vg = Memcheck()
    env = {"WRAP_RANK_LOG_DIR": "/nonexistent"}
    code, out, err = vg.run(WR, "2", "--", "sh", "-c", "echo a; printf 'b\\r\\nc'; echo e >&2; exit 4", env=env)
    assert code == 4, (code, err)
    assert out == b"[rank=2] a\n[rank=2] b\n[rank=2] c\n" and err == b"[rank=2] e\n", (out, err)
    code, out, err = vg.run(WR, "0", "no-such-command-xyz", env=env)
    assert code == 127 and b"no-such-command-xyz" in err, (code, err)
    code, out, err = vg.run(WR, "--no-prefix", "1", "--", "sh", "-c", "echo raw; exit 0", env=env)
    assert code == 0 and out == b"raw\n", (code, out)
    p = vg.start(WR, "6", PY, SIG_CHILD, "SIGUSR1=7", env=env)
    try:
        p.wait_line("[rank=6] ready\n", timeout=60)
        p.signal(signal.SIGUSR1)
        assert p.finish(60) == 7, p.err
    finally:
        p.kill()
    assert b"[rank=6] got SIGUSR1\n" in p.out, p.out
    vg.check()


run()
