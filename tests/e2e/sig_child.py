# SPDX-License-Identifier: MIT
"""Prints 'ready', then for each forwarded signal prints 'got NAME'; exits
with the code given for a signal in argv (NAME=CODE), or keeps going."""
import os
import signal
import sys

exits = dict(a.split("=") for a in sys.argv[1:])


def handler(sig, frame):
    name = signal.Signals(sig).name
    os.write(1, b"got %s\n" % name.encode())
    os.write(2, b"last words on stderr after %s" % name.encode())  # no newline
    if name in exits:
        os._exit(int(exits[name]))


for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
          signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH):
    signal.signal(s, handler)
os.write(1, b"ready\n")
while True:
    signal.pause()
