# SPDX-License-Identifier: MIT
"""--error-file is checked at start and destroys nothing: a path slotrun
could not write, or where its file would replace a device, a FIFO, a folder
or a link to one, stops slotrun with status 2 before any worker starts;
whatever is at the path is left as it was.  Each worker of these jobs
touches a marker file, so "nothing started" is seen, not assumed."""

import json
import os
import shutil
import stat
import subprocess
import tempfile

from harness import Skip, binary, case, job_env, run, run_cmd

SR = binary("slotrun")


def slotrun(ef, script="true", prefix=()):
    """slotrun --error-file ef running script, in a fresh folder that holds
    the marker; returns (status, stderr text, whether a worker started)."""
    d = tempfile.mkdtemp()
    try:
        marker = os.path.join(d, "started")
        code, _, err = run_cmd([*prefix, SR, "--slots", "1", "--error-file", ef, "--", "sh", "-c",
                                f"touch {marker}; {script}"], env=job_env(), timeout=30)
        return code, err.decode(errors="replace"), os.path.exists(marker)
    finally:
        shutil.rmtree(d)


def refused_at_start(ef, *words, prefix=()):
    code, err, started = slotrun(ef, prefix=prefix)
    assert code == 2, (code, err)
    assert not started, "a worker started"
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"slotrun: --error-file {ef}: "), err
    for w in words:
        assert w in lines[0], (w, err)


def need_root(what):
    if os.geteuid() != 0:
        raise Skip(f"{what} needs root")


@case
def a_device_node_is_refused_and_survives():
    need_root("mknod")
    d = tempfile.mkdtemp()
    try:
        null = os.path.join(d, "null")
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        refused_at_start(null, "is a character device, not a file slotrun may replace",
                         "give the path of a regular file")
        assert stat.S_ISCHR(os.lstat(null).st_mode), "the device node was removed"
    finally:
        shutil.rmtree(d)


@case
def a_fifo_is_refused_and_survives():
    d = tempfile.mkdtemp()
    try:
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        refused_at_start(fifo, "is a FIFO")
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was removed"
    finally:
        shutil.rmtree(d)


@case
def a_link_to_a_device_is_refused_and_survives():
    d = tempfile.mkdtemp()
    try:
        link = os.path.join(d, "link")
        os.symlink("/dev/null", link)
        refused_at_start(link, "is a link to a character device")
        assert os.readlink(link) == "/dev/null", "the link was removed"
        assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    finally:
        shutil.rmtree(d)


@case
def a_link_to_a_file_survives_a_clean_run_and_is_replaced_on_failure():
    d = tempfile.mkdtemp()
    try:
        target, link = os.path.join(d, "keep"), os.path.join(d, "err.json")
        with open(target, "w") as f:
            f.write("keep")
        os.symlink(target, link)
        code, err, started = slotrun(link)
        assert code == 0 and started, (code, err)
        assert os.readlink(link) == target, "a clean run removed the link"
        code, err, _ = slotrun(link, "exit 3")
        assert code == 3, (code, err)
        assert not os.path.islink(link), "the error file is a new regular file"
        with open(link) as f:
            assert json.load(f)["exit_status"] == 3
        with open(target) as f:
            assert f.read() == "keep", "the error file was written through the link"
    finally:
        shutil.rmtree(d)


@case
def a_folder_is_refused_and_survives():
    d = tempfile.mkdtemp()
    try:
        sub = os.path.join(d, "sub")
        os.mkdir(sub)
        with open(os.path.join(sub, "inside"), "w") as f:
            f.write("x")
        refused_at_start(sub, "is a folder", f"e.g. {sub}/slotrun-error.json")
        assert os.listdir(sub) == ["inside"]
    finally:
        shutil.rmtree(d)


@case
def a_missing_folder_is_said_at_start():
    d = tempfile.mkdtemp()
    try:
        ef = os.path.join(d, "none", "err.json")
        refused_at_start(ef, f"its folder {d}/none does not exist", "create it")
        assert not os.path.exists(os.path.join(d, "none"))
    finally:
        shutil.rmtree(d)


@case
def a_read_only_folder_is_said_at_start():
    """Root ignores mode bits, so the folder is a tmpfs mounted read-only in
    a mount namespace of slotrun's own."""
    need_root("a read-only mount in a private mount namespace")
    if not shutil.which("unshare"):
        raise Skip("unshare(1) is not installed")
    d = tempfile.mkdtemp()
    try:
        probe = subprocess.run(["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs",
                                "-o", "ro", "none", d], capture_output=True)
        if probe.returncode != 0:
            raise Skip(f"cannot mount a tmpfs in a mount namespace: {probe.stderr.decode().strip()}")
        ef = os.path.join(d, "err.json")
        # the mount lives as long as the namespace: slotrun runs inside it
        prefix = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                  f'mount -t tmpfs -o ro none {d} && exec "$@"', "sh"]
        refused_at_start(ef, f"cannot create a file in its folder {d}: Read-only file system",
                         "give a path in a writable folder", prefix=prefix)
    finally:
        shutil.rmtree(d)


@case
def an_old_regular_file_stays_while_the_job_runs():
    """It is replaced when the job fails and removed when it succeeds, never
    at start: a job that checks for it finds it."""
    d = tempfile.mkdtemp()
    try:
        ef = os.path.join(d, "err.json")
        with open(ef, "w") as f:
            f.write('{"exit_status": 9}')
        code, err, _ = slotrun(ef, f"test -f {ef}")
        assert code == 0, ("the old file was gone while the job ran", code, err)
        assert not os.path.exists(ef), "an old error file passes for this run's"
    finally:
        shutil.rmtree(d)


run()
