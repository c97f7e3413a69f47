# SPDX-License-Identifier: MIT
"""bench/gpu_allreduce without a GPU: --help, bad flags (exit 2, one line),
no GPU visible (exit 77, one line), and its sweep driven through stand-ins
for nvidia-smi, nccl_worker, all_reduce_perf and d2d_copy (small shell
scripts that print fixed tables): the medians and ratios it prints and
writes, nccl-tests' columns left out where it is missing, and a run with a
wrong element and a contender that hangs (killed at --timeout, exit 1, no
JSON written)."""

import json
import os
import tempfile

from harness import Proc, Skip, case, pid_alive, run

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "gpu_allreduce")
TMP = tempfile.mkdtemp(prefix="test_gpu_allreduce.")

# Each stand-in prints what the real program would for -b 1K -e 4K -f 4,
# round after round (a count kept in $TMP): nccl_worker -O at 1 then 3
# GB/s at 1 KiB (median 2), 4 then 8 at 4 KiB (median 6).
FAKES = {
    "gpu/nvidia-smi": """
case $1 in -L) echo "GPU 0: Fake GPU (UUID: GPU-0)" ;; *) echo "Fake GPU, 1.0" ;; esac
""",
    "nogpu/nvidia-smi": """
echo "No devices were found"; exit 6
""",
    "nt/all_reduce_perf": """
echo "# nccl-tests version 9.9.9"
echo "        1024   256  float  sum  -1   1.0   2.00  0.00  0   0.30   3.41  0.00  0"
echo "        4096  1024  float  sum  -1   1.0   4.00  0.00  0   0.40  10.24  0.00  0"
""",
    "d2d_copy": """
echo "# d2d_copy: fake copy"
echo "        1024   0.25   4.00"
echo "        4096   0.50   8.00"
""",
    "nccl_worker": """
case " $* " in *" -e 4 "*)
    echo "# backend nccl: Fake GPU (device 0), NCCL 9.9.9"
    echo "  4  1  float32  sum  -1  30.0  0.000  0.000  0"; exit 0 ;;
esac
case " $* " in *" -O "*) mode=oop ;; *) mode=ip ;; esac
n=$(($(cat "$FAKE_DIR/round.$mode" 2>/dev/null || echo 0) + 1)); echo $n >"$FAKE_DIR/round.$mode"
echo "# backend nccl: Fake GPU (device 0), NCCL 9.9.9"
if [ $mode = oop ]; then
    [ -n "$FAKE_HANG" ] && { echo $$ >"$FAKE_DIR/hang.pid"; exec sleep 60; }
    echo "  1024   256  float32  sum  -1  1.0  $((2 * n - 1)).0  0.000  0"
    echo "  4096  1024  float32  sum  -1  1.0  $((4 * n)).0  0.000  0"
else
    echo "  1024   256  float32  sum  -1  0.$((2 * n + 3))  0.0  0.000  0"
    echo "  4096  1024  float32  sum  -1  0.5  0.0  0.000  ${FAKE_WRONG:-0}"
fi
""",
}


def fakes():
    """A fresh folder of stand-ins; returns its path."""
    d = tempfile.mkdtemp(dir=TMP)
    for name, body in FAKES.items():
        path = os.path.join(d, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, 0o755)
    return d


def start(argv, path, **env):
    """The script started with PATH beginning with the given folders."""
    environ = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    environ.update(env, PATH=":".join(path + ["/usr/bin", "/bin"]))
    return Proc([SCRIPT, *argv], environ=environ)


def finish(p, timeout=60):
    """(exit status, stdout, stderr) as text."""
    code = p.finish(timeout)
    return code, p.out.decode(), p.err.decode()


def gpu_allreduce(argv, path, **env):
    return finish(start(argv, path, **env))


def one_line(err):
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu_allreduce: "), err
    return lines[0]


@case
def help_says_what_it_runs():
    code, out, err = gpu_allreduce(["--help"], [])
    assert code == 0, (code, err)
    assert out.startswith("usage: bench/gpu_allreduce"), out
    for flag in ("--bin", "--nccl-tests", "--d2d", "--repeat", "--timeout", "--json"):
        assert flag in out, flag
    assert err == "", err


@case
def bad_flags_exit_2_with_one_line():
    bad = (["--bogus"], ["-b", "4X"], ["-b", "6"], ["-f", "1"], ["-b", "8K", "-e", "4K"],
           ["--timeout", "0"], ["-n"])
    started = [(argv, start(argv, [])) for argv in bad]  # at once: each is a Python start-up
    for argv, p in started:
        code, out, err = finish(p)
        assert code == 2, (argv, code, err)
        one_line(err)
        assert out == "", (argv, out)


@case
def without_a_gpu_it_exits_77_with_one_line():
    code, out, err = gpu_allreduce([], [], CUDA_VISIBLE_DEVICES="")
    assert code == 77, (code, err)
    assert "no GPU visible: CUDA_VISIBLE_DEVICES is ''" in one_line(err), err
    assert out == "", out


@case
def an_nvidia_smi_without_gpus_exits_77_naming_what_it_said():
    if os.path.isdir("/proc/driver/nvidia/gpus") and os.listdir("/proc/driver/nvidia/gpus"):
        raise Skip("the NVIDIA driver lists a GPU here")
    d = fakes()
    code, out, err = gpu_allreduce(["--bin", os.path.join(d, "nccl_worker")], [os.path.join(d, "nogpu")])
    assert code == 77, (code, err)
    assert "nvidia-smi -L: exit 6: No devices were found" in one_line(err), err


@case
def the_sweep_reports_medians_and_ratios_without_nccl_tests():
    d = fakes()
    out_json = os.path.join(d, "out.json")
    code, out, err = gpu_allreduce(["--bin", os.path.join(d, "nccl_worker"), "--d2d", os.path.join(d, "d2d_copy"),
                                    "-b", "1K", "-e", "4K", "--json", out_json], [os.path.join(d, "gpu")],
                                   FAKE_DIR=d)
    assert code == 0, (code, out, err)
    assert "nccl-tests: not run (no all_reduce_perf on PATH and no --nccl-tests)" in out, out
    rounds = [l.split(":")[0] for l in out.splitlines() if l.startswith("## round ")]
    assert rounds[0].startswith("## round 1/2 nccl_worker (in place)"), rounds
    assert rounds[3].startswith("## round 2/2 nccl_worker -O"), rounds  # the order rotates
    # size, ours, nccl-tests, d2d, ours/nt, ours/d2d, in-place us: ours, nccl-tests
    table = {" ".join(l.split()[1:3]): l.split()[3:] for l in out.splitlines()
             if l.startswith("## ") and " KiB " in l}
    assert table["1 KiB"] == ["2.00", "-", "4.00", "-", "0.500", "0.60", "-"], table
    assert table["4 KiB"] == ["6.00", "-", "8.00", "-", "0.750", "0.50", "-"], table
    with open(out_json) as f:
        doc = json.load(f)
    assert doc["results"]["ours"]["1024"] == {"time_us": 1.0, "algbw": 2.0}, doc["results"]
    assert doc["every_round"]["ours"] == [{"1024": [1.0, 1.0], "4096": [1.0, 4.0]},
                                          {"1024": [1.0, 3.0], "4096": [1.0, 8.0]}], doc["every_round"]
    assert doc["nccl_tests"] == {"skipped": "no all_reduce_perf on PATH and no --nccl-tests"}, doc
    assert doc["backend"] == "Fake GPU (device 0), NCCL 9.9.9" and doc["rounds"] == 2, doc


@case
def a_wrong_element_and_a_hang_fail_the_run_and_nothing_is_left():
    d = fakes()
    code, out, err = gpu_allreduce(["--bin", os.path.join(d, "nccl_worker"), "--d2d", os.path.join(d, "d2d_copy"),
                                    "-b", "1K", "-e", "4K", "--repeat", "1", "--timeout", "1",
                                    "--json", os.path.join(d, "out.json")],
                                   [os.path.join(d, "gpu"), os.path.join(d, "nt")],
                                   FAKE_DIR=d, FAKE_WRONG="3", FAKE_HANG="1")
    assert code == 1, (code, out, err)
    assert "2 problem(s), the first: nccl_worker (in place), round 1: 3 wrong elements" in one_line(err), err
    assert "## round 1/1 nccl_worker -O (out of place): timed out after 1 s" in out, out
    assert not os.path.exists(os.path.join(d, "out.json")), "a failed run wrote its figures"
    with open(os.path.join(d, "hang.pid")) as f:
        assert not pid_alive(int(f.read())), "the hanging contender outlived its timeout"
    # nccl-tests' columns are there: 1 KiB ours missing, nt 2.00 GB/s and 0.30 us in place
    row = next(l.split() for l in out.splitlines() if l.startswith("##    1 KiB"))
    assert row[4] == "2.00" and row[-1] == "0.30", row


run()
