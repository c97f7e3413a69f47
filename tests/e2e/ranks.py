# SPDX-License-Identifier: MIT
"""What the nccl_worker end-to-end tests share: starting n ranks here with
the worker environment of slotrun(1) (slotrun would set the same), reading
them all, and rank 0's table."""

import os
import re
import select
import time

from harness import Proc, binary, free_port, wait_for

NW = binary("nccl_worker")


def rank_env(r, n, port, secret="e2e-secret", timeout=60, transport="tcp", **extra):
    env = {"RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": str(r),
           "LOCAL_WORLD_SIZE": str(n), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "SLOTRUN_JOB_SECRET": secret, "SLOTRUN_TIMEOUT": str(timeout),
           "SLOTRUN_TRANSPORT": transport}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start(n, argv, ranks=None, env_for=None, port=None, **kw):
    """Starts ranks (default all of 0..n-1); env_for(r) may add variables."""
    port = port or free_port()
    procs = {}
    for r in (range(n) if ranks is None else ranks):
        env = rank_env(r, n, port, **kw)
        if env_for:
            env.update(env_for(r))
        procs[r] = Proc(argv, env=env)
    return procs


def finish_all(procs, timeout):
    """Reads every rank's output until all exit; returns {rank: code}.
    All pipes are drained together, so no rank blocks on a full pipe."""
    deadline = time.monotonic() + timeout
    pending = dict(procs)
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            for p in procs.values():
                p.kill()
            raise AssertionError("ranks %s did not finish in %ss; stderr: %s" % (
                sorted(pending), timeout,
                {r: p.err[-500:] for r, p in procs.items()}))
        fds = {}
        for r, p in pending.items():
            for f in (p.p.stdout, p.p.stderr):
                if not f.closed:
                    fds[f] = p
        if not fds:
            for r in list(pending):
                pending[r].p.wait(max(0.1, left))
                del pending[r]
            break
        ready, _, _ = select.select(list(fds), [], [], min(left, 1.0))
        for f in ready:
            fds[f].take(f)
        for r in list(pending):
            p = pending[r]
            if p.p.stdout.closed and p.p.stderr.closed:
                p.p.wait(max(0.1, deadline - time.monotonic()))
                del pending[r]
    return {r: p.p.returncode for r, p in procs.items()}


def table(out):
    """The rows of rank 0's table: [(size, count, type, op, wrong), ...]."""
    rows = []
    for line in out.decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        assert len(f) == 9, line
        rows.append((int(f[0]), int(f[1]), f[2], f[3], int(f[8])))
    return rows


def bench_ok(n, args, timeout=240, expect_rows=None, **kw):
    procs = start(n, [NW, "--backend", "cpu", *args], **kw)
    codes = finish_all(procs, timeout)
    errs = {r: p.err for r, p in procs.items() if p.err}
    assert all(c == 0 for c in codes.values()), (codes, errs)
    assert not errs, errs
    rows = table(procs[0].out)
    assert rows, procs[0].out
    assert all(r[4] == 0 for r in rows), [r for r in rows if r[4]]
    for r in range(1, n):
        assert procs[r].out == b"", "only rank 0 prints the table"
    if expect_rows is not None:
        assert len(rows) == expect_rows, (len(rows), expect_rows)
    return procs[0].out, rows


# One endless row: after the header every rank is in the timed all-reduce
# loop (nothing else in it uses the CPU).
ALLREDUCING = [NW, "--backend", "cpu", "-b", "8M", "-e", "8M", "-n", "100000000", "-w", "0",
               "-c", "0"]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def start_allreducing(n, victim, timeout, transport="tcp"):
    """n ranks in ALLREDUCING, once the victim has spent 0.3 s of CPU in it."""
    procs = start(n, ALLREDUCING, timeout=timeout, transport=transport)
    procs[0].wait_line("# transport", timeout=60)
    wait_for(lambda: cpu_seconds(procs[victim].pid) > 0.3, 60, "the ranks to be all-reducing")
    return procs


def survivors_name(procs, dead, t0, limit, *phrases, named=None):
    """Every other rank exits non-zero within limit seconds with one line
    naming the dead rank (named: a regex for it) and holding phrases."""
    codes = finish_all({r: p for r, p in procs.items() if r != dead}, limit + 10)
    took = time.monotonic() - t0
    for r, code in codes.items():
        err = procs[r].err.decode()
        assert code != 0, (r, code, err)
        assert re.search(named or rf"peer rank {dead}\b", err), (r, err)
        for phrase in phrases:
            assert phrase in err, (r, phrase, err)
        assert err.startswith(f"nccl_worker: rank {r}: ") and err.count("\n") == 1, (r, err)
    assert took < limit, f"took {took:.1f}s, more than {limit}s"
