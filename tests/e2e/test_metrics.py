# SPDX-License-Identifier: MIT
"""--metrics-port and --metrics-file as Prometheus and node_exporter meet
them: a real Prometheus (Debian's `prometheus`, started here on loopback
with a private configuration and storage, scraping every second) scrapes
a 4-slot job and its HTTP API answers slotrun_rank_up with one series per
rank and the right values; `promtool check metrics` passes on the
exposition and on the textfile; the textfile is replaced atomically and
valid; a port in use is one line, status 2, nothing started.

Without prometheus the Prometheus cases skip, saying so; under CI=true
they fail instead (scripts/setup.sh installs it)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request

from harness import Proc, Skip, binary, case, cleanup_at_exit, free_ports, job_env, run, run_cmd, wait_for

SR = binary("slotrun")
TMP = tempfile.mkdtemp(prefix="test_metrics.")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
OM = "application/openmetrics-text; version=1.0.0; charset=utf-8"
# ranks 0-2 wait; rank 3 is done at once (exit 0: the job goes on)
SCRIPT = 'if [ "$RANK" = 3 ]; then echo bye; exit 0; fi; echo "hello $RANK"; exec sleep 120'


def need(tool):
    path = shutil.which(tool)
    if path:
        return path
    reason = f"{tool} is not installed (Debian: apt-get install prometheus)"
    if IN_CI:
        raise AssertionError(f"{reason} (CI=true: this test must run in CI, not skip)")
    raise Skip(reason)


def get(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.headers.get("Content-Type"), r.read().decode()


def start_job(port, extra=()):
    xdg = tempfile.mkdtemp(dir=TMP)
    return Proc([SR, "--slots", "4", "--grace", "1", "--metrics-port", f"127.0.0.1:{port}", *extra,
                 "--", "sh", "-c", SCRIPT], environ=job_env({"XDG_RUNTIME_DIR": xdg}))


def scrape(port, accept=None):
    def once():
        try:
            return get(f"http://127.0.0.1:{port}/metrics", accept)
        except OSError:
            return None
    return wait_for(once, 10, f"slotrun's metrics on port {port}")


def samples(text, name):
    """{rank: value} of name's samples in an exposition."""
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line[len(name) + 1:].rsplit("} ", 1)
            rank = dict(kv.split("=", 1) for kv in labels.split(","))["rank"].strip('"')
            out[int(rank)] = float(value)
    return out


@case
def the_exposition_is_openmetrics_for_prometheus_and_text_for_others():
    promtool = need("promtool")
    port = free_ports(1)[0]
    prom = os.path.join(TMP, "job.prom")
    p = start_job(port, ["--metrics-file", prom])
    try:
        p.wait_line("[rank=3] bye", timeout=20)

        def sampled():  # rank 3 done, the others sampled since they started (every second)
            text = scrape(port)[1]
            rss = samples(text, "slotrun_rank_rss_bytes")
            return samples(text, "slotrun_rank_up").get(3) == 0 and all(rss.get(r, 0) > 0 for r in (0, 1, 2))
        wait_for(sampled, 20, "rank 3 to be down and the others sampled")
        ctype, om = scrape(port, "application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
        assert ctype == OM, ctype
        assert om.endswith("# EOF\n"), om[-200:]
        assert "# UNIT slotrun_rank_cpu_seconds seconds\n" in om, om
        assert samples(om, "slotrun_rank_up") == {0: 1, 1: 1, 2: 1, 3: 0}, om
        assert samples(om, "slotrun_rank_last_exit_code") == {3: 0}, om
        rss = samples(om, "slotrun_rank_rss_bytes")
        assert all(rss[r] > 0 for r in (0, 1, 2)) and rss[3] == 0, om
        assert samples(om, "slotrun_rank_output_lines_total") == {0: 1, 1: 1, 2: 1, 3: 1}, om
        assert 'slotrun_job_state{node="0",host="127.0.0.1",slotrun_job_state="running"} 1\n' in om, om
        ctype, text = scrape(port)
        assert ctype.startswith("text/plain; version=0.0.4"), ctype
        assert "# EOF" not in text and "# TYPE slotrun_rank_cpu_seconds_total counter\n" in text, text
        r = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60)
        assert r.returncode == 0, (r.stdout, r.stderr, text)

        # the textfile: written every second, whole, and as valid
        wait_for(lambda: os.path.exists(prom), 10, "the metrics file")
        before = os.stat(prom).st_ino
        wait_for(lambda: os.stat(prom).st_ino != before, 10, "the file replaced")
        text = open(prom).read()
        assert samples(text, "slotrun_rank_up") == {0: 1, 1: 1, 2: 1, 3: 0}, text
        r = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60)
        assert r.returncode == 0, (r.stdout, r.stderr, text)
        assert [n for n in os.listdir(TMP) if n.startswith(".job.prom")] == [], "no temporary file left"
        try:
            get(f"http://127.0.0.1:{port}/other")
            raise AssertionError("served a path that is not /metrics")
        except urllib.error.HTTPError as e:
            assert e.code == 404, e
    finally:
        p.signal(signal.SIGTERM)
        code = p.finish(30)
    assert code == 143, p.err[-2000:]
    assert samples(open(prom).read(), "slotrun_rank_up") == {0: 0, 1: 0, 2: 0, 3: 0}, "written last at the end"


@case
def prometheus_scrapes_one_series_per_rank():
    prometheus = need("prometheus")
    port, web = free_ports(2)
    d = tempfile.mkdtemp(dir=TMP)
    with open(os.path.join(d, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: slotrun\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{port}']\n")
    p = start_job(port)
    prom = Proc([prometheus, f"--config.file={d}/prometheus.yml", f"--storage.tsdb.path={d}/data",
                 "--web.listen-address", f"127.0.0.1:{web}", "--log.level=warn"], environ=dict(os.environ))
    cleanup_at_exit(prom.kill)
    try:
        p.wait_line("[rank=3] bye", timeout=20)
        api = f"http://127.0.0.1:{web}/api/v1/query?"

        def query(q):
            try:
                doc = json.loads(get(api + urllib.parse.urlencode({"query": q}))[1])
            except OSError:
                return None
            return doc["data"]["result"] if doc.get("status") == "success" else None

        def four_with_rank_3_down():
            res = query("slotrun_rank_up")
            if not res or len(res) != 4:
                return None
            vals = {int(s["metric"]["rank"]): s["value"][1] for s in res}
            return res if vals.get(3) == "0" else None
        res = wait_for(four_with_rank_3_down, 90, "Prometheus to have scraped every rank")
        by_rank = {int(s["metric"]["rank"]): s for s in res}
        assert sorted(by_rank) == [0, 1, 2, 3], res
        for rank, s in by_rank.items():
            m = s["metric"]
            assert m["node"] == "0" and m["local_rank"] == str(rank) and m["host"] == "127.0.0.1", m
            assert m["job"] == "slotrun", m
            assert s["value"][1] == ("0" if rank == 3 else "1"), s
        exit3 = query('slotrun_rank_last_exit_code{rank="3"}')
        assert exit3 and exit3[0]["value"][1] == "0", exit3
        state = query('slotrun_job_state{slotrun_job_state="running"}')
        assert state and state[0]["value"][1] == "1", state
        up = query('up{job="slotrun"}')
        assert up and up[0]["value"][1] == "1", "the scrape itself succeeded"
    finally:
        prom.signal(signal.SIGTERM)
        prom.finish(60)
        p.signal(signal.SIGTERM)
        p.finish(30)


@case
def a_port_in_use_is_one_line_status_2_nothing_started():
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen(1)
    port = held.getsockname()[1]
    xdg = tempfile.mkdtemp(dir=TMP)
    try:
        code, out, err = run_cmd([SR, "--slots", "2", "--metrics-port", f"127.0.0.1:{port}", "--", "sh", "-c",
                                  "echo started"], environ=job_env({"XDG_RUNTIME_DIR": xdg}))
    finally:
        held.close()
    assert code == 2, (code, err)
    assert err == f"slotrun: --metrics-port 127.0.0.1:{port}: the port is in use: choose another\n".encode(), err
    assert out == b"", "nothing started"
    assert not os.listdir(xdg) or os.listdir(os.path.join(xdg, "slotrun")) == [], "no socket left"
    code, out, err = run_cmd([SR, "--slots", "1", "--metrics-port", "nope", "--", "true"], environ=job_env())
    assert code == 2 and err.startswith(b"slotrun: --metrics-port 'nope': expected a port"), err


if __name__ == "__main__":
    cleanup_at_exit(lambda: shutil.rmtree(TMP, ignore_errors=True))
    run()
