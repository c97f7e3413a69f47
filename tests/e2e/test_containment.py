# SPDX-License-Identifier: MIT
"""Containment: nothing a worker started outlives slotrun, however slotrun
ends (SIGKILL here, the one it cannot act on) and however the process
escaped: a foreground child of the command, a background job, a double
fork (orphaned), setsid (a session of its own); with wrap_rank and with
--no-wrap.  Processes are found by a marker in their environment, which
every descendant inherits; waits are on conditions with deadlines."""

import contextlib
import os
import signal
import sys
import time

from harness import Proc, binary, case, job_env, kill_pids, run, wait_for

SR = binary("slotrun")
WR = binary("wrap_rank")
PY = sys.executable
SLOTS = 2
NO_LOGS = {"WRAP_RANK_LOG_DIR": "/nonexistent"}  # wrap_rank by hand never redirects


def stat_of(pid):
    """(state, ppid, session) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1]), int(fields[3])
    except (OSError, IndexError):
        return None


def marked(tag, cmd=None, prog=None, rank=None):
    """Live processes whose environment has CONTAIN_TEST=tag (and RANK=rank),
    whose command line starts with cmd, and whose program's name is prog,
    when given."""
    want = {b"CONTAIN_TEST=" + tag.encode()}
    if rank is not None:
        want.add(b"RANK=%d" % rank)
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if not want <= set(f.read().split(b"\0")):
                    continue
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        st = stat_of(d)
        if not st or st[0] == "Z":
            continue
        if cmd is not None and not b" ".join(argv).startswith(cmd.encode()):
            continue
        if prog is not None and os.path.basename(argv[0]) != prog.encode():
            continue
        out.append(int(d))
    return out


@contextlib.contextmanager
def running(argv, tag, environ=None, env=None):
    """A Proc whose marked processes are all gone afterwards, whatever the
    test found."""
    p = Proc(argv, environ=environ, env={"CONTAIN_TEST": tag, **(env or {})})
    try:
        yield p
    finally:
        p.kill()
        kill_pids(marked(tag))


def sigkill_slotrun_and_expect_nothing_left(p, tag):
    os.kill(p.pid, signal.SIGKILL)
    p.p.wait(10)
    try:
        wait_for(lambda: not marked(tag), 10, "every process the workers started to die with slotrun")
    except AssertionError:
        left = marked(tag)
        desc = []
        for pid in left:
            try:
                desc.append(f"{pid}: {open(f'/proc/{pid}/cmdline', 'rb').read()!r} {stat_of(pid)}")
            except OSError:
                pass
        kill_pids(left)
        raise AssertionError(f"survived slotrun: {desc}")


# Each escape: the command (sh -c), the argument that names the escaped
# process, and what shows that it did escape.
def _orphaned(pid):
    try:
        with open(f"/proc/{stat_of(pid)[1]}/cmdline", "rb") as f:
            return not f.read().startswith(b"sh\0")
    except (OSError, TypeError):
        return False


ESCAPES = {
    # the report: a script whose python3 runs in the foreground
    "foreground_child": (f"{PY} -c 'import time; time.sleep(1051)'; echo done",
                         f"{PY} -c import time; time.sleep(1051)", lambda pid: True),
    "background": ("sleep 1041 & wait", "sleep 1041", lambda pid: True),
    "double_fork": ("(sleep 1043 &); exec sleep 1099", "sleep 1043", _orphaned),
    "setsid": ("setsid sleep 1042 & wait", "sleep 1042", lambda pid: stat_of(pid)[2] == pid),
}


def escape_case(escape, wrap):
    script, name, escaped = ESCAPES[escape]
    tag = f"{escape}{'-nowrap' if not wrap else ''}-{os.getpid()}"
    args = ["--slots", str(SLOTS), "--grace", "30"] + ([] if wrap else ["--no-wrap"])
    with running([SR, *args, "--", "sh", "-c", script], tag, environ=job_env()) as p:
        # (the double fork's middle process may still be exiting)
        wait_for(lambda: len(marked(tag, name)) == SLOTS and all(escaped(pid) for pid in marked(tag, name)),
                 20, f"{SLOTS} processes running {name!r}, escaped")
        sigkill_slotrun_and_expect_nothing_left(p, tag)


def _make(escape, wrap):
    def fn():
        escape_case(escape, wrap)
    fn.__name__ = f"sigkilled_slotrun_takes_{escape}{'' if wrap else '_no_wrap'}"
    return case(fn)


for _escape in ESCAPES:
    for _wrap in (True, False):
        _make(_escape, _wrap)


def leftover_case(wrap):
    """Rank 0 exits 0 leaving a setsid'ed daemon (its stdio elsewhere, so
    nothing holds its rank's pipes); rank 1 runs on.  Rank 0's wrap_rank
    is gone when slotrun is killed: its guard, which slotrun adopted,
    takes the daemon."""
    tag = f"leftover{'' if wrap else '-nowrap'}-{os.getpid()}"
    script = ("if [ $RANK = 0 ]; then setsid sleep 1045 </dev/null >/dev/null 2>&1 & exit 0; fi; "
              "exec sleep 1099")
    args = ["--slots", "2"] + ([] if wrap else ["--no-wrap"])
    with running([SR, *args, "--", "sh", "-c", script], tag, environ=job_env()) as p:
        wait_for(lambda: marked(tag, "sleep 1045") and marked(tag, "sleep 1099"), 20, "the daemon and rank 1")
        # rank 0's wrap_rank exits; what is left of it is one process, its
        # guard, which slotrun adopts (wrap_rank's environment goes before its
        # children move: wait for both)
        def adopted():
            left = marked(tag, prog="wrap_rank", rank=0)
            return len(left) == 1 and (stat_of(left[0]) or (0, 0))[1] == p.pid

        wait_for(adopted, 10, "rank 0's wrap_rank to exit and slotrun to adopt its guard")
        assert p.p.poll() is None
        sigkill_slotrun_and_expect_nothing_left(p, tag)


@case
def sigkilled_slotrun_takes_what_a_finished_rank_left():
    leftover_case(True)


@case
def sigkilled_slotrun_takes_what_a_finished_rank_left_no_wrap():
    leftover_case(False)


@case
def leftovers_are_still_stopped_at_a_normal_end():
    # the guard changes nothing for slotrun's own sweep: a daemon left by a
    # successful rank is stopped and slotrun exits 0, promptly
    tag = f"sweep-{os.getpid()}"
    t0 = time.monotonic()
    with running([SR, "--slots", "2", "--", "sh", "-c", "setsid sleep 1046 </dev/null >/dev/null 2>&1 & exit 0"],
                 tag, environ=job_env()) as p:
        assert p.finish(20) == 0, p.err
        assert time.monotonic() - t0 < 10, "the sweep waited out the grace"
        assert not marked(tag)


@case
def wrap_rank_killed_takes_everything_its_command_started():
    tag = f"wr-{os.getpid()}"
    with running([WR, "0", "sh", "-c", "setsid sleep 1047 & (sleep 1048 &); sleep 1049 & exec sleep 1099"],
                 tag, env=NO_LOGS) as p:
        wait_for(lambda: all(marked(tag, f"sleep {n}") for n in (1047, 1048, 1049, 1099)), 10, "all four")
        p.kill()
        p.p.wait(10)
        wait_for(lambda: not marked(tag), 10, "everything the command started to die with wrap_rank")


@case
def a_stopped_guard_still_takes_the_command_when_wrap_rank_dies():
    # The guard and the command stopped (SIGSTOP: a pause, a Ctrl-Z), then
    # wrap_rank SIGKILLed with its parent in another session: the kernel's
    # SIGHUP and SIGCONT to an orphaned group with a stopped member do not
    # come (nor when the stop was still pending as its group was orphaned:
    # CI left a guard and its command stopped that way, after slotrun was
    # SIGKILLed while its Ctrl-Z was on its way).  The guard's parent-death
    # signal must wake it anyway.
    tag = f"wrstop-{os.getpid()}"
    with running(["setsid", WR, "0", "sh", "-c", "exec sleep 1102"], tag, env=NO_LOGS):
        (cmd,) = wait_for(lambda: marked(tag, "sleep 1102"), 10, "the command")
        guard = stat_of(cmd)[1]
        wrap = stat_of(guard)[1]
        for pid in (guard, cmd):
            os.kill(pid, signal.SIGSTOP)
        wait_for(lambda: all(stat_of(pid)[0] == "T" for pid in (guard, cmd)), 10, "the guard and command stopped")
        os.kill(wrap, signal.SIGKILL)
        wait_for(lambda: not marked(tag), 10, "the stopped guard to take its command with it")


@case
def wrap_rank_by_hand_leaves_background_processes_as_without_it():
    # run from a shell (no subreaper to adopt its guard), wrap_rank's normal
    # exit does not stop what the command left running: it cannot know when
    # that should end
    tag = f"wrbg-{os.getpid()}"
    with running([WR, "0", "sh", "-c", "setsid sleep 1050 </dev/null >/dev/null 2>&1 & exit 0"],
                 tag, env=NO_LOGS) as p:
        assert p.finish(10) == 0
        (daemon,) = wait_for(lambda: marked(tag, "sleep 1050"), 10, "the daemon")
        wait_for(lambda: not marked(tag, prog="wrap_rank"), 10, "the guard to let go")
        assert stat_of(daemon)[0] != "Z"


run()
