# SPDX-License-Identifier: MIT
"""A script whose #! interpreter is missing, or whose #! line ends in CR,
is reported as a bad interpreter, once, before any rank starts; so is one
whose "#!/usr/bin/env NAME" names a program that is not on PATH."""
import os
import shutil
import tempfile
import uuid

from harness import binary, case, job_env, pids_with_env, run, run_cmd

SR = binary("slotrun")
WR = binary("wrap_rank")


def script(d, name, text, mode=0o755):
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def slotrun(*args):
    """Runs slotrun with a tag in its environment; asserts that nothing it
    may have started is left running once it has exited."""
    tag = uuid.uuid4().hex
    code, out, err = run_cmd([SR, *args], environ=job_env({"I21_TAG": tag}), timeout=30)
    assert pids_with_env("", I21_TAG=tag) == [], "processes left behind"
    return code, out, err


def in_tmp(fn):
    def body():
        d = tempfile.mkdtemp()
        try:
            fn(d)
        finally:
            shutil.rmtree(d)
    body.__name__ = fn.__name__
    return case(body)


@in_tmp
def missing_interpreter_is_said_once_and_is_127(d):
    path = script(d, "train.sh", b"#!/usr/bin/pyhton3-no-such\nprint(1)\n")
    for wrap in ([], ["--no-wrap"]):
        code, out, err = slotrun("--slots", "2", *wrap, "--", path, "arg")
        assert code == 127, (wrap, code, err)
        assert out == b"", out
        assert err == (b"slotrun: cannot execute '%s': bad interpreter '/usr/bin/pyhton3-no-such' "
                       b"(No such file or directory)\n" % path.encode()), (wrap, err)


@in_tmp
def crlf_shebang_names_windows_line_endings(d):
    # env would look for a program named "sh\r"
    for line, shown in ((b"#!/bin/sh\r\n", b"'/bin/sh\\r'"), (b"#!/usr/bin/env sh\r\n", b"'/usr/bin/env sh\\r'")):
        path = script(d, "train.sh", line + b"echo hi\r\n")
        for wrap in ([], ["--no-wrap"]):
            code, out, err = slotrun("--slots", "2", *wrap, "--", path)
            assert code == 127, (line, wrap, code, err)
            assert out == b"", out
            assert err == b"slotrun: cannot execute '%s': bad interpreter %s (the #! line ends in CR: " \
                          b"the script has Windows line endings)\n" % (path.encode(), shown), (line, wrap, err)


@in_tmp
def script_found_on_path_is_checked_too(d):
    script(d, "train-i21", b"#! /nonexistent/python3 -u\n")
    env = {"PATH": d + ":" + os.environ.get("PATH", "/usr/bin:/bin")}
    tag = uuid.uuid4().hex
    code, out, err = run_cmd([SR, "--slots", "2", "--", "train-i21"],
                             environ=job_env({**env, "I21_TAG": tag}), timeout=30)
    assert code == 127, (code, err)
    assert err == b"slotrun: cannot execute 'train-i21': bad interpreter '/nonexistent/python3' " \
                  b"(No such file or directory)\n", err
    assert pids_with_env("", I21_TAG=tag) == []


@in_tmp
def interpreter_that_is_a_folder_is_126(d):
    path = script(d, "job.sh", b"#!%s\n" % d.encode())
    code, _, err = slotrun("--slots", "2", "--", path)
    assert code == 126, (code, err)
    assert err.count(b"\n") == 1 and b"bad interpreter" in err and b"Permission denied" in err, err


@in_tmp
def env_program_not_on_path_is_said_once_and_is_127(d):
    for line, words in ((b"#!/usr/bin/env typo-i21", b"its #! line runs '/usr/bin/env typo-i21', and 'typo-i21' "
                                                      b"is not on PATH"),
                        (b"#!/usr/bin/env -S A=1 typo-i21 -u", b"its #! line runs '/usr/bin/env -S A=1 typo-i21 -u', "
                                                               b"and 'typo-i21' is not on PATH"),
                        (b"#!/usr/bin/env sh -e", b"its #! line runs '/usr/bin/env sh -e', and 'sh -e' is not on PATH "
                                                  b"(env takes the rest of the #! line as one name: 'env -S' splits it)")):
        path = script(d, "train.sh", line + b"\necho hi\n")
        for wrap in ([], ["--no-wrap"]):
            code, out, err = slotrun("--slots", "2", *wrap, "--", path)
            assert code == 127, (line, wrap, code, err)
            assert out == b"", out
            assert err == b"slotrun: cannot execute '%s': %s\n" % (path.encode(), words), (line, wrap, err)


@in_tmp
def env_program_that_is_no_program_is_126(d):
    notexec = script(d, "tool", b"", mode=0o644)
    path = script(d, "train.sh", b"#!/usr/bin/env -S %s\n" % notexec.encode())
    code, _, err = slotrun("--slots", "2", "--", path)
    assert code == 126, (code, err)
    assert err == b"slotrun: cannot execute '%s': its #! line runs '/usr/bin/env -S %s', and '%s' cannot be " \
                  b"executed (Permission denied)\n" % (path.encode(), notexec.encode(), notexec.encode()), err


@in_tmp
def env_programs_that_are_there_still_run(d):
    for line in (b"#!/usr/bin/env sh", b"#!/usr/bin/env -S sh -e", b"#!/usr/bin/env -S A=1 sh"):
        path = script(d, "ok.sh", line + b"\necho ran $RANK\n")
        code, out, err = slotrun("--slots", "2", "--", path)
        assert code == 0, (line, err)
        assert b"[rank=0] ran 0\n" in out and b"[rank=1] ran 1\n" in out, (line, out)


@in_tmp
def a_good_script_still_runs(d):
    path = script(d, "ok.sh", b"#!/bin/sh\necho ran $RANK\n")
    code, out, err = slotrun("--slots", "2", "--", path)
    assert code == 0, err
    assert b"[rank=0] ran 0\n" in out and b"[rank=1] ran 1\n" in out, out


@in_tmp
def wrap_rank_says_bad_interpreter_at_exec(d):
    # wrap_rank on its own learns it only from the exec's ENOENT
    for text, words in ((b"#!/usr/bin/pyhton3-no-such\n", b"bad interpreter '/usr/bin/pyhton3-no-such' "
                                                         b"(No such file or directory)"),
                        (b"#!/bin/sh\r\n", b"bad interpreter '/bin/sh\\r' (the #! line ends in CR")):
        path = script(d, "s.sh", text)
        code, out, err = run_cmd([WR, "3", path], timeout=20)
        assert code == 127, (code, err)
        assert out == b"" and err.count(b"\n") == 1, err
        assert err.startswith(b"wrap_rank: rank 3: cannot execute '%s': " % path.encode()) and words in err, err


run()
