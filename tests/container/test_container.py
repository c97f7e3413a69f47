# SPDX-License-Identifier: MIT
"""The shipped image, for real: builds examples/container/Dockerfile with
podman from a Debian 12 base that debootstrap makes from the Debian mirror
(no registry is needed: the base is imported as debian:12 and
debian:12-slim), then runs it: slotrun's options before the command,
--help, the default command, slotrun as PID 1 (an orphan reaped, SIGUSR1 to
every worker, `podman stop`, a failing worker's status) and a job of three
containers whose chief's name resolves only after the other two started.

podman runs with a configuration of its own in a temporary folder, removed at
the end: storage, networks and state there, runc as the runtime (crun refuses
a hybrid cgroup layout) and ulimits within this machine's hard limits
(podman's defaults for root exceed them in many sandboxes).  Nothing is
configured on the machine; podman itself keeps, as it always does for root,
its networks' run state in /run/containers/networks (the test's network is
removed there at the end) and a blob cache in /var/lib/containers/cache.

Needs root, podman, runc, netavark with aardvark-dns, debootstrap and the
Debian mirror (SLOTRUN_DEBIAN_MIRROR, default http://deb.debian.org/debian).
SLOTRUN_DEBIAN_ROOTFS names a tar of a Debian 12 root to import instead of
running debootstrap.  Where something is missing the test skips, saying
what; under CI (CI=true) it fails instead, lest a CI machine silently test
nothing."""

import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request

SRC = os.environ.get("SOURCE_ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))

from harness import Proc, Skip, case, cleanup_at_exit, run, run_cmd  # noqa: E402

MIRROR = os.environ.get("SLOTRUN_DEBIAN_MIRROR", "http://deb.debian.org/debian")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
IMAGE = "localhost/slotrun-image-test:latest"
NETWORK = "slotrun-image-test"
PACKAGES = "podman runc netavark aardvark-dns iptables debootstrap"
# where Debian's podman looks for its network helpers
HELPER_DIRS = ("/usr/libexec/podman", "/usr/lib/podman", "/usr/local/libexec/podman", "/usr/local/lib/podman")


def unavailable(reason):
    if IN_CI:
        raise AssertionError(f"{reason} (CI=true: this test must run in CI, not skip)")
    raise Skip(reason)


class Podman:
    """podman with its configuration, storage and state in one temporary
    folder, which teardown() removes with what podman left running there."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="slotrun-image-test-", dir="/var/tmp")
        d = self.dir
        # On a tmpfs where memory allows: debootstrap's and the build's dpkg
        # write many small files, and removing them at the end is one umount.
        if _mem_available() > 6 << 30:
            subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0700,size=6g", "slotrun-image-test", d],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # within what this process may set: runc cannot raise a hard limit
        nofile = min(4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        nproc = min(4096, resource.getrlimit(resource.RLIMIT_NPROC)[1])
        self._write("containers.conf", f"""[containers]
default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "{d}/events.log"
tmp_dir = "{d}/tmp"
volume_path = "{d}/volumes"
static_dir = "{d}/storage/libpod"
lock_type = "file"
[network]
network_config_dir = "{d}/networks"
""")
        self._write("storage.conf", f"""[storage]
driver = "overlay"
graphroot = "{d}/storage"
runroot = "{d}/run"
""")
        # FROM debian:12 finds the imported base as docker.io/library/debian:12
        self._write("registries.conf", 'unqualified-search-registries = ["docker.io"]\n'
                    'short-name-mode = "permissive"\n')
        self.env = {"CONTAINERS_CONF": f"{d}/containers.conf",
                    "CONTAINERS_STORAGE_CONF": f"{d}/storage.conf",
                    "CONTAINERS_REGISTRIES_CONF": f"{d}/registries.conf"}

    def _write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def argv(self, *args):
        return ["podman", *args]

    def cmd(self, *args, timeout=120.0):
        return run_cmd(self.argv(*args), timeout=timeout, env=self.env)

    def check(self, *args, timeout=120.0):
        code, out, err = self.cmd(*args, timeout=timeout)
        assert code == 0, f"podman {' '.join(args[:3])} ... exit {code}: {err.decode()[-3000:]}"
        return out

    def proc(self, *args):
        return Proc(self.argv(*args), env=self.env)

    def teardown(self):
        if not os.path.isdir(self.dir):
            return
        try:
            self.cmd("rm", "--all", "--force", "--time", "0", timeout=60)
            self.cmd("network", "rm", "--force", NETWORK, timeout=60)
        except AssertionError:
            pass
        # what podman started for these containers and left (conmon, aardvark-dns)
        for pid in _pids_naming(self.dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # the storage driver's and debootstrap's mounts, innermost first, and
        # the tmpfs under them all
        for mnt in sorted(_mounts_under(self.dir), key=len, reverse=True):
            subprocess.run(["umount", "-l", mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


def _mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def _pids_naming(path):
    me, out = os.getpid(), []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if path.encode() in f.read():
                    out.append(int(d))
        except OSError:
            pass
    return out


def _mounts_under(path):
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mnt = line.split()[4].encode().decode("unicode_escape")
            if mnt == path or mnt.startswith(path + "/"):
                out.append(mnt)
    return out


state = {"podman": None, "why": "the image was not built"}


def podman():
    if state["podman"] is None:
        raise Skip(f"no image: {state['why']}")
    return state["podman"]


def _check_prerequisites():
    if os.geteuid() != 0:
        unavailable("needs root (podman's storage, debootstrap)")
    for prog in ("podman", "runc", "debootstrap"):
        if not shutil.which(prog):
            unavailable(f"no {prog} (Debian: apt-get install {PACKAGES})")
    for helper in ("netavark", "aardvark-dns"):
        if not any(os.access(os.path.join(d, helper), os.X_OK) for d in HELPER_DIRS):
            unavailable(f"no {helper}, podman's network and its DNS (Debian: apt-get install {PACKAGES})")
    why = None
    try:
        with urllib.request.urlopen(f"{MIRROR}/dists/bookworm/InRelease", timeout=30) as r:
            r.read(1)
    except OSError as e:
        why = e
    if why:
        unavailable(f"cannot reach the Debian mirror {MIRROR} (SLOTRUN_DEBIAN_MIRROR names another): {why}")


def _make_base(pm):
    """debian:12 and debian:12-slim: Debian 12 from debootstrap (or
    SLOTRUN_DEBIAN_ROOTFS), imported."""
    tar = os.environ.get("SLOTRUN_DEBIAN_ROOTFS")
    if not tar:
        root = os.path.join(pm.dir, "rootfs")
        code, out, err = run_cmd(["debootstrap", "--variant=minbase", "bookworm", root, MIRROR], timeout=1200)
        assert code == 0, f"debootstrap exit {code}: {(out + err).decode(errors='replace')[-3000:]}"
        # as Debian's own images: no package lists, no downloaded packages
        for sub in ("var/lib/apt/lists", "var/cache/apt/archives"):
            for name in os.listdir(os.path.join(root, sub)):
                p = os.path.join(root, sub, name)
                if os.path.isfile(p) and name != "lock":
                    os.unlink(p)
        tar = os.path.join(pm.dir, "rootfs.tar")
        subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
        shutil.rmtree(root)
    pm.check("import", tar, "docker.io/library/debian:12", timeout=300)
    pm.check("tag", "docker.io/library/debian:12", "docker.io/library/debian:12-slim")


def _context(pm):
    """The source tree without build folders and .git: the build context."""
    def ignore(d, names):
        skip = {n for n in names if n in (".git", "__pycache__")}
        skip |= {n for n in names if os.path.isfile(os.path.join(d, n, "build.ninja"))
                 or os.path.isdir(os.path.join(d, n, "meson-private"))}
        return skip
    ctx = os.path.join(pm.dir, "context")
    shutil.copytree(SRC, ctx, symlinks=True, ignore=ignore)
    return ctx


@case
def builds_the_image():
    _check_prerequisites()
    pm = Podman()
    cleanup_at_exit(pm.teardown)
    _make_base(pm)
    ctx = _context(pm)
    # the host's network for the build's apt-get: no bridge, no NAT needed
    # --jobs 2: the two stages install their packages side by side
    pm.check("build", "--network=host", "--pull=never", "--jobs", "2", "-t", IMAGE,
             "-f", os.path.join(ctx, "examples/container/Dockerfile"), ctx, timeout=1500)
    state["podman"] = pm


def run_image(*args, opts=(), timeout=120.0):
    return podman().cmd("run", "--rm", "--network=none", *opts, IMAGE, *args, timeout=timeout)


def text(b):
    return b.decode(errors="replace")


@case
def options_before_the_command():
    code, out, err = run_image("--slots", "2", "--", "sh", "-c", 'echo "rank $RANK of $WORLD_SIZE"')
    assert code == 0, f"exit {code}: {text(err)}"
    for r in (0, 1):
        assert f"[rank={r}] rank {r} of 2\n" in text(out), text(out)


@case
def help_is_slotruns():
    code, out, err = run_image("--help")
    assert code == 0, f"exit {code}: {text(err)}"
    assert out.startswith(b"Usage: slotrun [OPTIONS] [--] COMMAND"), text(out)


@case
def the_default_command_runs():
    code, out, err = run_image()
    assert code == 0, f"exit {code}: {text(err)}"
    assert "[rank=0] rank 0 of 1\n" in text(out), text(out)


@case
def comm_library_loads():
    # nccl_worker and slotcomm_train link libslotcomm, which the image carries
    for prog in ("nccl_worker", "slotcomm_train"):
        code, out, err = run_image(prog, "--help")
        assert code == 0, f"{prog}: exit {code}: {text(out + err)}"


@case
def an_orphan_is_reaped_by_pid_1():
    script = os.path.join(SRC, "tests", "e2e", "orphan_reaped.py")
    code, out, err = run_image("python3", "/t/orphan_reaped.py", opts=("-v", f"{script}:/t/orphan_reaped.py:ro"))
    assert code == 0, f"exit {code}: {text(out + err)}"
    assert "[rank=0] orphan reaped by pid 1: slotrun" in text(out), text(out)


SIGNALS = """
import os, signal, sys
r = os.environ["RANK"]
def usr1(s, f):
    print("rank", r, "got SIGUSR1", flush=True)
def term(s, f):
    print("rank", r, "last words", flush=True)
    sys.exit(0)
signal.signal(signal.SIGUSR1, usr1)
signal.signal(signal.SIGTERM, term)
print("rank", r, "ready", flush=True)
while True:
    signal.pause()
"""


@case
def usr1_and_stop_reach_every_worker():
    pm, name = podman(), "slotrun-image-test-signals"
    p = pm.proc("run", "--rm", "--network=none", "--name", name, IMAGE, "--slots", "2", "--",
                "python3", "-c", SIGNALS)
    try:
        for r in (0, 1):
            p.wait_line(f"[rank={r}] rank {r} ready\n", timeout=60)
        pm.check("kill", "--signal", "USR1", name)
        for r in (0, 1):
            p.wait_line(f"[rank={r}] rank {r} got SIGUSR1\n", timeout=30)
        # podman's 10 s before its SIGKILL; the image's SLOTRUN_GRACE is inside it
        pm.check("stop", "--time", "10", name, timeout=60)
        code = p.finish(60)
    finally:
        p.kill()
    assert code == 143, f"exit {code}, not 128+SIGTERM: {text(p.err)}"
    for r in (0, 1):
        assert f"[rank={r}] rank {r} last words\n" in text(p.out), text(p.out)


@case
def a_failing_workers_status_is_the_containers():
    code, out, err = run_image("--slots", "2", "--", "sh", "-c", '[ "$RANK" = 1 ] && exit 7; exec sleep 60')
    assert code == 7, f"exit {code}: {text(err)}"
    assert "job failed: rank 1 " in text(err), text(err)


@case
def three_containers_with_late_names():
    """n1 and n2 start first and find their node rank in --addrs only once
    n0, the chief, runs and its name resolves; then an all-reduce across the
    three checks every element."""
    pm = podman()
    pm.check("network", "create", NETWORK)
    secret = secrets.token_hex(16)
    job = ["--addrs", "n0,n1,n2", "--slots", "1", "--join-timeout", "120", "--",
           "sh", "-c", 'echo "rank $RANK of $WORLD_SIZE"; exec nccl_worker -b 4K -e 4K -n 2 -w 1']

    def start(node):
        return pm.proc("run", "--rm", "--network", NETWORK, "--name", node,
                       "-e", f"SLOTRUN_JOB_SECRET={secret}", IMAGE, *job)
    nodes = {}
    try:
        for node in ("n1", "n2"):
            nodes[node] = start(node)
        for node in ("n1", "n2"):
            nodes[node].wait_line("slotrun: waiting for 'n0' to resolve", stream="err", timeout=60)
        nodes["n0"] = start("n0")
        codes = {node: p.finish(180) for node, p in nodes.items()}
    finally:
        for p in nodes.values():
            p.kill()
    for node, p in sorted(nodes.items()):
        r = int(node[1])
        assert codes[node] == 0, f"{node}: exit {codes[node]}: {text(p.err)}"
        assert f"[rank={r}] rank {r} of 3\n" in text(p.out), f"{node}: {text(p.out)}"
    assert "[rank=0] # Out of bounds values : 0 OK\n" in text(nodes["n0"].out), text(nodes["n0"].out)


if __name__ == "__main__":
    run()
