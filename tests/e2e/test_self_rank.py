# SPDX-License-Identifier: MIT
"""A node finds its own rank in --addrs, and names that resolve late are
waited for (slotrun's node addresses, nccl_worker's MASTER_ADDR).

Nodes are network namespaces of netns.Cluster.  A name that resolves late
is one written into a node's own /etc/hosts after the program started:
`ip netns exec NS` bind-mounts the files of /etc/netns/NS over /etc, and
the file is rewritten in place (the same inode), so the node sees the new
entry on its next lookup.  Its resolv.conf names a DNS server on the
node's loopback: none (every query refused at once), or a stub of this
file's that answers every query "no such name" and says which it got, so
a test knows a lookup has failed before it writes the entry."""
import contextlib
import os
import shutil
import subprocess
import sys

from harness import Proc, binary, case, cleanup_at_exit, run, run_cmd
from jobs import SR, clean_env, job_on

NW = binary("nccl_worker")
NETNS_ETC = "/etc/netns"
SECRET = "self-rank-e2e-secret"
SHOW = ["sh", "-c", 'echo "node $NODE_RANK of $GROUP_WORLD_SIZE rank $RANK master $MASTER_ADDR"']
JOIN = ["--join-timeout", "60", "--slots", "1"]

# A DNS server on 127.0.0.1:53 that answers NXDOMAIN and prints each name.
DNS_STUB = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
print("listening", flush=True)
while True:
    q, peer = s.recvfrom(512)
    labels, i = [], 12
    while i < len(q) and q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace"))
        i += 1 + q[i]
    print("query " + ".".join(labels), flush=True)
    s.sendto(q[:2] + b"\x81\x83" + q[4:6] + b"\0\0\0\0\0\0" + q[12:], peer)
"""


def env():
    return clean_env({"SLOTRUN_JOB_SECRET": SECRET})


@contextlib.contextmanager
def own_etc(cl, nodes):
    """Each of these nodes gets an /etc/hosts and /etc/resolv.conf of its
    own (only localhost, DNS on its loopback); yields a function that adds
    "ADDR NAME" lines to a node's hosts file."""
    made_root = not os.path.isdir(NETNS_ETC)
    dirs = [os.path.join(NETNS_ETC, cl.ns(i)) for i in nodes]

    def remove():
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
        if made_root:
            with contextlib.suppress(OSError):
                os.rmdir(NETNS_ETC)
    cleanup_at_exit(remove)
    try:
        for d in dirs:
            os.makedirs(d)
            with open(os.path.join(d, "hosts"), "w") as f:
                f.write("127.0.0.1 localhost\n")
            with open(os.path.join(d, "resolv.conf"), "w") as f:
                f.write("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")

        def add(i, lines):
            # in place: the node's /etc/hosts is a bind mount of this inode
            with open(os.path.join(NETNS_ETC, cl.ns(i), "hosts"), "a") as f:
                f.write("".join(f"{a} {n}\n" for a, n in lines))
        yield add
    finally:
        remove()


def shown(job, i):
    return [l for l in job.out(i).decode().splitlines() if "node " in l]


@case
def three_nodes_with_one_command_line_take_their_places_in_addrs():
    with job_on(3, "self") as job:
        addrs = ",".join(job.cl.addrs)
        prefix = job.cl.addr(0).rsplit(".", 1)[0]
        # the same list three ways: a flag, slotrun's variable, a hostlist
        job.spawn(2, ["--addrs", f"{prefix}.[1-3]", *JOIN, "--", *SHOW], env())
        job.spawn(0, ["--addrs", addrs, *JOIN, "--", *SHOW], env())
        job.spawn(1, [*JOIN, "--", *SHOW], {**env(), "SLOTRUN_ADDRS": addrs})
        job.expect_exit([0, 0, 0], timeout=60)
        for i in range(3):
            assert shown(job, i) == [f"[rank={i}] node {i} of 3 rank {i} master {job.cl.addr(0)}"], \
                job.describe()


@case
def a_node_not_in_addrs_says_so_in_one_line():
    with job_on(3, "out") as job:
        listed = ",".join(job.cl.addrs[:2])
        job.spawn(2, ["--addrs", listed, *JOIN, "--", "true"], env())
        job.expect_exit([2], timeout=30)
        err = job.err(2).decode()
        assert err.count("\n") == 1 and err.startswith(f"slotrun: this node is not in --addrs '{listed}'"), err
        assert job.cl.addr(2) in err and "--node-rank" in err, err


@case
def a_given_node_rank_that_disagrees_with_addrs_fails_at_once():
    with job_on(3, "dis") as job:
        addrs = ",".join(job.cl.addrs)
        # the join timeout is longer than the wait: only failing at once passes
        job.spawn(1, ["--node-rank", "2", "--addrs", addrs, "--join-timeout", "300", "--slots", "1",
                      "--", "true"], env())
        job.expect_exit([2], timeout=30)
        err = job.err(1).decode()
        assert err.count("\n") == 1 and "disagrees" in err, err
        assert f"is its entry 1 '{job.cl.addr(1)}'" in err and "--node-rank 1" in err, err


@case
def names_in_addrs_that_resolve_late_are_waited_for():
    with job_on(2, "late") as job, own_etc(job.cl, [0, 1]) as add:
        for i in (0, 1):
            job.spawn(i, ["--addrs", "n0,n1", *JOIN, "--", *SHOW], env())
        for i in (0, 1):
            job.wait(lambda: b"waiting for 'n0' to resolve" in job.err(i), 30, f"node {i} to wait for n0")
        assert b"to find this node in --addrs 'n0,n1'" in job.err(0), job.describe()
        for i in (0, 1):
            add(i, [(job.cl.addr(0), "n0"), (job.cl.addr(1), "n1")])
        job.expect_exit([0, 0], timeout=60)
        for i in (0, 1):
            assert shown(job, i) == [f"[rank={i}] node {i} of 2 rank {i} master n0"], job.describe()


@case
def a_chief_named_by_a_name_that_resolves_late_is_waited_for():
    with job_on(2, "chief") as job, own_etc(job.cl, [1]) as add:
        job.spawn(0, ["--nnodes", "2", "--node-rank", "0", "--master-addr", job.cl.addr(0), *JOIN,
                      "--", *SHOW], env())
        job.spawn(1, ["--nnodes", "2", "--node-rank", "1", "--master-addr", "n0", *JOIN, "--", *SHOW], env())
        job.wait(lambda: b"waiting for the chief's address 'n0'" in job.err(1), 30, "node 1 to wait for n0")
        add(1, [(job.cl.addr(0), "n0")])
        job.expect_exit([0, 0], timeout=60)
        assert shown(job, 1) == ["[rank=1] node 1 of 2 rank 1 master n0"], job.describe()


@case
def a_name_that_never_resolves_is_named_with_the_timeout():
    with job_on(1, "never") as job, own_etc(job.cl, [0]):
        job.spawn(0, ["--addrs", "n0,n1", "--join-timeout", "2", "--", "true"], env())
        job.expect_exit([2], timeout=30)
        err = job.err(0).decode().splitlines()
        assert len(err) == 2 and "waiting for 'n0'" in err[0], err
        assert "within the join timeout (2 s)" in err[1] and "cannot resolve 'n0'" in err[1], err


@case
def a_dry_run_asks_once_and_waits_for_nothing():
    # .invalid (RFC 6761) never resolves
    code, out, err = run_cmd([SR, "--nnodes", "2", "--node-rank", "1", "--addrs", "chief.invalid,b",
                              "--dry-run"], env=env(), timeout=30)
    assert code == 0 and err == b"", (code, err)
    code, out, err = run_cmd([SR, "--addrs", "a.invalid,b.invalid", "--dry-run"], env=env(), timeout=30)
    assert code == 2 and err.count(b"\n") == 1, (code, err)
    assert err.startswith(b"slotrun: cannot resolve 'a.invalid' (an entry of --addrs 'a.invalid,b.invalid')"), err


@case
def nccl_workers_master_addr_that_resolves_late_is_waited_for():
    with job_on(1, "nw") as job, own_etc(job.cl, [0]) as add:
        dns = Proc(job.cl.prefix(0) + [sys.executable, "-c", DNS_STUB])
        try:
            dns.wait_line("listening", timeout=30)
            base = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_PORT": "29500",
                    "SLOTRUN_JOB_SECRET": SECRET, "SLOTRUN_TIMEOUT": "60", "SLOTRUN_TRANSPORT": "tcp"}
            argv = job.cl.prefix(0) + [NW, "--backend", "cpu", "-b", "4", "-e", "4", "-n", "1", "-w", "0"]
            ranks = [Proc(argv, environ=clean_env({**base, "RANK": str(r), "LOCAL_RANK": str(r),
                                                   "MASTER_ADDR": job.cl.addr(0) if r == 0 else "chief"}))
                     for r in (0, 1)]
            dns.wait_line("query chief", timeout=30)   # rank 1's lookup failed
            add(0, [(job.cl.addr(0), "chief")])
            codes = [p.finish(timeout=60) for p in ranks]
            assert codes == [0, 0], (codes, [p.err for p in ranks])
        finally:
            dns.kill()
            dns.p.wait(10)


run()
