"""``acceptance bundle --job JOBID`` on Slurm: the job's nodes, steps, states and the nodes' Reasons become the
node evidence, asked of the backend (`SchedulerJobs`), end to end against the simulated Slurm; the job's
suspects join the affected nodes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from acceptance.cli import main
from acceptance.clusters.base import JobStepState, SchedulerJob, SchedulerJobs
from acceptance.clusters.slurm.cluster import SlurmCluster
from acceptance.cmd import bundle_sources as src
from acceptance.incident.assemble import Findings
from acceptance.incident.model import AffectedNode, Evidence
from acceptance.sim.slurm.daemons import SimSlurm
from tests.slurm_support import NEEDS_SLURM, sim_slurm_profile

JOB = SchedulerJob("42", "train", "RUNNING", "None", "0:0", ("gpu01", "gpu02"), "gpu01",
                   (JobStepState("0", "python", "RUNNING", "", ("gpu01", "gpu02")),),
                   {"gpu01": "Slurm state ALLOCATED", "gpu02": "Slurm state MIXED+DRAIN: Reason=Xid 79"},
                   {"gpu02": "Slurm state MIXED+DRAIN: Reason=Xid 79"})  # fmt: skip


def test_the_slurm_backend_offers_scheduler_jobs() -> None:
    assert issubclass(SlurmCluster, SchedulerJobs)


def test_a_scheduler_job_s_suspect_joins_the_affected_nodes_with_the_scheduler_s_words() -> None:
    other = AffectedNode("gpu09", (Evidence("train.log", 3, "rank 7: NCCL error"),))
    found = Findings(None, None, None, (other,), ())  # type: ignore[arg-type]
    out = src.with_job_suspects(found, JOB)
    assert [a.node for a in out.affected] == ["gpu09", "gpu02"]
    assert out.affected[1].reasons == (Evidence("slurm job 42", None, "gpu02: Slurm state MIXED+DRAIN: Reason=Xid 79"),)
    assert src.with_job_suspects(found, None) is found
    events = JOB.node_events()
    assert [(e.reason, e.message) for e in events["gpu02"]] == [
        ("SlurmNodeState", "Slurm state MIXED+DRAIN: Reason=Xid 79"),
        ("SlurmJob", "job 42 (train) RUNNING, exit 0:0"),
        ("SlurmJobStep", "step 0 (python) RUNNING"),
        ("SlurmSuspect", "Slurm state MIXED+DRAIN: Reason=Xid 79"),
    ]


def _real_slurm_profile(base: Path) -> Path:
    """The sim-slurm profile without its sim section: a real Slurm profile whose commands reach the Slurm that
    SLURM_CONF names (the test's own)."""
    folder = sim_slurm_profile(base, nodes=3)
    data = yaml.safe_load((folder / "cluster.yaml").read_text())
    data.pop("sim")
    data["slurm"] = {"partition": "sim", "run_dir": str(base / "runs")}
    (folder / "cluster.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


@pytest.fixture(scope="module")
def slurm_(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimSlurm]:
    with SimSlurm.start(["sim-node-01", "sim-node-02", "sim-node-03"], cpus_per_node=8) as running:
        yield running


@NEEDS_SLURM
@pytest.mark.slow
def test_bundle_job_on_slurm_reads_the_job_s_nodes_steps_states_and_reasons(
    slurm_: SimSlurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _real_slurm_profile(tmp_path)
    out = tmp_path / "out.txt"
    script = "#!/bin/bash\necho 'step 1 loss 2.5'\nsrun --nodes=2 --ntasks=2 sleep 300\n"
    job = slurm_.run(["sbatch", "--parsable", "--nodelist=sim-node-01,sim-node-02", "--nodes=2", "--time=5",
                      f"--output={out}", f"--chdir={tmp_path}"], input=script).stdout.strip()  # fmt: skip
    slurm_.wait_nodes(lambda n: n.state.base in ("ALLOCATED", "MIXED"), 30, "the job running",
                      ["sim-node-01", "sim-node-02"])  # fmt: skip
    slurm_.drain("sim-node-02", "test: Xid 79 seen by the health check")
    monkeypatch.setenv("SLURM_CONF", str(slurm_.layout.conf))
    bundle = tmp_path / "bundle"
    try:
        argv = ["bundle", "--cluster", "sim-slurm", "--baselines-dir", str(folder.parent), "--no-sign",
                "--job", job, "--out", str(bundle), "--reports-dir", str(tmp_path / "reports")]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr()
    finally:
        slurm_.run(["scancel", job], check=False)
        slurm_.resume("sim-node-02")
    record = json.loads((bundle / "evidence" / "cluster" / "slurm-job.json").read_text())
    assert record["job_id"] == job
    assert record["state"] == "RUNNING"
    assert record["nodes"] == ["sim-node-01", "sim-node-02"]
    assert record["batch_host"] == "sim-node-01"
    assert [(s["step"], s["state"], s["nodes"]) for s in record["steps"]] == [
        ("batch", "RUNNING", ["sim-node-01"]), ("0", "RUNNING", ["sim-node-01", "sim-node-02"])]  # fmt: skip
    assert "Reason=test: Xid 79 seen by the health check (set by root at " in record["node_states"]["sim-node-02"]
    assert list(record["bad_nodes"]) == ["sim-node-02"]
    assert "sacct answers" in " ".join(record["notes"])  # no slurmdbd here: ended steps are not known
    document = json.loads((bundle / "bundle.json").read_text())
    text = json.dumps(document)
    assert f"slurm job {job}" in text
    assert "SlurmSuspect" in text
    inputs = "".join(p.read_text() for p in (bundle / "evidence" / "inputs").iterdir())
    assert "step 1 loss 2.5" in inputs  # the job's output file, read where the commands run


@NEEDS_SLURM
@pytest.mark.slow
def test_an_unknown_job_id_is_a_usage_error_naming_scontrol_s_answer(
    slurm_: SimSlurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _real_slurm_profile(tmp_path)
    monkeypatch.setenv("SLURM_CONF", str(slurm_.layout.conf))
    argv = ["bundle", "--cluster", "sim-slurm", "--baselines-dir", str(folder.parent), "--no-sign", "--job", "999999",
            "--out", str(tmp_path / "b")]  # fmt: skip
    assert main(argv) == 2
    assert "--job 999999: Slurm does not know the job (scontrol: " in capsys.readouterr().err
