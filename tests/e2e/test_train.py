# SPDX-License-Identifier: MIT
"""End-to-end tests of `slotcomm_train` (examples/train) under the built slotrun: the batch
split, chief-only metrics, synchronized preemption, checkpoints (periodic ones too), a
resumed run ending bit for bit where an uninterrupted one does, a resume at another world
size (a round of an elastic job: after a preemption, after a lost rank, with gradients
pending), --resume-if-present, ranks given different options failing at start, and ranks
whose parameters differ at the end named on every rank."""

import array
import os
import re
import shlex
import shutil
import signal
import struct
import tempfile
import time

from harness import Proc, binary, case, free_port, job_env, pids_with_env, run, run_cmd

SR = binary("slotrun")
TRAIN = binary("slotcomm_train")
ENV = {"SLOTRUN_TIMEOUT": "30"}
COMM_RE = re.compile(rb"comm (\d+\.\d+) s of (\d+\.\d+) s \((\d+)%\): (\d+) all-reduces? of (\d+) B")
TMP = tempfile.mkdtemp(prefix="test_train.")


def ckdir(name):
    return os.path.join(TMP, name)


def start(slots, args, env=None):
    argv = [SR, "--slots", str(slots), "--master-port", str(free_port()), "--", TRAIN, *args]
    return Proc(argv, environ=job_env({**ENV, **(env or {})}))


def train(slots, args, env=None, timeout=60):
    p = start(slots, args, env)
    return p.finish(timeout), p.out, p.err


def lines_of(out, rank):
    pre = b"[rank=%d] " % rank
    return [l[len(pre):] for l in out.split(b"\n") if l.startswith(pre)]


def losses(out):
    return {int(m.group(1)): float(m.group(2))
            for m in re.finditer(rb"^\[rank=0\] step (\d+) loss (\S+)$", out, re.M)}


def checksum(out):
    m = re.search(rb"^\[rank=0\] final step=(\d+) checksum=([0-9a-f]{16})$", out, re.M)
    assert m, out[-2000:]
    return m.group(2)


def ok(slots, args, env=None):
    code, out, err = train(slots, args, env)
    assert code == 0, (code, err[-2000:])
    return out, err


MODEL = ["--grad-bytes", "16K", "--global-batch-size", "99"]


@case
def help_and_bad_flags_in_one_line():
    code, out, err = run_cmd([TRAIN, "--help"])
    assert code == 0 and err == b"", (code, err)
    for flag in (b"--steps", b"--grad-bytes", b"--global-batch-size", b"--aggregation-frequency",
                 b"--fp16-compress", b"--no-average-metrics", b"--checkpoint-dir", b"--resume",
                 b"--seed", b"--checkpoint-every", b"--resume-if-present"):
        assert flag in out, flag
    need = ["--steps", "2", "--grad-bytes", "64", "--global-batch-size", "4", "--checkpoint-dir", "d"]
    for bad in (["--steps", "0"], ["--grad-bytes", "6"], ["--aggregation-frequency", "x"],
                ["--bogus"], ["--seed", "-1"], ["extra"], ["--steps"], ["--checkpoint-every", "x"],
                ["--checkpoint-every", "-4"], ["--resume", "--resume-if-present"]):
        code, out, err = run_cmd([TRAIN, *need, *bad])
        assert code == 2 and out == b"" and err.count(b"\n") == 1, (bad, code, err)
        assert err.startswith(b"slotcomm_train: "), err
    for missing in ("--steps", "--grad-bytes", "--global-batch-size", "--checkpoint-dir"):
        i = need.index(missing)
        code, _, err = run_cmd([TRAIN, *need[:i], *need[i + 2:]])
        assert code == 2 and err.count(b"\n") == 1 and missing.encode() in err, (missing, err)


@case
def global_batch_below_the_world_size_is_a_usage_error():
    code, out, err = run_cmd([TRAIN, "--steps", "1", "--grad-bytes", "64", "--global-batch-size",
                              "2", "--checkpoint-dir", ckdir("small")],
                             env={"RANK": "0", "WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1",
                                  "MASTER_PORT": str(free_port())})
    assert code == 2 and out == b"" and err.count(b"\n") == 1, (code, err)
    assert b"--global-batch-size 2 is smaller than the world size 3" in err, err
    code, _, err = train(3, ["--steps", "1", "--grad-bytes", "64", "--global-batch-size", "2",
                             "--checkpoint-dir", ckdir("small")])
    assert code == 2, (code, err)


@case
def split_line_warning_and_only_rank_0_reports():
    out, err = ok(3, ["--steps", "4", "--grad-bytes", "16K", "--global-batch-size", "100",
                      "--checkpoint-dir", ckdir("split")])
    r0 = lines_of(out, 0)
    assert r0[0] == b"per-slot batch 33 (global 100 over 3 slots, 1 dropped)", r0[:2]
    warn = lines_of(err, 0)
    assert len(warn) == 1 and b"warning" in warn[0] and b"1 sample of every step dropped" in warn[0], err
    assert sorted(losses(out)) == [1, 2, 3, 4], out
    assert any(l.startswith(b"final step=4 checksum=") for l in r0), r0
    for r in (1, 2):
        assert lines_of(out, r) == [] and lines_of(err, r) == [], (r, out, err)
    out, err = ok(3, ["--steps", "1", *MODEL, "--checkpoint-dir", ckdir("split99")])
    assert lines_of(out, 0)[0] == b"per-slot batch 33 (global 99 over 3 slots, 0 dropped)", out
    assert b"warning" not in err, err


@case
def metrics_are_the_ranks_mean_unless_no_average_metrics():
    # A rank's samples are keyed by (seed, rank, step), and the parameters
    # start from the seed: rank 0's first loss in a 3-slot run is the first
    # loss of a 1-slot run with the same per-slot batch of 33.
    alone, _ = ok(1, ["--steps", "1", "--grad-bytes", "16K", "--global-batch-size", "33",
                      "--checkpoint-dir", ckdir("m1")])
    own, _ = ok(3, ["--steps", "3", *MODEL, "--no-average-metrics", "--checkpoint-dir", ckdir("m2")])
    mean, _ = ok(3, ["--steps", "3", *MODEL, "--checkpoint-dir", ckdir("m3")])
    print(f"# step 1 loss: rank 0 alone {losses(alone)[1]}, rank 0 of 3 {losses(own)[1]}, "
          f"mean of 3 {losses(mean)[1]}")
    assert losses(own)[1] == losses(alone)[1], (own, alone)
    assert losses(mean)[1] != losses(own)[1]
    assert abs(losses(mean)[1] - losses(own)[1]) < 0.05 * losses(own)[1], "the ranks' data are alike"
    assert b"loss of rank 0 only" in own and b"loss averaged over the ranks" in mean
    # metrics are only reported: the model is the same
    assert checksum(own) == checksum(mean)


def preempt(args, hold, dirname, slots=3):
    """Runs until rank 0 has printed step `hold` (where the test hook holds it
    until a signal comes), stops slotrun with SIGTERM; returns its output."""
    p = start(slots, [*args, "--checkpoint-dir", ckdir(dirname)],
              {"NCCL_WORKER_TEST_HOLD_AFTER_STEP": str(hold)})
    p.wait_line(b"[rank=0] step %d loss " % hold, timeout=60)
    p.signal(signal.SIGTERM)
    code = p.finish(60)
    # slotrun was told to stop: 128 + SIGTERM, though every worker exited 0
    assert code == 143, (code, p.err[-2000:])
    assert b"stopped by SIGTERM" in p.err, p.err[-2000:]
    assert p.err.count(b"exit 0, finished while slotrun was stopping the job") == slots, p.err[-2000:]
    for r in range(slots):
        got = [l for l in lines_of(p.out, r) if l.startswith(b"preempted at step ")]
        assert got == [b"preempted at step %d" % hold], (r, got, p.out[-2000:])
    assert b"final step" not in p.out
    return p.out


def preempt_resume_equals_uninterrupted(args, hold, k, name):
    out = preempt(args, hold, name)
    assert re.search(rb"^\[rank=0\] checkpoint .*/train.ckpt: step %d, %d steps accumulated" %
                     (hold, hold % k), out, re.M), out[-2000:]
    resumed, _ = ok(3, [*args, "--checkpoint-dir", ckdir(name), "--resume"])
    line = b"[rank=0] resumed at step %d from %s/train.ckpt, %d step%s accumulated\n" % (
        hold, ckdir(name).encode(), hold % k, b"" if hold % k == 1 else b"s")
    assert line in resumed, resumed[-2000:]
    assert min(losses(resumed)) == hold + 1, "the resumed run starts after the checkpoint"
    straight, _ = ok(3, [*args, "--checkpoint-dir", ckdir(name + "-straight")])
    assert checksum(resumed) == checksum(straight), (resumed[-600:], straight[-600:])
    # the losses after the resume are the uninterrupted run's too
    assert {s: l for s, l in losses(straight).items() if s > hold} == losses(resumed)
    return checksum(straight)


@case
def preempt_and_resume_k1():
    preempt_resume_equals_uninterrupted(["--steps", "12", *MODEL], 5, 1, "k1")


@case
def preempt_and_resume_k4_between_exchanges():
    # step 6 with K = 4: two steps of every rank's gradients are pending
    preempt_resume_equals_uninterrupted(["--steps", "13", *MODEL, "--aggregation-frequency", "4"],
                                        6, 4, "k4")


@case
def preempt_and_resume_fp16_compressed():
    args = ["--steps", "10", *MODEL, "--aggregation-frequency", "3"]
    half = preempt_resume_equals_uninterrupted([*args, "--fp16-compress"], 4, 3, "fp16")
    full, _ = ok(3, [*args, "--checkpoint-dir", ckdir("fp32")])
    assert half != checksum(full), "fp16 rounding changes the parameters"


def signal_rank(rank, tag, sig):
    """Sends sig to the slotcomm_train of this rank in the job started with
    TRAIN_TEST=tag."""
    victims = pids_with_env("slotcomm_train", RANK=str(rank), TRAIN_TEST=tag)
    assert len(victims) == 1, victims
    os.kill(victims[0], sig)


@case
def sigusr1_to_one_rank_stops_every_rank_after_the_same_step():
    # No test hook: the signal reaches rank 2 alone, at whatever step it is
    # at; should_preempt carries it to the others.
    tag = f"T{os.getpid()}"
    args = ["--grad-bytes", "4K", "--global-batch-size", "99", "--aggregation-frequency", "2"]
    p = start(3, ["--steps", "1000000", *args, "--checkpoint-dir", ckdir("usr1")], {"TRAIN_TEST": tag})
    p.wait_line(b"[rank=0] step 3 loss ", timeout=60)
    signal_rank(2, tag, signal.SIGUSR1)
    code = p.finish(60)
    assert code == 0, (code, p.err[-2000:])
    stops = {r: [l for l in lines_of(p.out, r) if l.startswith(b"preempted at step ")]
             for r in range(3)}
    assert all(len(v) == 1 for v in stops.values()), stops
    assert len({v[0] for v in stops.values()}) == 1, stops
    step = int(stops[0][0].split()[-1])
    assert step >= 3 and max(losses(p.out)) == step, (step, max(losses(p.out)))
    print(f"# preempted at step {step}")
    resumed, _ = ok(3, ["--steps", str(step + 3), *args, "--checkpoint-dir", ckdir("usr1"), "--resume"])
    straight, _ = ok(3, ["--steps", str(step + 3), *args, "--checkpoint-dir", ckdir("usr1-straight")])
    assert checksum(resumed) == checksum(straight)


def refused(slots, args, code, says):
    got, out, err = train(slots, args)
    assert got == code, (got, err[-2000:])
    mine = lines_of(err, 0)
    assert len(mine) == 1 and says in mine[0], (says, err[-2000:])
    for r in range(1, slots):
        assert lines_of(err, r) == [], err[-2000:]
    assert b"final step" not in out and b"step 1 loss" not in out
    assert b"job failed: rank 0 " in err, err[-2000:]  # slotrun names the chief


@case
def damaged_or_mismatched_checkpoint_is_refused_with_one_line():
    args = ["--steps", "3", "--grad-bytes", "16K", "--global-batch-size", "12",
            "--aggregation-frequency", "2"]
    d = ckdir("refuse")
    ok(2, [*args, "--checkpoint-dir", d])
    path = os.path.join(d, "train.ckpt")
    good = open(path, "rb").read()
    again = [*args, "--checkpoint-dir", d, "--resume"]
    refused(2, [*again, "--seed", "1"], 2, b"written with --seed 0, this run has 1")
    refused(2, [*again, "--fp16-compress"], 2, b"without --fp16-compress, this run has it")
    # at another world size too: the global batch binds, the world size does not
    batch24 = [x if x != "12" else "24" for x in again]
    refused(3, batch24, 2, b"written with --global-batch-size 12, this run has 24")
    refused(2, [*again, "--steps", "2"], 2, b"at step 3, past --steps 2")
    with open(path, "r+b") as f:
        f.seek(len(good) // 2)
        f.write(bytes([good[len(good) // 2] ^ 0x10]))
    refused(2, again, 1, b"checksum mismatch")
    with open(path, "wb") as f:
        f.write(good[:-100])
    refused(2, again, 1, b"truncated or damaged")
    os.unlink(path)
    refused(2, again, 1, b"no checkpoint " + path.encode() + b" to resume from")
    # and the good one resumes (at its end: nothing left to run)
    with open(path, "wb") as f:
        f.write(good)
    out, _ = ok(2, again)
    assert b"resumed at step 3 from" in out and losses(out) == {}, out
    # and at another world size (refused before: "written by 2 ranks, this run has 3")
    out, _ = ok(3, again)
    assert b"[rank=0] resumed at step 3 from %s (world size 2 -> 3, per-slot batch 6 -> 4), " \
        b"0 steps accumulated\n" % path.encode() in out, out


def start_differing(args, odd_args, name):
    """Two ranks under slotrun, rank 1 with odd_args instead of args (a shell
    picks by RANK); SLOTRUN_TIMEOUT=60, far above the time allowed."""
    def cmd(a):
        return " ".join(shlex.quote(x) for x in [TRAIN, *a, "--checkpoint-dir", ckdir(name)])
    script = f'if [ "$RANK" = 1 ]; then exec {cmd(odd_args)}; else exec {cmd(args)}; fi'
    argv = [SR, "--slots", "2", "--master-port", str(free_port()), "--", "sh", "-c", script]
    return Proc(argv, environ=job_env({"SLOTRUN_TIMEOUT": "60"}))


@case
def ranks_with_different_options_fail_at_start_naming_both():
    # Before the check, a different --aggregation-frequency hung in mismatched
    # collectives until SLOTRUN_TIMEOUT, and a different --global-batch-size
    # ran to the end with exit 0, each rank on its own batch.
    base = ["--steps", "6", "--grad-bytes", "16K", "--global-batch-size", "32"]
    for flag, mine, theirs in (("--aggregation-frequency", "1", "3"),
                               ("--global-batch-size", "32", "64")):
        args = [*base, flag, mine] if flag not in base else base
        odd = [*base, flag, theirs] if flag not in base else \
            [x if i != base.index(flag) + 1 else theirs for i, x in enumerate(base)]
        t0 = time.monotonic()
        p = start_differing(args, odd, "differ" + flag)
        code = p.finish(20)
        assert time.monotonic() - t0 < 20
        line = f"rank 1 has {flag} {theirs}, rank 0 has {mine}: every rank must be given the " \
               f"same options"
        err = p.err.decode()
        assert code == 2, (flag, code, err[-2000:])
        for r in (0, 1):
            assert f"[rank={r}] slotcomm_train: rank {r}: {line}\n" in err, (flag, r, err[-2000:])
        assert re.search(r"rank 1 \(local rank 1, pid \d+\): exit 2\b", err) or \
            re.search(r"job failed: rank 1 .* exit 2\b", err), err[-2000:]
        assert b"step 1 loss" not in p.out, p.out


def resumed_line(out):
    m = re.search(rb"^\[rank=0\] (resumed at step .*)$", out, re.M)
    assert m, out[-2000:]
    return m.group(1)


def split_warning(err, global_batch, slots, dropped):
    want = b"[rank=0] slotcomm_train: warning: global batch %d does not divide over %d slots: " \
        b"%d samples of every step dropped\n" % (global_batch, slots, dropped)
    return want in err


def resume_twice(slots, args, name):
    """Resumes from ckdir(name)'s checkpoint on `slots` slots, twice from the
    same file (each run replaces it at its end): both runs' outputs."""
    path = os.path.join(ckdir(name), "train.ckpt")
    keep = open(path, "rb").read()
    runs = []
    for _ in range(2):
        with open(path, "wb") as f:
            f.write(keep)
        code, out, err = train(slots, [*args, "--checkpoint-dir", ckdir(name), "--resume-if-present"])
        assert code == 0, (code, err[-2000:])
        runs.append((out, err))
    return runs


# An elastic job's rounds: 6 slots, then 4, one command line (--resume-if-present).
ELASTIC = ["--steps", "12", *MODEL, "--checkpoint-every", "4"]


@case
def a_round_on_4_slots_goes_on_from_a_6_slot_preemption():
    # the first round: no checkpoint yet, periodic ones at 4 and 8, stopped after step 10
    out = preempt([*ELASTIC, "--resume-if-present"], 10, "elastic", slots=6)
    assert b"[rank=0] no checkpoint %s/train.ckpt yet: starting at step 0\n" % \
        ckdir("elastic").encode() in out, out[-2000:]
    saved = re.findall(rb"^\[rank=0\] checkpoint \S+/train.ckpt: step (\d+), 0 steps", out, re.M)
    assert saved == [b"4", b"8", b"10"], saved
    # the next round: 99 over 4 slots is 24 each, 3 dropped (16 each, 3 dropped over 6)
    (out, err), (again, _) = resume_twice(4, ELASTIC, "elastic")
    assert resumed_line(out) == b"resumed at step 10 from %s/train.ckpt (world size 6 -> 4, " \
        b"per-slot batch 16 -> 24), 0 steps accumulated" % ckdir("elastic").encode(), out[-2000:]
    assert lines_of(out, 0)[0] == b"per-slot batch 24 (global 99 over 4 slots, 3 dropped)", out
    assert split_warning(err, 99, 4, 3), err[-2000:]
    assert sorted(losses(out)) == [11, 12], sorted(losses(out))
    assert b"final step=12 " in out
    # every rank agreed (exit 0 with the final line); the round repeats itself
    assert checksum(out) == checksum(again)


@case
def a_round_after_a_lost_rank_goes_on_from_the_periodic_checkpoint():
    # No orderly stop: rank 3 is killed after step 9 (rank 0 holds there), so
    # the last periodic checkpoint, step 8, is what the next round has.
    tag = f"L{os.getpid()}"
    args = [*ELASTIC, "--aggregation-frequency", "2", "--checkpoint-dir", ckdir("lost")]
    p = start(6, args, {"NCCL_WORKER_TEST_HOLD_AFTER_STEP": "9", "TRAIN_TEST": tag})
    p.wait_line(b"[rank=0] step 9 loss ", timeout=60)
    signal_rank(3, tag, signal.SIGKILL)
    code = p.finish(60)
    assert code == 137, (code, p.err[-2000:])
    assert b"preempted" not in p.out and b"final step" not in p.out
    saved = re.findall(rb"^\[rank=0\] checkpoint \S+/train.ckpt: step (\d+)", p.out, re.M)
    assert saved == [b"4", b"8"], saved
    out, _ = ok(4, [*ELASTIC, "--aggregation-frequency", "2", "--checkpoint-dir", ckdir("lost"),
                    "--resume-if-present"])
    assert resumed_line(out) == b"resumed at step 8 from %s/train.ckpt (world size 6 -> 4, " \
        b"per-slot batch 16 -> 24), 0 steps accumulated" % ckdir("lost").encode(), out[-2000:]
    assert sorted(losses(out)) == [9, 10, 11, 12] and b"final step=12 " in out, out[-2000:]


def crc32c(data):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def folded_as_same_world(src, dst, world):
    """Writes into dst the checkpoint a run of `world` ranks would have
    written with every rank's accumulator equal to what a run at that world
    size folds src's into (ckpt.h's layout; ckpt_acc_mean's arithmetic: a
    float32 sum in rank order, then a float32 division; each operation in
    double, rounded once to float32, is the float32 operation)."""
    b = open(os.path.join(src, "train.ckpt"), "rb").read()
    grad, old_world = struct.unpack_from("<QQ", b, 24)[0], struct.unpack_from("<I", b, 40)[0]
    n = grad // 4
    accs = [array.array("f", b[64 + grad * (1 + r):64 + grad * (2 + r)]) for r in range(old_world)]
    mean = array.array("f", [0.0] * n)
    for i in range(n):
        acc = 0.0
        for r in range(old_world):
            acc = f32(acc + accs[r][i])
        mean[i] = f32(acc / old_world)
    body = bytearray(b[:64 + grad])
    struct.pack_into("<I", body, 40, world)
    body += mean.tobytes() * world
    body += struct.pack("<I", crc32c(body))
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "train.ckpt"), "wb") as f:
        f.write(body)


@case
def gradients_pending_at_another_world_size_are_folded():
    # K = 4, stopped after step 6: each of 6 ranks has 2 steps of gradients
    args = ["--steps", "12", *MODEL, "--aggregation-frequency", "4"]
    out = preempt(args, 6, "fold", slots=6)
    assert b"checkpoint %s/train.ckpt: step 6, 2 steps accumulated" % ckdir("fold").encode() in out
    # the same state as 4 ranks that each hold the 6 accumulators' mean
    folded_as_same_world(ckdir("fold"), ckdir("fold4"), 4)
    out, _ = ok(4, [*args, "--checkpoint-dir", ckdir("fold"), "--resume"])
    assert resumed_line(out) == b"resumed at step 6 from %s/train.ckpt (world size 6 -> 4, " \
        b"per-slot batch 16 -> 24), 2 steps accumulated (the mean of 6 ranks' accumulators " \
        b"on each of 4)" % ckdir("fold").encode(), out[-2000:]
    # the folded steps count towards the next exchange: at step 8, then 12
    m = COMM_RE.search(out)
    assert m and int(m.group(4)) == 2, out[-1000:]
    same, _ = ok(4, [*args, "--checkpoint-dir", ckdir("fold4"), "--resume"])
    assert resumed_line(same).endswith(b"/train.ckpt, 2 steps accumulated"), same[-2000:]
    assert checksum(out) == checksum(same)


@case
def resume_if_present_starts_fresh_and_periodic_checkpoints_change_nothing():
    args = ["--steps", "7", *MODEL, "--aggregation-frequency", "2"]
    plain, _ = ok(3, [*args, "--checkpoint-dir", ckdir("plain")])
    fresh, _ = ok(3, [*args, "--checkpoint-every", "3", "--resume-if-present",
                      "--checkpoint-dir", ckdir("fresh")])
    assert b"[rank=0] no checkpoint %s/train.ckpt yet: starting at step 0\n" % \
        ckdir("fresh").encode() in fresh, fresh[-2000:]
    assert sorted(losses(fresh)) == list(range(1, 8))
    # exchanges at 2, 4, 6 and the last step, 7: due after those holding 3 and 6
    saved = re.findall(rb"^\[rank=0\] checkpoint \S+/train.ckpt: step (\d+), 0 steps", fresh, re.M)
    assert saved == [b"4", b"6", b"7"], saved
    assert checksum(fresh) == checksum(plain)
    # the same command line again: the final checkpoint is there, nothing is left to run
    again, _ = ok(3, [*args, "--checkpoint-every", "3", "--resume-if-present",
                      "--checkpoint-dir", ckdir("fresh")])
    assert b"resumed at step 7 from " in again and losses(again) == {}, again[-2000:]
    assert checksum(again) == checksum(plain)


@case
def ranks_that_disagree_at_the_end_are_named_on_every_rank():
    # Before, rank 0 alone compared (a gather), so the other ranks exited 0.
    code, out, err = train(4, ["--steps", "3", *MODEL, "--checkpoint-dir", ckdir("disagree")],
                           {"NCCL_WORKER_TEST_CORRUPT_RANK": "2"})
    assert code == 1, (code, err[-2000:])
    for r in range(4):
        mine = [l for l in lines_of(err, r) if b"warning: global batch 99" not in l]
        assert len(mine) == 1 and mine[0].startswith(
            b"slotcomm_train: rank %d: the ranks disagree at the end: rank 2 of 4 differs from "
            b"rank 0: rank 2 holds step 3 checksum " % r), (r, err[-2000:])
    assert b"final step" not in out


@case
def comm_fraction_with_aggregation_frequency_1_and_1000():
    # The docs' check for a communication bottleneck.  Timing is printed,
    # not asserted; the number of all-reduces is.
    base = ["--steps", "30", "--grad-bytes", "1M", "--global-batch-size", "3"]
    seen = {}
    for k in ("1", "1000"):
        out, _ = ok(3, [*base, "--aggregation-frequency", k, "--checkpoint-dir", ckdir("comm" + k)])
        lines = [l for l in lines_of(out, 0) if l.startswith(b"comm ")]
        assert len(lines) == 1, out[-1000:]
        m = COMM_RE.match(lines[0])
        assert m, lines[0]
        comm_s, total_s = float(m.group(1)), float(m.group(2))
        assert 0 <= comm_s <= total_s, lines[0]
        assert int(m.group(5)) == 1 << 20
        seen[k] = int(m.group(4))
        print(f"# K={k}: {lines[0].decode()}")
    assert seen == {"1": 30, "1000": 1}, seen


try:
    run()
finally:
    shutil.rmtree(TMP, ignore_errors=True)
