# SPDX-License-Identifier: MIT
"""Writes COUNT checksummed lines of random length for the interleaving test,
in random-sized write(2) calls so lines cross the reader's reads.
Line: "<tag> <seq> <crc32 of payload> <payload>"."""
import os
import random
import sys
import zlib

tag, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
buf = bytearray()
for seq in range(count):
    payload = bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(rng.randint(0, 4000)))
    buf += b"%s %d %08x %s\n" % (tag.encode(), seq, zlib.crc32(payload), payload)
view = memoryview(bytes(buf))
while view:
    n = os.write(1, view[: rng.randint(1, 9000)])
    view = view[n:]
