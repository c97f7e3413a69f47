# SPDX-License-Identifier: MIT
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import zlib

from harness import Proc, Skip, binary, case, kill_pids, pid_alive, run, run_cmd, wait_for

WR = binary("wrap_rank")
HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
CLEAN = {"WRAP_RANK_LOG_DIR": "/nonexistent"}  # never redirect by accident


def wr(*args, env=None, timeout=30):
    e = dict(CLEAN)
    e.update(env or {})
    return run_cmd([WR, *args], env=e, timeout=timeout)


@case
def prefixes_and_keeps_streams_apart():
    code, out, err = wr("3", "--", "sh", "-c", "echo out1; echo err1 >&2; echo out2")
    assert code == 0, code
    assert out == b"[rank=3] out1\n[rank=3] out2\n", out
    assert err == b"[rank=3] err1\n", err


@case
def each_ending_is_one_line_and_last_line_kept():
    code, out, _ = wr("0", "printf", "a\\nb\\r\\nc\\rd\\n\\ne")
    assert code == 0
    assert out == b"[rank=0] a\n[rank=0] b\n[rank=0] c\n[rank=0] d\n[rank=0] \n[rank=0] e\n", out


@case
def bytes_pass_through():
    code, out, _ = wr("1", "printf", "\\000x\\377\\376\\n")
    assert code == 0
    assert out == b"[rank=1] \x00x\xff\xfe\n", out


@case
def exit_codes_0_to_255():
    for n in range(256):
        code, _, _ = wr("0", "sh", "-c", f"exit {n}")
        assert code == n, (n, code)


@case
def death_by_signal_is_128_plus_n():
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGABRT, signal.SIGKILL,
                signal.SIGSEGV, signal.SIGUSR1, signal.SIGTERM):
        code, _, _ = wr("0", "sh", "-c", f"kill -{int(sig)} $$")
        assert code == 128 + sig, (sig, code)


@case
def lines_before_sigkill_are_kept():
    code, out, _ = wr("2", "sh", "-c", "i=0; while [ $i -lt 1000 ]; do echo line $i; i=$((i+1)); done; kill -9 $$")
    assert code == 137, code
    lines = out.splitlines()
    assert lines == [b"[rank=2] line %d" % i for i in range(1000)], len(lines)


@case
def static_build_maps_no_shared_library():
    """wrap_rank starts once per rank: built static (-Dwrap_rank_static), it
    maps no shared object, neither the C library nor the loader."""
    if os.environ.get("WRAP_RANK_STATIC") != "1":
        raise Skip("built against the shared C library (-Dwrap_rank_static=disabled, or a sanitizer)")
    p = Proc([WR, "0", "--", "sh", "-c", "echo ready; exec sleep 30"], env=CLEAN)
    try:
        p.wait_line("[rank=0] ready\n")
        with open(f"/proc/{p.pid}/maps") as f:
            shared = sorted({line.split()[-1] for line in f if ".so" in line.split()[-1]})
    finally:
        p.kill()
    assert not shared, shared


@case
def missing_command_is_127_said_once():
    code, out, err = wr("4", "no-such-command-xyz")
    assert code == 127, code
    assert out == b""
    assert err.count(b"\n") == 1 and b"no-such-command-xyz" in err, err


@case
def not_executable_is_126():
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "script")
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho hi\n")
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
        code, _, err = wr("0", path)
        assert code == 126, code
        assert err.count(b"\n") == 1 and b"script" in err, err
    finally:
        shutil.rmtree(d)


@case
def usage_errors_exit_2():
    for args in ([], ["--bogus", "0", "true"], ["0"], ["0", "--"], ["--"], ["-1", "true"]):
        code, _, err = wr(*args)
        assert code == 2, (args, code)
        assert err.startswith(b"wrap_rank: "), err


@case
def help_and_version():
    code, out, _ = wr("--help")
    assert code == 0 and b"Usage: wrap_rank" in out
    code, out, _ = wr("--version")
    assert code == 0 and out.startswith(b"wrap_rank ")


@case
def rank_from_variable_list():
    env = {"OMPI_COMM_WORLD_RANK": "5", "RANK": "", "PMI_RANK": "9"}
    code, out, _ = wr("RANK,OMPI_COMM_WORLD_RANK,PMI_RANK", "echo", "x", env=env)
    assert code == 0 and out == b"[rank=5] x\n", out
    env = {"RANK": "1", "OMPI_COMM_WORLD_RANK": "5"}
    code, out, _ = wr("RANK,OMPI_COMM_WORLD_RANK", "echo", "x", env=env)
    assert out == b"[rank=1] x\n", out


@case
def rank_variables_missing_or_bad_exit_2():
    env = {k: "" for k in ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK")}
    code, out, err = wr("RANK,OMPI_COMM_WORLD_RANK,PMI_RANK", "echo", "x", env=env)
    assert code == 2 and out == b"", code
    assert err.count(b"\n") == 1 and b"RANK,OMPI_COMM_WORLD_RANK,PMI_RANK" in err, err
    code, _, err = wr("RANK", "echo", "x", env={"RANK": "three"})
    assert code == 2 and b"RANK='three'" in err, err


@case
def forwards_each_signal_and_keeps_last_words():
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
                signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH):
        name = sig.name
        p = Proc([WR, "6", PY, os.path.join(HERE, "sig_child.py"), f"{name}=7"], env=CLEAN)
        p.wait_line("[rank=6] ready\n")
        p.signal(sig)
        code = p.finish(10)
        assert code == 7, (name, code, p.err)
        assert f"[rank=6] got {name}\n".encode() in p.out, (name, p.out)
        assert p.err.endswith(f"[rank=6] last words on stderr after {name}\n".encode()), p.err


@case
def group_signal_reaches_command_once():
    # As slotrun does: the signal goes to wrap_rank's whole process group.
    p = Proc([WR, "0", PY, os.path.join(HERE, "sig_child.py"), "SIGTERM=5"], env=CLEAN,
             start_new_session=True)
    p.wait_line("[rank=0] ready\n")
    os.killpg(p.pid, signal.SIGTERM)
    code = p.finish(10)
    assert code == 5, code
    assert p.out.count(b"got SIGTERM") == 1, p.out


@case
def line_goes_out_while_command_still_runs():
    p = Proc([WR, "0", PY, os.path.join(HERE, "sig_child.py"), "SIGTERM=0"], env=CLEAN)
    p.wait_line("[rank=0] ready\n")
    assert p.p.poll() is None, "the command should still be running"
    p.signal(signal.SIGTERM)
    assert p.finish(10) == 0


@case
def eight_ranks_share_one_pipe_without_tearing():
    r, w = os.pipe()
    procs = []
    for rank in range(8):
        procs.append(subprocess.Popen([WR, str(rank), PY, os.path.join(HERE, "gen_lines.py"),
                                       f"r{rank}", "400", str(rank)],
                                      stdout=w, env=dict(os.environ, **CLEAN)))
    os.close(w)
    data = bytearray()
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(r)
    for p in procs:
        assert p.wait(30) == 0
    seen = {rank: [] for rank in range(8)}
    for line in bytes(data).split(b"\n")[:-1]:
        m = re.fullmatch(rb"\[rank=(\d)\] r(\d) (\d+) ([0-9a-f]{8}) ([a-z0-9]*)", line)
        assert m, f"torn or foreign line: {line[:120]!r}"
        rank, tag, seq, crc, payload = m.groups()
        assert rank == tag, line[:80]
        assert int(crc, 16) == zlib.crc32(payload), f"checksum mismatch in {line[:80]!r}"
        seen[int(rank)].append(int(seq))
    for rank, seqs in seen.items():
        assert seqs == list(range(400)), f"rank {rank}: {len(seqs)} lines"


@case
def long_line_is_split_into_prefixed_pieces():
    code, out, _ = wr("12", PY, "-c", "import sys; sys.stdout.write('x' * 10000 + '\\n')")
    assert code == 0
    pieces = out.split(b"\n")[:-1]
    assert len(pieces) == 3, len(pieces)
    assert all(p.startswith(b"[rank=12] ") and len(p) + 1 <= 4096 for p in pieces)
    assert b"".join(p[len(b"[rank=12] "):] for p in pieces) == b"x" * 10000


@case
def determined_log_redirect_via_override():
    d = tempfile.mkdtemp()
    try:
        open(os.path.join(d, "stdout.log"), "w").close()
        code, out, err = run_cmd([WR, "3", "sh", "-c", "echo o; echo e >&2"],
                                 env={"WRAP_RANK_LOG_DIR": d})
        assert code == 0 and out == b"" and err == b"", (out, err)
        assert open(os.path.join(d, "stdout.log"), "rb").read() == b"[rank=3] o\n"
        assert open(os.path.join(d, "stderr.log"), "rb").read() == b"[rank=3] e\n"
        code, out, _ = run_cmd([WR, "--no-redirect-stdio", "3", "echo", "o"],
                               env={"WRAP_RANK_LOG_DIR": d})
        assert code == 0 and out == b"[rank=3] o\n", out
    finally:
        shutil.rmtree(d)


@case
def determined_log_redirect_real_path_in_mount_namespace():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        raise Skip("needs root and unshare for a private mount namespace")
    script = ("mount -t tmpfs none /run && mkdir -p /run/determined/train/logs && "
              ": > /run/determined/train/logs/stdout.log && "
              f"env -u WRAP_RANK_LOG_DIR {WR} 7 sh -c 'echo hello; echo oops >&2' && "
              "cat /run/determined/train/logs/stdout.log /run/determined/train/logs/stderr.log")
    code, out, err = run_cmd(["unshare", "--mount", "--propagation", "private", "sh", "-c", script])
    if code != 0 and b"unshare" in err:
        raise Skip(f"mount namespaces unavailable: {err.strip().decode(errors='replace')}")
    assert code == 0, err
    assert out == b"[rank=7] hello\n[rank=7] oops\n", out


@case
def background_holder_of_the_pipe_does_not_hang():
    p = Proc([WR, "0", "sh", "-c", "sleep 60 & echo $!; echo done"], env=CLEAN)
    try:
        code = p.finish(10)
        assert code == 0
        assert b"[rank=0] done\n" in p.out
    finally:
        m = re.search(rb"\[rank=0\] (\d+)\n", p.out)
        if m:
            os.kill(int(m.group(1)), signal.SIGKILL)


@case
def background_printer_does_not_keep_wrap_rank_alive():
    p = Proc([WR, "0", "sh", "-c", "(while :; do echo tick; sleep 0.1; done) & echo bg $!; exit 3"], env=CLEAN)
    try:
        code = p.finish(10)
        assert code == 3, code
    finally:
        m = re.search(rb"\[rank=0\] bg (\d+)\n", p.out)
        if m:
            # its next tick after wrap_rank's exit is its SIGPIPE, and the
            # guard may have reaped it already
            kill_pids([int(m.group(1))])


@case
def closed_reader_stops_the_command():
    # `wrap_rank 0 yes | head -1`: yes must get EPIPE and everything end.
    cmd = f"{WR} 0 yes | head -n 1"
    code, out, _ = run_cmd(["sh", "-c", cmd], env=CLEAN, timeout=10)
    assert code == 0 and out == b"[rank=0] y\n", out


@case
def command_dies_with_wrap_rank():
    p = Proc([WR, "0", "sh", "-c", "echo $$; exec sleep 60"], env=CLEAN)
    p.wait_output(lambda s: re.search(rb"\[rank=0\] (\d+)\n", s.out), what="pid")
    child = int(re.search(rb"\[rank=0\] (\d+)\n", p.out).group(1))
    p.kill()
    p.p.wait(5)
    wait_for(lambda: not pid_alive(child), 5, "the command to die with wrap_rank")


run()
