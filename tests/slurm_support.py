"""Helpers of the Slurm backend's end-to-end tests: a smaller ``sim-slurm`` profile, and the queue of a run."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import yaml

from acceptance.clusters.slurm.transport import Transport
from acceptance.sim.slurm.daemons import missing
from acceptance.tools import slurm as tools
from tests.ssh_support import ROOT, scenario_file
from tests.suite_run import copy_agreement

INSTALL = "apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge"
NEEDS_SLURM = pytest.mark.skipif(bool(missing()), reason=f"needs a real Slurm ({', '.join(missing())}): {INSTALL}")


def sim_slurm_profile(base: Path, nodes: int = 4, tests: Sequence[str] = ("all_reduce_perf",),
                      time_scale: float = 0.002) -> Path:  # fmt: skip
    """baselines/sim-slurm/cluster.yaml like the shipped one, smaller: each run starts its own Slurm."""
    data = yaml.safe_load((ROOT / "baselines" / "sim-slurm" / "cluster.yaml").read_text())
    names = [f"sim-node-{i:02d}" for i in range(1, nodes + 1)]
    data["nodes"]["names"] = names
    half = max(1, nodes // 2)
    leaves = {f"leaf-{i // half + 1:02d}": names[i : i + half] for i in range(0, nodes, half)}
    data["localize"]["topology"] = {"leaves": leaves, "spines": {"spine-01": list(leaves)}}
    data["nccl"]["tests"] = [t for t in data["nccl"]["tests"] if t["name"] in tests]
    data["nccl"]["timeout"] = "3m"
    data["dcgm"]["timeout"] = "5m"
    data["smoke"]["timeout"] = "3m"
    data["sim"] = {"scenario": str(scenario_file(base, nodes)), "seed": 20261129, "time_scale": time_scale}
    folder = base / "baselines" / "sim-slurm"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cluster.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    copy_agreement(folder, with_baseline=False, shipped_cluster="sim-ssh")  # allowed_signers: the demo key
    return folder


def run_ids(report: Path) -> set[str]:
    """The run ids a suite run's evidence names (its Slurm job manifests)."""
    found = set()
    for path in (report / "manifests").rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "SlurmJob":
                found.add(str(doc["run_id"]))
    return found


def queue_json(slurm_conf: str) -> list[dict[str, object]]:
    out = subprocess.run(["squeue", "--json"], env={"SLURM_CONF": slurm_conf, "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True, timeout=30).stdout  # fmt: skip
    jobs: list[dict[str, object]] = json.loads(out).get("jobs", [])
    return jobs


def squeue_jobs(transport: Transport) -> list[tools.Job]:
    """Every job squeue lists now, through the backend's transport."""
    answer = transport.run("squeue --noheader --all --format='" + tools.JOB_FORMAT + "'", 30)
    assert answer.ok, answer.said()
    return list(tools.jobs(tools.parse_squeue(answer.stdout, tools.JOB_FORMAT))) if answer.stdout.strip() else []


def settled_jobs(transport: Transport, keep: Callable[[tools.Job], bool] = lambda job: True,
                 settle_s: float = 30.0) -> list[tools.Job]:  # fmt: skip
    """squeue's jobs that `keep` accepts. A job that ended shows as COMPLETING while Slurm finishes it (seconds
    on a loaded machine): while every job left is COMPLETING they are waited out, up to `settle_s`."""
    deadline = time.monotonic() + settle_s
    while True:
        jobs = [job for job in squeue_jobs(transport) if keep(job)]
        if not jobs or any(job.state != "COMPLETING" for job in jobs) or time.monotonic() > deadline:
            return jobs
        time.sleep(0.2)
