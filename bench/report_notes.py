#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/README.md's fixed text: what earlier runs taught (NOTES, the page's
last section) and what was checked on the GPU by hand (GPU_NOTES, in its
section), each saying when and where."""

# What earlier runs taught, kept beside the figures: each note says when
# and where it was measured, since the machine's speed moves from day to day.
NOTES = """\
## Notes from the lab log

These come from runs on the 2-core development machine (no GPU, a VM shared
with other tenants) in November 2026.  The figures above are regenerated with
every `bench/run`; these are not, so each says what it was measured against.

**Spread.**  Other tenants share the machine: a sweep under their load loses up
to half of its figures, and Open MPI's as much.  `bench/allreduce_sweep` waits
for the 1-minute load to fall below 1.0 before it starts and records the load
before and after.  Two runs of the all-reduce the same afternoon, the comm
library unchanged, gave 9.97 and 8.1 GB/s busbw at 64 MiB with n = 2.

**All-reduce within a node.**  At 64 MiB with n = 2 the shared-memory
all-reduce moves each rank's buffer through memory once in and once out, like a
memcpy of it (the reduce-scatter and all-gather traffic stays in the caches):
8.1 GB/s per rank against 17.5 GB/s for two 64 MiB memcpys running at once on
the same machine.  Open MPI falls off a cliff from 32 MiB: its large-message
algorithm allocates temporary buffers on every call, and a first touch of
memory cost about 11 us a page on that VM.  The TCP ring on one machine
(`SLOTRUN_TRANSPORT=tcp`) is shown for comparison only.

**Shared-memory design choices, measured.**  Reducing in place in the user's
buffer 64 KiB at a time, then copying the block into the slot, took the reduce
phase of a 64 MiB all-reduce (n = 2) from 5.8 to 3.0 ms against folding into
the slot with d = a + b and copying back.  Waiting: with n = 4 ranks on 2 cores,
spinning only 2 us before sleeping on the futex made 4 KiB all-reduces take
41 us instead of 12 us (a futex wake-up costs tens of microseconds there), and
spinning 50 to 200 us gained nothing over 20 us.  Across nodes, members that
wait for their leader's broadcast spin only 2 us: 4 KiB across 2 namespace
nodes x 2 ranks went from 137 to 81 us once they stopped taking the cores from
the leaders.

**Hierarchical against one ring.**  `shm+tcp` was chosen over one ring through
every rank (shared-memory hops within a node, TCP hops between; a prototype,
measured and reverted) on 2 namespace nodes x 2 ranks, median of 3 rounds,
load 0.86, `--bind none`:

| size | shm+tcp | one ring | TCP ring | one ring's time / shm+tcp's |
|---:|---:|---:|---:|---:|
| 4 KiB | 55 us | 817 us | 126 us | 14.86 |
| 64 KiB | 110 us | 284 us | 261 us | 2.58 |
| 256 KiB | 183 us | 1.8 ms | 432 us | 10.06 |
| 1 MiB | 1.1 ms | 2.6 ms | 2.6 ms | 2.34 |
| 4 MiB | 4.8 ms | 6.6 ms | 11.8 ms | 1.36 |
| 16 MiB | 19.5 ms | 21.8 ms | 40.7 ms | 1.12 |
| 64 MiB | 83.8 ms | 89.9 ms | 153.3 ms | 1.07 |

The prototype waited crudely (sleeps of up to 1 ms) and read through a staging
buffer, most of its loss up to 1 MiB; from 4 MiB on it still lost 7 to 36%,
because one ring sends 2(n-1)/n of the buffer over each TCP hop against
2(N-1)/N over each leader hop.  A first run without `--bind none` had one ring
ahead from 4 MiB on: each namespace node's slotrun pinned its leader to core 0
of the one machine they share.  The benchmark now passes `--bind none`.

**TCP ring tuning.**  Retrying a non-blocking recv/send for 20 to 50 us before
blocking in poll(2) took n = 4 4 KiB all-reduces from about 70 to 35 us and
helped every size.  Socket buffers of 1 MiB for all-reduces of up to 1 MiB
between ranks on one machine took 512 KiB and 1 MiB from about 3.0 to 5.0 GB/s
busbw with n = 2 (1.2 to 2.3 with n = 4); 128 KiB above that measured about 35%
faster over loopback than large buffers.  Tried and dropped for lack of gain:
slicing the buffer so that reduced data is forwarded while in cache,
vmsplice/splice sends, 2 MiB socket buffers at 2 MiB, minimum sends of 16 or
256 KiB instead of 64 KiB.  The reduction loops: d = a + b on float32 in L1 ran
at 16, 32 and 66 GB/s with SSE2, AVX2 and AVX-512.

**Launch and containment.**  Launch includes reading the hwloc topology and
starting three processes per worker (wrap_rank, its guard, the command).
Process start-up itself varies a lot on this VM: the shell's 8 `/bin/true`
took 41 ms on 2026-11-23 (slotrun's launch: 111 ms) and 4.8 ms on a day when slotrun's
launch measured 10.0 ms and mpirun's 51 ms.  Measured before and after the guard
process in one session (sh: 37 ms): launch went from 83 to 113 ms, teardown from
11.6 to 14.0 ms, and `--no-wrap` (now `wrap_rank --no-prefix` under slotrun)
from 52 to 108 ms.  The alternatives to a guard cost alike and little next to
starting a worker: a cgroup's mkdir, join, `cgroup.kill` and rmdir, or
`clone(CLONE_NEWPID)` and a wait, each took a few milliseconds.

**What a rank costs, and the floor.**  On this VM a page fault costs 25 to 90
us and a `cpuid` (which glibc's start-up runs some thirty times) 8 us to far
more, both traps to the hypervisor; so page faults (`perf stat -e
page-faults`, `perf record -e page-faults -d`) told where launch time went.
On 2026-11-27 (load average 20 to 120 from other tenants) `slotrun --slots 8 --
/bin/true` took 2150 page faults in all, against 670 for the floor (`sh`
starting 8 `/bin/true`: about 60 for sh, then 21 for each fork before its exec
and 48 for each `/bin/true`).  Per rank: slotrun's fork of itself (29
copy-on-write faults in the child before its exec, as many again in slotrun),
wrap_rank's dynamic linking (88 faults in the wrap_rank process), the guard's
fork (12) and its fork of the command (24 before the exec).  Each was cut in
turn, page faults of the 8-slot launch in all: starting programs with a
vfork-style clone instead of fork (no copy of the page tables, no
copy-on-write; slotrun and the guard) 2150 to 1508; wrap_rank a glibc static
PIE 1508 to 1020; its `_exit` and the worker's fields before its buffers 1020
to 964; wrap_rank against musl (5 faults to start an empty program against
27 for static glibc, and no `cpuid`) 965 to 765, against 686 for the floor.
In CPU time, the same alternating runs: `wrap_rank 0 -- raw` (raw: a command
without libc)
16.5 ms with the dynamic wrap_rank, 9.2 static glibc, 6.9 musl; the 8-slot
launch 2.8 times the floor's CPU before, 1.35 after.  What is left, from runs
of each part in turn on the loaded VM (CPU, so only roughly): the floor is
about 6 ms for sh and then 10 ms a rank (5.4 for the fork, the exec of a
program and its exit, 4.7 for `/bin/true`'s glibc start); slotrun adds about
8 ms once (its own start: six shared libraries, hwloc's topology, the loop,
the reports folder, `/dev/kmsg`) and 2.4 ms a rank (the exec of wrap_rank,
the fork of the guard, and their exits).  Each is a guarantee's price: the
guard is a process because wrap_rank must exit when its command does (slotrun
learns the rank's end from it) while what the command left running needs a
holder that outlives wrap_rank and still sees slotrun's death; wrap_rank is a
program of its own and not a fork of slotrun, which would copy slotrun's page
tables again.  Binding each rank (`--bind` against `--bind none`) cost nothing
measurable.  Linking slotrun's libevent, jansson, libsodium and hwloc
statically saved 20 page faults (about 1 ms) of its start in a trial, against
Debian's policy for libraries; not done.

**wrap_rank's ceiling.**  Its contract caps its throughput: every write is whole
lines of at most PIPE_BUF (4 KiB), so that ranks sharing a pipe never
interleave within a line, while `cat` writes 128 KiB at a time, and three
processes (cat, wrap_rank, cat) share the two cores against two.  An earlier
run had wrap_rank at 1.72 GB/s, twice a `cat | cat` that ran at 0.86 GB/s then;
on 2026-11-23, built from before and after the containment work and run side by
side, wrap_rank ran at 0.99 and 1.00 GB/s and `cat | cat` at 2.18 and 2.04: the
machine changed, not wrap_rank.

**Training loop.**  `nccl_worker train` with two ranks, 4 MiB of gradients,
50 steps, a per-slot batch of 2 (best of 3, load average 4.5): with
`--aggregation-frequency 1` a third of the time went to the all-reduce (0.166 of
0.505 s); with 1000, 0.027 of 0.303 s, 1.7 times as many steps per second.
`--fp16-compress` cut the all-reduce by a quarter (0.134 s) but packing and
unpacking cost about what it saved: over loopback compression pays only where
the wire is the bottleneck.  Dividing after unpacking in float32 took 1.4 ms
against 3.3 ms for an fp16 `avg` (1 Mi elements, 2 ranks).

**Elastic jobs and the seal, first measured.**  On 2026-11-27 the machine was
shared with other agents' builds and tests: the 1-minute load went from 12 to
287 during `bench/elastic.py` and from 109 to 21 during `bench/seal.py`, on 2
cores, so those figures are upper bounds until measured on a quiet machine.
`bench/seal_cost` counts the thread's CPU time for that reason: timed by the
wall clock under a load of 287 it gave 7.8 and 252 us for a sealed PING and
STOP (2.2 and 68 us in CPU time).  A rank's failure to every node's exit came
out 1.3 to 1.4x slower on the sealed build than on 41ee2c9 in three runs of
`bench/seal.py`; the same case alone, 12 runs taking turns between 41ee2c9,
51bcb1e (the seal alone) and the elastic build, at a load of 160 to 200, gave
medians of 110, 94 and 129 ms: the seal itself does not show; what is left is
the load, or the elastic work.

**Rendezvous at scale, fix by fix.**  `bench/rdv_scale.py --sizes 1024` with each
commit of the scale work as a contender, 3 rounds taking turns, medians, on
2026-11-27 under a load average of 170 to 300 (other tenants): the wall times
moved by 2x from round to round, so the CPU times and the heap are the figures
to read.  Before the join-storm fix (41ee2c9) most runs of 256 ranks and every
run of 1024 failed: genuine ranks were dropped the moment newer connections
came.

| library | init | barrier | allgather | rank 0's CPU (in init) | rank 0's heap | all ranks' CPU |
|---|---:|---:|---:|---:|---:|---:|
| eae6293 join storm | 30.7 s | 324 ms | 306 ms | 0.786 s (0.446 s) | 465 KiB | 22.9 s |
| 6a6999c + table hashed once, sent to all at once | 32.7 s | 501 ms | 570 ms | 0.651 s (0.195 s) | 465 KiB | 20.9 s |
| 8419820 + sorts, O(N) watch list | 11.3 s | 441 ms | 280 ms | 0.625 s (0.189 s) | 466 KiB | 21.2 s |
| d8740d9 + node in the table | 15.4 s | 424 ms | 510 ms | 0.520 s (0.117 s) | 518 KiB | 20.4 s |
| c435051 + addresses formatted when asked | 20.4 s | 407 ms | 416 ms | 0.551 s (0.147 s) | 518 KiB | 21.9 s |
| 2b91fbf + host names in one buffer | 11.5 s | 371 ms | 339 ms | 0.462 s (0.129 s) | 276 KiB | 16.6 s |

One of d8740d9's three runs failed after 153 s: a ring neighbour not
scheduled for 5 s was dropped as a silent stranger (fixed in 39bfd4a, with
test_ring_connect).  On this VM a page fault costs about 25 us and a fork and
exit about 2.5 ms, so 1024 processes spend seconds of CPU on being processes;
rank 0 spends about 35 us of CPU per rank per control collective (a receive
and a send each).
"""


# What was checked and measured on the GPU by hand, beside the figures
# bench/gpu_allreduce regenerates: each says when and on what.
GPU_NOTES = """\
**Checked.**  On 2026-11-27, on the same H200, one rank, every type and op
from 4 B to 64 MiB by 4 (`nccl_worker --backend nccl -b 4 -e 64M -f 4 -d all
-o all`, the cases of `e2e_nccl_gpu`): 390 rows of 390 in place (built from
41ee2c9) and 390 of 390 out of place (`-O`, built from b4bc051), 0 wrong
elements.  With the test hook spoiling one element of the result and one of
the send buffer (`NCCL_WORKER_TEST_CORRUPT_RANK=0`), every row counted 2 wrong,
the changed send buffer was named, and nccl_worker exited 1.

**Abort on timeout.**  The same day and GPU, rank 0 of 2 with
`SLOTRUN_TIMEOUT=10`, against a rank 1 that joins the rendezvous and then never
reaches NCCL: rank 0 exited 1 after 10.4 s, naming the call:
`ncclCommInitRankConfig(...) did not finish within 10s (SLOTRUN_TIMEOUT)`.

**The wait for the GPU, before and after b4bc051.**  The NCCL backend spins
1 ms waiting for the GPU, then slept 1 ms at a time: 20 all-reduces of 256 MiB
(2.6 ms of work) ended up to 1 ms late.  The same sweep the day of the fix,
each build beside nccl-tests in its own invocation: out of place, 256 MiB
1631 against 2071 GB/s (0.79x nccl-tests) before, 2035 against 2072 (0.98x)
after; 1 GiB 1951 against 2109 (0.93x) before, 2097 against 2109 (0.995x)
after.  The wait now sleeps a 32nd of the time waited so far (20 us to 1 ms).

**Not measured.**  Several ranks on several GPUs: the machine had one GPU
(NCCL refuses two ranks on one: "Duplicate GPU detected").  So nothing here
measures NCCL between GPUs (NVLink, PCIe, the network) or a real all-reduce's
busbw; `bench/gpu_allreduce` runs one rank.

**How to run it.**  On a machine with an NVIDIA GPU, CUDA with nvcc, and NCCL:

```
meson setup build-rel -Dbuildtype=release -Dcuda=enabled -Dtests=false && ninja -C build-rel
bench/gpu_allreduce --bin build-rel/nccl_worker/nccl_worker --nccl-tests nccl-tests/build/all_reduce_perf
```

`--json FILE` keeps the figures; `bench/run --only gpu_allreduce` measures them
and writes them here (`all_reduce_perf` from PATH).  nccl-tests:
`make -C nccl-tests MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME=<NCCL's folder>` in a clone of
github.com/NVIDIA/nccl-tests.  Where NCCL is not in the loader's path (PyTorch's
wheel: `.../site-packages/nvidia/nccl/lib`), set `LD_LIBRARY_PATH`.  The
checks: `meson test -C build e2e_nccl_gpu` in a build with `-Dcuda=enabled`.
"""
