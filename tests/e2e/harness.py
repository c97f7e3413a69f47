# SPDX-License-Identifier: MIT
"""A small TAP harness for the end-to-end tests.

Each test is a function decorated with @case; run() executes them in order
and prints TAP for meson.  Waiting is always on a condition with a deadline
(wait_for, Proc.wait_line); never a fixed sleep."""

import atexit
import errno
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

from ports import free_port, free_ports  # noqa: F401 (the tests take them from here)

_cases = []


class Skip(Exception):
    pass


def case(fn):
    _cases.append(fn)
    return fn


def binary(name):
    """Path of a built binary, passed in by meson through the environment."""
    path = os.environ.get(name.upper() + "_BIN")
    if not path:
        raise RuntimeError(f"{name.upper()}_BIN is not set (run through meson test)")
    return path


def wait_for(cond, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(delay)  # polling interval of a deadline wait, not synchronization
        delay = min(delay * 2, 0.05)


# The machine's scheduler environment would change what slotrun does.
_SCRUB_PREFIXES = ("SLURM_", "DET_", "SLOTRUN_", "OMPI_", "PMI_", "PET_")
_SCRUB = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES",
          "OMP_NUM_THREADS", "JOB_COMPLETION_INDEX", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"}


def fifo_release(path, data=b"go\n"):
    """A condition for wait_for: writes data to the FIFO at path once a
    reader holds it open (a rank blocked in `read x < path`) and is then
    true; false while nobody reads (ENXIO)."""
    def go():
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as e:
            if e.errno == errno.ENXIO:
                return False
            raise
        os.write(fd, data)
        os.close(fd)
        return True
    return go


def job_env(extra=None):
    """This environment without scheduler variables, for a slotrun that
    must plan from its flags alone; extra added."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB_PREFIXES) and k not in _SCRUB}
    e["SLOTRUN_DET_INFO_DIR"] = "/nonexistent"
    e.update(extra or {})
    return e


def pids_with_env(exe_part, **env):
    """Processes whose program path contains exe_part and whose environment
    has every NAME=value given."""
    want = {f"{k}={v}".encode() for k, v in env.items()}
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if exe_part.encode() not in f.read().split(b"\0")[0]:
                    continue
            with open(f"/proc/{d}/environ", "rb") as f:
                if want <= set(f.read().split(b"\0")):
                    out.append(int(d))
        except OSError:
            pass
    return out


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before or while we read
        return False


def kill_pids(pids):
    """SIGKILL to each pid; one already gone is no error."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Proc:
    """A child with its stdout/stderr read through our own pipes.  Its
    environment is ours with env added, or environ alone when given."""

    def __init__(self, argv, env=None, environ=None, **kw):
        e = dict(os.environ if environ is None else environ)
        if env:
            e.update(env)
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, env=e, **kw)
        self.out = b""
        self.err = b""

    @property
    def pid(self):
        return self.p.pid

    def _pump(self, timeout):
        fds = [f for f in (self.p.stdout, self.p.stderr) if not f.closed]
        if not fds:
            return False
        r, _, _ = select.select(fds, [], [], timeout)
        for f in r:
            self.take(f)
        return True

    def take(self, f):
        """Reads one chunk of f (our stdout or stderr pipe) into out or err;
        closes f at EOF."""
        chunk = os.read(f.fileno(), 1 << 16)
        if not chunk:
            f.close()
        elif f is self.p.stdout:
            self.out += chunk
        else:
            self.err += chunk

    def wait_output(self, pred, timeout=10.0, what="output"):
        deadline = time.monotonic() + timeout
        while not pred(self):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {what}; stdout={self.out[-2000:]!r} "
                                     f"stderr={self.err[-2000:]!r}")
            if not self._pump(left) and not pred(self):
                raise AssertionError(f"output closed before {what}; stdout={self.out[-2000:]!r} "
                                     f"stderr={self.err[-2000:]!r}")

    def wait_line(self, text, stream="out", timeout=10.0):
        t = text.encode() if isinstance(text, str) else text
        self.wait_output(lambda s: t in getattr(s, stream), timeout, f"{t!r} on std{stream}")

    def finish(self, timeout=30.0):
        """Reads to EOF and waits for exit; returns the exit code."""
        deadline = time.monotonic() + timeout
        while self._pump(max(0.0, deadline - time.monotonic())):
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"{self.p.args[0]} did not finish in {timeout}s; "
                                     f"stderr={self.err[-2000:]!r}")
        try:
            return self.p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.p.args[0]} did not exit in {timeout}s")

    def signal(self, sig):
        self.p.send_signal(sig)

    def kill(self):
        try:
            self.p.kill()
        except ProcessLookupError:
            pass


_cleanups = []      # functions to run at exit and on SIGTERM/SIGINT
_prev = {}          # signal -> the handler we replaced


def _run_cleanups():
    for fn in list(_cleanups):
        fn()


def _on_signal(sig, frame):
    # A second signal during the cleanup must not cut it short; the
    # previous disposition comes back before the signal is raised again.
    signal.signal(sig, signal.SIG_IGN)
    try:
        _run_cleanups()
    finally:
        prev = _prev.pop(sig)
        signal.signal(sig, prev)
    if callable(prev):
        prev(sig, frame)   # e.g. Python's SIGINT handler: KeyboardInterrupt
    else:
        os.kill(os.getpid(), sig)


def cleanup_at_exit(fn):
    """fn() runs at exit, and on SIGTERM or SIGINT (meson's timeout, a
    Ctrl-C) before the signal does what it did before; fn must be safe to
    call again.  Handlers go in only from the main thread, and not over a
    signal that is ignored."""
    if fn not in _cleanups:
        _cleanups.append(fn)
    if len(_cleanups) == 1:
        atexit.register(_run_cleanups)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        cur = signal.getsignal(sig)
        if sig in _prev or cur is signal.SIG_IGN or cur is None:
            continue
        _prev[sig] = cur
        signal.signal(sig, _on_signal)


def try_connect(port, host="127.0.0.1"):
    """A TCP connection to host:port, or None when nothing listens there
    yet (for wait_for)."""
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        s.connect((host, port))
        return s
    except OSError:
        s.close()
        return None


def run_cmd(argv, timeout=30.0, env=None, **kw):
    p = Proc(argv, env=env, **kw)
    code = p.finish(timeout)
    return code, p.out, p.err


def run():
    only = sys.argv[1:]
    cases = [c for c in _cases if not only or c.__name__ in only]
    print(f"1..{len(cases)}", flush=True)
    failed = 0
    for i, fn in enumerate(cases, 1):
        name = fn.__name__
        t0 = time.monotonic()
        try:
            fn()
            print(f"ok {i} - {name} ({time.monotonic() - t0:.2f}s)", flush=True)
        except Skip as e:
            print(f"ok {i} - {name} # SKIP {e}", flush=True)
        except Exception:
            failed += 1
            print(f"not ok {i} - {name}", flush=True)
            for line in traceback.format_exc().splitlines():
                print(f"# {line}", flush=True)
    sys.exit(1 if failed else 0)
