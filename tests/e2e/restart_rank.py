# SPDX-License-Identifier: MIT
"""A rank for the restart tests.  Attempt 0: says "ready"; rank $FAIL_RANK
then waits for its go fifo ($JP_DIR/go.RANK) and exits 4, the others wait
to be stopped.  A later attempt: counts the processes of this test
($RESTART_TAG in their environment) still alive from attempt 0, says
"attempt K stale=N" and exits 0."""
import os
import sys
import time

attempt = int(os.environ["SLOTRUN_RESTART_COUNT"])
rank = os.environ["RANK"]
tag = "RESTART_TAG=" + os.environ["RESTART_TAG"]


def stale():
    n = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if tag in env and "SLOTRUN_RESTART_COUNT=0" in env:
            n += 1
    return n


if attempt == 0:
    print("ready", flush=True)
    if rank == os.environ.get("FAIL_RANK"):
        with open(os.path.join(os.environ["JP_DIR"], f"go.{rank}")) as f:
            f.read(1)
        sys.exit(4)
    while True:
        time.sleep(3600)  # until slotrun stops the attempt
print(f"attempt {attempt} stale={stale()} torch={os.environ['TORCHELASTIC_RESTART_COUNT']}/"
      f"{os.environ['TORCHELASTIC_MAX_RESTARTS']}", flush=True)
