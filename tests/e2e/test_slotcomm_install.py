# SPDX-License-Identifier: MIT
"""slotcomm as a program outside the tree uses it: the build is installed
into a temporary folder (meson install --destdir), a small C program
(slotcomm_user/allreduce.c) is compiled with nothing but what pkg-config
says of that copy, and runs under slotrun on 2 and 4 ranks with its
all-reduce results checked on every rank.  The shared library exports
slotcomm_ names only, and the static one defines no other global name."""

import os
import shutil
import subprocess
import tempfile

from harness import Proc, Skip, binary, case, cleanup_at_exit, free_port, job_env, run, run_cmd

SR = binary("slotrun")
BUILD = os.environ["BUILD_ROOT"]
HERE = os.path.dirname(os.path.abspath(__file__))
SANITIZE = os.environ.get("SLOTRUN_SANITIZE", "none")
TMP = tempfile.mkdtemp(prefix="test_slotcomm_install.")
DEST = os.path.join(TMP, "dest")
cleanup_at_exit(lambda: shutil.rmtree(TMP, ignore_errors=True))

_installed = {}


def installed():
    """{pcdir, libdir, env}: the destdir install, done once."""
    if _installed:
        return _installed
    meson = shutil.which("meson")
    if not meson or not shutil.which("pkg-config"):
        raise Skip("meson or pkg-config is not on PATH")
    code, out, err = run_cmd([meson, "install", "-C", BUILD, "--destdir", DEST, "--no-rebuild",
                              "--quiet"], timeout=120)
    assert code == 0, (code, out[-2000:], err[-2000:])
    pcs = [os.path.join(d, f) for d, _, fs in os.walk(DEST) for f in fs if f == "slotcomm.pc"]
    assert len(pcs) == 1, pcs
    pcdir = os.path.dirname(pcs[0])
    env = {"PKG_CONFIG_PATH": pcdir, "PKG_CONFIG_SYSROOT_DIR": DEST}
    _installed.update(pcdir=pcdir, libdir=os.path.dirname(pcdir), env=env)
    return _installed


def pkg_config(*args):
    code, out, err = run_cmd(["pkg-config", *args, "slotcomm"], env=installed()["env"])
    assert code == 0, (args, err)
    return out.decode().split()


def compile_user(name, link):
    """Builds allreduce.c with the pkg-config flags and link (a list);
    returns the program's path."""
    exe = os.path.join(TMP, name)
    cc = os.environ.get("CC") or "cc"
    san = [f"-fsanitize={SANITIZE}"] if SANITIZE not in ("", "none") else []
    argv = [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", *san,
            os.path.join(HERE, "slotcomm_user", "allreduce.c"), *pkg_config("--cflags"), *link,
            "-o", exe]
    code, out, err = run_cmd(argv, timeout=120)
    assert code == 0, (argv, err.decode()[-3000:])
    return exe


def run_ranks(exe, slots):
    env = job_env({"LD_LIBRARY_PATH": installed()["libdir"], "SLOTRUN_TIMEOUT": "60"})
    p = Proc([SR, "--slots", str(slots), "--master-port", str(free_port()), "--", exe], environ=env)
    code = p.finish(120)
    assert code == 0, (code, p.out[-2000:], p.err[-2000:])
    line = f"[rank=0] slotcomm {version()}: {slots} ranks over ".encode()
    assert line in p.out and b", 0 wrong\n" in p.out, p.out[-2000:]


def version():
    return pkg_config("--modversion")[0]


@case
def pkg_config_points_into_the_install():
    flags = pkg_config("--cflags", "--libs")
    assert f"-I{DEST}" in " ".join(flags), flags
    assert "-lslotcomm" in flags and any(f.startswith(f"-L{DEST}") for f in flags), flags
    inc = [f[2:] for f in flags if f.startswith("-I")]
    for h in ("slotcomm.h", "nccl.h", "version.h"):
        assert any(os.path.exists(os.path.join(d, "slotcomm", h)) for d in inc), (h, inc)


@case
def the_shared_library_exports_slotcomm_names_only():
    if not shutil.which("nm"):
        raise Skip("nm is not on PATH")
    lib = os.path.join(installed()["libdir"], "libslotcomm.so")
    code, out, err = run_cmd(["nm", "-D", "--defined-only", lib])
    assert code == 0, err
    # "slotcomm_init@@SLOTCOMM_0": the name, then its version node
    names = [l.split()[-1].split("@")[0] for l in out.decode().splitlines() if l.strip()]
    assert "slotcomm_init" in names and "slotcomm_allreduce" in names, names
    # SLOTCOMM_0 is the version node of the symbol map
    stray = [n for n in names if not n.startswith("slotcomm_") and n != "SLOTCOMM_0"]
    assert not stray, stray


@case
def the_static_library_defines_slotcomm_names_only():
    if not shutil.which("nm"):
        raise Skip("nm is not on PATH")
    lib = os.path.join(installed()["libdir"], "libslotcomm.a")
    code, out, err = run_cmd(["nm", "-g", "--defined-only", lib])
    assert code == 0, err
    # "member.o:" lines name the archive's members
    names = [l.split()[-1] for l in out.decode().splitlines() if l.strip() and not l.endswith(":")]
    assert "slotcomm_init" in names, names
    stray = [n for n in names if not n.startswith("slotcomm_")]
    assert not stray, stray


@case
def a_program_on_the_shared_library_all_reduces_on_2_and_4_ranks():
    exe = compile_user("allreduce", pkg_config("--libs"))
    code, out, err = run_cmd(["ldd", exe], env={"LD_LIBRARY_PATH": installed()["libdir"]})
    assert installed()["libdir"].encode() + b"/libslotcomm.so" in out, out
    for slots in (2, 4):
        run_ranks(exe, slots)


@case
def a_program_on_the_static_library_all_reduces_on_2_ranks():
    archive = os.path.join(installed()["libdir"], "libslotcomm.a")
    assert os.path.exists(archive), archive
    # PKG_CONFIG_SYSROOT_DIR also prefixes the -L of the libraries slotcomm
    # itself links (CUDA's); those are on this machine, not in the copy.
    link = []
    for f in pkg_config("--static", "--libs"):
        if f == "-lslotcomm":
            f = archive
        elif f.startswith(f"-L{DEST}") and not os.path.isdir(f[2:]):
            f = "-L" + f[2 + len(DEST):]
        link.append(f)
    exe = compile_user("allreduce_static", link)
    code, out, err = run_cmd(["ldd", exe])
    assert b"libslotcomm" not in out, out
    run_ranks(exe, 2)


if __name__ == "__main__":
    run()
