# SPDX-License-Identifier: MIT
"""What the failure summary says, on stderr and in --error-file: a stderr
tail with bytes that are not text, an attempt stopped before it started,
and a rank that fails on its own while slotrun stops it."""

import json
import os
import signal
import tempfile

from harness import Proc, case, binary, job_env, run

SR = binary("slotrun")
TMP = tempfile.mkdtemp(prefix="test_summary_text.")


def slotrun(*args):
    return Proc([SR, *args], environ=job_env())


def finish(p, timeout=60):
    code = p.finish(timeout)
    return code, p.out.decode(), p.err.decode("utf-8", "replace")


def error_file(name):
    with open(os.path.join(TMP, name)) as f:
        return json.load(f)


@case
def a_nul_and_bytes_that_are_not_utf8_are_escaped_not_lost():
    ef = os.path.join(TMP, "bytes.json")
    code, _, err = finish(slotrun("--slots", "1", "--error-file", ef, "--", "sh", "-c",
                                  r"printf 'before\000after \377 \\ end\n' >&2; exit 1"))
    assert code == 1, err
    line = r"[rank=0] before\x00after \xff \\ end"
    assert f"slotrun: | {line}\n" in err, err
    assert error_file("bytes.json")["root_cause"]["stderr_tail"] == [line]


@case
def a_stop_during_the_backoff_shows_only_the_attempts_that_ran():
    ef = os.path.join(TMP, "between.json")
    p = slotrun("--slots", "2", "--max-restarts", "3", "--restart-delay", "60", "--error-file", ef, "--",
                "sh", "-c", '[ "$RANK" = 1 ] && exit 1; exec sleep 60')
    try:
        p.wait_line("attempt 2 of 4 in 60 s", stream="err", timeout=20)
        p.signal(signal.SIGTERM)
        code, _, err = finish(p, timeout=20)
    finally:
        p.kill()
    assert code == 143, err
    assert "attempt 1 of 4 failed: rank 1 on node 0 (127.0.0.1) exit 1\n" in err, err
    assert "slotrun: stopped by SIGTERM before attempt 2 of 4 started\n" in err, err
    assert "the last" not in err and "ranks:" not in err, err
    attempts = error_file("between.json")["attempts"]
    assert len(attempts) == 1 and attempts[0]["rank"] == 1, attempts


# rank 0 writes a checkpoint on SIGTERM that fails; rank 1 fails once rank
# 0 is ready for the signal, so slotrun stops rank 0
PREEMPT = ["sh", "-c", 'if [ "$RANK" = 0 ]; then trap "echo checkpoint failed: disk full >&2; exit 1" TERM; '
           'touch "$READY"; while :; do sleep 0.1; done; fi; '
           'while [ ! -e "$READY" ]; do sleep 0.05; done; echo rank 1 died >&2; exit 2']


@case
def a_rank_that_fails_while_being_stopped_shows_its_own_exit_and_lines():
    ef = os.path.join(TMP, "preempt.json")
    ready = os.path.join(TMP, "ready")
    p = Proc([SR, "--slots", "2", "--error-file", ef, "--", *PREEMPT], environ=job_env({"READY": ready}))
    code, _, err = finish(p)
    assert code == 2, err
    assert "slotrun: | [rank=1] rank 1 died\n" in err, err
    assert ": exit 1, failed while slotrun was stopping the job\n" in err, err
    assert "slotrun:     | [rank=0] checkpoint failed: disk full\n" in err, err
    rank0 = error_file("preempt.json")["ranks"][0]
    assert rank0["exit_code"] == 1 and "[rank=0] checkpoint failed: disk full" in rank0["stderr_tail"], rank0


run()
