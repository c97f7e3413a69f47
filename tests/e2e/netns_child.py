# SPDX-License-Identifier: MIT
"""A process that makes a two-node Cluster, starts `sleep 60` on node 0,
prints one JSON line (namespaces, sleep's pid) and then, by argv[1]:
  wait    waits for a signal (the test sends SIGTERM, SIGINT or SIGKILL)
  exit    returns from the script without closing (atexit must clean up)
  raise   raises inside the `with` block (the context manager must)"""
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns import Cluster  # noqa: E402

mode = sys.argv[1]


def start(cl):
    p = subprocess.Popen(cl.prefix(0) + ["sleep", "60"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(json.dumps({"namespaces": cl.namespaces, "sleep": p.pid}), flush=True)


if mode == "raise":
    with Cluster(2, "kid") as cl:
        start(cl)
        raise RuntimeError("raised inside the cluster's with block")
cl = Cluster(2, "kid")
start(cl)
if mode == "wait":
    while True:
        signal.pause()
