#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the hwloc v2 XML topologies the topology tests plan on.

Run from anywhere: `python3 tests/data/make_topologies.py` rewrites the
*.xml files beside this script; the generated files are committed so the
tests need no Python.  Check one with `HWLOC_XMLFILE=FILE lstopo -`.

Each machine is described by packages (cores per package, hardware threads
per core), where its NUMA nodes sit, and which PCI devices hang under which
package.  PU numbering follows Linux on x86: the first hardware thread of
every core first (0..ncores-1), then the siblings (ncores..2*ncores-1), so
a core's PUs are not adjacent numbers, as on real servers.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def bitmap(bits):
    """hwloc's bitmap string: 32-bit words, most significant first."""
    value = 0
    for b in bits:
        value |= 1 << b
    words = []
    while True:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
        if not value:
            break
    return ",".join("0x%08x" % w for w in reversed(words))


class Gen:
    def __init__(self):
        self.gp = 0
        self.lines = []

    def gp_index(self):
        self.gp += 1
        return self.gp

    def emit(self, depth, text):
        self.lines.append("  " * depth + text)


def make(name, desc, packages, cores, threads, numa_per_package=True,
         pci=(), allowed=None):
    """packages, cores (per package), threads (per core).
    numa_per_package: one NUMA node per package, else one for the machine
    (a machine without NUMA information).
    pci: (package, busid, vendor, device, class, cuda_name or None).
    allowed: PU os indexes allowed (a cgroup-restricted export), or None."""
    g = Gen()
    total_cores = packages * cores
    npus = total_cores * threads

    def pu_index(pkg, core, thread):
        return thread * total_cores + pkg * cores + core

    def pkg_pus(pkg):
        return [pu_index(pkg, c, t) for c in range(cores) for t in range(threads)]

    all_pus = list(range(npus))
    nnodes = packages if numa_per_package else 1
    allowed_pus = all_pus if allowed is None else sorted(allowed)
    g.emit(0, '<?xml version="1.0" encoding="UTF-8"?>')
    g.emit(0, '<!DOCTYPE topology SYSTEM "hwloc2.dtd">')
    g.emit(0, '<topology version="2.0">')
    g.emit(1, '<object type="Machine" os_index="0" cpuset="%s" complete_cpuset="%s" '
           'allowed_cpuset="%s" nodeset="%s" complete_nodeset="%s" allowed_nodeset="%s" '
           'gp_index="%d">' % (bitmap(all_pus), bitmap(all_pus), bitmap(allowed_pus),
                               bitmap(range(nnodes)), bitmap(range(nnodes)),
                               bitmap(range(nnodes)), g.gp_index()))
    g.emit(2, '<info name="SlotrunFixture" value="%s"/>' % desc)
    if not numa_per_package:
        g.emit(2, '<object type="NUMANode" os_index="0" cpuset="%s" complete_cpuset="%s" '
               'nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="%d" '
               'local_memory="68719476736"/>' % (bitmap(all_pus), bitmap(all_pus), g.gp_index()))
    for p in range(packages):
        pus = pkg_pus(p)
        node = p if numa_per_package else 0
        ns = bitmap([node])
        g.emit(2, '<object type="Package" os_index="%d" cpuset="%s" complete_cpuset="%s" '
               'nodeset="%s" complete_nodeset="%s" gp_index="%d">'
               % (p, bitmap(pus), bitmap(pus), ns, ns, g.gp_index()))
        if numa_per_package:
            g.emit(3, '<object type="NUMANode" os_index="%d" cpuset="%s" complete_cpuset="%s" '
                   'nodeset="%s" complete_nodeset="%s" gp_index="%d" '
                   'local_memory="274877906944"/>'
                   % (p, bitmap(pus), bitmap(pus), ns, ns, g.gp_index()))
        for c in range(cores):
            cpus = [pu_index(p, c, t) for t in range(threads)]
            g.emit(3, '<object type="Core" os_index="%d" cpuset="%s" complete_cpuset="%s" '
                   'nodeset="%s" complete_nodeset="%s" gp_index="%d">'
                   % (c, bitmap(cpus), bitmap(cpus), ns, ns, g.gp_index()))
            for u in cpus:
                g.emit(4, '<object type="PU" os_index="%d" cpuset="%s" complete_cpuset="%s" '
                       'nodeset="%s" complete_nodeset="%s" gp_index="%d"/>'
                       % (u, bitmap([u]), bitmap([u]), ns, ns, g.gp_index()))
            g.emit(3, '</object>')
        # One host bridge per device, as on servers where each GPU sits
        # behind its own root port.
        for (pp, busid, vendor, device, cls, cuda) in pci:
            if pp != p:
                continue
            bus = busid.split(":")[1]
            g.emit(3, '<object type="Bridge" gp_index="%d" bridge_type="0-1" depth="0" '
                   'bridge_pci="0000:[%s-%s]">' % (g.gp_index(), bus, bus))
            g.emit(4, '<object type="PCIDev" gp_index="%d" pci_busid="%s" '
                   'pci_type="%04x [%04x:%04x] [%04x:0000] a1" pci_link_speed="31.507692">'
                   % (g.gp_index(), busid, cls, vendor, device, vendor))
            if cuda:
                g.emit(5, '<object type="OSDev" gp_index="%d" name="%s" subtype="CUDA" '
                       'osdev_type="5">' % (g.gp_index(), cuda))
                g.emit(6, '<info name="Backend" value="CUDA"/>')
                g.emit(5, '</object>')
            g.emit(4, '</object>')
            g.emit(3, '</object>')
        g.emit(2, '</object>')
    g.emit(1, '</object>')
    g.emit(0, '</topology>')
    path = os.path.join(HERE, name)
    with open(path, "w") as f:
        f.write("\n".join(g.lines) + "\n")
    return path


NV = 0x10DE
H100 = 0x2330

# Two sockets, 16 cores x 2 threads each, eight GPUs.  CUDA's numbering
# does not follow the sockets: cuda0,1 and cuda4,5 are on NUMA node 1,
# cuda2,3 and cuda6,7 on NUMA node 0.  Bus numbers follow the CUDA
# numbering (as CUDA's PCI_BUS_ID order would), but the XML lists socket
# 0's devices first, so discovery order is not bus order.
GPU8 = [
    (1, "0000:18:00.0", NV, H100, 0x0302, "cuda0"),
    (1, "0000:2a:00.0", NV, H100, 0x0302, "cuda1"),
    (0, "0000:3b:00.0", NV, H100, 0x0302, "cuda2"),
    (0, "0000:5d:00.0", NV, H100, 0x0302, "cuda3"),
    (1, "0000:9a:00.0", NV, H100, 0x0302, "cuda4"),
    (1, "0000:ab:00.0", NV, H100, 0x0302, "cuda5"),
    (0, "0000:ba:00.0", NV, H100, 0x0302, "cuda6"),
    (0, "0000:db:00.0", NV, H100, 0x0302, "cuda7"),
]
GPU8_BY_SOCKET = sorted(GPU8, key=lambda d: d[0])


def no_cuda(devs):
    return [d[:5] + (None,) for d in devs]


def main():
    out = []
    out.append(make("gpu8_2socket.xml",
                    "two sockets, 16 cores x 2 threads each, 8 GPUs with CUDA devices, "
                    "cuda0,1,4,5 on NUMA 1 and cuda2,3,6,7 on NUMA 0",
                    packages=2, cores=16, threads=2, pci=GPU8_BY_SOCKET))
    out.append(make("gpu8_2socket_pci.xml",
                    "the same server exported without CUDA: GPUs are PCI devices only",
                    packages=2, cores=16, threads=2, pci=no_cuda(GPU8_BY_SOCKET)))
    # The same server in a cgroup that allows cores 0-5 of socket 0 (both
    # threads) and only the first thread of cores 0-2 of socket 1: socket
    # 1's four GPUs must share three PUs.
    allowed = [c for c in range(6)] + [c + 32 for c in range(6)] + [16, 17, 18]
    out.append(make("gpu8_restricted.xml",
                    "gpu8_2socket in a cgroup: PUs 0-5,32-37 on socket 0, 16-18 on socket 1",
                    packages=2, cores=16, threads=2, pci=GPU8_BY_SOCKET, allowed=allowed))
    # Three GPUs on socket 0 (10 cores: 4+3+3), one on socket 1; no SMT.
    out.append(make("gpu4_asym.xml",
                    "two sockets, 10 cores each, no SMT; cuda1,2,3 on socket 0, cuda0 on socket 1",
                    packages=2, cores=10, threads=1,
                    pci=[(0, "0000:17:00.0", NV, H100, 0x0302, "cuda1"),
                         (0, "0000:31:00.0", NV, H100, 0x0302, "cuda2"),
                         (0, "0000:4b:00.0", NV, H100, 0x0302, "cuda3"),
                         (1, "0000:03:00.0", NV, H100, 0x0302, "cuda0")]))
    # No NUMA information (one node for the machine), PCI only, with
    # devices that must not count as GPUs: a non-NVIDIA VGA controller and
    # an NVIDIA bridge-class device (NVSwitch).
    out.append(make("gpu2_nonuma_pci.xml",
                    "two sockets, 4 cores each, one NUMA node for the machine, "
                    "NVIDIA GPUs on PCI only (one VGA, one 3D), an ASPEED VGA and an NVSwitch",
                    packages=2, cores=4, threads=1, numa_per_package=False,
                    pci=[(0, "0000:02:00.0", 0x1A03, 0x2000, 0x0300, None),
                         (1, "0000:41:00.0", NV, 0x2204, 0x0300, None),
                         (0, "0000:81:00.0", NV, 0x20B0, 0x0302, None),
                         (1, "0000:c1:00.0", NV, 0x1AF1, 0x0680, None)]))
    out.append(make("cpu_2numa.xml",
                    "CPU only: two sockets, 8 cores x 2 threads each, one NUMA node per socket",
                    packages=2, cores=8, threads=2))
    for p in out:
        print(os.path.relpath(p), file=sys.stderr)


if __name__ == "__main__":
    main()
