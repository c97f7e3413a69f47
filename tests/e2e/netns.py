# SPDX-License-Identifier: MIT
"""Network-namespace "nodes" for the end-to-end tests.

Cluster(n, tag) gives n nodes on one machine.  Each node is a network
namespace with

    eth0   10.213.0.(i+1)/24, a veth whose other end is port p<i> of the
           bridge br0; the bridge lives in a hub namespace of its own
    side0  10.214.i.1/24, a veth into a per-node dead-end namespace: it is
           up and has an address, but reaches no other node
    lo     up

Nothing in the root namespace's networking changes: every interface is
created inside the namespace it belongs to (`ip -n NS link add ...
peer ... netns OTHER`).

cut(i) sets p<i> down on the hub side, like pulling node i's cable: no
frame goes to or from node i until restore(i).

Namespaces are named sr-<pid>-<tag><k>-<role> (pid of the creating
process, k its k-th cluster).  They are removed on every way out: close()
(idempotent; what the context manager calls), atexit, and a SIGTERM/SIGINT
handler that cleans up and then lets the signal do what it did before.  A
process killed outright (SIGKILL) leaves its namespaces behind; creating a
Cluster removes those whose creator is dead.  Every process still inside
a namespace is killed before the namespace is deleted.

Needs root and iproute2; Skip (with the reason) where network namespaces,
veth or bridges are not available, any other setup error is raised."""

import ctypes
import os
import re
import socket
import subprocess
import threading

from harness import Skip, cleanup_at_exit, kill_pids, pid_alive, wait_for

BRIDGE_NET = "10.213.0"
SIDE_NET = "10.214"
NETNS_DIR = "/run/netns"
_NAME = re.compile(r"^sr-(\d+)-[a-z0-9]+-(hub|n\d+|d\d+)$")
_MISSING = ("Operation not permitted", "Function not implemented", "Operation not supported",
            "Unknown device type", "Permission denied")
_CLONE_NEWNET = 0x40000000

_live = []          # clusters of this process not yet closed
_count = 0          # clusters this process created, for unique names
_lock = threading.Lock()


def _ip(*args, check=True):
    r = subprocess.run(["ip", *args], stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
    if check and r.returncode != 0:
        err = r.stderr.decode(errors="replace").strip()
        raise _SetupError("ip " + " ".join(args), err)
    return r


class _SetupError(Exception):
    def __init__(self, cmd, err):
        super().__init__(f"{cmd}: {err}")
        self.missing = any(m in err for m in _MISSING)


def pids_in(name):
    """Pids of the processes whose network namespace is `name`."""
    r = _ip("netns", "pids", name, check=False)
    return [int(x) for x in r.stdout.split()] if r.returncode == 0 else []


def _kill_and_delete(name):
    for _ in range(3):  # what was forking meanwhile is found next round
        pids = pids_in(name)
        if not pids:
            break
        kill_pids(pids)
        try:
            wait_for(lambda: not any(pid_alive(p) for p in pids), 5, f"the processes in {name} to die")
        except AssertionError:
            pass
    _ip("netns", "del", name, check=False)


def _creator_dead(pid):
    return pid != os.getpid() and not pid_alive(pid)


def remove_stale():
    """Deletes the namespaces whose creating process is gone (one killed
    by SIGKILL, or a machine's earlier run) and kills what runs in them."""
    try:
        names = os.listdir(NETNS_DIR)
    except FileNotFoundError:
        return []
    gone = []
    for n in names:
        m = _NAME.match(n)
        if m and _creator_dead(int(m.group(1))):
            _kill_and_delete(n)
            gone.append(n)
    return gone


def _close_all():
    for c in list(_live):
        c.close()


class Cluster:
    def __init__(self, n, tag="c"):
        global _count
        if not 1 <= n <= 200:
            raise ValueError("1 to 200 nodes")
        if not re.fullmatch(r"[a-z0-9]{1,6}", tag):
            raise ValueError("tag: 1 to 6 lowercase letters or digits")
        if os.geteuid() != 0:
            raise Skip("network namespaces need root")
        if subprocess.run(["sh", "-c", "command -v ip"], capture_output=True).returncode != 0:
            raise Skip("network namespaces need iproute2's ip")
        remove_stale()
        with _lock:
            k = _count
            _count += 1
        self.n = n
        base = f"sr-{os.getpid()}-{tag}{k}-"
        self.hub = base + "hub"
        self.nodes = [base + f"n{i}" for i in range(n)]
        self.dead_ends = [base + f"d{i}" for i in range(n)]
        self.addrs = [f"{BRIDGE_NET}.{i + 1}" for i in range(n)]
        self.side_addrs = [f"{SIDE_NET}.{i}.1" for i in range(n)]
        self._made = []
        cleanup_at_exit(_close_all)
        _live.append(self)
        try:
            self._build()
        except _SetupError as e:
            self.close()
            if e.missing:
                raise Skip(f"cannot set up network namespaces: {e}")
            raise RuntimeError(f"cannot set up network namespaces: {e}") from None
        except BaseException:
            self.close()
            raise

    def _add(self, name):
        self._made.append(name)   # before: a half-made one is deleted too
        _ip("netns", "add", name)

    def _build(self):
        self._add(self.hub)
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        for i in range(self.n):
            node, dead = self.nodes[i], self.dead_ends[i]
            self._add(node)
            self._add(dead)
            _ip("-n", self.hub, "link", "add", f"p{i}", "type", "veth", "peer", "name", "eth0", "netns", node)
            _ip("-n", self.hub, "link", "set", f"p{i}", "master", "br0", "up")
            _ip("-n", dead, "link", "add", "x0", "type", "veth", "peer", "name", "side0", "netns", node)
            _ip("-n", dead, "link", "set", "x0", "up")
            _ip("-n", node, "addr", "add", f"{self.addrs[i]}/24", "dev", "eth0")
            _ip("-n", node, "addr", "add", f"{self.side_addrs[i]}/24", "dev", "side0")
            for dev in ("lo", "eth0", "side0"):
                _ip("-n", node, "link", "set", dev, "up")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def addr(self, i):
        return self.addrs[i]

    def side_addr(self, i):
        return self.side_addrs[i]

    def ns(self, i):
        return self.nodes[i]

    def prefix(self, i):
        """argv prefix that runs a command on node i."""
        return ["ip", "netns", "exec", self.nodes[i]]

    def iface(self, i):
        return "eth0"

    def side_iface(self, i):
        return "side0"

    @property
    def namespaces(self):
        return [self.hub, *self.nodes, *self.dead_ends]

    def pids(self, i):
        """Processes running on node i."""
        return pids_in(self.nodes[i])

    def socket(self, i, kind=socket.SOCK_STREAM):
        """An IPv4 socket that lives on node i, for the test itself to talk
        to what runs there.  A thread enters the namespace, makes the socket
        and ends; the socket keeps its namespace (close it when done)."""
        box = {}

        def body():
            try:
                fd = os.open(os.path.join(NETNS_DIR, self.nodes[i]), os.O_RDONLY | os.O_CLOEXEC)
                try:
                    if _libc().setns(fd, _CLONE_NEWNET) != 0:
                        e = ctypes.get_errno()
                        raise OSError(e, f"setns {self.nodes[i]}: {os.strerror(e)}")
                finally:
                    os.close(fd)
                box["s"] = socket.socket(socket.AF_INET, kind)
            except BaseException as e:
                box["e"] = e

        t = threading.Thread(target=body, name=f"netns-{i}")
        t.start()
        t.join()
        if "e" in box:
            raise box["e"]
        return box["s"]

    def cut(self, i):
        """Node i's cable is pulled: its bridge port goes down."""
        _ip("-n", self.hub, "link", "set", f"p{i}", "down")

    def restore(self, i):
        _ip("-n", self.hub, "link", "set", f"p{i}", "up")

    def close(self):
        """Kills what runs on the nodes and deletes every namespace; safe to
        call again, also from a signal handler that interrupted a close."""
        for name in reversed(list(self._made)):
            _kill_and_delete(name)
            if name in self._made:
                self._made.remove(name)
        if self in _live:
            _live.remove(self)


_libc_handle = None


def _libc():
    global _libc_handle
    if _libc_handle is None:
        _libc_handle = ctypes.CDLL(None, use_errno=True)
    return _libc_handle
