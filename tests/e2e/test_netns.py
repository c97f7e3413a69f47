# SPDX-License-Identifier: MIT
"""Self-tests of netns.Cluster: what the multi-node tests stand on."""
import json
import os
import signal
import socket
import subprocess
import sys

from harness import Proc, case, kill_pids, pid_alive, run, wait_for
from netns import Cluster, NETNS_DIR

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
PORT = 5555


def listeners(cl):
    out = []
    for j in range(cl.n):
        s = cl.socket(j)
        s.bind((cl.addr(j), PORT))
        s.listen(16)
        s.settimeout(5)
        out.append(s)
    return out


def probe(cl, i, lis, j, dev=None, timeout=1.0, dst=None):
    """Connects from node i to node j's listener (or to dst); returns the
    source address the listener saw, or the error as a string."""
    c = cl.socket(i)
    try:
        if dev:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, dev.encode())
        c.settimeout(timeout)
        try:
            c.connect((dst or cl.addr(j), PORT))
        except OSError as e:
            return f"error: {e!r}"
        a, peer = lis[j].accept()
        a.close()
        return peer[0]
    finally:
        c.close()


def root_links():
    r = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, check=True)
    l = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    return sorted(x.split()[1] for x in l.stdout.splitlines()), r.stdout


def exists(name):
    return os.path.exists(os.path.join(NETNS_DIR, name))


@case
def nodes_reach_each_other_over_eth0_and_root_is_untouched():
    before = root_links()
    with Cluster(3, "reach") as cl, Cluster(1, "reach") as other:
        assert before == root_links(), "the root namespace's interfaces changed"
        names = cl.namespaces + other.namespaces
        assert len(set(names)) == len(names) and all(f"-{os.getpid()}-" in n for n in names), names
        assert cl.addrs == ["10.213.0.1", "10.213.0.2", "10.213.0.3"] and cl.addr(2) == "10.213.0.3"
        assert cl.prefix(1) == ["ip", "netns", "exec", cl.ns(1)]
        assert (cl.iface(0), cl.side_iface(0)) == ("eth0", "side0")
        lis = listeners(cl)
        try:
            for i in range(3):
                for j in range(3):
                    if i != j:
                        got = probe(cl, i, lis, j, dev="eth0")
                        assert got == cl.addr(i), (i, j, got)
            # and from a process started with prefix(): what the tests run
            code = subprocess.run(cl.prefix(2) + [PY, "-c", "import socket; socket.create_connection("
                                  f"('{cl.addr(0)}', {PORT}), timeout=5).close()"], timeout=20).returncode
            assert code == 0
            lis[0].accept()[0].close()
        finally:
            for s in lis:
                s.close()
    assert before == root_links(), "the root namespace's interfaces changed"


@case
def side0_reaches_no_node():
    with Cluster(3, "side") as cl:
        lis = listeners(cl)
        try:
            for i in range(3):
                out = subprocess.run(cl.prefix(i) + ["ip", "-br", "addr", "show", "side0"],
                                     capture_output=True, text=True, timeout=20).stdout
                assert f"10.214.{i}.1/24" in out and "UP" in out, out
                assert cl.side_addr(i) == f"10.214.{i}.1"
                for j in range(3):
                    if i == j:
                        continue
                    got = probe(cl, i, lis, j, dev="side0")
                    assert got.startswith("error"), (i, j, got)
                    got = probe(cl, i, lis, j, dst=cl.side_addr(j))
                    assert got.startswith("error"), (i, j, got)
                    assert probe(cl, i, lis, j, dev="eth0") == cl.addr(i)   # the listener is there
        finally:
            for s in lis:
                s.close()


@case
def cut_stops_both_directions_and_restore_brings_it_back():
    with Cluster(3, "cut") as cl:
        lis = listeners(cl)
        try:
            assert probe(cl, 0, lis, 1) == cl.addr(0)
            cl.cut(1)
            got = probe(cl, 0, lis, 1)
            assert got.startswith("error"), got
            got = probe(cl, 1, lis, 0)
            assert got.startswith("error"), got
            assert probe(cl, 0, lis, 2) == cl.addr(0), "cut(1) cut more than node 1"
            cl.restore(1)
            wait_for(lambda: probe(cl, 0, lis, 1) == cl.addr(0), 15, "0 -> 1 after restore")
            wait_for(lambda: probe(cl, 1, lis, 0) == cl.addr(1), 15, "1 -> 0 after restore")
        finally:
            for s in lis:
                s.close()


@case
def close_kills_what_runs_there_and_removes_every_namespace():
    cl = Cluster(2, "close")
    p = Proc(cl.prefix(1) + ["sleep", "60"])
    try:
        wait_for(lambda: p.pid in cl.pids(1), 10, "sleep on node 1")
        assert cl.pids(0) == []
        names = cl.namespaces
        assert all(exists(n) for n in names), names
        cl.close()
        assert p.finish(10) == -signal.SIGKILL
        assert not any(exists(n) for n in names), os.listdir(NETNS_DIR)
        cl.close()  # again: nothing to do, no error
    finally:
        p.kill()
        cl.close()


def child(mode):
    p = Proc([PY, os.path.join(HERE, "netns_child.py"), mode])
    p.wait_output(lambda s: b"\n" in s.out, 30, "the child's cluster")
    info = json.loads(p.out.split(b"\n")[0])
    assert all(exists(n) for n in info["namespaces"]), info
    assert pid_alive(info["sleep"])
    return p, info


def cleaned(info):
    assert not any(exists(n) for n in info["namespaces"]), (info, os.listdir(NETNS_DIR))
    wait_for(lambda: not pid_alive(info["sleep"]), 10, "the sleep on the child's node to die")


@case
def sigterm_mid_run_cleans_up_and_dies_of_sigterm():
    p, info = child("wait")
    try:
        p.signal(signal.SIGTERM)
        assert p.finish(30) == -signal.SIGTERM, p.err
        cleaned(info)
    finally:
        p.kill()


@case
def sigint_mid_run_cleans_up():
    p, info = child("wait")
    try:
        p.signal(signal.SIGINT)
        assert p.finish(30) == -signal.SIGINT, p.err
        assert b"KeyboardInterrupt" in p.err, p.err
        cleaned(info)
    finally:
        p.kill()


@case
def exit_without_close_and_exception_clean_up():
    p, info = child("exit")
    assert p.finish(30) == 0, p.err
    cleaned(info)
    p, info = child("raise")
    assert p.finish(30) == 1 and b"raised inside" in p.err, p.err
    cleaned(info)


@case
def sigkilled_creators_namespaces_go_with_the_next_cluster():
    p, info = child("wait")
    try:
        p.signal(signal.SIGKILL)
        assert p.finish(30) == -signal.SIGKILL
        # nothing can clean up after SIGKILL: the next Cluster does (this
        # one, or one of a test running beside us)
        with Cluster(1, "next") as cl:
            cleaned(info)
            assert exists(cl.ns(0))
    finally:
        p.kill()
        kill_pids([info["sleep"]])


run()
