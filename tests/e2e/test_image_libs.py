# SPDX-License-Identifier: MIT
"""The shipped image's runtime stage installs a package for every shared
library its programs load, checked in a second rather than in the minutes
the container test (tests/container) takes to build the image.

For slotrun, nccl_worker, slotcomm_train and libslotcomm as built here,
each NEEDED entry of their dynamic section (readelf -d) is either built
with them (libslotcomm), the C library's own, or a library that dpkg says
belongs to a package named in the second stage's apt-get install of
examples/container/Dockerfile.  A library added to the build without its
package in the image (libevent_extra, for the metrics endpoint) fails here,
naming the library and the package to add.  Needs dpkg and readelf: skips
where they are missing (not a Debian machine)."""
import os
import re
import shutil
import subprocess

from harness import Skip, binary, case, run

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCKERFILE = os.path.join(SRC, "examples", "container", "Dockerfile")
BUILD = os.environ.get("BUILD_ROOT", "")
# the C library's own, in every Debian image
LIBC = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2",
        "ld-linux-aarch64.so.1"}


def runtime_packages():
    """The packages the Dockerfile's last stage installs with apt-get."""
    text = open(DOCKERFILE).read()
    last = text[text.rindex("\nFROM "):]
    m = re.search(r"apt-get install\s+(.*?)&&", last.replace("\\\n", " "), re.S)
    assert m, f"{DOCKERFILE}: no apt-get install in the runtime stage"
    return {w for w in m.group(1).split() if not w.startswith("-")}


def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, check=True).stdout.decode()
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


# what slotrun loads on first use (launcher/lazylib.h), not at its start
ON_USE = {"libdw.so.", "libevent_extra-"}


def loaded_on_use(path):
    """The libraries a program names in its bytes (the sonames it hands
    dlopen) without needing them at its start."""
    names = {m.decode() for m in re.findall(rb"lib[A-Za-z0-9_.+-]+\.so\.[0-9.]+", open(path, "rb").read())}
    return sorted(names - set(needed(path)) - LIBC)


def package_of(soname, loaded_by):
    """The Debian package that holds the library the loader finds for
    soname (ldd of the program that needs it names the path; ldconfig's
    cache, one it loads on use)."""
    out = subprocess.run(["ldd", loaded_by], capture_output=True).stdout.decode()
    m = re.search(rf"^\s*{re.escape(soname)} => (\S+)", out, re.M)
    if not m:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True).stdout.decode()
        m = re.search(rf"^\s*{re.escape(soname)} \(libc6,x86-64[^)]*\) => (\S+)", out, re.M)
    assert m and m.group(1) != "not", f"{loaded_by}: the loader does not find {soname} here"
    path = os.path.realpath(m.group(1))
    for p in (m.group(1), path, path.replace("/usr/lib/", "/lib/", 1), path.replace("/lib/", "/usr/lib/", 1)):
        r = subprocess.run(["dpkg", "-S", p], capture_output=True)
        if r.returncode == 0:
            return r.stdout.decode().split(":")[0]
    raise AssertionError(f"dpkg knows no package holding {path} ({soname}, needed by {loaded_by})")


def programs():
    libs = [os.path.join(BUILD, "nccl_worker", "libslotcomm.so")]
    return [binary("slotrun"), binary("nccl_worker"), binary("slotcomm_train")] + \
        [p for p in libs if os.path.exists(p)]


@case
def every_library_the_programs_load_has_its_package_in_the_image():
    for tool in ("dpkg", "readelf", "ldd"):
        if not shutil.which(tool):
            raise Skip(f"no {tool} here: not a Debian machine")
    if os.environ.get("SLOTRUN_SANITIZE", "none") not in ("", "none"):
        raise Skip("a sanitizer's runtime is among the libraries of this build: the plain build checks this")
    have = runtime_packages()
    missing = []
    for prog in programs():
        for so in needed(prog) + loaded_on_use(prog):
            # the image is built without CUDA (-Dcuda=disabled): its libraries come with CUDA's image
            if so in LIBC or so.startswith(("libslotcomm.", "libcudart.", "libnccl.", "libcuda.")):
                continue
            pkg = package_of(so, prog)
            if pkg not in have:
                missing.append(f"{os.path.basename(prog)} needs {so}: add {pkg} to the runtime stage's "
                               f"apt-get install in {DOCKERFILE}")
    assert not missing, "\n".join(missing)



@case
def slotrun_maps_libdw_and_evhttp_only_when_used():
    # six of the libraries a start would map (libdw and what it needs,
    # libevent_extra): every node's start pays for them otherwise
    for tool in ("readelf", "ldconfig"):
        if not shutil.which(tool):
            raise Skip(f"no {tool} here")
    sr = binary("slotrun")
    at_start = [so for so in needed(sr) if so.startswith(tuple(ON_USE))]
    assert not at_start, f"slotrun needs {at_start} at its start"
    on_use = loaded_on_use(sr)
    assert {p for p in ON_USE if any(so.startswith(p) for so in on_use)} == ON_USE, \
        f"slotrun loads on use {on_use}, not each of {sorted(ON_USE)}"


if __name__ == "__main__":
    run()
