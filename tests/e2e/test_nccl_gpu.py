# SPDX-License-Identifier: MIT
"""The NCCL backend on a GPU: one rank, every type and op, checked, in place
and out of place (-O: the result in the receive buffer, the send buffer
unchanged; a wrong element in either is counted).  Skipped
(TAP "# SKIP") where nccl_worker was built without NCCL or no GPU is
visible (nccl_worker --backend nccl exits 77 there)."""

import os

from harness import Skip, binary, case, free_port, run, run_cmd

NW = binary("nccl_worker")


def env():
    port = free_port()
    return {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "SLOTRUN_TIMEOUT": "120",
            # Under AddressSanitizer the CUDA driver needs the shadow gap
            # unprotected, and what it leaks at exit is not ours.
            "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") +
            ":protect_shadow_gap=0:detect_leaks=0"}


def table_of(argv, extra_env=None):
    """Runs nccl_worker; returns (exit status, stdout, stderr, rows)."""
    e = env()
    e.update(extra_env or {})
    code, out, err = run_cmd([NW, "--backend", "nccl", *argv], env=e, timeout=600)
    if code == 77:
        raise Skip(err.decode().strip())
    for line in out.decode().splitlines():  # the table, for the log
        print("# " + line if not line.startswith("#") else line, flush=True)
    rows = [l.split() for l in out.decode().splitlines() if l and not l.startswith("#")]
    return code, out, err, rows


EVERY = ["-b", "4", "-e", "64M", "-f", "4", "-d", "all", "-o", "all", "-n", "5", "-w", "2"]


@case
def nccl_single_rank_passes_its_check():
    code, out, err, rows = table_of(EVERY)
    assert code == 0, (code, err)
    assert b"# backend nccl:" in out, out
    assert b": all-reduce, in place," in out, out
    assert len(rows) == 6 * 5 * 13, len(rows)  # 4 B, 16 B, ..., 64 MiB
    assert all(r[8] == "0" for r in rows)


@case
def nccl_single_rank_out_of_place_passes_its_check():
    # One rank: the result is a copy of the send buffer, which a receive
    # buffer left alone (it starts as NaN / complements) would fail.
    code, out, err, rows = table_of(["-O", *EVERY])
    assert code == 0, (code, err)
    assert b": all-reduce, out of place," in out, out
    assert len(rows) == 6 * 5 * 13, len(rows)
    assert all(r[8] == "0" for r in rows)
    assert b"# Out of bounds values : 0 OK" in out, out


@case
def nccl_out_of_place_counts_wrong_results_and_a_changed_send_buffer():
    # The test hook spoils one element of the result and one of the send
    # buffer as read back: two per row, each said on stderr.
    code, out, err, rows = table_of(["-O", "-b", "4", "-e", "64", "-f", "4", "-n", "1", "-w", "0"],
                                    {"NCCL_WORKER_TEST_CORRUPT_RANK": "0"})
    assert code == 1, (code, err)
    assert [r[8] for r in rows] == ["2", "2", "2"], rows
    assert err.count(b"1 wrong elements in float32 sum") == 3, err
    assert err.count(b"changed 1 elements of its send buffer") == 3, err


run()
