# SPDX-License-Identifier: MIT
"""A DistributedDataParallel smoke check for slotrun: every rank trains a
tiny Linear model for a few SGD steps on data of its own (seeded by its
rank), then all ranks compare their parameters.  DDP averages the
gradients, so the parameters must be bit-identical on every rank; without
the averaging they would differ.

    slotrun --nnodes 3 --node-rank I --addrs A,B,C --slots 2 -- python3 ddp_check.py

Prints `params identical` and exits 0, or names the ranks that differ and
exits 1.  CPU only (gloo); the environment comes from slotrun (env://)."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

STEPS = 5


def main():
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert (rank, world) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])), "env:// disagrees"
    torch.manual_seed(rank)          # a different start on every rank: DDP's broadcast evens it
    model = DistributedDataParallel(torch.nn.Linear(8, 4))
    start = torch.cat([p.detach().flatten() for p in model.parameters()]).clone()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1000 + rank)
    for _ in range(STEPS):
        x = torch.randn(16, 8, generator=data)
        y = torch.randn(16, 4, generator=data) + rank
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    if torch.equal(flat, start):
        print("parameters did not move: no training happened", file=sys.stderr)
        return 1
    every = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(every, flat)
    differ = [r for r in range(world) if not torch.equal(every[r], every[0])]
    dist.destroy_process_group()
    if differ:
        print(f"params differ from rank 0's on ranks {differ}", file=sys.stderr)
        return 1
    print(f"params identical ({flat.numel()} values, {world} ranks, {STEPS} steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
