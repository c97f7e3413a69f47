# SPDX-License-Identifier: MIT
# Source whose code objects give tests/data/pyline/cases.txt: each construct
# is here for a form of CPython 3.11's location table (short, one-line,
# no-column, long, none) and for line deltas that go back, jump far or
# need several varint bytes.
import time


def stuck_here():
    while True:
        time.sleep(0.1)


def loop_back(items):
    total = 0
    for i in items:
        if i % 2:
            total += i
        else:
            total -= i
    return total


def multi_line_call(a,
                    b):
    return max(
        a,
        b,
    ) + min(a,
            b)


class Outer:
    def method(self, x):
        return [y * 2 for y in range(x)
                if y]

    async def coro(self):
        return await self.other()


def far_apart():
    x = 1





















































































    y = 2



























































































































































































































































    return x + y


def with_handler():
    try:
        return 1 / 0
    except ZeroDivisionError:
        return None
    finally:
        pass


def generator():
    yield 1
    yield from range(3)


def wide_columns():
    return "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + str(1)
