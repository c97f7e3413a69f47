# SPDX-License-Identifier: MIT
"""The manual pages: built from man/*.scd by scdoc, each renders with
`man -l` without a warning, slotrun(1) and nccl_worker(1) name every option
and variable their --help names, and `meson install` puts them in
share/man/man1.  Skips where scdoc was missing at configure time (the pages
are then not built) or man is not installed (Debian: man-db)."""
import os
import re
import shutil
import subprocess
import tempfile

from harness import Skip, binary, case, run, run_cmd

PAGES = ("slotrun", "wrap_rank", "nccl_worker")
MAN_DIR = os.environ.get("MAN_DIR", "")


def need_pages():
    if os.environ.get("MAN_BUILT") != "1":
        raise Skip("scdoc was not found when the build was configured: no man pages (Debian: scdoc)")
    if not shutil.which("man"):
        raise Skip("no man to render the pages (Debian: man-db)")


def render(page):
    """Renders a page named with its section ("slotrun.1"), or of section 1."""
    if not re.search(r"\.[1-8]$", page):
        page += ".1"
    env = dict(os.environ, MANWIDTH="100", MANPAGER="cat", PAGER="cat", LC_ALL="C.UTF-8")
    r = subprocess.run(["man", "--warnings", "-l", os.path.join(MAN_DIR, page)], env=env,
                       capture_output=True, timeout=60)
    text = r.stdout.decode(errors="replace")
    assert r.returncode == 0 and not r.stderr.strip(), (page, r.returncode, r.stderr.decode(errors="replace"))
    # man -l output may carry overstrikes (bold, underline) on some systems
    return re.sub(r".\x08", "", text)


@case
def every_page_renders_without_a_warning():
    need_pages()
    for page in PAGES:
        text = render(page)
        assert text.startswith(f"{page}(1)"), text[:200]
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "SEE ALSO"):
            assert re.search(rf"^{section}$", text, re.M), (page, section)
        assert re.search(rf"^ +{page} - \S", text, re.M), (page, text[:400])


def help_of(name):
    code, out, err = run_cmd([binary(name), "--help"], timeout=20)
    assert code == 0, (name, code, err)
    return out.decode()


def named_in(text, words):
    # the renderer may hyphenate a long word at a line's end
    flat = re.sub(r"\u2010\n +|-\n +", "", text)
    return [w for w in sorted(words) if w not in flat]


@case
def slotrun_page_names_every_option_and_variable_of_its_help():
    need_pages()
    helptext = help_of("slotrun")
    options = set(re.findall(r"(?<![\w-])--[a-z][a-z_-]+", helptext))
    variables = set(re.findall(r"\bSLOTRUN_[A-Z_]+", helptext))
    assert len(options) > 25 and len(variables) > 15, (options, variables)
    missing = named_in(render("slotrun"), options | variables)
    assert not missing, f"slotrun(1) does not name {missing}"


@case
def nccl_worker_page_names_every_option_of_its_help():
    need_pages()
    helptext = help_of("nccl_worker")
    options = set(re.findall(r"(?<![\w-])--?[a-z][a-z_-]*", helptext)) - {"-"}
    variables = set(re.findall(r"\b(?:SLOTRUN|NCCL)_[A-Z_]+", helptext))
    assert len(options) > 15, options
    missing = named_in(render("nccl_worker"), options | variables)
    assert not missing, f"nccl_worker(1) does not name {missing}"


@case
def the_pages_defer_to_no_other_document():
    # the man pages are the whole manual: a user reading them installed has
    # no source tree to be sent to
    need_pages()
    for page in ("slotrun.1", "wrap_rank.1", "nccl_worker.1", "slotcomm.3"):
        text = render(page)
        for word in ("README", ".md"):
            assert word not in text, f"{page} sends the reader to {word}"


@case
def meson_install_puts_them_in_man1():
    need_pages()
    root = os.environ.get("BUILD_ROOT")
    if not root or not shutil.which("meson"):
        raise Skip("no build folder or meson to install from")
    d = tempfile.mkdtemp()
    try:
        r = subprocess.run(["meson", "install", "-C", root, "--no-rebuild", "--quiet", "--destdir", d],
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        found = sorted(os.path.relpath(os.path.join(dp, f), d) for dp, _, fs in os.walk(d) for f in fs
                       if f.endswith(".1"))
        assert [os.path.basename(f) for f in found] == sorted(p + ".1" for p in PAGES), found
        assert all(os.path.dirname(f).endswith(os.path.join("share", "man", "man1")) for f in found), found
    finally:
        shutil.rmtree(d)


run()
