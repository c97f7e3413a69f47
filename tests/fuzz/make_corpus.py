#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the hand-made seed corpus of each fuzz target into corpus/<target>/
(valid and invalid examples of what each parser meets).  Run it again after
changing it; inputs found by fuzzing that once crashed a target live beside
the seeds as crash-<what>, written by hand from libFuzzer's reproducer."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- ci_load: NUL-separated NAME=VALUE records ----
def records(*pairs):
    return b"\0".join(f"{k}={v}".encode() for k, v in pairs)


put("ci_load", "determined", records(
    ("rendezvous.json", '{"container_addrs": ["10.0.0.1", "10.0.0.2"], "container_rank": 1, '
                        '"container_slot_counts": [2, 3]}'),
    ("DET_SLOT_IDS", "[0,1,2]"), ("C10D_PORT", "5555"), ("DET_INTER_NODE_NETWORK_INTERFACE", "eth0")))
put("ci_load", "determined_cluster_json", records(
    ("rendezvous.json", '{"container_addrs": ["a"], "container_rank": 0}'),
    ("cluster.json", '{"slot_ids": [0, 1]}'), ("visible_gpus", "4")))
put("ci_load", "determined_bad_json", records(
    ("rendezvous.json", '{"container_addrs": ["10.0.0.1"], "container_rank": ')))
put("ci_load", "determined_wrong_types", records(
    ("rendezvous.json", '{"container_addrs": "10.0.0.1", "container_rank": "0", '
                        '"container_slot_counts": [1, -2]}')))
put("ci_load", "det_slot_ids_bad", records(("DET_SLOT_IDS", "[0,x]")))
put("ci_load", "det_slot_ids_empty", records(("DET_SLOT_IDS", "[]"), ("visible_gpus", "2")))
put("ci_load", "slurm", records(
    ("SLURM_JOB_NODELIST", "gpu[01-04,07]"), ("SLURM_NODEID", "2"), ("SLURM_NNODES", "5"),
    ("SLURM_STEP_GPUS", "0,1")))
put("ci_load", "slurm_bad_list", records(("SLURM_JOB_NODELIST", "gpu[01-"), ("SLURM_NODEID", "0")))
put("ci_load", "slurm_rank_out_of_range", records(("SLURM_JOB_NODELIST", "n[1-4]"), ("SLURM_NODEID", "7")))
put("ci_load", "slotrun_env", records(
    ("SLOTRUN_NNODES", "2"), ("SLOTRUN_NODE_RANK", "1"), ("SLOTRUN_ADDRS", "a,b"), ("SLOTRUN_SLOTS", "2,3"),
    ("SLOTRUN_MASTER_PORT", "4242"), ("SLOTRUN_IFACE", "lo")))
put("ci_load", "flags", records(
    ("--nnodes", "2"), ("--node-rank", "0"), ("--addrs", "127.0.0.1,127.0.0.2"), ("--slots", "4"),
    ("--master-port", "29500"), ("--iface", "lo")))
put("ci_load", "numbers_out_of_range", records(
    ("SLOTRUN_SLOTS", "99999999"), ("C10D_PORT", "99999"), ("SLOTRUN_NODE_RANK", "-1")))
put("ci_load", "counts_disagree", records(
    ("SLOTRUN_NNODES", "2"), ("SLOTRUN_ADDRS", "a,b,c"), ("SLOTRUN_NODE_RANK", "0")))
put("ci_load", "cuda_visible_devices", records(
    ("CUDA_VISIBLE_DEVICES", "GPU-aa,GPU-bb"), ("visible_gpus", "8"), ("SLOTRUN_SLOTS", "2")))
put("ci_load", "cuda_visible_devices_empty", records(("CUDA_VISIBLE_DEVICES", ""), ("visible_gpus", "2")))
put("ci_load", "kubernetes", records(
    ("PET_NNODES", "2"), ("PET_NODE_RANK", "1"), ("PET_NPROC_PER_NODE", "2"), ("PET_MASTER_ADDR", "m"),
    ("PET_MASTER_PORT", "1234"), ("JOB_COMPLETION_INDEX", "1")))
put("ci_load", "nothing", b"")

# ---- hostlist: the list itself ----
for name, s in [("ranges", "gpu[01-04,07],cpu-a[1-2]"), ("two_brackets", "r[1-2]n[01-02]"),
                ("plain", "node1"), ("widths", "a[08-10],b[8-10]"), ("unclosed", "gpu[01-"),
                ("stray_bracket", "a]b"), ("reversed", "a[3-1]"), ("too_many", "a[0-99999]"),
                ("empty", ""), ("empty_name", "a,,b"), ("space", "a b"), ("nested", "a[1-[2]]")]:
    put("hostlist", name, s)


# ---- plane_proto: frames as a peer sends them (big-endian) ----
def frame(t, payload=b""):
    return struct.pack(">IB", 1 + len(payload), t) + payload


def pstr(s):
    s = s.encode() if isinstance(s, str) else s
    return struct.pack(">H", len(s)) + s


def cause(kind=1, node=1, rank=3, code=4, host="10.0.0.2", text="", tail="boom\n", message="",
          blamed=0, culprit=0, culprit_node=0, culprit_host=""):
    return (struct.pack(">BiiiQQ", kind, node, rank, code, 1700000000000, 1500) + pstr(host) + pstr(text)
            + pstr(tail) + pstr(message) + struct.pack(">Bii", blamed, culprit, culprit_node)
            + pstr(culprit_host))


NONCE, MAC = bytes(range(32)), bytes(range(32, 64))
# the join: rank, nodes, slots, world, --max-restarts, --heartbeat-timeout (ms), version, host,
# MIN, --settle-time (ms), --admit, the slotrun's id, the round it was in, the restarts then
join = (struct.pack(">iiiiii", 1, 2, 2, 4, 0, 5000) + pstr("0.1.0") + pstr("node1")
        + struct.pack(">iiB", 2, 10000, 0) + bytes(range(16)) + struct.pack(">ii", 0, 0))


def start(rnd=1, restarts=0, nnodes=2, rank=1, base=2, world=4, master="", why="", cand=()):
    """START's round: its numbers, the chief's address, why, the next chiefs."""
    return (struct.pack(">iiiiii", rnd, restarts, nnodes, rank, base, world) + pstr(master) + pstr(why)
            + struct.pack(">B", len(cand)) + b"".join(struct.pack(">i", r) + pstr(h) for r, h in cand))


put("plane_proto", "handshake", frame(1, b"slotrun-plane/1\0" + NONCE) + frame(2, NONCE + MAC + join)
    + frame(3, MAC) + frame(5, start()))
put("plane_proto", "elastic_round", frame(5, start(3, 1, 3, 2, 4, 6, "10.0.0.2", "node 0 (10.0.0.1) lost: "
                                                   "connection closed", ((1, "10.0.0.3"), (2, "10.0.0.4"))))
    + frame(15, struct.pack(">ii", 0, 0) + cause(kind=4, host="10.0.0.5"))
    + frame(13, struct.pack(">i", 1) + cause(kind=3) + pstr("1 node left, fewer than --nnodes' MIN 2")))
put("plane_proto", "start_rank_outside", frame(5, start(1, 0, 2, 2)))
put("plane_proto", "start_too_many_candidates", frame(5, start(cand=tuple((1, "h") for _ in range(9)))))
put("plane_proto", "refuse", frame(4, pstr("wrong secret")))
put("plane_proto", "abort", frame(6, struct.pack(">i", 2) + pstr("node 2 says 3 slots")))
put("plane_proto", "fail_stop_end", frame(7, cause()) + frame(10, struct.pack(">ii", 0, 1) + cause())
    + frame(13, struct.pack(">i", 4) + cause() + pstr("")))
put("plane_proto", "signals", frame(8, struct.pack(">i", 15)) + frame(9, struct.pack(">i", 10))
    + frame(11, struct.pack(">ii", 10, 2)) + frame(12, struct.pack(">i", 0)) + frame(14))
put("plane_proto", "bad_magic", frame(1, b"slotrun-plane/2\0" + NONCE))
put("plane_proto", "huge_length", struct.pack(">IB", 0x7fffffff, 2))
put("plane_proto", "zero_length", struct.pack(">I", 0))
put("plane_proto", "http", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
put("plane_proto", "short_payload", frame(8, b"\0\0"))
put("plane_proto", "string_with_nul", frame(4, pstr(b"a\0b")))
put("plane_proto", "bad_cause_kind", frame(7, cause(kind=9)))
put("plane_proto", "blamed_cause", frame(7, cause(message="peer rank 5 did not answer", blamed=1, culprit=5,
                                                  culprit_node=-1))
    + frame(13, struct.pack(">i", 1) + cause(blamed=1, culprit=5, culprit_node=2, culprit_host="10.0.0.3")
            + pstr("")))
put("plane_proto", "bad_cause_blamed", frame(7, cause(blamed=2)))
put("plane_proto", "signal_out_of_range", frame(8, struct.pack(">i", 4096)))
put("plane_proto", "half_frame", frame(14)[:3])
put("plane_proto", "pause_resume", frame(16, struct.pack(">i", 20)) + frame(17)
    + frame(18, struct.pack(">ii", 20, 1)) + frame(19, struct.pack(">i", 1)))
put("plane_proto", "pause_without_signal", frame(18, struct.pack(">ii", 0, 1)))
put("plane_proto", "mismatch", frame(20, struct.pack(">i", 2)) + frame(20, struct.pack(">i", 0)))
put("plane_proto", "mismatch_no_node", frame(20, struct.pack(">i", -1)))


# ---- frame: nccl_worker's header + payload (little-endian) ----
def nframe(t, payload=b"", seq=0, magic=0x4e524c53, version=3, length=None):
    return struct.pack("<IHHQQ", magic, version, t, seq, len(payload) if length is None else length) + payload


def lstr(s):
    s = s.encode() if isinstance(s, str) else s
    return struct.pack("<H", len(s)) + s


RING_NONCE, RNONCE, RMAC = b"\x11" * 32, b"\x22" * 32, b"\x33" * 32
NODE = b"a" + b"\x44" * 16 + b"\x55" * 16 + b"\x66" * 16  # transport, node id, socket, token
register = (struct.pack("<IIII", 1, 4, 1, 2) + lstr("node1") + lstr("10.0.0.2") + struct.pack("<H", 40000)
            + RING_NONCE + NODE + RNONCE + RMAC)
put("frame", "register", nframe(1, register))
put("frame", "register_port_0", nframe(1, register[:-147] + struct.pack("<H", 0) + register[-145:]))
put("frame", "register_short_mac", nframe(1, register[:-1]))
put("frame", "register_bad_transport", nframe(1, register[:-113] + b"x" + register[-112:]))
put("frame", "table", nframe(2, struct.pack("<I", 2) + lstr("a") + lstr("10.0.0.1") + struct.pack("<H", 1)
                             + RING_NONCE + NODE + lstr("b") + lstr("10.0.0.2") + struct.pack("<H", 2)
                             + RNONCE + b"t" + bytes(48) + RMAC))
put("frame", "table_short", nframe(2, struct.pack("<I", 3) + lstr("a")))
put("frame", "reject", nframe(3, lstr("wrong secret")))
put("frame", "reject_control_char", nframe(3, lstr("bad\x1b[31m")))
put("frame", "hello", nframe(4, struct.pack("<I", 3) + RNONCE + RMAC))
put("frame", "challenge", nframe(10, RNONCE))
put("frame", "challenge_long", nframe(10, RNONCE + b"x"))
put("frame", "busy", nframe(11))
put("frame", "allreduce", nframe(7, struct.pack("<QBB", 1 << 20, 0, 0), seq=5))
put("frame", "abort", nframe(8, struct.pack("<iiB", 2, 3, 1) + lstr("rank 3 timed out")))
put("frame", "abort_negative_rank", nframe(8, struct.pack("<iiB", -1, -2, 0) + lstr("x")))
put("frame", "bad_magic", nframe(1, register, magic=0x12345678))
put("frame", "bad_version", nframe(1, register, version=2))
put("frame", "unknown_type", nframe(77))
put("frame", "long_length", nframe(1, register, length=1 << 40))
put("frame", "trailing_bytes", nframe(7, struct.pack("<QBB", 1, 0, 0) + b"x"))

# ---- line_splitter: prefix length, chunk size, failing write, stream ----
def ls(plen, chunk, fail, stream):
    return bytes([plen, chunk, fail]) + (stream.encode() if isinstance(stream, str) else stream)


put("line_splitter", "endings", ls(9, 0, 0, "a\nb\r\nc\rd\n\ne"))
put("line_splitter", "cr_lf_fed_apart", ls(9, 1, 0, "x\r\ny\r"))
put("line_splitter", "long_line", ls(9, 200, 0, "x" * 9000 + "\n"))
put("line_splitter", "exact_piece", ls(9, 7, 0, "y" * (4096 - 9 - 1) + "\nz"))
put("line_splitter", "bytes", ls(0, 3, 0, b"\0x\xff\xfe\n\x80"))
put("line_splitter", "prefix_too_long", ls(64, 0, 0, "x\n"))
put("line_splitter", "write_fails", ls(9, 5, 2, "1\n" * 3000))
