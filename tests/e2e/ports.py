# SPDX-License-Identifier: MIT
"""Loopback ports for the servers the tests start (a rank 0, a chief).

A port from bind(port 0) comes from the kernel's ephemeral range, the one
every outgoing connection's source port is taken from: between our choice
and the server's listen, any connection on this machine (a concurrent
test's, a download's) may take it, and the server fails "Address already
in use" (it did: e2e_nccl_worker in CI).  So ports are chosen at random
from below that range, where only listeners go, and checked free."""
import random
import socket

LOWEST = 10000


def _ephemeral_start():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(n, consecutive=False, host="127.0.0.1"):
    """n distinct ports free on host now, outside the ephemeral range (held
    together while they are chosen, so none comes twice); consecutive: p,
    p+1, ..., p+n-1."""
    top = _ephemeral_start() - n
    if top <= LOWEST:
        raise RuntimeError(f"no room below the ephemeral ports ({top + n}) for {n} ports")
    for _ in range(200):
        first = random.randrange(LOWEST, top)
        want = range(first, first + n) if consecutive else \
            sorted(set([first] + [random.randrange(LOWEST, top) for _ in range(n - 1)]))
        if len(want) != n:
            continue
        socks = []
        try:
            for p in want:
                s = socket.socket()
                socks.append(s)
                s.bind((host, p))
            return list(want)
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {n} free ports below {top + n} on {host} after 200 tries")


def free_port(host="127.0.0.1"):
    return free_ports(1, host=host)[0]
