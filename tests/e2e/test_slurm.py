# SPDX-License-Identifier: MIT
"""slotrun under a real Slurm: a single-node cluster (Debian's slurm-wlm and
munge) made for this test and torn down on every way out.

Everything lives in one temporary folder: munge's key, socket and seed,
slurm.conf (free ports on 127.0.0.1, its own state and spool folders, no
accounting, proctrack/linuxproc), and the daemons' logs.  The node is
"localhost" with two "GPUs" backed by /dev/null and /dev/zero (Slurm's gres
only needs device files), so the number of workers too comes from Slurm
(SLURM_STEP_GPUS).  Clients find it through SLURM_CONF.

Teardown kills, by pid, the daemons and every process whose environment
names this cluster's slurm.conf (slurmstepd and what it started), on close,
at exit and on SIGTERM/SIGINT (harness.cleanup_at_exit).  Skips only where Slurm cannot run at all:
not root, or slurm-wlm/munge not installed."""
import os
import shutil
import subprocess
import tempfile
import uuid

from harness import Proc, Skip, case, cleanup_at_exit, free_ports, kill_pids, pid_alive, run, wait_for
from jobs import SR, clean_env

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "slurm", "slotrun.sbatch")
DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "scancel", "sinfo")


def pids_with_env(entry):
    """Processes whose environment holds the string NAME=VALUE."""
    want = entry.encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if want in f.read().split(b"\0"):
                    found.append(int(d))
        except OSError:
            pass
    return [p for p in found if pid_alive(p)]


class Slurm:
    """A one-node Slurm cluster in a temporary folder."""

    def __init__(self):
        if os.geteuid() != 0:
            raise Skip("a private Slurm needs root (slurmd runs jobs as root here)")
        missing = [d for d in DAEMONS if not shutil.which(d)]
        if missing:
            raise Skip(f"Slurm is not installed (Debian: slurm-wlm munge): no {', '.join(missing)}")
        self.dir = tempfile.mkdtemp(prefix="slotrun-slurm-")
        self.procs = []
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.closed = False
        cleanup_at_exit(_close_all)
        _live.append(self)
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def path(self, name):
        return os.path.join(self.dir, name)

    def _daemon(self, argv, log):
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(self.path(log), "wb"),
                             stderr=subprocess.STDOUT, env=self.env())
        self.procs.append(p)
        return p

    def logs(self):
        out = []
        for name in ("munged.out", "slurmctld.out", "slurmd.out"):
            try:
                with open(self.path(name), errors="replace") as f:
                    out.append(f"--- {name}:\n" + "".join(f.readlines()[-15:]))
            except OSError:
                pass
        return "\n".join(out)

    def _start(self):
        os.chmod(self.dir, 0o755)      # munged wants its socket's folders searchable
        for d in ("state", "spool"):
            os.mkdir(self.path(d))
        with open(self.path("munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(self.path("munge.key"), 0o400)
        sock = self.path("munge.sock")
        munged = self._daemon(["munged", "-F", f"--socket={sock}", f"--key-file={self.path('munge.key')}",
                               f"--pid-file={self.path('munged.pid')}", f"--log-file={self.path('munged.log')}",
                               f"--seed-file={self.path('munged.seed')}"], "munged.out")
        self._wait(lambda: os.path.exists(sock), [munged], "munged's socket")
        ctld_port, d_port = free_ports(2)
        cpus = len(os.sched_getaffinity(0))
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=slotrun
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={self.path('state')}
SlurmdSpoolDir={self.path('spool')}
SlurmctldPidFile={self.path('slurmctld.pid')}
SlurmdPidFile={self.path('slurmd.pid')}
SlurmctldLogFile={self.path('slurmctld.log')}
SlurmdLogFile={self.path('slurmd.log')}
PlugStackConfig={self.path('plugstack.conf')}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=2
MinJobAge=2
GresTypes=gpu
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
""")
        with open(self.path("gres.conf"), "w") as f:
            f.write("NodeName=localhost Name=gpu File=/dev/null\nNodeName=localhost Name=gpu File=/dev/zero\n")
        open(self.path("plugstack.conf"), "w").close()
        ctld = self._daemon(["slurmctld", "-D", "-c", "-f", self.conf], "slurmctld.out")
        slurmd = self._daemon(["slurmd", "-D", "-N", "localhost", "-f", self.conf], "slurmd.out")

        def idle():
            r = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env(), capture_output=True, timeout=10)
            return r.returncode == 0 and r.stdout.strip() == b"idle"
        self._wait(idle, [munged, ctld, slurmd], "the node to be idle in sinfo")

    def _wait(self, cond, daemons, what, timeout=30):
        def ready():
            dead = [p.args[0] for p in daemons if p.poll() is not None]
            if dead:
                raise AssertionError(f"{', '.join(dead)} exited while waiting for {what}:\n{self.logs()}")
            return cond()
        try:
            wait_for(ready, timeout, what)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.logs()}") from None

    def env(self, extra=None):
        """Our environment, without a scheduler's or slotrun's variables,
        pointing at this cluster; build/ first on PATH for the examples."""
        e = clean_env({"SLURM_CONF": self.conf})
        e["PATH"] = os.path.dirname(SR) + os.pathsep + e.get("PATH", "")
        e.update(extra or {})
        return e

    def run(self, argv, extra=None, timeout=30):
        p = Proc(argv, environ=self.env(extra), cwd=self.dir)
        code = p.finish(timeout)
        return code, p.out.decode(errors="replace"), p.err.decode(errors="replace")

    def ours(self):
        return pids_with_env(f"SLURM_CONF={self.conf}")

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            if os.path.exists(self.conf):
                subprocess.run(["scancel", "--full", "--quiet", "--user", "root"], env=self.env(),
                               capture_output=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            pass
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass
        # slurmstepd daemonizes: it and what it started carry our SLURM_CONF
        for _ in range(3):
            left = self.ours()
            if not left:
                break
            kill_pids(left)
            try:
                wait_for(lambda: not any(pid_alive(x) for x in left), 5, "leftovers to die")
            except AssertionError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
        if self in _live:
            _live.remove(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


_live = []


def _close_all():
    for s in list(_live):
        s.close()


_cluster = None
_cluster_error = None


def cluster():
    """One cluster for every case (starting one takes seconds); a cluster
    that could not start fails (or skips) every case the same way."""
    global _cluster, _cluster_error
    if _cluster_error:
        raise _cluster_error
    if _cluster is None:
        try:
            _cluster = Slurm()
        except (Skip, AssertionError) as e:
            _cluster_error = e
            raise
    return _cluster


def ranks_said(out, text_of_rank):
    return all(f"[rank={r}] {t}" in out for r, t in text_of_rank.items())


@case
def srun_ranks_and_world_size_come_from_slurm_alone():
    sl = cluster()
    code, out, err = sl.run(["srun", "--nodes=1", "--ntasks=1", "--gres=gpu:2", SR, "--", "sh", "-c",
                             "echo rank $RANK of $WORLD_SIZE local $LOCAL_RANK node $NODE_RANK/$GROUP_WORLD_SIZE "
                             "at $MASTER_ADDR gpu $CUDA_VISIBLE_DEVICES"])
    assert code == 0, (code, out, err)
    assert ranks_said(out, {r: f"rank {r} of 2 local {r} node 0/1 at localhost gpu {r}" for r in range(2)}), out
    # with one GPU the step has one worker
    code, out, err = sl.run(["srun", "--gres=gpu:1", SR, "--", "sh", "-c", "echo $RANK/$WORLD_SIZE"])
    assert code == 0 and out == "[rank=0] 0/1\n", (code, out, err)


@case
def srun_reports_a_failed_ranks_exit_code():
    sl = cluster()
    code, out, err = sl.run(["srun", "--gres=gpu:2", SR, "--grace", "1", "--", "sh", "-c",
                             '[ "$RANK" = 1 ] && { echo bad batch >&2; exit 3; }; exec sleep 30'])
    assert code == 3, (code, out, err)
    assert "job failed: rank 1 (node 0, local rank 1" in err and "[rank=1] bad batch" in err, err


@case
def sbatch_reports_a_failed_ranks_exit_code():
    sl = cluster()
    code, out, err = sl.run(["sbatch", "--wait", "--gres=gpu:2", "-o", "job.out", "--wrap",
                             f"srun {SR} --grace 1 -- sh -c '[ $RANK = 0 ] && exit 3; exec sleep 30'"])
    with open(sl.path("job.out"), errors="replace") as f:
        job_out = f.read()
    assert code == 3, (code, out, err, job_out)
    assert "job failed: rank 0 (node 0, local rank 0" in job_out, job_out


@case
def more_tasks_than_nodes_is_refused_by_every_task():
    sl = cluster()
    marker = sl.path("started")
    code, out, err = sl.run(["srun", "--ntasks=2", SR, "--", "touch", marker])
    assert code == 2, (code, out, err)
    line = "slotrun: Slurm started 2 tasks on 1 node (SLURM_STEP_NUM_TASKS '2', SLURM_STEP_NUM_NODES '1')"
    assert err.count(line) == 2, err
    assert "srun --ntasks-per-node=1" in err, err
    assert not os.path.exists(marker), "a worker started"


@case
def scancel_leaves_no_process_behind():
    sl = cluster()
    tag = uuid.uuid4().hex
    pids = sl.path("pids")
    os.mkdir(pids)
    # rank 1 ignores SIGTERM and leaves a setsid'd grandchild behind
    script = (f'echo $$ > {pids}/$RANK; if [ "$RANK" = 1 ]; then trap "" TERM; '
              f'setsid sh -c "echo \\$\\$ > {pids}/stray; exec sleep 300" </dev/null >/dev/null 2>&1 & fi; '
              'exec sleep 300')
    code, out, err = sl.run(["sbatch", "--parsable", "--gres=gpu:2", "-o", "cancel.out", "--wrap",
                             f"srun {SR} --grace 1 -- sh -c '{script}'"], extra={"SLOTRUN_CASE": tag})
    assert code == 0, (code, out, err)
    job = out.strip().split(";")[0]
    wait_for(lambda: sorted(os.listdir(pids)) == ["0", "1", "stray"], 30, "both ranks and the stray to start")
    started = [int(open(os.path.join(pids, n)).read()) for n in os.listdir(pids)]
    assert all(pid_alive(p) for p in started)
    assert pids_with_env(f"SLOTRUN_CASE={tag}"), "the job's processes carry the tag"
    code, out, err = sl.run(["scancel", job])
    assert code == 0, (code, out, err)
    try:
        wait_for(lambda: not pids_with_env(f"SLOTRUN_CASE={tag}"), 20, "every process of the job to end")
    except AssertionError:
        left = pids_with_env(f"SLOTRUN_CASE={tag}")
        cmds = {p: open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ") for p in left if pid_alive(p)}
        kill_pids(left)
        raise AssertionError(f"processes left after scancel: {cmds}") from None
    assert not any(pid_alive(p) for p in started), started


@case
def the_example_sbatch_script_runs_a_job():
    sl = cluster()
    # the example asks for 4 nodes of 8 GPUs: the command line makes it fit here
    code, out, err = sl.run(["sbatch", "--wait", "--nodes=1", "--gres=gpu:2", "-o", "example.out", EXAMPLE,
                             "sh", "-c", 'echo "rank $RANK of $WORLD_SIZE, secret ${#SLOTRUN_JOB_SECRET} chars"'])
    with open(sl.path("example.out"), errors="replace") as f:
        job_out = f.read()
    assert code == 0, (code, out, err, job_out)
    assert ranks_said(job_out, {r: f"rank {r} of 2, secret 32 chars" for r in range(2)}), job_out
    code, out, err = sl.run(["sbatch", "--wait", "--nodes=1", "--gres=gpu:1", "-o", "example2.out", EXAMPLE,
                             "sh", "-c", "exit 7"])
    assert code == 7, (code, out, err)


try:
    run()
finally:
    _close_all()
