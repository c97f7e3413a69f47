# SPDX-License-Identifier: MIT
"""Run as a worker under slotrun as PID 1 of a PID namespace: makes an
orphan that then exits (a zombie for whoever adopted it) and exits 0 once
that zombie is gone from /proc, 1 if it is still there at the deadline."""
import os
import sys
import time

pid_r, pid_w = os.pipe()
rel_r, rel_w = os.pipe()
child = os.fork()
if child == 0:
    grand = os.fork()
    if grand == 0:
        os.close(rel_w)
        os.read(rel_r, 1)  # EOF once the test lets go: we are an orphan by then
        os._exit(0)
    os.write(pid_w, b"%d\n" % grand)
    os._exit(0)
grand = int(os.read(pid_r, 32))
os.waitpid(child, 0)
os.close(rel_w)  # the orphan exits now and becomes a zombie of its adopter
deadline = time.monotonic() + 10
delay = 0.001
while os.path.exists(f"/proc/{grand}"):
    if time.monotonic() > deadline:
        with open(f"/proc/{grand}/stat") as f:
            print("orphan not reaped:", f.read().strip())
        sys.exit(1)
    time.sleep(delay)  # polling interval of a deadline wait
    delay = min(delay * 2, 0.05)
with open("/proc/1/comm") as f:
    print("orphan reaped by pid 1:", f.read().strip())
