# SPDX-License-Identifier: MIT
"""The comm library's rendezvous frames (nccl_worker/frame.h) as the
end-to-end tests write and read them by hand: a 24-byte header (magic,
version, type with the collective byte 0, sequence number, length) and the
payload."""

import struct

HDR = struct.Struct("<IHHQQ")  # magic, version, type, seq, len
MAGIC, VERSION = 0x4E524C53, 3
REGISTER, TABLE, REJECT, HELLO, CHALLENGE, BUSY = 1, 2, 3, 4, 10, 11


def frame(t, payload=b""):
    return HDR.pack(MAGIC, VERSION, t, 0, len(payload)) + payload


def recv_exact(s, n, timeout=10):
    s.settimeout(timeout)
    b = b""
    while len(b) < n:
        chunk = s.recv(n - len(b))
        if not chunk:
            raise AssertionError(f"connection closed after {len(b)} of {n} bytes")
        b += chunk
    return b


def recv_frame(s, timeout=10):
    """(type, payload) of the next frame on socket s."""
    _, _, t, _, n = HDR.unpack(recv_exact(s, HDR.size, timeout))
    return t, recv_exact(s, n, timeout)
