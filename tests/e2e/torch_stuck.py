# SPDX-License-Identifier: MIT
"""A gloo job in which one rank gets stuck in a function of its own while
the others go on with local steps: what `slotrun status` must single out.

Every rank joins the process group and all-reduces once; then each prints
`step I` every 0.2 s for STEPS steps of local work; rank STUCK_RANK, at
step 3, enters stuck_here() and stays there until the file $STUCK_RELEASE
exists.  At the end every rank meets the others in a barrier, so the job
finishes (exit 0) once the stuck rank is released."""
import os
import time

import torch
import torch.distributed as dist

STEPS = int(os.environ.get("STUCK_STEPS", "150"))


def stuck_here(release):
    print("entering stuck_here", flush=True)
    while not os.path.exists(release):
        time.sleep(0.1)


def main():
    dist.init_process_group("gloo", init_method="env://")
    rank = dist.get_rank()
    t = torch.ones(4)
    dist.all_reduce(t)
    stuck = rank == int(os.environ["STUCK_RANK"])
    for i in range(STEPS):
        if stuck and i == 3:
            stuck_here(os.environ["STUCK_RELEASE"])
            break
        print(f"step {i}", flush=True)
        time.sleep(0.2)
    dist.barrier()
    print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
