# SPDX-License-Identifier: MIT
"""A small DistributedDataParallel training script, as slotrun runs one:
every worker reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT through
init_process_group("env://"), trains a linear model on its share of a
synthetic regression set (DistributedSampler), and the chief reports the
loss averaged over every rank.  CPU only (gloo).

    slotrun --slots 2 -- python3 examples/pytorch/ddp_train.py
    slotrun --nproc-per-node 2 examples/pytorch/ddp_train.py --epochs 10

At the end every rank prints a digest of its parameters: DDP averages the
gradients, so the digests are the same on every rank (and a launcher that
got the ranks wrong shows at once).  With --save PATH the chief writes a
checkpoint there."""
import argparse
import hashlib
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=16, help="per worker")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--save", metavar="PATH", help="the chief saves the model's state here")
    return p.parse_args()


def dataset():
    """The same 512 examples on every rank (a fixed seed); the sampler gives
    each rank its own share."""
    g = torch.Generator().manual_seed(0)
    w = torch.randn(8, 1, generator=g)
    x = torch.randn(512, 8, generator=g)
    y = x @ w + 0.01 * torch.randn(512, 1, generator=g)
    return TensorDataset(x, y)


def main():
    args = parse_args()
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    chief = rank == 0
    data = dataset()
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=1)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)
    torch.manual_seed(100 + rank)    # a different start on every rank: DDP broadcasts rank 0's
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total = torch.zeros(2)         # loss sum, examples
        for x, y in loader:
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()            # DDP averages the gradients across ranks here
            opt.step()
            total += torch.tensor([loss.item() * len(x), len(x)])
        dist.all_reduce(total)         # every rank calls it; the chief reports
        if chief:
            print(f"epoch {epoch} loss {total[0].item() / total[1].item():.6f}", flush=True)
    params = b"".join(p.detach().numpy().tobytes() for p in model.module.parameters())
    print(f"parameters sha256 {hashlib.sha256(params).hexdigest()}", flush=True)
    if chief and args.save:
        torch.save(model.module.state_dict(), args.save)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
