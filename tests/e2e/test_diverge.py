# SPDX-License-Identifier: MIT
"""End-to-end tests of diverging ranks: nccl_worker ranks given a different
-n, -w or -c (so that they call a different number of all-reduces of the
same shape, and then meet in different collectives), or a different -e (one
finishes while the others go on), over tcp, shm and shm+tcp.  Each rank
must name both positions ("rank 0 is at allgather #7, rank 1 at all-reduce
#7 of 1024 float32 sum", "... rank 1 ended after #8") and exit non-zero
long before SLOTRUN_TIMEOUT, never report success."""

import re
import time

from harness import Proc, case, free_port, run
from ranks import NW, finish_all, rank_env

TIMEOUT = 60   # SLOTRUN_TIMEOUT: a hang would take this long
PROMPT = 20    # every rank must be done well before it

BASE = ["--backend", "cpu", "-b", "4K", "-e", "8K", "-n", "2", "-w", "1", "-c", "1"]
POSITIONS = re.compile(r"rank (\d+) is at [a-z_-]+ #(\d+)(?: of \d+ \w+ \w+)?, "
                       r"rank (\d+) (?:at [a-z_-]+ #\d+(?: of \d+ \w+ \w+)?|ended after #\d+)")


def args_with(change):
    a = list(BASE)
    for flag, value in change.items():
        a[a.index(flag) + 1] = value
    return a


def start_ranks(n, odd, change, transport, node_of=None, prefix_of=None, master="127.0.0.1"):
    """n ranks of nccl_worker; rank `odd` gets BASE with change applied."""
    port = free_port()
    procs = {}
    for r in range(n):
        extra = {"MASTER_ADDR": master}
        if node_of:
            local = [q for q in range(n) if node_of(q) == node_of(r)]
            extra.update(LOCAL_RANK=local.index(r), LOCAL_WORLD_SIZE=len(local))
        env = rank_env(r, n, port, timeout=TIMEOUT, transport=transport, **extra)
        argv = [NW, *(args_with(change) if r == odd else BASE)]
        procs[r] = Proc((prefix_of(r) if prefix_of else []) + argv, env=env)
    return procs


def all_fail_naming_positions(procs, survivors=None, ended=None):
    """Every rank (of survivors) exits non-zero within PROMPT seconds with a
    line naming two ranks' positions; ended: the rank that finished."""
    t0 = time.monotonic()
    codes = finish_all(procs, PROMPT + 10)
    took = time.monotonic() - t0
    for r in survivors if survivors is not None else procs:
        err = procs[r].err.decode()
        assert codes[r] != 0, (r, codes, err)
        m = POSITIONS.search(err)
        assert m, (r, {q: p.err for q, p in procs.items()})
        assert m.group(1) != m.group(3), (r, err)
        # one line: not the wrong elements of the all-reduce that matched
        # another of the same shape just before they parted
        assert err.count("\n") == 1 and err.startswith(f"nccl_worker: rank {r}: "), (r, err)
        if ended is not None:
            assert f"rank {ended} ended after #" in err, (r, err)
        assert b"# Out of bounds values : 0 OK" not in procs[r].out, (r, procs[r].out)
    assert took < PROMPT, f"took {took:.1f}s, SLOTRUN_TIMEOUT is {TIMEOUT}s"
    return codes


def each_change(n, transport, **kw):
    for odd, change in ((1, {"-n": "3"}), (n - 1, {"-w": "3"}), (0, {"-c": "0"}),
                        (n - 1, {"-c": "0"})):
        procs = start_ranks(n, odd, change, transport, **kw)
        try:
            all_fail_naming_positions(procs)
        except AssertionError as e:
            raise AssertionError(f"rank {odd} with {change} over {transport}: {e}") from None


@case
def different_iterations_over_tcp():
    each_change(2, "tcp")
    each_change(3, "tcp")


@case
def different_iterations_over_shm():
    each_change(2, "shm")
    each_change(3, "shm")


@case
def a_rank_that_finished_is_named_over_tcp_and_shm():
    # rank 1 runs one row (4K), the others two (4K, 8K)
    for transport in ("tcp", "shm"):
        procs = start_ranks(3, 1, {"-e": "4K"}, transport)
        codes = all_fail_naming_positions(procs, survivors=[0, 2], ended=1)
        assert codes[1] == 0, (transport, codes, procs[1].err)


@case
def different_iterations_over_shm_and_tcp_across_nodes():
    """2 namespace nodes x 2 ranks: shared memory within each, the TCP ring
    across the leaders (ranks 0 and 2)."""
    from netns import Cluster
    with Cluster(2, "div") as cl:
        for odd, change in ((3, {"-n": "3"}), (2, {"-w": "3"}), (1, {"-c": "0"})):
            procs = start_ranks(4, odd, change, "auto", node_of=lambda r: r // 2,
                                prefix_of=lambda r: cl.prefix(r // 2), master=cl.addr(0))
            all_fail_naming_positions(procs)
            assert b"# transport shm+tcp" in procs[0].out, procs[0].out[:2000]


@case
def under_slotrun_nobody_is_blamed_for_a_divergence():
    """Which side went astray only the program knows: the headline is the
    first rank's failure with the positions, never "rank X, named by rank
    Y", and the --error-file's root cause has no named_by."""
    import json
    import os
    import subprocess
    import tempfile
    from jobs import SR
    from harness import job_env
    d = tempfile.mkdtemp(prefix="test_diverge.")
    script, ef = os.path.join(d, "rank.sh"), os.path.join(d, "err.json")
    with open(script, "w") as f:
        f.write('#!/bin/sh\nif [ "$RANK" = 1 ]; then exec "$@" -n 3; fi\nexec "$@" -n 2\n')
    os.chmod(script, 0o755)
    env = job_env({"SLOTRUN_TIMEOUT": str(TIMEOUT)})
    p = subprocess.run([SR, "--slots", "2", "--error-file", ef, "--", script, NW,
                        *[a for a in BASE if a not in ("-n", "2")]], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=PROMPT + 10)
    err = p.stderr.decode()
    assert p.returncode == 1, (p.returncode, err)
    head = [ln for ln in err.splitlines() if ln.startswith("slotrun: job failed:")]
    assert len(head) == 1 and POSITIONS.search(head[0]), err
    assert "named by" not in err, err
    with open(ef) as f:
        cause = json.load(f)["root_cause"]
    assert "named_by" not in cause and POSITIONS.search(cause["message"]), cause


run()
