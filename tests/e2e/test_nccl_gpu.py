# SPDX-License-Identifier: MIT
"""The NCCL backend on a GPU: one rank, every type and op, checked.  Skipped
(TAP "# SKIP") where nccl_worker was built without NCCL or no GPU is
visible (nccl_worker --backend nccl exits 77 there)."""

import os
import socket

from harness import Skip, binary, case, run, run_cmd

NW = binary("nccl_worker")


def env():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "SLOTRUN_TIMEOUT": "120",
            # Under AddressSanitizer the CUDA driver needs the shadow gap
            # unprotected, and what it leaks at exit is not ours.
            "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") +
            ":protect_shadow_gap=0:detect_leaks=0"}


@case
def nccl_single_rank_passes_its_check():
    code, out, err = run_cmd([NW, "--backend", "nccl", "-b", "4", "-e", "64M", "-f", "4",
                              "-d", "all", "-o", "all", "-n", "5", "-w", "2"],
                             env=env(), timeout=600)
    if code == 77:
        raise Skip(err.decode().strip())
    assert code == 0, (code, err)
    assert b"# backend nccl:" in out, out
    for line in out.decode().splitlines():  # the table, for the log
        print("# " + line if not line.startswith("#") else line, flush=True)
    rows = [l.split() for l in out.decode().splitlines() if l and not l.startswith("#")]
    assert len(rows) == 6 * 5 * 13, len(rows)  # 4 B, 16 B, ..., 64 MiB
    assert all(r[8] == "0" for r in rows)


run()
