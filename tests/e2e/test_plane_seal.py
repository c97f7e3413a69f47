# SPDX-License-Identifier: MIT
"""Every frame of the job plane after the handshake is sealed (a tag under
a key of the connection over its direction and number): a frame replayed,
injected or altered by someone on the path is refused, the connection is
dropped and the job ends naming the node at its far end as lost, on both
nodes alike.  A man in the middle here is a relay between node 1 and the
chief's control port (node 1 is given the relay's port), on loopback."""
import socket
import struct
import threading

from harness import Proc, binary, case, free_port, job_env, run

SR = binary("slotrun")
START, PING = 5, 14
IDLE = ["sh", "-c", "echo ready; exec sleep 60"]
LOST = "lost: it sent a message that failed authentication (forged, replayed or reordered)"


def read_frame(s):
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    n, = struct.unpack(">I", head)
    body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        if not chunk:
            return None
        body += chunk
    return head + body


class Relay:
    """Accepts node 1 on a port of its own and relays it to the chief's
    control port frame by frame; tamper(direction, frame) returns what to
    send instead (a list of frames)."""

    def __init__(self, chief_port, tamper):
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(1)
        self.port = self.lsock.getsockname()[1]
        self.chief_port = chief_port
        self.tamper = tamper
        self.done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _pipe(self, src, dst, direction):
        try:
            while True:
                f = read_frame(src)
                if f is None:
                    break
                for out in self.tamper(direction, f):
                    dst.sendall(out)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.done.set()

    def _serve(self):
        """Node 1 retries until a connection reaches the chief: one that
        comes before the chief listens is closed, as the chief's refusal
        would be."""
        self.lsock.settimeout(60)
        while True:
            try:
                node, _ = self.lsock.accept()
            except OSError:
                return
            try:
                chief = socket.create_connection(("127.0.0.1", self.chief_port), timeout=60)
                break
            except OSError:
                node.close()
        node.settimeout(None)
        chief.settimeout(None)
        threading.Thread(target=self._pipe, args=(chief, node, "to node"), daemon=True).start()
        self._pipe(node, chief, "to chief")

    def close(self):
        self.lsock.close()


def two_nodes(tamper):
    """Node 0, the chief, on its control port; node 1 through the relay.
    Returns (procs, relay)."""
    control, master = free_port(), free_port()
    relay = Relay(control, tamper)
    env = job_env({"SLOTRUN_JOB_SECRET": "seal-e2e-secret"})
    common = ["--nnodes", "2", "--master-addr", "127.0.0.1", "--master-port", str(master), "--slots", "1",
              "--heartbeat-timeout", "2", "--grace", "1", "--join-timeout", "20"]
    chief = Proc([SR, *common, "--node-rank", "0", "--control-port", str(control), "--", *IDLE], environ=env)
    node = Proc([SR, *common, "--node-rank", "1", "--control-port", str(relay.port), "--", *IDLE], environ=env)
    return (chief, node), relay


def finish(procs):
    codes = [p.finish(timeout=30) for p in procs]
    return codes


@case
def a_replayed_frame_from_the_chief_is_refused():
    """The relay sends the chief's START to node 1 twice: the second copy's
    number is past, its tag fails, node 1 drops the chief, and both nodes
    end with 1, node 1 naming the chief lost for it."""
    def replay(direction, f):
        return [f, f] if direction == "to node" and f[4] == START else [f]

    (chief, node), relay = two_nodes(replay)
    try:
        codes = finish((chief, node))
        assert codes == [1, 1], (codes, chief.err, node.err)
        assert b"node 0 (127.0.0.1) " + LOST.encode() in node.err, node.err
        assert b"node 1 (127.0.0.1) lost: connection closed" in chief.err, chief.err
        assert node.out.count(b"ready") <= 1, node.out   # the copy started nothing
    finally:
        relay.close()
        for p in (chief, node):
            p.kill()


@case
def an_injected_frame_to_the_chief_is_refused():
    """The relay slips an unsealed PING into node 1's stream after its
    first sealed frame: the chief drops node 1 as lost for it."""
    state = {"sealed": 0}

    def inject(direction, f):
        if direction != "to chief":
            return [f]
        state["sealed"] += 1
        if state["sealed"] == 3:   # JOIN, then two of node 1's sealed frames
            return [f, struct.pack(">IB", 1, PING)]
        return [f]

    (chief, node), relay = two_nodes(inject)
    try:
        codes = finish((chief, node))
        assert codes == [1, 1], (codes, chief.err, node.err)
        assert b"node 1 (127.0.0.1) " + LOST.encode() in chief.err, chief.err
    finally:
        relay.close()
        for p in (chief, node):
            p.kill()


@case
def an_altered_frame_is_refused():
    """One bit of the chief's START is flipped on the way: node 1 drops it
    and starts nothing."""
    def flip(direction, f):
        if direction == "to node" and f[4] == START:
            f = bytearray(f)
            f[-20] ^= 0x01
            return [bytes(f)]
        return [f]

    (chief, node), relay = two_nodes(flip)
    try:
        codes = finish((chief, node))
        # node 1 lost its chief before its job started there: 2, as any join
        assert codes == [1, 2], (codes, chief.err, node.err)
        assert b"node 0 (127.0.0.1) " + LOST.encode() + b" before the job started" in node.err, node.err
        assert b"ready" not in node.out, node.out
    finally:
        relay.close()
        for p in (chief, node):
            p.kill()


run()
