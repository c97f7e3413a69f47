# SPDX-License-Identifier: MIT
"""slotrun where users run it: a Determined trial's info files, Kubeflow's
PyTorchJob environment (torchrun's PET_* form, the chief's address alone),
a Kubernetes Indexed Job, torchrun's own command line, and a PyTorch DDP
training script.  Multi-node cases run one slotrun per node of a
netns.Cluster (three nodes, 10.213.0.1-3 on one bridge), every node with the
same SLOTRUN_JOB_SECRET.  (Slurm and ssh have files of their own:
test_slurm.py, test_ssh.py.)"""
import json
import os
import re
import shutil
import tempfile

from harness import Skip, case, run, run_cmd
from jobs import SR, SYSTEM_PY, clean_env, job_on, need_torch

HERE = os.path.dirname(os.path.abspath(__file__))
DDP_TRAIN = os.path.join(HERE, "..", "..", "examples", "pytorch", "ddp_train.py")

SECRET = "clusters-e2e-secret"
FAST = ["--join-timeout", "20", "--heartbeat-timeout", "2", "--grace", "1"]
SHOW_ENV = ["sh", "-c", "echo rank $RANK of $WORLD_SIZE node $NODE_RANK/$GROUP_WORLD_SIZE local $LOCAL_RANK "
            "master $MASTER_ADDR:$MASTER_PORT"]


def node_env(extra=None):
    return clean_env(dict({"SLOTRUN_JOB_SECRET": SECRET}, **(extra or {})))


def three_nodes(tag):
    return job_on(3, tag)


def said(job, node, rank, text):
    return f"[rank={rank}] {text}\n".encode() in job.out(node)


def assert_env_of_every_rank(job, slots, port):
    for i in range(3):
        for local in range(slots):
            r = i * slots + local
            want = (f"rank {r} of {3 * slots} node {i}/3 local {local} master {job.cl.addr(0)}:{port}")
            assert said(job, i, r, want), f"rank {r}: {want!r}\n" + job.describe()


@case
def determined_info_files_run_nccl_worker_across_three_nodes():
    nw = os.environ.get("NCCL_WORKER_BIN")
    if not nw:
        raise Skip("NCCL_WORKER_BIN not set")
    with three_nodes("det") as job:
        for i in range(3):
            info = os.path.join(job.dir, f"info{i}")
            os.mkdir(info)
            with open(os.path.join(info, "rendezvous.json"), "w") as f:
                json.dump({"container_addrs": job.cl.addrs, "container_rank": i,
                           "container_slot_counts": [2, 2, 2]}, f)
            with open(os.path.join(info, "cluster.json"), "w") as f:
                json.dump({"slot_ids": [0, 1]}, f)
            job.spawn(i, [*FAST, "--", nw, "--backend", "cpu", "-b", "4", "-e", "64K"],
                      node_env({"SLOTRUN_DET_INFO_DIR": info, "DET_SLOT_IDS": "[0,1]", "C10D_PORT": "29517",
                                "DET_INTER_NODE_NETWORK_INTERFACE": "eth0", "SLOTRUN_TIMEOUT": "60"}))
        job.expect_exit([0, 0, 0], timeout=120)
        out = job.out(0).decode(errors="replace")
        assert "# ranks 6," in out, out[:3000]
        for a in job.cl.addrs:   # each node's two ranks on its own bridge address
            assert out.count(f"data plane {a}:") == 2, out[:3000]
        rows = [l.split() for l in out.splitlines() if re.match(r"\[rank=0\] +\d", l)]
        assert [int(r[1]) for r in rows] == [4 << k for k in range(15)], rows   # 4 B .. 64 KiB
        assert all(r[-1] == "0" for r in rows), rows
        job.assert_nothing_left()


def pytorchjob_env(cl, i, nproc="2"):
    """What Kubeflow's training operator sets in pod i of a PyTorchJob (one
    master, two workers): torchrun's PET_* form, and MASTER_ADDR, RANK and
    WORLD_SIZE with a per-pod meaning that slotrun must not take."""
    return node_env({"PET_NNODES": "3", "PET_NODE_RANK": str(i), "PET_NPROC_PER_NODE": nproc,
                     "PET_MASTER_ADDR": cl.addr(0), "PET_MASTER_PORT": "23456",
                     "MASTER_ADDR": cl.addr(0), "MASTER_PORT": "23456", "RANK": str(i), "WORLD_SIZE": "6",
                     "PYTHONUNBUFFERED": "0"})


@case
def kubeflow_pytorchjob_env_with_the_chief_address_alone():
    with three_nodes("kf") as job:
        for i in range(3):
            job.spawn(i, [*FAST, "--", *SHOW_ENV], pytorchjob_env(job.cl, i))
        job.expect_exit([0, 0, 0], timeout=40)
        assert_env_of_every_rank(job, 2, 23456)
        job.assert_nothing_left()
    # a failure on node 2, whose address no variable gives: every node names
    # it by the address it joined from
    with three_nodes("kffail") as job:
        for i in range(3):
            job.spawn(i, [*FAST, "--", "sh", "-c", '[ "$RANK" = 5 ] && { echo bad batch >&2; exit 4; }; '
                          "exec sleep 60"], pytorchjob_env(job.cl, i))
        job.expect_exit([4, 4, 4], timeout=40)
        job.assert_err_everywhere(f"job failed: rank 5 on node 2 ({job.cl.addr(2)}) exit 4")
        job.assert_err_everywhere("[rank=5] bad batch")
        job.assert_nothing_left()


@case
def kubeflow_node_that_never_comes_is_named_without_an_address():
    with three_nodes("kfgone") as job:
        for i in (0, 1):
            job.spawn(i, ["--join-timeout", "3", "--", "true"], pytorchjob_env(job.cl, i))
        job.expect_exit([2, 2], timeout=30)
        job.assert_err_everywhere("node 2 (?) did not join within 3 s", nodes=[0, 1])
        job.assert_nothing_left()


@case
def indexed_job_index_with_a_hostlist_of_addresses():
    with three_nodes("idx") as job:
        for i in range(3):
            job.spawn(i, [*FAST, "--", *SHOW_ENV],
                      node_env({"JOB_COMPLETION_INDEX": str(i), "SLOTRUN_ADDRS": "10.213.0.[1-3]",
                                "SLOTRUN_SLOTS": "1"}))
        job.expect_exit([0, 0, 0], timeout=40)
        assert_env_of_every_rank(job, 1, 29400)
        job.assert_nothing_left()


def write_script(d):
    """d/show.py, which says how it was run."""
    path = os.path.join(d, "show.py")
    with open(path, "w") as f:
        f.write("import os, sys\n"
                "print('python', os.path.basename(sys.executable).startswith('python'), 'rank', os.environ['RANK'],"
                " 'of', os.environ['WORLD_SIZE'], 'master', os.environ['MASTER_ADDR'] + ':' +"
                " os.environ['MASTER_PORT'], 'args', *sys.argv[1:])\n")
    return path


@case
def torchrun_command_line_dry_run():
    d = tempfile.mkdtemp()
    try:
        script = write_script(d)
        for spelling in (["--nproc-per-node", "2", "--node-rank", "1", "--master-addr", "10.9.0.1",
                          "--master-port", "29555"],
                         ["--nproc_per_node=2", "--node_rank=1", "--master_addr=10.9.0.1", "--master_port=29555"]):
            code, out, err = run_cmd([SR, "--nnodes", "2", *spelling, "--iface", "lo", "--dry-run", script, "--lr",
                                      "0.1"], environ=clean_env())
            assert code == 0, (spelling, err)
            rows = [json.loads(l) for l in out.decode().splitlines()]
            assert [r["rank"] for r in rows] == [2, 3], rows
            e = rows[0]["env"]
            assert (e["WORLD_SIZE"], e["MASTER_ADDR"], e["MASTER_PORT"], e["NODE_RANK"]) == \
                ("4", "10.9.0.1", "29555", "1"), e
            assert rows[0]["command"] == ["python3", script, "--lr", "0.1"], rows[0]
        code, out, err = run_cmd([SR, "--no-python", "--dry-run", script], environ=clean_env())
        assert code == 0 and json.loads(out)["command"] == [script], (out, err)
        # auto is the default count: one CPU slot here, unless GPUs are visible
        code, out, err = run_cmd([SR, "--nproc-per-node", "auto", "--bind", "none", "--dry-run", script],
                                 environ=clean_env({"CUDA_VISIBLE_DEVICES": ""}))
        assert code == 0 and len(out.splitlines()) == 1, (out, err)
    finally:
        shutil.rmtree(d)


@case
def torchrun_command_line_across_two_nodes():
    with job_on(2, "trun") as job:
        script = write_script(job.dir)
        for i in range(2):
            job.spawn(i, ["--nnodes=2", f"--node_rank={i}", f"--master_addr={job.cl.addr(0)}", "--master_port=29555",
                          "--nproc_per_node=2", *FAST, script, "x", "y"], node_env())
        job.expect_exit([0, 0], timeout=40)
        for r in range(4):
            want = f"python True rank {r} of 4 master {job.cl.addr(0)}:29555 args x y"
            assert said(job, r // 2, r, want), f"rank {r}\n" + job.describe()
        job.assert_nothing_left()


@case
def pytorch_ddp_training_on_one_node():
    need_torch()
    code, out, err = run_cmd([SR, "--slots", "2", "--", SYSTEM_PY, DDP_TRAIN, "--epochs", "4"],
                             environ=clean_env({"SLOTRUN_JOB_SECRET": SECRET}), timeout=240)
    assert code == 0, (code, out[-2000:], err[-2000:])
    text = out.decode(errors="replace")
    digests = {int(m.group(1)): m.group(2) for m in
               re.finditer(r"^\[rank=(\d)\] parameters sha256 ([0-9a-f]{64})$", text, re.M)}
    assert sorted(digests) == [0, 1] and len(set(digests.values())) == 1, text
    losses = [float(x) for x in re.findall(r"^\[rank=0\] epoch \d loss ([0-9.]+)$", text, re.M)]
    assert len(losses) == 4 and losses[-1] < losses[0] / 10, losses
    assert "[rank=1] epoch" not in text, "only the chief reports"


run()
