"""`acceptance init --slurm`: a Slurm profile drafted from a live controller (a real slurmctld and slurmd)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.clusters.slurm.simulated import SimulatedSlurmCluster
from acceptance.profile import load_profile_file
from acceptance.sim.model.faultspec import SimFaults
from tests.slurm_support import NEEDS_SLURM, settled_jobs, sim_slurm_profile


def test_slurm_options_without_slurm_or_slurm_without_a_partition_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "hpc", "--partition", "gpu", "--baselines-dir", str(tmp_path)]) == 2
    assert "--partition: for a Slurm profile; add --slurm" in capsys.readouterr().err
    assert main(["init", "hpc", "--slurm", "--baselines-dir", str(tmp_path)]) == 2
    assert "--slurm needs --partition P" in capsys.readouterr().err
    assert main(["init", "hpc", "--slurm", "--partition", "gpu", "--hosts", "a,b", "--baselines-dir",
                 str(tmp_path)]) == 2  # fmt: skip
    assert "--slurm drafts a Slurm profile" in capsys.readouterr().err
    assert not (tmp_path / "hpc").exists()


def test_a_draft_whose_inventory_step_failed_leaves_the_gpu_product_out_and_says_why() -> None:
    from acceptance.clusters.slurm.draft import SlurmAccess, SlurmFacts, draft_slurm_profile
    from acceptance.tools import slurm as tools

    line = "NodeName=gpu-01 Gres=gpu:h100:8 State=IDLE Partitions=gpu,debug\nNodeName=gpu-02 Gres=gpu:h100:4 " \
           "State=IDLE Partitions=gpu\n"  # fmt: skip
    nodes = tools.parse_nodes(line, "scontrol").nodes
    facts = SlurmFacts("slurm 23.11.4", "login node login01", nodes, {}, "srun: error: Unable to allocate resources")
    text, notes = draft_slurm_profile("hpc", SlurmAccess("gpu", login="login01"), facts)
    assert "gpu_product" not in text
    assert "  login: login01\n" in text
    assert notes == (
        "most nodes of partition gpu offer 8 GPUs, these differ: gpu-02 (4)",
        "the inventory step (srun on the usable nodes) gave no GPU facts, so gpu_product is left out: srun: error: "
        "Unable to allocate resources",
    )
    with pytest.raises(ValueError, match="no node of partition gpu offers GPUs as gres"):
        draft_slurm_profile("hpc", SlurmAccess("gpu"), SlurmFacts("slurm", "here", tools.parse_nodes(
            "NodeName=cpu-01 State=IDLE Partitions=gpu\n", "scontrol").nodes))  # fmt: skip


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedSlurmCluster]:
    base = tmp_path_factory.mktemp("init-slurm")
    profile = load_profile_file(sim_slurm_profile(base, nodes=3) / "cluster.yaml")
    cluster = SimulatedSlurmCluster.start(profile, "ra-20261202T0000-init", SimFaults())
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def site(sim: SimulatedSlurmCluster, monkeypatch: pytest.MonkeyPatch) -> SimulatedSlurmCluster:
    """This process's environment as a login node's: Slurm's commands find the simulated controller."""
    for key in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("SLURM_CONF", sim.env["SLURM_CONF"])
    monkeypatch.setenv("PATH", f"{sim.env['PATH']}:{os.environ['PATH']}")
    return sim


def _queue(sim: SimulatedSlurmCluster) -> str:
    """squeue's jobs (id, name, comment), those still COMPLETING waited out (`settled_jobs`)."""
    return "".join(f"{job.job_id} {job.name} {job.comment}\n" for job in settled_jobs(sim.transport))


@NEEDS_SLURM
@pytest.mark.slow
def test_the_profile_holds_what_the_controller_and_the_nodes_say_and_passes_the_check(
    site: SimulatedSlurmCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert site.slurm is not None
    site.slurm.drain("sim-node-03", "init test: bad DIMM")
    try:
        code = main(["init", "hpc", "--slurm", "--partition", "sim", "--account", "acct-ml", "--run-dir",
                     str(tmp_path / "runs"), "--baselines-dir", str(tmp_path)])  # fmt: skip
    finally:
        site.slurm.resume("sim-node-03")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "3 nodes x 8 GPUs; profile check passed" in captured.out
    assert "note: not usable now (kept in the node set; preflight will fail until fixed): sim-node-03: " in captured.out
    assert "Reason=init test: bad DIMM (set by root at " in captured.out
    profile = load_profile_file(tmp_path / "hpc" / "cluster.yaml")
    assert profile.backend == "slurm"
    assert profile.nodes == ("sim-node-01", "sim-node-02", "sim-node-03")
    assert (profile.gpus_per_node, profile.gpu_product) == (8, "NVIDIA H200"), "from the inventory step's nvidia-smi"
    assert profile.slurm is not None
    assert (profile.slurm.partition, profile.slurm.account, profile.slurm.login) == ("sim", "acct-ml", None)
    assert (profile.slurm.launch, profile.slurm.run_dir) == ("srun", str(tmp_path / "runs"))
    text = (tmp_path / "hpc" / "cluster.yaml").read_text()
    assert "  # driver 570.133.20, CUDA 12.8 today" in text
    assert "partition\n# sim: 3 nodes, 2 of them answered the inventory step (gres gpu types: h200)." in text
    assert "ra-init-" not in _queue(site), "the inventory step's job is gone"


@NEEDS_SLURM
@pytest.mark.slow
def test_a_partition_the_controller_does_not_have_stops_the_draft_naming_those_it_has(
    site: SimulatedSlurmCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "hpc", "--slurm", "--partition", "gpu-a100", "--baselines-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "partition 'gpu-a100' has no node on the Slurm cluster of this machine (its partitions: sim)" in err
    assert "Traceback" not in err
    assert not (tmp_path / "hpc").exists()


@NEEDS_SLURM
@pytest.mark.slow
def test_a_controller_that_does_not_answer_stops_the_draft_with_the_command_and_its_output(
    site: SimulatedSlurmCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = Path(site.env["SLURM_CONF"]).read_text()
    port = next(line for line in conf.splitlines() if line.startswith("SlurmctldPort="))
    (tmp_path / "slurm.conf").write_text(conf.replace(port, "SlurmctldPort=9"))
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "slurm.conf"))
    assert main(["init", "hpc", "--slurm", "--partition", "sim", "--baselines-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "the Slurm controller does not answer on this machine: `scontrol -o show node` exited 1: " in err
    assert "Unable to contact slurm controller" in err
    assert not (tmp_path / "hpc").exists()
