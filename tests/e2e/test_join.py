# SPDX-License-Identifier: MIT
"""A node joining its chief (docs/job-plane.md, Join) when what answers
the chief's control port is not a slotrun, or nothing answers at all:
--join-timeout bounds the whole join (connect, handshake, retries), and
the node says what it found.

The "chief" here is the test itself: a loopback listener that speaks
first, or never speaks; and an address on a namespace node whose frames
nobody takes, so that the connection's SYNs are lost as behind a
firewall that drops them.  The bounds on when a node gives up are
generous: timings are benchmarks."""
import contextlib
import select
import socket
import subprocess
import threading
import time

from harness import Proc, binary, case, run
from jobs import Job, clean_env, job_on

SR = binary("slotrun")
SECRET = "join-e2e-secret"
MARGIN = 2                      # seconds past the join timeout a node may take


@contextlib.contextmanager
def fake_chief(greeting):
    """A loopback listener that sends greeting (nothing when None) on every
    connection it accepts and keeps each open; yields its port."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    stop = threading.Event()
    held = []

    def serve():
        while not stop.is_set():
            r, _, _ = select.select([ls], [], [], 0.1)
            if not r:
                continue
            s, _ = ls.accept()
            held.append(s)
            if greeting is not None:
                try:
                    s.sendall(greeting)
                except OSError:
                    pass

    t = threading.Thread(target=serve, name="fake-chief")
    t.start()
    try:
        yield ls.getsockname()[1]
    finally:
        stop.set()
        t.join()
        for s in held:
            s.close()
        ls.close()


def member_args(chief, port, join_timeout):
    """slotrun's arguments for node 1 of two, joining the chief at chief:port."""
    return ["--nnodes", "2", "--node-rank", "1", "--addrs", f"{chief},{chief}", "--control-port", str(port),
            "--slots", "1", "--join-timeout", str(join_timeout), "--heartbeat-timeout", "2", "--", "true"]


def member_env():
    return clean_env({"SLOTRUN_JOB_SECRET": SECRET})


def member(chief, port, join_timeout):
    return Proc([SR, *member_args(chief, port, join_timeout)], environ=member_env())


def refused_at_once(greeting, shown):
    """A control port that speaks first, and not slotrun: the node gives
    up at once (long before its join timeout) and shows what it heard."""
    with fake_chief(greeting) as port:
        p = member("127.0.0.1", port, 60)
        code = p.finish(timeout=15)
        err = p.err.decode(errors="replace")
        assert code == 2, f"exit {code}; stderr={err!r}"
        want = f"the chief's control port 127.0.0.1:{port} answered with something that is not slotrun (it sent \"{shown}\")"
        assert want in err, f"{want!r} not in stderr={err!r}"
        assert err.count("\n") == 1, f"more than one line: {err!r}"


@case
def an_sshd_on_the_control_port_is_named():
    refused_at_once(b"SSH-2.0-OpenSSH_9.6 Debian-1\r\n", "SSH-2.0-OpenSSH_9.6 Debian-1\\x0d\\x0a")


@case
def an_http_reply_on_the_control_port_is_named():
    refused_at_once(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
                    "HTTP/1.1 400 Bad Request\\x0d\\x0aConten...")


@case
def four_zero_bytes_on_the_control_port_are_named():
    refused_at_once(b"\0\0\0\0", "\\x00\\x00\\x00\\x00")


@case
def a_silent_listener_ends_the_join_at_the_join_timeout():
    with fake_chief(None) as port:
        t0 = time.monotonic()
        p = member("127.0.0.1", port, 3)
        code = p.finish(timeout=30)
        took = time.monotonic() - t0
        err = p.err.decode(errors="replace")
        assert code == 2, f"exit {code}; stderr={err!r}"
        assert took <= 3 + MARGIN, f"gave up {took:.1f} s after the start, --join-timeout 3; stderr={err!r}"
        want = f"could not join the chief at 127.0.0.1:{port} within 3 s: no answer to the handshake"
        assert want in err, f"{want!r} not in stderr={err!r}"


@case
def dropped_syns_end_the_join_at_the_join_timeout():
    """The chief's address is a host on node 0's network that takes no
    frame (a static neighbour entry to a MAC nobody has): every SYN is
    lost, and only the join timeout ends the connect."""
    with job_on(1, "jn", Job) as job:
        silent = "10.213.0.99"
        subprocess.run(["ip", "-n", job.cl.ns(0), "neigh", "replace", silent, "lladdr", "02:00:5e:00:00:63",
                        "dev", job.cl.iface(0), "nud", "permanent"], check=True, capture_output=True, timeout=20)
        t0 = time.monotonic()
        p = job.spawn(0, member_args(silent, 29401, 3), member_env())
        code = job.finish([0], timeout=30)[0]
        err = p.err.decode(errors="replace")
        assert code == 2, f"exit {code}; stderr={err!r}"
        job.exited_within([0], t0, 3 + MARGIN)
        want = f"could not join the chief at {silent}:29401 within 3 s: the connection got no answer"
        assert want in err, f"{want!r} not in stderr={err!r}"
        job.assert_nothing_left()


if __name__ == "__main__":
    run()
