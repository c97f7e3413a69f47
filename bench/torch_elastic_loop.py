# SPDX-License-Identifier: MIT
"""A small DDP training loop on gloo for bench/elastic.py's torchrun figures:
every step (about 0.1 s: a linear layer's forward and backward, the gradients'
all-reduce, then a sleep for the rest) prints, flushed,

    step <restart count> <time.time_ns()> <rank> <world size>

so that the benchmark reads when each rank of each round stepped by the
ranks' own clock.  Runs until killed.  BENCH_PG_TIMEOUT (seconds): the
process group's timeout instead of gloo's default (30 minutes)."""
import datetime
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

STEP = 0.1

timeout = os.environ.get("BENCH_PG_TIMEOUT")
kw = {"timeout": datetime.timedelta(seconds=float(timeout))} if timeout else {}
dist.init_process_group("gloo", **kw)
rank, world = dist.get_rank(), dist.get_world_size()
restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Linear(64, 64))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
while True:
    t0 = time.monotonic()
    opt.zero_grad()
    model(torch.randn(16, 64)).square().mean().backward()
    opt.step()
    print(f"step {restart} {time.time_ns()} {rank} {world}", flush=True)
    time.sleep(max(0.0, STEP - (time.monotonic() - t0)))
