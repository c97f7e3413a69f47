# SPDX-License-Identifier: MIT
"""The comm library's rendezvous at scale (nccl_worker/rdv_chief.c,
docs/comm.md "The rendezvous at scale"): hundreds of ranks started at once
on this machine get through init, a barrier and an allgather whose values
every rank checks (bench/rdv_scale forks them, no launcher); rank 0 raises
its soft descriptor limit when the job needs it, and says at once when even
the hard limit is too few; a rank that rank 0 sends away busy connects
again; silent strangers that fill rank 0's table delay the ranks, they do
not fail them.

Timings are bench/rdv_scale.py's business: nothing here asserts one beyond
a generous bound that tells "at once" from "at the timeout"."""

import json
import resource
import socket
import time

from harness import Proc, Skip, binary, case, free_port, run, try_connect, wait_for
from ranks import finish_all, rank_env
from rdv_frames import BUSY, CHALLENGE, frame, recv_frame

SCALE = binary("rdv_scale")
CHECK = binary("comm_check")


def limit_nofile(soft, hard):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return set_limit


def scale(n, timeout=60, preexec=None, limit=120):
    """bench/rdv_scale -n N: (exit code, its JSON, stderr)."""
    p = Proc([SCALE, "-n", str(n), "-t", str(timeout), "-i", "2"], preexec_fn=preexec)
    code = p.finish(limit)
    out = p.out.decode()
    assert out.count("\n") == 1, (code, out, p.err)
    return code, json.loads(out), p.err.decode()


def need_fds(n):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < n + 100:
        raise Skip(f"RLIMIT_NOFILE's hard limit is {hard}: rank 0 of {n} ranks needs about "
                   f"{n + 100} descriptors (raise it: ulimit -Hn)")


@case
def ranks_256_pass_init_a_barrier_and_an_allgather():
    need_fds(256)
    code, r, err = scale(256)
    assert code == 0 and r["ok"], (code, r, err)
    assert r["ranks"] == 256 and r["failed"] == 0 and r["wrong"] == 0, r
    # rank 0 holds a control connection per other rank, nothing more
    assert 255 <= r["rank0"]["fds"] <= 255 + 8, r["rank0"]


@case
def rank_0_raises_its_soft_descriptor_limit_to_the_hard_one():
    need_fds(100)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    code, r, err = scale(100, preexec=limit_nofile(64, hard))
    assert code == 0 and r["ok"], (code, r, err)
    assert r["rank0"]["nofile_soft"] == (-1 if hard == resource.RLIM_INFINITY else hard), r


@case
def a_hard_descriptor_limit_too_low_is_said_at_once():
    t0 = time.monotonic()
    code, r, err = scale(100, timeout=60, preexec=limit_nofile(64, 64))
    took = time.monotonic() - t0
    assert code == 1 and not r["ok"], (code, r, err)
    assert r["error"].startswith("rank 0: WORLD_SIZE=100 needs about "), r["error"]
    assert "file descriptors on rank 0, but RLIMIT_NOFILE allows 64 (hard limit): raise it " \
        "(ulimit -Hn" in r["error"], r["error"]
    assert took < 30, f"took {took:.1f}s: not at once but at the timeout"


@case
def a_rank_sent_away_busy_connects_again():
    port = free_port()
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1)
    p1 = Proc([CHECK], env=rank_env(1, 2, port, timeout=30))
    ls.settimeout(20)
    a, _ = ls.accept()
    ls.close()
    a.sendall(frame(BUSY))
    a.close()
    # rank 0 comes up on the port only now: rank 1 must still be trying
    p0 = Proc([CHECK], env=rank_env(0, 2, port, timeout=30))
    codes = finish_all({0: p0, 1: p1}, 60)
    assert codes == {0: 0, 1: 0}, (codes, p0.err, p1.err)


@case
def silent_strangers_that_fill_rank_0s_table_delay_the_ranks_and_are_sent_away_busy():
    port = free_port()
    p0 = Proc([CHECK], env=rank_env(0, 3, port, timeout=60))
    first = wait_for(lambda: try_connect(port), 20, "rank 0 to listen")
    strangers = [first] + [try_connect(port) for _ in range(63)]
    assert all(strangers)
    for s in strangers:  # all 64 are held: each was greeted
        assert recv_frame(s)[0] == CHALLENGE
    t0 = time.monotonic()
    ranks = {0: p0, 1: Proc([CHECK], env=rank_env(1, 3, port, timeout=60)),
             2: Proc([CHECK], env=rank_env(2, 3, port, timeout=60))}
    codes = finish_all(ranks, 60)
    took = time.monotonic() - t0
    assert codes == {0: 0, 1: 0, 2: 0}, (codes, {r: p.err for r, p in ranks.items()})
    assert took < 9, f"took {took:.1f}s: the ranks waited for the strangers' 10 s"
    busy = 0
    for s in strangers:
        try:
            t, _ = recv_frame(s, 1)
            busy += t == BUSY
        except (AssertionError, OSError):
            pass
        s.close()
    assert busy >= 2, f"{busy} strangers were sent away busy, the ranks needed 2 places"


if __name__ == "__main__":
    run()
