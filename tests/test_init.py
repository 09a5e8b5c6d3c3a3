"""`acceptance init`: a profile drafted from a live cluster (the API emulator), checked, never overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.clusters.base import NodeInfo
from acceptance.clusters.ssh.draft import HostAccess, draft_ssh_profile
from acceptance.profile import load_profile_file
from acceptance.sim.kubeapi import EmulatedApi
from tests.test_sim_support import make_runner


def _init(api: EmulatedApi, base: Path, *extra: str) -> int:
    return main(["init", "prod", "--kubeconfig", str(api.kubeconfig_path), "--namespace", "recovery-acceptance",
                 "--baselines-dir", str(base), *extra])  # fmt: skip


def test_the_profile_holds_what_the_cluster_says_and_passes_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with EmulatedApi(make_runner()) as api:
        assert _init(api, tmp_path) == 0
    out = capsys.readouterr().out
    assert "16 nodes x 8 GPUs; profile check passed" in out
    assert "note:" not in out, "the emulated cluster has everything the suite needs"
    profile = load_profile_file(tmp_path / "prod" / "cluster.yaml")
    assert profile.backend == "kube"
    assert profile.nodes == tuple(f"sim-node-{i:02d}" for i in range(1, 17))
    assert (profile.gpus_per_node, profile.gpu_product) == (8, "NVIDIA H200")
    assert profile.kube["rdma_resources"] == {"rdma/ib": 8}
    assert profile.kube["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert profile.kube["namespace"] == "recovery-acceptance"
    assert profile.margins.busbw_tolerance == 0.05
    assert profile.test_names[0] == "all_reduce_perf"
    text = (tmp_path / "prod" / "cluster.yaml").read_text()
    assert "  # driver 570.133.20, CUDA 12.8 today" in text, "today's versions are said; the baseline records them"


def test_an_existing_profile_is_never_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "prod").mkdir()
    (tmp_path / "prod" / "cluster.yaml").write_text("mine\n")
    with EmulatedApi(make_runner()) as api:
        assert _init(api, tmp_path) == 2
    assert "never overwrites" in capsys.readouterr().err
    assert (tmp_path / "prod" / "cluster.yaml").read_text() == "mine\n"


def test_what_is_missing_is_said_with_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with EmulatedApi(make_runner(["node-down@sim-node-04"]), mpi_operator=False) as api:
        assert _init(api, tmp_path, "--nodes", "acceptance.sim/leaf-group=leaf-01") == 0
    out = capsys.readouterr().out
    assert "8 nodes x 8 GPUs" in out
    assert "no Kubeflow MPI operator v2beta1 API" in out
    assert "kubectl apply --server-side -f https://raw.githubusercontent.com/kubeflow/mpi-operator/" in out
    assert "not Ready now (kept in the node set; preflight will fail until they are): sim-node-04" in out


def test_a_cluster_that_cannot_be_reached_or_has_no_gpu_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["init", "prod", "--kubeconfig", str(tmp_path / "none"), "--baselines-dir", str(tmp_path)])
    assert code == 2
    assert "cannot load Kubernetes credentials" in capsys.readouterr().err
    with EmulatedApi(make_runner()) as api:
        assert _init(api, tmp_path, "--nodes", "kubernetes.io/hostname=nowhere") == 2
    assert "no node with allocatable nvidia.com/gpu found (0 nodes listed) matching" in capsys.readouterr().err
    assert not (tmp_path / "prod").exists()


def test_the_gpu_count_most_hosts_have_is_drafted_and_the_others_are_named() -> None:
    def host(name: str, gpus: int) -> NodeInfo:
        return NodeInfo(name, True, False, {"Ready": "True"}, gpus, {"nvidia.com/gpu.product": "NVIDIA H200"}, "", "")

    infos = [host("n1", 4), host("n2", 8), host("n3", 8), host("n4", 2)]
    access = HostAccess({i.name: f"10.0.0.{k}" for k, i in enumerate(infos, 1)})
    text, notes = draft_ssh_profile("rack", access, infos)
    assert "  gpus_per_node: 8\n" in text
    assert "most hosts have 8 GPUs, these differ: n1 (4), n4 (2)" in notes
    with pytest.raises(ValueError, match="no GPU listed by nvidia-smi on n1, n2"):
        draft_ssh_profile("rack", access, [host("n1", 0), host("n2", 0)])
