# SPDX-License-Identifier: MIT
"""Restarts on one node: --max-restarts, --restart-delay, --restart-on, what
never restarts, the attempt's variables, --log-dir and --error-file across
attempts, and slotcomm_train resuming after a crash.  (Across nodes:
test_job_plane.py.)"""

import json
import os
import re
import signal
import tempfile
import time

from harness import Proc, binary, case, free_port, job_env, pids_with_env, run

SR = binary("slotrun")
TRAIN = binary("slotcomm_train")
TMP = tempfile.mkdtemp(prefix="test_restart.")


def slotrun(*args, env=None):
    return Proc([SR, *args], environ=job_env(env))


def finish(p, timeout=60):
    code = p.finish(timeout)
    return code, p.out.decode(), p.err.decode()


class running:
    """with running(slotrun(...)) as p: however the block ends, p ends too."""

    def __init__(self, p):
        self.p = p

    def __enter__(self):
        return self.p

    def __exit__(self, *exc):
        self.p.kill()


# fails on attempt 0 only, on rank 1
ONCE = ["sh", "-c", 'echo "rank $RANK attempt $SLOTRUN_RESTART_COUNT of $TORCHELASTIC_MAX_RESTARTS '
        'torch $TORCHELASTIC_RESTART_COUNT"; if [ "$SLOTRUN_RESTART_COUNT" = 0 ] && [ "$RANK" = 1 ]; then '
        'echo "bad luck" >&2; exit 3; fi']


@case
def a_failure_on_the_first_attempt_only_succeeds_with_one_restart():
    code, out, err = finish(slotrun("--slots", "2", "--max-restarts", "1", "--restart-delay", "0", "--", *ONCE))
    assert code == 0, err
    # (rank 0 may be stopped before it says anything on attempt 0)
    assert "[rank=1] rank 1 attempt 0 of 1 torch 0" in out, out
    for r in range(2):
        assert f"[rank={r}] rank {r} attempt 1 of 1 torch 1" in out, out
    assert "slotrun: attempt 2 of 2 in 0 s, after rank 1 on node 0 (127.0.0.1) exit 3" in err, err
    assert "slotrun: attempt 1 of 2 failed: rank 1 on node 0 (127.0.0.1) exit 3" in err, err
    assert "slotrun: attempt 2 of 2 succeeded" in err, err


@case
def without_restarts_the_same_job_fails():
    code, out, err = finish(slotrun("--slots", "2", "--", *ONCE))
    assert code == 3, err
    assert "[rank=1] rank 1 attempt 0 of 0 torch 0" in out and "attempt 1" not in out + err, (out, err)


@case
def a_crash_loop_stops_after_n_with_a_doubling_backoff():
    ef = os.path.join(TMP, "loop.json")
    code, out, err = finish(slotrun("--slots", "1", "--max-restarts", "3", "--restart-delay", "0.1",
                                    "--error-file", ef, "--", "python3", "-c",
                                    "import time; print('at', time.monotonic()); raise SystemExit(5)"))
    assert code == 5, err
    at = [float(m) for m in re.findall(r"^\[rank=0\] at (\S+)$", out, re.M)]
    assert len(at) == 4, out
    gaps = [b - a for a, b in zip(at, at[1:])]
    # the backoff's own floor (0.1, 0.2, 0.4 s): a timer, never shorter
    assert all(g >= d for g, d in zip(gaps, [0.1, 0.2, 0.4])), gaps
    for k, d in [(2, "0.1"), (3, "0.2"), (4, "0.4")]:
        assert f"slotrun: attempt {k} of 4 in {d} s, after rank 0 on node 0 (127.0.0.1) exit 5" in err, err
    assert "attempt 4 of 4, the last:" in err, err
    with open(ef) as f:
        e = json.load(f)
    assert e["exit_status"] == 5 and len(e["attempts"]) == 4, e
    assert [a["exit_code"] for a in e["attempts"]] == [5, 5, 5, 5], e["attempts"]


@case
def what_never_restarts():
    # not found / not executable inside the job, a stop by signal
    for cmd, want in ((["sh", "-c", "exit 127"], 127), (["sh", "-c", "exit 126"], 126)):
        code, out, err = finish(slotrun("--slots", "1", "--max-restarts", "3", "--restart-delay", "0", "--",
                                        *cmd))
        assert code == want and "attempt 2" not in err, (code, err)
    with running(slotrun("--slots", "1", "--max-restarts", "3", "--restart-delay", "0", "--", "sh", "-c",
                         "echo up; exec sleep 60")) as p:
        p.wait_line("[rank=0] up")
        p.signal(signal.SIGTERM)
        code, out, err = finish(p)
    assert code == 143 and "attempt 2" not in err, (code, err)


@case
def restart_on_narrows_what_restarts():
    code, _, err = finish(slotrun("--slots", "2", "--max-restarts", "1", "--restart-delay", "0",
                                  "--restart-on", "signal,7", "--", *ONCE))
    assert code == 3 and "attempt 2" not in err, (code, err)
    p = slotrun("--slots", "1", "--max-restarts", "1", "--restart-on", "signal", "--restart-delay", "0", "--",
                "sh", "-c", '[ "$SLOTRUN_RESTART_COUNT" = 1 ] || kill -SEGV $$')
    code, _, err = finish(p)
    assert code == 0 and "after rank 0 on node 0 (127.0.0.1) exit 139 (SIGSEGV)" in err, (code, err)
    code, _, err = finish(slotrun("--slots", "1", "--restart-on", "0", "--", "true"))
    assert code == 2 and "--restart-on '0': expected any, or a comma list" in err, err


@case
def sigterm_during_the_backoff_stops_at_once():
    with running(slotrun("--slots", "1", "--max-restarts", "2", "--restart-delay", "60", "--", "sh", "-c",
                         "exit 1")) as p:
        p.wait_line("attempt 2 of 3 in 60 s", stream="err", timeout=20)
        t0 = time.monotonic()
        p.signal(signal.SIGTERM)
        code, _, err = finish(p, timeout=20)
    assert code == 143, err
    assert time.monotonic() - t0 < 10, "the 60 s backoff was waited out"
    assert "attempt 1 of 3 failed: rank 0 on node 0 (127.0.0.1) exit 1" in err, err


@case
def sigterm_while_a_failed_attempt_stops_does_not_restart():
    """Rank 0 fails; rank 1 takes its time over the SIGTERM that follows.
    The user's SIGTERM meanwhile asks the job to stop: no attempt 2 (it
    restarted before), and the status is still the failure's."""
    ready = os.path.join(TMP, "slow.ready")
    slow = ["sh", "-c", f'if [ "$RANK" = 0 ]; then while [ ! -e {ready} ]; do sleep 0.05; done; exit 1; fi; '
            f'trap "echo leaving; sleep 1; exit 0" TERM; echo waiting; touch {ready}; '
            'while :; do sleep 0.1; done']
    with running(slotrun("--slots", "2", "--grace", "10", "--max-restarts", "2", "--restart-delay", "0", "--",
                         *slow)) as p:
        p.wait_line("[rank=1] leaving", timeout=20)
        p.signal(signal.SIGTERM)
        code, out, err = finish(p, timeout=30)
    assert code == 1, err
    assert "attempt 2" not in err and out.count("[rank=1] waiting") == 1, (out, err)


@case
def log_files_are_appended_after_a_marker():
    d = os.path.join(TMP, "logs")
    code, _, err = finish(slotrun("--slots", "2", "--max-restarts", "1", "--restart-delay", "0",
                                  "--log-dir", d, "--", *ONCE))
    assert code == 0, err
    with open(os.path.join(d, "rank-1.stdout")) as f:
        assert f.read() == ("[rank=1] rank 1 attempt 0 of 1 torch 0\n==== slotrun: attempt 2 of 2 ====\n"
                            "[rank=1] rank 1 attempt 1 of 1 torch 1\n")
    with open(os.path.join(d, "rank-1.stderr")) as f:
        assert f.read() == "[rank=1] bad luck\n==== slotrun: attempt 2 of 2 ====\n"
    # a new run starts its files afresh
    code, _, err = finish(slotrun("--slots", "2", "--log-dir", d, "--", "echo", "again"))
    with open(os.path.join(d, "rank-1.stdout")) as f:
        assert f.read() == "[rank=1] again\n"


@case
def every_attempt_gets_its_own_rendezvous_secret():
    code, out, err = finish(slotrun("--slots", "1", "--max-restarts", "1", "--restart-delay", "0", "--", "sh",
                                    "-c", 'echo "secret $SLOTRUN_JOB_SECRET"; [ "$SLOTRUN_RESTART_COUNT" = 1 ]'))
    assert code == 0, err
    secrets = re.findall(r"^\[rank=0\] secret (\S+)$", out, re.M)
    assert len(secrets) == 2 and secrets[1] == secrets[0] + ".attempt-1", secrets


MODEL = ["--steps", "12", "--grad-bytes", "16K", "--global-batch-size", "99"]


def checksum(out):
    m = re.search(r"^\[rank=0\] final step=12 checksum=([0-9a-f]{16})$", out, re.M)
    assert m, out[-2000:]
    return m.group(1)


@case
def train_resumes_from_its_checkpoint_after_a_crash_between_checkpoints():
    ck = os.path.join(TMP, "ck")
    env = {"SLOTRUN_TIMEOUT": "30"}
    # one command line for every attempt: resume whenever there is a checkpoint
    body = ('[ "$SLOTRUN_RESTART_COUNT" = 0 ] && [ -n "$HOLD" ] && export NCCL_WORKER_TEST_HOLD_AFTER_STEP=$HOLD; '
            f'exec {TRAIN} {" ".join(MODEL)} --checkpoint-dir {ck} --resume-if-present')
    straight = slotrun("--slots", "3", "--master-port", str(free_port()), "--", TRAIN, *MODEL,
                       "--checkpoint-dir", os.path.join(TMP, "straight"), env=env)
    code, out, err = finish(straight)
    assert code == 0, err
    want = checksum(out)

    # preempted at step 4: a checkpoint
    with running(slotrun("--slots", "3", "--master-port", str(free_port()), "--", "sh", "-c", body,
                         env=dict(env, HOLD="4"))) as p:
        p.wait_line("[rank=0] step 4 loss ", timeout=60)
        p.signal(signal.SIGUSR1)
        code, out, err = finish(p)
    assert code == 0 and "[rank=0] preempted at step 4" in out, (code, err[-2000:])

    # resumed, then rank 1 crashes at step 8, between checkpoints: the
    # restart resumes from step 4 again and ends where the straight run did
    tag = f"ck{os.getpid()}"
    with running(slotrun("--slots", "3", "--master-port", str(free_port()), "--max-restarts", "1",
                         "--restart-delay", "0", "--", "sh", "-c", body,
                         env=dict(env, HOLD="8", CRASH_TAG=tag))) as p:
        p.wait_line("[rank=0] step 8 loss ", timeout=60)
        victims = pids_with_env("slotcomm_train", RANK="1", SLOTRUN_RESTART_COUNT="0", CRASH_TAG=tag)
        assert len(victims) == 1, victims
        os.kill(victims[0], signal.SIGKILL)
        code, out, err = finish(p)
    assert code == 0, err[-3000:]
    assert "attempt 2 of 2 in 0 s, after rank 1 on node 0 (127.0.0.1) exit 137 (SIGKILL)" in err, err[-3000:]
    assert out.count("[rank=0] resumed at step 4 from ") == 2, out[-3000:]
    assert checksum(out) == want


run()
