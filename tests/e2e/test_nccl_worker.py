# SPDX-License-Identifier: MIT
"""End-to-end tests of nccl_worker and the comm library: real ranks started
here with the worker environment of slotrun(1) (slotrun would set the same),
talking TCP over loopback."""

import os
import re
import signal
import struct
import subprocess
import time

from harness import Proc, Skip, binary, case, free_port, run, run_cmd, try_connect, wait_for
from ranks import (NW, bench_ok, finish_all, rank_env, start, start_allreducing, survivors_name,
                   table)

CHECK = binary("comm_check")
TIMEOUT = 6  # SLOTRUN_TIMEOUT for the failure tests, seconds


ALL = ["-d", "all", "-o", "all", "-n", "1", "-w", "0"]


@case
def n1_every_type_and_op():
    out, rows = bench_ok(1, ["-b", "4", "-e", "64K", "-f", "8", *ALL], expect_rows=6 * 5 * 5)
    assert b"# ranks 1, hosts 1" in out
    assert {r[2] for r in rows} == {"float32", "float64", "int32", "int64", "bf16", "fp16"}
    assert {r[3] for r in rows} == {"sum", "prod", "min", "max", "avg"}


@case
def n2_every_type_and_op_one_element_to_3_mib():
    # 4, 28, 196, ..., 3294172 bytes: odd counts for float32/int32 (1, 7, 49,
    # ...), 0 doubles at 4 bytes, counts below and not divisible by n.
    _, rows = bench_ok(2, ["-b", "4", "-e", "4M", "-f", "7", *ALL], expect_rows=6 * 5 * 8)
    counts = {r[1] for r in rows}
    assert 0 in counts and 1 in counts and 823543 in counts, sorted(counts)


@case
def n2_several_mib_odd_count():
    _, rows = bench_ok(2, ["-b", "7340036", "-e", "7340036", "-n", "2", "-w", "1"])
    assert rows == [(7340036, 1835009, "float32", "sum", 0)], rows


@case
def n3_every_type_and_op_from_zero():
    _, rows = bench_ok(3, ["-b", "0", "-e", "600K", "-f", "7", *ALL], expect_rows=6 * 5 * 8)
    assert rows[0][0] == 0 and rows[0][1] == 0


@case
def n5_every_type_and_op():
    _, rows = bench_ok(5, ["-b", "4", "-e", "100K", "-f", "9", "-d", "all", "-o", "all",
                           "-n", "2", "-w", "1"], expect_rows=6 * 5 * 5)
    assert any(0 < r[1] < 5 for r in rows), "a count below the world size"


@case
def a_wrong_element_is_counted_and_fails_every_rank():
    procs = start(3, [NW, "--backend", "cpu", "-b", "4K", "-e", "16K", "-d", "int32", "-n", "1"],
                  NCCL_WORKER_TEST_CORRUPT_RANK=1)
    codes = finish_all(procs, 60)
    assert codes == {0: 1, 1: 1, 2: 1}, (codes, {r: p.err for r, p in procs.items()})
    assert [r[4] for r in table(procs[0].out)] == [1, 1, 1], procs[0].out
    assert b"# Out of bounds values : 3 FAILED" in procs[0].out
    assert procs[1].err.count(b"1 wrong elements in int32 sum") == 3, procs[1].err
    assert b"nccl_worker: rank 0: 3 wrong elements over all ranks" in procs[0].err
    assert procs[2].err == b""


@case
def linear_sizes_with_i():
    _, rows = bench_ok(3, ["-b", "4", "-e", "40", "-i", "12", "-d", "int32", "-o", "max"],
                       expect_rows=4)
    assert [r[1] for r in rows] == [1, 4, 7, 10]


@case
def core_api_primitives_n1_n2_n3_n5():
    for n in (1, 2, 3, 5):
        procs = start(n, [CHECK])
        codes = finish_all(procs, 120)
        assert all(c == 0 for c in codes.values()), (n, codes, {r: p.err for r, p in procs.items()})
        for r, p in procs.items():
            assert p.out.decode().startswith(f"comm_check: rank {r}: ok ({n} ranks on 1 hosts)"), p.out


@case
def sigkilled_rank_is_named_by_all_others():
    procs = start_allreducing(4, 2, TIMEOUT)
    t0 = time.monotonic()
    procs[2].p.send_signal(signal.SIGKILL)
    survivors_name(procs, 2, t0, TIMEOUT, "closed the connection during all-reduce")


@case
def sigkilled_chief_is_named_by_all_others():
    procs = start_allreducing(5, 0, TIMEOUT)
    t0 = time.monotonic()
    procs[0].p.send_signal(signal.SIGKILL)
    survivors_name(procs, 0, t0, TIMEOUT, "during all-reduce")


def wedge(n, stuck):
    procs = start_allreducing(n, stuck, 3)
    t0 = time.monotonic()
    procs[stuck].p.send_signal(signal.SIGSTOP)
    try:
        # SLOTRUN_TIMEOUT, then at most 1.5 s to agree on who is at fault.
        # On a loaded machine a slow rank may be named beside the stuck one.
        survivors_name(procs, stuck, t0, 3 + 1.5 + 2, "did not answer",
                       named=rf"peer ranks? (\d+, )*{stuck}\b")
    finally:
        procs[stuck].p.send_signal(signal.SIGKILL)
        procs[stuck].p.wait(10)


@case
def wedged_rank_is_named_after_the_timeout():
    wedge(4, 2)


@case
def wedged_chief_is_named_after_the_timeout():
    wedge(3, 0)


@case
def wrong_secret_is_refused():
    procs = start(2, [NW, "--backend", "cpu", "-b", "4K", "-e", "4K"], timeout=4,
                  env_for=lambda r: {"SLOTRUN_JOB_SECRET": "intruder"} if r == 1 else {})
    t0 = time.monotonic()
    codes = finish_all(procs, 20)
    e0, e1 = procs[0].err.decode(), procs[1].err.decode()
    assert codes[1] != 0 and "rank 0 refused this rank: wrong job secret" in e1, (codes, e1)
    assert codes[0] != 0 and "rank 1 never came" in e0 and "wrong job secret" in e0, e0
    assert time.monotonic() - t0 < 4 + 5


@case
def unset_secret_matches_only_unset_or_empty():
    procs = start(2, [CHECK], env_for=lambda r: {"SLOTRUN_JOB_SECRET": ""} if r == 1 else {},
                  secret="")
    # both empty (rank 0: "", rank 1: "") -> fine
    codes = finish_all(procs, 60)
    assert codes == {0: 0, 1: 0}, (codes, procs[0].err, procs[1].err)
    port = free_port()
    e0 = rank_env(0, 2, port, timeout=3)
    del e0["SLOTRUN_JOB_SECRET"]
    p0 = Proc([CHECK], env=e0)
    p1 = Proc([CHECK], env=rank_env(1, 2, port, secret="x", timeout=3))
    codes = finish_all({0: p0, 1: p1}, 20)
    assert codes[0] != 0 and codes[1] != 0, codes
    assert b"wrong job secret" in p1.err, p1.err


@case
def a_rank_that_never_comes_is_named():
    procs = start(3, [NW, "--backend", "cpu", "-b", "4K", "-e", "4K"], ranks=[0, 1], timeout=3)
    t0 = time.monotonic()
    codes = finish_all(procs, 20)
    for r in (0, 1):
        err = procs[r].err.decode()
        assert codes[r] != 0 and "rank 2 never came" in err, (r, err)
        assert err.count("\n") == 1, err
    assert time.monotonic() - t0 < 3 + 5


@case
def garbage_at_the_rendezvous_port_is_ignored():
    port = free_port()
    p0 = Proc([NW, "--backend", "cpu", "-b", "4K", "-e", "4K"], env=rank_env(0, 2, port))
    socks = []
    s = wait_for(lambda: try_connect(port), 20, "rank 0 to listen")
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    socks.append(s)
    s = try_connect(port)  # a header announcing an absurd registration
    s.sendall(struct.pack("<IHHQQ", 0x4E524C53, 2, 1, 0, 1 << 40))
    socks.append(s)
    s = try_connect(port)  # a truncated registration, then silence
    s.sendall(struct.pack("<IHHQQ", 0x4E524C53, 2, 1, 0, 100) + b"\x01\x00")
    socks.append(s)
    socks.append(try_connect(port))  # says nothing at all
    p1 = Proc([NW, "--backend", "cpu", "-b", "4K", "-e", "4K"], env=rank_env(1, 2, port))
    codes = finish_all({0: p0, 1: p1}, 60)
    for s in socks:
        s.close()
    assert codes == {0: 0, 1: 0}, (codes, p0.err, p1.err)


@case
def ranks_that_disagree_are_told():
    # Rank 0 reduces 1024 floats, rank 1 2048.
    port = free_port()
    p0 = Proc([NW, "--backend", "cpu", "-b", "4K", "-e", "4K"], env=rank_env(0, 2, port, timeout=5))
    p1 = Proc([NW, "--backend", "cpu", "-b", "8K", "-e", "8K"], env=rank_env(1, 2, port, timeout=5))
    codes = finish_all({0: p0, 1: p1}, 30)
    assert codes[0] != 0 and codes[1] != 0, codes
    shapes = re.compile(r"rank (\d) is at all-reduce #(\d+) of (\d+) float32 sum, "
                        r"rank (\d) at all-reduce #\2 of (\d+) float32 sum")
    for p in (p0, p1):
        m = shapes.search(p.err.decode())
        assert m, p.err
        assert {int(m.group(1)): int(m.group(3)), int(m.group(4)): int(m.group(5))} == \
            {0: 1024, 1: 2048}, p.err


@case
def sigusr1_on_one_rank_stops_all_at_the_same_row():
    # -e 16M: endless all the same (4 bytes more a row), without the 1 GiB
    # buffers that meson's MALLOC_PERTURB_ makes every rank touch
    procs = start(3, [NW, "--backend", "cpu", "-b", "4", "-e", "16M", "-i", "4", "-n", "1", "-w", "0"])
    procs[0].wait_output(lambda p: len(table(p.out)) >= 3, 30, "three rows")
    procs[2].p.send_signal(signal.SIGUSR1)
    codes = finish_all(procs, 30)
    assert codes == {0: 0, 1: 0, 2: 0}, (codes, {r: p.err for r, p in procs.items()})
    assert b"# preempted: a rank asked to stop (SIGUSR1)" in procs[0].out, procs[0].out[-300:]


@case
def bad_flags_exit_2_with_one_line():
    env = rank_env(0, 1, 1)
    for args, says in [
        (["--backend", "gpu"], "--backend 'gpu'"),
        (["-b", "12x"], "-b '12x'"),
        (["-e", "-5"], "-e '-5'"),
        (["-f", "1"], "-f '1'"),
        (["-n", "0"], "-n '0'"),
        (["-w", "x"], "-w 'x'"),
        (["-d", "int8"], "-d 'int8'"),
        (["-o", "mean"], "-o 'mean'"),
        (["-c", "2"], "-c '2'"),
        (["-i", "0"], "-i '0'"),
        (["-b", "8K", "-e", "4K"], "-b is larger than -e"),
        (["--backend", "cpu", "-O"], "-O/--out-of-place: NCCL backend only"),
        (["--backend", "cpu", "--out-of-place"], "-O/--out-of-place: NCCL backend only"),
        (["--frobnicate"], "unknown option '--frobnicate'"),
        (["-b"], "needs a value"),
        (["extra"], "unexpected argument 'extra'"),
    ]:
        code, out, err = run_cmd([NW, *args], env=env, timeout=10)
        assert code == 2, (args, code, err)
        first = err.decode().splitlines()[0]
        assert first.startswith("nccl_worker: ") and says in first, (args, err)


@case
def bad_environment_exit_2_with_one_line():
    base = rank_env(0, 2, free_port())
    for change, says in [
        ({"RANK": None}, "RANK is not set"),
        ({"RANK": "2"}, "RANK=2 is not below WORLD_SIZE=2"),
        ({"WORLD_SIZE": "two"}, "WORLD_SIZE=two"),
        ({"MASTER_PORT": "0"}, "MASTER_PORT=0"),
        ({"MASTER_ADDR": None}, "MASTER_ADDR is not set"),
        ({"SLOTRUN_TRANSPORT": "ib"}, "SLOTRUN_TRANSPORT=ib: expected auto, tcp or shm"),
        ({"SLOTRUN_TIMEOUT": "soon"}, "SLOTRUN_TIMEOUT=soon"),
    ]:
        env = dict(os.environ)
        env.update(base)
        for k, v in change.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        r = subprocess.run([NW, "--backend", "cpu"], env=env, capture_output=True, timeout=10)
        err = r.stderr.decode()
        assert r.returncode == 2, (change, r.returncode, err)
        assert err.count("\n") == 1 and err.startswith("nccl_worker: ") and says in err, (change, err)


@case
def unreachable_chief_times_out_naming_it():
    port = free_port()
    t0 = time.monotonic()
    code, _, err = run_cmd([NW, "--backend", "cpu"], env=rank_env(1, 2, port, timeout=2), timeout=20)
    assert code == 1, code
    assert b"cannot reach rank 0 at MASTER_ADDR:MASTER_PORT (127.0.0.1:%d) within 2s" % port in err, err
    assert time.monotonic() - t0 < 2 + 5


# What the CUDA runtime needs under AddressSanitizer (and leaks at exit).
CUDA_ASAN = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") +
             ":protect_shadow_gap=0:detect_leaks=0"}


@case
def backend_auto_without_gpu_says_it_falls_back():
    code, out, err = run_cmd([NW, "--backend", "auto", "-b", "1K", "-e", "1K"],
                             env=rank_env(0, 1, free_port(), **CUDA_ASAN), timeout=60)
    assert code == 0, err
    if b"# backend nccl" in out:
        raise Skip("a GPU is visible here: auto picked NCCL")
    assert re.search(rb"^# backend auto: .*; using the CPU ring instead$", out, re.M), out
    assert b"# backend cpu" in out


@case
def out_of_place_without_gpu_exits_2_on_every_rank():
    # backend auto: the ranks agree on the CPU ring, which is in place only,
    # and every rank says so in one line and exits 2, none waiting for another.
    procs = start(2, [NW, "-O", "-b", "1K", "-e", "1K"], **CUDA_ASAN)
    codes = finish_all(procs, 60)
    if codes == {0: 0, 1: 0} and b"# backend nccl" in procs[0].out:
        raise Skip("a GPU is visible here (test_nccl_gpu covers -O)")
    assert codes == {0: 2, 1: 2}, (codes, {r: p.err for r, p in procs.items()})
    for r, p in procs.items():
        assert p.err.count(b"\n") == 1, p.err
        assert p.err.startswith(b"nccl_worker: rank %d: -O/--out-of-place: NCCL backend only, "
                                b"and backend auto chose the CPU ring: " % r), p.err
        assert p.out == b"", "no table: " + p.out.decode()


@case
def backend_nccl_without_gpu_exits_77():
    code, out, err = run_cmd([NW, "--backend", "nccl", "-b", "1K", "-e", "1K"],
                             env=rank_env(0, 1, free_port(), **CUDA_ASAN), timeout=60)
    if code == 0:
        raise Skip("a GPU is visible here (test_nccl_gpu covers it)")
    assert code == 77, (code, err)
    assert err.startswith(b"nccl_worker: rank 0: --backend nccl: ") and err.count(b"\n") == 1, err


run()
