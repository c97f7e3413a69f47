# SPDX-License-Identifier: MIT
"""The comm library's authenticated rendezvous (nccl_worker/rendezvous.c,
rdv_chief.c): the job secret never crosses the wire, a recorded handshake
fails when it is played again, in either direction, a forged ring HELLO is
refused, and connections that do not register are capped (the oldest sent
away, busy, once newer ones wait) and dropped after a deadline.

A recording proxy stands between rank 1 and rank 0 for the first case; the
others play rank 0 or rank 1 by hand with what it recorded."""

import os
import socket
import struct
import threading
import time

from harness import Proc, binary, case, free_port, run, try_connect, wait_for
from ranks import finish_all, rank_env
from rdv_frames import BUSY, CHALLENGE, HDR, HELLO, REGISTER, REJECT, TABLE, frame, recv_frame

CHECK = binary("comm_check")
SECRET = "e2e-auth-Zq7Kd0xW"
def frames(data):
    """[(type, payload), ...] of a recorded byte stream."""
    out = []
    while len(data) >= HDR.size:
        _, _, t, _, n = HDR.unpack_from(data)
        out.append((t, data[HDR.size:HDR.size + n]))
        data = data[HDR.size + n:]
    return out


def sees_eof(s, timeout):
    """Whether the other end closes s within timeout (what it sends first
    is read and dropped)."""
    s.settimeout(timeout)
    try:
        while s.recv(4096):
            pass
        return True
    except (socket.timeout, ConnectionResetError):
        return False


class Recorder:
    """A proxy for one connection: listens on port, connects to target,
    relays both ways and keeps what went each way."""

    def __init__(self, target):
        self.target = target
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(1)
        self.port = self.ls.getsockname()[1]
        self.up = b""    # rank 1 -> rank 0
        self.down = b""  # rank 0 -> rank 1
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        self.ls.settimeout(60)
        a, _ = self.ls.accept()
        b = wait_for(lambda: try_connect(self.target), 30, "rank 0 to listen")
        self.ls.close()
        pipes = [(a, b, "up"), (b, a, "down")]
        threads = [threading.Thread(target=self._pump, args=p, daemon=True) for p in pipes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _pump(self, src, dst, attr):
        while True:
            try:
                chunk = src.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            setattr(self, attr, getattr(self, attr) + chunk)
            dst.sendall(chunk)


_recorded = {}


def recorded():
    """One genuine run of comm_check, rank 1 through the recording proxy:
    (up, down) frames.  Recorded once, for every case here."""
    if not _recorded:
        port = free_port()
        rec = Recorder(port)
        p0 = Proc([CHECK], env=rank_env(0, 2, port, secret=SECRET))
        p1 = Proc([CHECK], env=rank_env(1, 2, rec.port, secret=SECRET))
        codes = finish_all({0: p0, 1: p1}, 60)
        assert codes == {0: 0, 1: 0}, (codes, p0.err, p1.err)
        rec.t.join(10)
        _recorded["raw"] = (rec.up, rec.down)
        _recorded["up"], _recorded["down"] = frames(rec.up), frames(rec.down)
    return _recorded


@case
def the_secret_never_crosses_the_wire():
    r = recorded()
    up, down = r["raw"]
    assert len(up) > 100 and len(down) > 100, (len(up), len(down))
    assert SECRET.encode() not in up and SECRET.encode() not in down
    # rank 0 speaks first: a challenge of 32 random bytes
    assert r["down"][0][0] == CHALLENGE and len(r["down"][0][1]) == 32, r["down"][0]
    assert r["up"][0][0] == REGISTER, r["up"][0]
    assert r["down"][1][0] == TABLE, r["down"][1]


@case
def a_replayed_registration_is_refused_and_the_genuine_rank_still_gets_in():
    register = frame(*recorded()["up"][0])
    port = free_port()
    p0 = Proc([CHECK], env=rank_env(0, 2, port, secret=SECRET, timeout=30))
    s = wait_for(lambda: try_connect(port), 20, "rank 0 to listen")
    t, challenge = recv_frame(s)
    assert t == CHALLENGE and len(challenge) == 32
    assert challenge != recorded()["down"][0][1], "a challenge came twice"
    s.sendall(register)
    t, reason = recv_frame(s)
    assert t == REJECT and b"wrong job secret" in reason, (t, reason)
    assert sees_eof(s, 10)
    s.close()
    p1 = Proc([CHECK], env=rank_env(1, 2, port, secret=SECRET))
    codes = finish_all({0: p0, 1: p1}, 60)
    assert codes == {0: 0, 1: 0}, (codes, p0.err, p1.err)


def fake_chief(port, answer):
    """Plays rank 0 for one connection: a fresh challenge, then answer(the
    registration) is sent back.  Returns the thread."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1)

    def serve():
        ls.settimeout(30)
        try:
            a, _ = ls.accept()
        finally:
            ls.close()
        with a:
            a.sendall(frame(CHALLENGE, os.urandom(32)))
            reply = answer(recv_frame(a))
            if reply:
                a.sendall(reply)
            sees_eof(a, 30)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


@case
def a_replayed_table_does_not_fool_a_rank():
    table = frame(*recorded()["down"][1])
    port = free_port()
    t = fake_chief(port, lambda reg: table)
    p1 = Proc([CHECK], env=rank_env(1, 2, port, secret=SECRET, timeout=10))
    code = p1.finish(30)
    t.join(10)
    err = p1.err.decode()
    assert code == 1, (code, err)
    assert "does not prove the job secret: MASTER_ADDR:MASTER_PORT is not rank 0" in err, err
    assert err.count("\n") == 1, err


@case
def a_silent_chief_is_named_after_the_timeout():
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    port = ls.getsockname()[1]
    p1 = Proc([CHECK], env=rank_env(1, 2, port, secret=SECRET, timeout=2))
    try:
        code = p1.finish(20)
    finally:
        ls.close()
    err = p1.err.decode()
    assert code == 1, (code, err)
    assert "timed out after 2s waiting for the challenge from rank 0 (is MASTER_PORT some other " \
        "service?)" in err, err


@case
def a_forged_ring_hello_is_refused():
    port = free_port()
    p0 = Proc([CHECK], env=rank_env(0, 2, port, secret=SECRET))
    wait_for(lambda: try_connect(port), 20, "rank 0 to listen").close()
    dport = wait_for(lambda: data_port(p0.pid, port), 20, "rank 0's data plane")
    forged = socket.create_connection(("127.0.0.1", dport))
    # rank 1 (rank 0's left neighbour) with a nonce and a MAC made up
    forged.sendall(frame(HELLO, struct.pack("<I", 1) + os.urandom(64)))
    p1 = Proc([CHECK], env=rank_env(1, 2, port, secret=SECRET))
    codes = finish_all({0: p0, 1: p1}, 60)
    assert codes == {0: 0, 1: 0}, (codes, p0.err, p1.err)
    assert sees_eof(forged, 10), "rank 0 kept a connection that did not prove the secret"
    forged.close()


def data_port(pid, rdv_port):
    """The TCP port pid listens on besides the rendezvous port, or None."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        return None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                v = line.split()
                port = int(v[1].rsplit(":", 1)[1], 16)
                if v[3] == "0A" and v[9] in inodes and port != rdv_port:
                    return port
    return None


@case
def unregistered_connections_are_capped_and_dropped_after_10s():
    port = free_port()
    p0 = Proc([CHECK], env=rank_env(0, 2, port, secret=SECRET, timeout=60))
    first = wait_for(lambda: try_connect(port), 20, "rank 0 to listen")
    t0 = time.monotonic()
    socks = [first] + [try_connect(port) for _ in range(69)]
    assert all(socks)
    # at most 64 are held: the six newest wait in the backlog, and the six
    # oldest make room for them once they have had their second
    for s in socks[:6]:
        assert sees_eof(s, 5), "an unregistered connection beyond the cap was kept"
    # the rest when their 10 s are up, told BUSY first (a rank merely not
    # scheduled that long would connect again)
    for s in socks[6:]:
        t, _ = recv_frame(s, max(0.1, t0 + 15 - time.monotonic()))
        assert t == CHALLENGE, t
        t, _ = recv_frame(s, max(0.1, t0 + 15 - time.monotonic()))
        assert t == BUSY, f"dropped with a frame of type {t}, not BUSY"
        assert sees_eof(s, max(0.1, t0 + 15 - time.monotonic())), "kept past its deadline"
    assert time.monotonic() - t0 >= 9, "dropped before its 10 s were up"
    for s in socks:
        s.close()
    p1 = Proc([CHECK], env=rank_env(1, 2, port, secret=SECRET))
    codes = finish_all({0: p0, 1: p1}, 60)
    assert codes == {0: 0, 1: 0}, (codes, p0.err, p1.err)


if __name__ == "__main__":
    run()
