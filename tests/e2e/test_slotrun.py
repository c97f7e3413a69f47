# SPDX-License-Identifier: MIT
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import Proc, Skip, binary, case, job_env, pid_alive, pids_with_env, run, run_cmd, wait_for
from netns import Cluster

SR = binary("slotrun")
HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
SIG_CHILD = os.path.join(HERE, "sig_child.py")
# Keep the tests independent of the machine's scheduler environment.
env_for = job_env


def slotrun(*args, env=None, timeout=30):
    p = subprocess.Popen([SR, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=env_for(env))
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError(f"slotrun did not finish in {timeout}s: {err[-2000:]!r}")
    return p.returncode, out, err


def _start(args, env):
    return Proc([SR, *args], environ=env_for(env))


def lines_of(out, rank):
    pre = b"[rank=%d] " % rank
    return [l[len(pre):] for l in out.split(b"\n") if l.startswith(pre)]


@case
def all_succeed_with_the_worker_environment():
    code, out, err = slotrun("--slots", "3", "--", "sh", "-c",
                             "echo RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK "
                             "LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE LOCAL_SIZE=$LOCAL_SIZE GROUP_RANK=$GROUP_RANK "
                             "NODE_RANK=$NODE_RANK GROUP_WORLD_SIZE=$GROUP_WORLD_SIZE CROSS_RANK=$CROSS_RANK "
                             "CROSS_SIZE=$CROSS_SIZE MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT "
                             "DET_CHIEF_IP=$DET_CHIEF_IP SECRET=$SLOTRUN_JOB_SECRET")
    assert code == 0, err
    secrets = set()
    for r in range(3):
        (line,) = lines_of(out, r)
        kv = dict(x.split(b"=", 1) for x in line.split())
        assert kv[b"RANK"] == b"%d" % r and kv[b"LOCAL_RANK"] == b"%d" % r, line
        assert kv[b"WORLD_SIZE"] == b"3" and kv[b"LOCAL_WORLD_SIZE"] == b"3" and kv[b"LOCAL_SIZE"] == b"3"
        assert kv[b"GROUP_RANK"] == kv[b"NODE_RANK"] == kv[b"CROSS_RANK"] == b"0"
        assert kv[b"GROUP_WORLD_SIZE"] == kv[b"CROSS_SIZE"] == b"1"
        assert kv[b"MASTER_ADDR"] == kv[b"DET_CHIEF_IP"] == b"127.0.0.1"
        assert kv[b"MASTER_PORT"] == b"29400"
        assert len(kv[b"SECRET"]) >= 16
        secrets.add(kv[b"SECRET"])
    assert len(secrets) == 1, "one secret per job"
    assert err == b"", err


@case
def first_failure_code_returned_and_siblings_stopped():
    d = tempfile.mkdtemp()
    t0 = time.monotonic()
    # rank 2 fails once every rank has printed its pid (a barrier on files)
    code, out, err = slotrun("--slots", "4", "--", "sh", "-c",
                             f'echo pid $$; touch {d}/$RANK; if [ "$RANK" = 2 ]; then '
                             f'while [ $(ls {d} | wc -l) -lt 4 ]; do sleep 0.01; done; echo boom >&2; exit 5; fi; '
                             'exec sleep 60')
    shutil.rmtree(d)
    assert code == 5, (code, err)
    assert time.monotonic() - t0 < 20, "siblings were not stopped"
    pids = [int(m) for m in re.findall(rb"\] pid (\d+)", out)]
    assert len(pids) == 4, out
    assert not any(pid_alive(p) for p in pids)
    assert b"rank 2 (node 0, local rank 2" in err and b"exit 5" in err, err
    assert b"slotrun: | [rank=2] boom" in err, err
    assert err.count(b"stopped by slotrun") == 3, err


@case
def death_by_signal_is_128_plus_n():
    code, _, err = slotrun("--slots", "2", "--", "sh", "-c",
                           '[ "$RANK" = 1 ] && kill -SEGV $$; exec sleep 60')
    assert code == 139, (code, err)
    assert b"SIGSEGV" in err, err


@case
def missing_command_is_127_said_once_nothing_started():
    code, out, err = slotrun("--slots", "4", "--", "no-such-command-xyz", "arg")
    assert code == 127, code
    assert out == b""
    assert err.count(b"no-such-command-xyz") == 1 and err.count(b"\n") == 1, err
    # a script for python3 that is not there
    code, out, err = slotrun("--slots", "4", "/nonexistent/train.py")
    assert code == 127 and out == b"", (code, out)
    assert err.count(b"train.py") == 1 and b"--no-python" in err and err.count(b"\n") == 1, err


@case
def not_executable_is_126():
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "job.sh")
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho hi\n")
        code, _, err = slotrun("--slots", "2", "--", path)
        assert code == 126, code
        assert err.count(b"\n") == 1 and b"job.sh" in err, err
    finally:
        shutil.rmtree(d)


def ready_workers(n, sigspec, *extra):
    p = _start(["--slots", str(n), *extra, "--", PY, SIG_CHILD, *sigspec], None)
    p.wait_output(lambda s: all(b"[rank=%d] ready\n" % r in s.out for r in range(n)), 20, "all ready")
    return p


@case
def sigterm_reaches_every_worker_last_words_kept_exit_143():
    p = ready_workers(3, ["SIGTERM=0"])
    p.signal(signal.SIGTERM)
    code = p.finish(20)
    assert code == 143, (code, p.err)
    for r in range(3):
        assert b"[rank=%d] got SIGTERM\n" % r in p.out, p.out
        assert b"[rank=%d] last words on stderr after SIGTERM\n" % r in p.err, p.err
    assert b"stopped by SIGTERM" in p.err, p.err


@case
def sigusr1_reaches_every_worker():
    p = ready_workers(3, ["SIGUSR1=0"])
    p.signal(signal.SIGUSR1)
    code = p.finish(20)
    assert code == 0, (code, p.err)
    for r in range(3):
        assert b"[rank=%d] got SIGUSR1\n" % r in p.out, p.out
        assert b"[rank=%d] last words on stderr after SIGUSR1\n" % r in p.err, p.err


@case
def second_sigint_escalates_at_once():
    # Workers shrug SIGINT off; the grace is long, so only escalation ends it.
    # The second SIGINT goes only once the first has visibly arrived: two
    # pending signals of one kind merge into one.
    p = ready_workers(2, [], "--grace", "60")
    p.signal(signal.SIGINT)
    p.wait_output(lambda s: s.out.count(b"got SIGINT") == 2, 20, "the first SIGINT forwarded")
    p.signal(signal.SIGINT)
    code = p.finish(10)
    assert code == 130, (code, p.err)


@case
def grace_expiry_kills_workers_that_ignore_sigterm():
    d = tempfile.mkdtemp()
    t0 = time.monotonic()
    # rank 0 fails once the others ignore SIGTERM (a barrier on files)
    code, out, err = slotrun("--slots", "3", "--grace", "0.5", "--", "sh", "-c",
                             f"trap '' TERM; touch {d}/$RANK; if [ $RANK = 0 ]; then "
                             f"while [ $(ls {d} | wc -l) -lt 3 ]; do sleep 0.01; done; exit 4; fi; exec sleep 60")
    shutil.rmtree(d)
    assert code == 4, (code, err)
    assert time.monotonic() - t0 < 20
    assert err.count(b"SIGKILL") == 2, err


@case
def setsid_grandchild_ignoring_sigterm_is_gone_when_slotrun_exits():
    d = tempfile.mkdtemp()
    try:
        pidfile = os.path.join(d, "stray")
        script = (f"setsid sh -c 'trap \"\" TERM; echo $$ > {pidfile}; exec sleep 300' </dev/null >/dev/null 2>&1 & "
                  f"while [ ! -s {pidfile} ]; do sleep 0.01; done; exit 1")
        code, _, err = slotrun("--slots", "1", "--grace", "0.5", "--", "sh", "-c", script)
        assert code == 1, (code, err)
        stray = int(open(pidfile).read())
        assert not pid_alive(stray), "the escaped grandchild outlived slotrun"
    finally:
        shutil.rmtree(d)


@case
def leftover_daemon_after_success_is_stopped():
    d = tempfile.mkdtemp()
    try:
        pidfile = os.path.join(d, "daemon")
        script = (f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' </dev/null >/dev/null 2>&1 & "
                  f"while [ ! -s {pidfile} ]; do sleep 0.01; done; exit 0")
        code, _, err = slotrun("--slots", "1", "--", "sh", "-c", script)
        assert code == 0, (code, err)
        assert not pid_alive(int(open(pidfile).read()))
    finally:
        shutil.rmtree(d)


@case
def slotrun_sigkilled_workers_gone_within_a_second():
    p = _start(["--slots", "3", "--", "sh", "-c", "echo pid $$; exec sleep 60"], None)
    p.wait_output(lambda s: s.out.count(b"pid ") == 3, 20, "pids")
    pids = [int(m) for m in re.findall(rb"\] pid (\d+)", p.out)]
    os.kill(p.pid, signal.SIGKILL)
    p.p.wait(5)
    wait_for(lambda: not any(pid_alive(x) for x in pids), 1.0, "workers to die with slotrun")


# ---- as a container's PID 1 (examples/container/Dockerfile) ----

def as_pid1(*args, env=None):
    """slotrun ARGS as PID 1 of a new PID namespace, which is what it is as a
    container's ENTRYPOINT; unshare --kill-child ends the namespace if the
    test goes first.  Skip where no PID namespace can be made."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        raise Skip("needs root and unshare for a PID namespace")
    return Proc(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", SR, *args], env=env_for(env))


def unshare_failed(p):
    if b"unshare:" in p.err:
        p.finish(10)
        raise Skip(f"PID namespaces unavailable: {p.err.strip().decode(errors='replace')}")


def pid1_ready(p, n, text=b"ready"):
    """Waits for every worker's text; returns slotrun's pid (PID 1 inside:
    unshare's child outside, where the test signals it as docker would)."""
    p.wait_output(lambda s: s.out.count(text) >= n or b"unshare:" in s.err, 20, f"{n} x {text!r}")
    unshare_failed(p)
    with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
        return int(f.read().split()[0])


@case
def as_pid1_adopted_zombies_are_reaped():
    p = as_pid1("--slots", "2", "--", PY, os.path.join(HERE, "orphan_reaped.py"))
    code = p.finish(30)
    unshare_failed(p)
    assert code == 0, (p.out, p.err)
    assert p.out.count(b"orphan reaped by pid 1: slotrun") == 2, p.out


@case
def as_pid1_sigterm_stops_the_job():
    p = as_pid1("--slots", "2", "--", PY, SIG_CHILD, "SIGTERM=0")
    os.kill(pid1_ready(p, 2), signal.SIGTERM)
    code = p.finish(20)
    assert code == 143, (code, p.err)
    assert p.out.count(b"got SIGTERM") == 2


@case
def as_pid1_exit_codes_are_the_root_causes():
    for script, want in (("exit 0", 0), ('[ "$RANK" = 1 ] && exit 3; exec sleep 30', 3),
                         ('[ "$RANK" = 0 ] && kill -SEGV $$; exec sleep 30', 139),
                         ("exec no-such-command-xyz", 127)):
        p = as_pid1("--slots", "2", "--grace", "1", "--", "sh", "-c", script)
        code = p.finish(30)
        unshare_failed(p)
        assert code == want, (script, code, p.err)
    p = as_pid1("--slots", "2", "--", "no-such-command-xyz")
    code = p.finish(30)
    assert code == 127 and p.err.count(b"no-such-command-xyz") == 1, (code, p.err)


@case
def as_pid1_a_worker_ignoring_sigterm_is_killed_after_the_grace():
    # docker stop: SIGTERM to PID 1, SIGKILL to everything 10 s later; the
    # grace (1 s here, SLOTRUN_GRACE=8 in the Dockerfile) ends first
    p = as_pid1("--slots", "2", "--", "sh", "-c",
                "[ \"$RANK\" = 0 ] && trap '' TERM; echo ready; while :; do sleep 0.2; done",
                env={"SLOTRUN_GRACE": "1"})
    pid = pid1_ready(p, 2)
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    code = p.finish(20)
    assert code == 143, (code, p.err)
    assert time.monotonic() - t0 < 8, "not within the grace"
    assert re.search(rb"rank 0 \(local rank 0, pid \d+\): exit 137 \(SIGKILL\)", p.err), p.err
    assert re.search(rb"rank 1 \(local rank 1, pid \d+\): exit 143 \(SIGTERM\)", p.err), p.err
    assert not pid_alive(pid)


@case
def as_pid1_preemption_signals_reach_every_worker():
    p = as_pid1("--slots", "3", "--", PY, SIG_CHILD, "SIGUSR2=0")
    pid = pid1_ready(p, 3)
    os.kill(pid, signal.SIGUSR1)    # a notice: the job goes on
    p.wait_output(lambda s: s.out.count(b"got SIGUSR1") == 3, 20, "SIGUSR1 forwarded")
    assert p.p.poll() is None, p.err
    os.kill(pid, signal.SIGUSR2)    # the workers' own choice: exit 0
    code = p.finish(20)
    assert code == 0 and p.out.count(b"got SIGUSR2") == 3, (code, p.out, p.err)


@case
def no_line_lost_when_one_fails():
    d = tempfile.mkdtemp()
    try:
        # Every rank prints 1000 lines; rank 1 fails only once the others
        # have printed theirs (a barrier on files), so all 4000 must arrive.
        script = (f"i=0; while [ $i -lt 1000 ]; do echo \"line $i of $RANK\"; i=$((i+1)); done; "
                  f"touch {d}/done.$RANK; "
                  f"if [ $RANK = 1 ]; then while [ $(ls {d} | wc -l) -lt 4 ]; do sleep 0.01; done; exit 1; fi; "
                  f"exec sleep 60")
        code, out, err = slotrun("--slots", "4", "--", "sh", "-c", script)
        assert code == 1, (code, err)
        for r in range(4):
            assert lines_of(out, r) == [b"line %d of %d" % (i, r) for i in range(1000)], r
    finally:
        shutil.rmtree(d)


@case
def bad_flags_exit_2_and_start_nothing():
    d = tempfile.mkdtemp()
    try:
        marker = os.path.join(d, "ran")
        cmd = ["--", "sh", "-c", f"touch {marker}"]
        bad = [["--bogus"], ["--slots"], ["--slots", "0"], ["--slots", "x"], ["--slots", "-1"],
               ["--slots", "99999999"], ["--grace", "-1"], ["--grace", "soon"], ["--bind", "sideways"],
               ["--ranks-filter", "7"], ["--ranks-filter", "1-"], ["--master-port", "70000"],
               ["--master-port", "0"], ["--nnodes", "2"], ["--nnodes", "2", "--addrs", "a"],
               ["--node-rank", "1"], ["--iface", "nosuchif0"], ["--log-dir", ""]]
        for args in bad:
            code, out, err = slotrun(*args, *cmd)
            assert code == 2, (args, code, err)
            assert err.startswith(b"slotrun: ") and len(err.strip().split(b"\n")) <= 2, (args, err)
            assert not os.path.exists(marker), f"{args} started the command"
        code, _, err = slotrun()
        assert code == 2 and b"missing COMMAND" in err, err
    finally:
        shutil.rmtree(d)


@case
def bad_clusterinfo_exits_2_naming_the_source():
    d = tempfile.mkdtemp()
    try:
        marker = os.path.join(d, "ran")
        with open(os.path.join(d, "rendezvous.json"), "w") as f:
            f.write('{"container_addrs": ["10.0.0.1"], "container_rank": ')
        cases = [
            ([], {"SLOTRUN_DET_INFO_DIR": d}, b"rendezvous.json"),
            ([], {"SLURM_JOB_NODELIST": "gpu[01-", "SLURM_NODEID": "0"}, b"SLURM_JOB_NODELIST"),
            ([], {"SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_NODEID": "5"}, b"SLURM_NODEID"),
            ([], {"SLURM_NODEID": "0", "SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_NUM_NODES": "1"},
             b"Slurm started 4 tasks on 1 node"),
            ([], {"SLOTRUN_SLOTS": "many"}, b"SLOTRUN_SLOTS"),
            ([], {"SLOTRUN_NNODES": "2", "SLOTRUN_ADDRS": "a,b,c"}, b"SLOTRUN_"),
            ([], {"DET_SLOT_IDS": "[0,x]"}, b"DET_SLOT_IDS"),
            ([], {"C10D_PORT": "99999"}, b"C10D_PORT"),
            ([], {"PET_NNODES": "1:4"}, b"PET_NNODES '1:4'"),
            ([], {"PET_NPROC_PER_NODE": "cpu"}, b"PET_NPROC_PER_NODE 'cpu'"),
            ([], {"PET_NNODES": "2", "PET_NODE_RANK": "1"}, b"no source names their addresses"),
            ([], {"PET_MASTER_ADDR": "a b"}, b"PET_MASTER_ADDR 'a b'"),
            ([], {"JOB_COMPLETION_INDEX": "one"}, b"JOB_COMPLETION_INDEX 'one'"),
            ([], {"JOB_COMPLETION_INDEX": "3", "SLOTRUN_ADDRS": "n[0-1]"}, b"JOB_COMPLETION_INDEX '3' is out of range"),
            (["--nproc_per_node", "0"], {}, b"--nproc_per_node '0'"),
            (["--nnodes", "2:3"], {}, b"--nnodes '2:3'"),
            (["--master-addr", ""], {}, b"--master-addr ''"),
            (["--master_addr", "a", "--addrs", "b,c", "--node-rank", "0"], {}, b"--master_addr 'a' disagrees"),
            (["--addrs", "n[1-"], {}, b"--addrs 'n[1-'"),
        ]
        for args, env, name in cases:
            code, out, err = slotrun(*args, "--", "touch", marker, env=env)
            assert code == 2, (args, env, code, err)
            assert name in err and err.count(b"\n") == 1, (args, env, err)
            assert not os.path.exists(marker), f"{args} {env} started the command"
    finally:
        shutil.rmtree(d)


@case
def dry_run_prints_the_plan():
    code, out, err = slotrun("--slots", "2", "--dry-run", "--", "true")
    assert code == 0, err
    rows = [json.loads(l) for l in out.decode().splitlines()]
    assert [r["rank"] for r in rows] == [0, 1]
    for i, r in enumerate(rows):
        assert r["local_rank"] == i and r["node_rank"] == 0
        assert "gpu" in r and "cpus" in r and "numa" in r
        assert r["env"]["RANK"] == str(i) and r["env"]["WORLD_SIZE"] == "2"
        assert r["env"]["SLOTRUN_JOB_SECRET"] == "<secret>"


@case
def dry_run_multi_node_from_flags():
    code, out, err = slotrun("--nnodes", "2", "--node-rank", "1", "--addrs", "127.0.0.1,127.0.0.2",
                             "--slots", "3", "--master-port", "4242", "--dry-run", "--", "true")
    assert code == 0, err
    rows = [json.loads(l) for l in out.decode().splitlines()]
    assert [r["rank"] for r in rows] == [3, 4, 5]
    assert all(r["node_rank"] == 1 for r in rows)
    e = rows[0]["env"]
    assert e["MASTER_ADDR"] == "127.0.0.1" and e["MASTER_PORT"] == "4242" and e["WORLD_SIZE"] == "6"
    assert e["GROUP_WORLD_SIZE"] == "2" and e["NODE_RANK"] == "1"
    assert e["NCCL_SOCKET_IFNAME"] == "lo" and e["GLOO_SOCKET_IFNAME"] == "lo", e


@case
def user_interface_variables_are_left_alone():
    code, out, err = slotrun("--nnodes", "2", "--node-rank", "0", "--addrs", "127.0.0.1,127.0.0.2",
                             "--dry-run", env={"NCCL_SOCKET_IFNAME": "eth9"})
    assert code == 0, err
    e = json.loads(out.decode().splitlines()[0])["env"]
    assert "NCCL_SOCKET_IFNAME" not in e and e["GLOO_SOCKET_IFNAME"] == "lo", e


@case
def dry_run_from_determined_info_files():
    d = tempfile.mkdtemp()
    try:
        with open(os.path.join(d, "rendezvous.json"), "w") as f:
            json.dump({"container_addrs": ["127.0.0.1", "127.0.0.3"], "container_rank": 1,
                       "container_slot_counts": [2, 3]}, f)
        code, out, err = slotrun("--dry-run", "--bind", "none", env={"SLOTRUN_DET_INFO_DIR": d,
                                                  "DET_SLOT_IDS": "[0,1,2]", "C10D_PORT": "5555",
                                                  "DET_INTER_NODE_NETWORK_INTERFACE": "lo"})
        assert code == 0, err
        rows = [json.loads(l) for l in out.decode().splitlines()]
        assert [r["rank"] for r in rows] == [2, 3, 4], rows
        assert [r["gpu"] for r in rows] == ["0", "1", "2"], rows
        assert rows[0]["env"]["MASTER_PORT"] == "5555" and rows[0]["env"]["WORLD_SIZE"] == "5"
        assert rows[0]["env"]["NCCL_SOCKET_IFNAME"] == "lo"
    finally:
        shutil.rmtree(d)


@case
def dry_run_from_slurm():
    code, out, err = slotrun("--dry-run", "--iface", "lo", "--slots", "2",
                             env={"SLURM_JOB_NODELIST": "node[07-09]", "SLURM_NODEID": "2",
                                  "SLURM_NNODES": "3"})
    assert code == 0, err
    rows = [json.loads(l) for l in out.decode().splitlines()]
    assert [r["rank"] for r in rows] == [4, 5]
    assert rows[0]["env"]["MASTER_ADDR"] == "node07"


@case
def log_dir_and_ranks_filter():
    d = tempfile.mkdtemp()
    try:
        logs = os.path.join(d, "logs", "run1")
        code, out, err = slotrun("--slots", "3", "--log-dir", logs, "--ranks-filter", "1", "--",
                                 "sh", "-c", "echo out $RANK; echo err $RANK >&2")
        assert code == 0, err
        assert out == b"[rank=1] out 1\n", out
        assert err == b"[rank=1] err 1\n", err
        for r in range(3):
            assert open(os.path.join(logs, f"rank-{r}.stdout"), "rb").read() == b"[rank=%d] out %d\n" % (r, r)
            assert open(os.path.join(logs, f"rank-{r}.stderr"), "rb").read() == b"[rank=%d] err %d\n" % (r, r)
    finally:
        shutil.rmtree(d)


@case
def error_file_has_the_root_cause():
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "error.json")
        code, _, err = slotrun("--slots", "3", "--error-file", path, "--", "sh", "-c",
                               '[ $RANK = 2 ] && { echo "bad \xff thing" >&2; exit 9; }; exec sleep 60')
        assert code == 9, err
        doc = json.load(open(path))
        rc = doc["root_cause"]
        assert rc["rank"] == 2 and rc["exit_code"] == 9 and rc["node_rank"] == 0
        assert any("bad" in l for l in rc["stderr_tail"]), rc
        assert doc["exit_status"] == 9 and len(doc["ranks"]) == 3
        assert sorted(r["fate"] for r in doc["ranks"]) == ["exited", "stopped", "stopped"]
    finally:
        shutil.rmtree(d)


@case
def no_wrap_runs_the_command_directly():
    code, out, err = slotrun("--slots", "2", "--no-wrap", "--", "sh", "-c", "echo plain $RANK; exit 0")
    assert code == 0, err
    assert sorted(out.splitlines()) == [b"plain 0", b"plain 1"], out
    code, _, err = slotrun("--slots", "2", "--no-wrap", "--", "sh", "-c", "[ $RANK = 1 ] && kill -TERM $$; exec sleep 60")
    assert code == 143, (code, err)


@case
def env_variables_behind_flags():
    code, out, err = slotrun("--", "sh", "-c", "echo $RANK", env={"SLOTRUN_SLOTS": "2", "SLOTRUN_NO_WRAP": "1"})
    assert code == 0 and sorted(out.split()) == [b"0", b"1"], (out, err)
    code, out, err = slotrun("--slots", "1", "--", "true", env={"SLOTRUN_DRY_RUN": "1"})
    assert code == 0 and json.loads(out)["rank"] == 0


@case
def two_nodes_in_network_namespaces():
    with Cluster(2, "two") as net:
        procs = []
        for i in range(2):
            cmd = net.prefix(i) + [SR, "--nnodes", "2", "--node-rank", str(i), "--addrs", ",".join(net.addrs),
                                   "--slots", "2", "--", "sh", "-c",
                                   "echo $RANK/$WORLD_SIZE $MASTER_ADDR $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"]
            procs.append(Proc(cmd, environ=env_for()))
        try:
            outs = []
            for p in procs:
                assert p.finish(30) == 0, p.err
                outs.append(p.out)
        finally:
            for p in procs:
                p.kill()
        for i in range(2):
            for local in range(2):
                rank = 2 * i + local
                want = f"[rank={rank}] {rank}/4 {net.addr(0)} {net.iface(i)} {net.iface(i)}".encode()
                assert want in outs[i], (want, outs[i])


@case
def nccl_worker_all_reduce_across_two_nodes():
    nw = os.environ.get("NCCL_WORKER_BIN")
    if not nw:
        raise Skip("NCCL_WORKER_BIN not set")
    with Cluster(2, "ring") as net:
        procs = []
        for i in range(2):
            cmd = net.prefix(i) + [SR, "--nnodes", "2", "--node-rank", str(i), "--addrs", ",".join(net.addrs),
                                   "--slots", "2", "--master-port", "29517", "--",
                                   nw, "--backend", "cpu", "-b", "4", "-e", "1M", "-f", "16", "-d", "all", "-o", "sum"]
            procs.append(Proc(cmd, environ=env_for({"SLOTRUN_JOB_SECRET": "two-node-test",
                                                    "SLOTRUN_TIMEOUT": "60"})))
        try:
            codes = [p.finish(120) for p in procs]
        finally:
            for p in procs:
                p.kill()
        assert codes == [0, 0], (codes, procs[0].err[-1500:], procs[1].err[-1500:])
        out = procs[0].out.decode()
        assert "# ranks 4," in out, out[:2000]
        # (one host name: network namespaces share it) each node's ranks
        # register their own bridge address, so the ring crosses the bridge
        assert out.count(f"data plane {net.addr(0)}:") == 2, out[:2000]
        assert out.count(f"data plane {net.addr(1)}:") == 2, out[:2000]
        rows = [l for l in out.splitlines() if l.startswith("[rank=0] ") and not l.startswith("[rank=0] #")]
        assert len(rows) >= 6 and all(l.split()[-1] == "0" for l in rows), rows


@case
def a_killed_rank_is_the_root_cause_not_its_peers_errors():
    nw = os.environ.get("NCCL_WORKER_BIN")
    if not nw:
        raise Skip("NCCL_WORKER_BIN not set")
    # rank 2's nccl_worker dies of SIGKILL mid all-reduce; its peers see the
    # connection close and exit 1 at the same moment, yet the summary and
    # the status name the killed rank
    tag = f"T{os.getpid()}"
    p = _start(["--slots", "3", "--grace", "5", "--", nw, "-b", "64M", "-e", "64M", "-n", "100000"],
               {"SLOTRUN_TIMEOUT": "20", "ROOT_CAUSE_TEST": tag})
    p.wait_output(lambda s: b"#wrong" in s.out, 30, "the benchmark table")
    victims = pids_with_env("nccl_worker", RANK="2", ROOT_CAUSE_TEST=tag)
    assert len(victims) == 1, victims
    os.kill(victims[0], signal.SIGKILL)
    code = p.finish(60)
    assert code == 137, (code, p.err[-2000:])
    assert b"job failed: rank 2 (node 0, local rank 2" in p.err, p.err[-2000:]


@case
def interface_that_cannot_reach_the_chief_is_an_error():
    with Cluster(2, "unrch") as net:
        # the chief named by its side address: node 1 has no route to it
        chief = net.side_addr(0)
        p = Proc(net.prefix(1) + [SR, "--nnodes", "2", "--node-rank", "1", "--addrs", f"{chief},{net.addr(1)}",
                                  "--", "true"], environ=env_for())
        try:
            assert p.finish(20) == 2, p.err
        finally:
            p.kill()
        assert chief.encode() in p.err and b"--iface" in p.err, p.err


@case
def two_slots_with_bind_core_get_different_cores():
    if os.cpu_count() < 2:
        raise Skip("needs two cores")
    code, out, err = slotrun("--slots", "2", "--bind", "core", "--", "sh", "-c",
                             "grep Cpus_allowed_list /proc/self/status; echo OMP $OMP_NUM_THREADS")
    assert code == 0, err
    sets = [lines_of(out, r)[0].split()[-1] for r in range(2)]
    assert sets[0] != sets[1], sets
    cpus = [set(int(c) for c in x.decode().replace("-", ",").split(",")) for x in sets]
    assert not (cpus[0] & cpus[1]), sets
    assert all(lines_of(out, r)[1] == b"OMP 1" for r in range(2)), out


@case
def report_bindings_for_an_eight_gpu_server_fixture():
    xml = os.path.join(HERE, "..", "data", "gpu8_2socket.xml")
    code, out, err = slotrun("--report-bindings", "--dry-run", env={"HWLOC_XMLFILE": xml})
    assert code == 0, err
    lines = err.decode().splitlines()
    assert len(lines) == 8, err
    assert lines[0] == "slotrun: rank 0: gpu 0, cpus 16-19,48-51, numa 1", lines[0]
    assert lines[2] == "slotrun: rank 2: gpu 2, cpus 0-3,32-35, numa 0", lines[2]
    rows = [json.loads(l) for l in out.decode().splitlines()]
    assert [r["gpu"] for r in rows] == [str(i) for i in range(8)]
    assert rows[0]["env"]["CUDA_VISIBLE_DEVICES"] == "0" and rows[0]["env"]["OMP_NUM_THREADS"] == "4"


@case
def inherited_cuda_visible_devices_narrows_the_gpus():
    xml = os.path.join(HERE, "..", "data", "gpu8_2socket.xml")
    code, out, err = slotrun("--dry-run", env={"HWLOC_XMLFILE": xml, "CUDA_VISIBLE_DEVICES": "5,2"})
    assert code == 0, err
    rows = [json.loads(l) for l in out.decode().splitlines()]
    assert [r["gpu"] for r in rows] == ["5", "2"], rows
    assert rows[0]["numa"] == "1" and rows[1]["numa"] == "0", rows


@case
def determined_slot_ids_place_physically_but_number_as_cuda_sees():
    xml = os.path.join(HERE, "..", "data", "gpu8_2socket.xml")
    # Agent GPUs 2 and 3 (NUMA 0 in the fixture); the container sees them as 0 and 1.
    code, out, err = slotrun("--dry-run", env={"HWLOC_XMLFILE": xml, "DET_SLOT_IDS": "[2,3]"})
    assert code == 0, err
    rows = [json.loads(l) for l in out.decode().splitlines()]
    assert [r["gpu"] for r in rows] == ["0", "1"], rows
    assert [r["numa"] for r in rows] == ["0", "0"], rows
    code, out, err = slotrun("--dry-run", env={"HWLOC_XMLFILE": xml, "DET_SLOT_IDS": "[2,3]",
                                               "CUDA_VISIBLE_DEVICES": "GPU-aa,GPU-bb"})
    rows = [json.loads(l) for l in out.decode().splitlines()]
    assert [r["gpu"] for r in rows] == ["GPU-aa", "GPU-bb"], rows
    assert [r["numa"] for r in rows] == ["0", "0"], rows


@case
def binding_failure_names_the_set_once():
    # A topology for another machine, run for real: its cores are not here.
    xml = os.path.join(HERE, "..", "data", "gpu8_2socket.xml")
    code, out, err = slotrun("--slots", "2", "--", "true", env={"HWLOC_XMLFILE": xml})
    assert code == 1, (code, err)
    first = err.decode().splitlines()[0]
    assert re.fullmatch(r"slotrun: rank 0 \(node 0\): cannot bind to cpus 16-\d+,48-\d+ \(NUMA node 1\): "
                        r"Invalid argument", first), first
    assert err.count(b"cannot bind") == 2, "said once, then once more in the summary"


# ---- regressions found in review ----

@case
def worker_that_cannot_start_does_not_read_slotruns_stdin():
    d = tempfile.mkdtemp()
    try:
        os.mkdir(os.path.join(d, "rank-1.stdout"))  # rank 1's log file cannot be opened
        r, w = os.pipe()  # slotrun's stdin: open, silent; reading it would hang
        p = subprocess.Popen([SR, "--slots", "3", "--log-dir", d, "--", "true"], stdin=r,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for())
        os.close(r)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            raise AssertionError("slotrun hung on a worker that never started")
        finally:
            os.close(w)
        assert p.returncode == 1, (p.returncode, err)
        assert b"rank-1.stdout" in err and b"rank 1" in err, err
    finally:
        shutil.rmtree(d)


@case
def chatty_background_process_does_not_hide_the_failure():
    t0 = time.monotonic()
    code, out, err = slotrun("--slots", "1", "--grace", "1", "--", "sh", "-c",
                             "(while :; do echo tick; sleep 0.1; done) & echo main exits 3 >&2; exit 3",
                             timeout=20)
    assert code == 3, (code, err)
    assert time.monotonic() - t0 < 10


@case
def strays_that_fork_after_the_kill_walk_are_killed_too():
    marker = f"1000.{os.getpid()}"
    d = tempfile.mkdtemp()
    forking = os.path.join(d, "forking")
    # forks as fast as it can; the rank exits once it has begun
    stray = f"trap '' TERM; sleep {marker} & touch {forking}; while :; do sleep {marker} & done"
    try:
        code, _, err = slotrun("--slots", "1", "--no-wrap", "--grace", "0.3", "--", "sh", "-c",
                               f"sh -c \"{stray}\" & while [ ! -e {forking} ]; do sleep 0.01; done; exit 0",
                               timeout=20)
    finally:
        shutil.rmtree(d)
    assert code == 0, (code, err)
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True).stdout.split()
    for pid in left:
        os.kill(int(pid), signal.SIGKILL)
    assert not left, f"{len(left)} descendants outlived slotrun"


@case
def closed_standard_fds_do_not_become_signals():
    d = tempfile.mkdtemp()
    try:
        ef = os.path.join(d, "e.json")
        logs = os.path.join(d, "logs")
        # rank 1 fails once slotrun has read both ranks' stderr lines (its
        # log files hold them): were fd 2 libevent's signal pipe, their bytes
        # would be read as signals ('\\n' is SIGUSR1)
        seen = " && ".join(f"grep -qs warn {logs}/rank-{r}.stderr" for r in (0, 1))
        cmd = (f"exec {SR} --slots 2 --log-dir {logs} --error-file {ef} -- sh -c "
               f"'echo warn >&2; echo out; [ $RANK = 1 ] && {{ until {seen}; do sleep 0.01; done; exit 3; }}; "
               f"exec sleep 30' 0<&- 1>&- 2>&-")
        code, _, _ = run_cmd(["sh", "-c", cmd], env=env_for(), timeout=20)
        assert code == 3, code
        assert json.load(open(ef))["root_cause"]["exit_code"] == 3
    finally:
        shutil.rmtree(d)


@case
def stalled_reader_does_not_delay_teardown():
    d = tempfile.mkdtemp()
    try:
        stamp = os.path.join(d, "term")
        ready = os.path.join(d, "ready")
        # rank 0 fails only once rank 1's trap is set (a barrier on a file),
        # so the SIGTERM meets the trap, not sh's default action
        script = (f"if [ $RANK = 0 ]; then while [ ! -e {ready} ]; do sleep 0.01; done; "
                  f"head -c 600000 /dev/zero | tr '\\0' x | fold -w 100; exit 3; fi; "
                  f"trap 'touch {stamp}; exit 0' TERM; touch {ready}; while :; do sleep 0.05; done")
        # Nobody reads slotrun's stdout until rank 1 has been told to stop.
        p = subprocess.Popen([SR, "--slots", "2", "--", "sh", "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env_for())
        try:
            wait_for(lambda: os.path.exists(stamp), 10, "rank 1 to get SIGTERM with stdout unread")
        finally:
            out, err = p.communicate(timeout=30)
        assert p.returncode == 3, (p.returncode, err[-500:])
        assert out.count(b"\n") == 6000, "every line still arrives"
    finally:
        shutil.rmtree(d)


@case
def fd_limit_is_raised_or_refused_clearly():
    if not shutil.which("prlimit"):
        raise Skip("needs prlimit")
    code, out, err = run_cmd(["prlimit", "--nofile=64:4096", SR, "--slots", "40", "--", "true"],
                             env=env_for(), timeout=30)
    assert code == 0, err
    code, out, err = run_cmd(["prlimit", "--nofile=64:64", SR, "--slots", "40", "--", "true"],
                             env=env_for(), timeout=30)
    assert code == 2 and b"open files" in err and err.count(b"\n") == 1, (code, err)


@case
def the_fd_limit_slotrun_names_is_enough():
    """The limit slotrun's refusal names starts every rank when given
    exactly (with and without log files): slotrun holds no more fds while
    its workers start than it counts."""
    if not shutil.which("prlimit"):
        raise Skip("needs prlimit")
    d = tempfile.mkdtemp()
    try:
        for logs in ([], ["--log-dir", d]):
            argv = [SR, "--slots", "64", *logs, "--", "true"]
            code, out, err = run_cmd(["prlimit", "--nofile=64:64", *argv], env=env_for(), timeout=60)
            m = re.search(rb"need about (\d+) open files", err)
            assert code == 2 and m, (code, err)
            need = int(m.group(1))
            code, out, err = run_cmd(["prlimit", f"--nofile={need}:{need}", *argv], env=env_for(), timeout=60)
            assert code == 0, (logs, need, err[-1000:])
    finally:
        shutil.rmtree(d)


@case
def inherited_blocked_signals_are_unblocked_for_workers():
    import signal as sg
    for wrap in ([], ["--no-wrap"]):
        code, out, err = run_cmd(
            [PY, "-c", "import os,signal,sys; signal.pthread_sigmask(signal.SIG_BLOCK,{signal.SIGTERM,signal.SIGINT}); "
                       "os.execv(sys.argv[1], sys.argv[1:])",
             SR, "--slots", "1", *wrap, "--", "sh", "-c", "grep SigBlk /proc/self/status"], env=env_for(), timeout=20)
        assert code == 0, err
        blk = int(out.split()[-1], 16)
        assert not blk & (1 << (sg.SIGTERM - 1)) and not blk & (1 << (sg.SIGINT - 1)), (wrap, out)


@case
def help_and_version():
    code, out, _ = slotrun("--help")
    assert code == 0 and b"Usage: slotrun" in out and b"--ranks-filter" in out
    code, out, _ = slotrun("--version")
    assert code == 0 and out.startswith(b"slotrun ")


run()
