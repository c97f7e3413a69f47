# SPDX-License-Identifier: MIT
"""The test harness's own waits (jobs.Job): what they report must be what
happened, or a failing test blames slotrun for a race in the harness."""

import io
import socket

from harness import case, free_port, free_ports, run
from jobs import Job
from ports import _ephemeral_start


class _Popen:
    """A process whose poll() says "running" for its first `alive` calls,
    then exit 0; its pipes are already at their end (closed)."""

    def __init__(self, alive):
        self.alive = alive
        self.returncode = None
        self.stdout = io.BytesIO()
        self.stderr = io.BytesIO()
        self.stdout.close()
        self.stderr.close()

    def poll(self):
        if self.alive > 0:
            self.alive -= 1
        else:
            self.returncode = 0
        return self.returncode


class _Proc:
    def __init__(self, node, alive):
        self.node = node
        self.pid = 1000 + node
        self.p = _Popen(alive)
        self.out = self.err = b""


def job_of(*alive):
    job = Job(cl=None, d=None)
    for i, a in enumerate(alive):
        p = _Proc(i, a)
        job.procs[i] = p
        job.every.append(p)
    return job


@case
def an_exit_between_the_check_and_the_pump_is_the_wait_ending():
    # wait() notes exits (poll 1), asks its predicate (poll 2), then pumps,
    # which sees the process gone with its pipes closed (poll 3): the wait
    # is over, not "every slotrun has exited" (CI failed on this in
    # e2e_job_plane's nodes_done_early_wait_for_the_job)
    job = job_of(2)
    assert job.finish([0], timeout=5) == [0]


@case
def a_predicate_still_false_when_everything_has_exited_fails_at_once():
    job = job_of(0)
    try:
        job.wait(lambda: False, 5, "something that never comes", must_run=())
    except AssertionError as e:
        assert "every slotrun has exited, waiting for something that never comes" in str(e), e
    else:
        raise AssertionError("the wait returned")


@case
def server_ports_come_from_below_the_ephemeral_range():
    # an outgoing connection's source port comes from that range: one
    # chosen there could be taken before the server listens (CI failed so)
    low = _ephemeral_start()
    ports = free_ports(8) + [free_port() for _ in range(8)]
    assert all(p < low for p in ports), (ports, low)
    assert len(set(free_ports(8))) == 8, "distinct"
    first = free_ports(3, consecutive=True)
    assert first == list(range(first[0], first[0] + 3)), first
    for p in first:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))  # free


run()
