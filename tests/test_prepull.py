"""Pre-pulling the nccl and smoke images beside DCGM: the official client against the API emulator.

gpu-0007 came back with a cold image cache: the nccl-tests image (20 GiB at 100 MiB/s, 205 simulated s)
would be pulled when nccl-tests start. With the DCGM batch carrying the pre-pull batch `alongside`, the
pull happens while DCGM runs (400 simulated s), by pods that request no GPU, and nccl-tests start at once.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from acceptance.baseline import BaselineStore
from acceptance.clusters.base import Cluster, DcgmWorkload, NcclWorkload
from acceptance.clusters.kube.cluster import KubeCluster
from acceptance.clusters.kube.settings import RUN_ID_KEY
from acceptance.criteria.context import RunContext
from acceptance.criteria.prepull import batch_for
from acceptance.criteria.run import Criteria
from acceptance.criteria.scheduler import Batch, Scheduler
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.errors import ProfileError
from acceptance.profile import load_profile
from acceptance.sim.kubeapi import EmulatedApi
from acceptance.sim.model.images import PullModel
from acceptance.sim.runtime import Host, ToolRun
from tests.kube_tool_double import CannedRunner
from tests.suite_run import sim_cluster_folder
from tests.test_kube_e2e import SETTINGS, labelled

COLD = "gpu-0007"
MIB = 1 << 20
PULLS = PullModel(100 * MIB, (("nccl-tests", 20 << 30), ("dcgm", 100 * MIB)), 100 * MIB, frozenset({COLD}))
SCALE = 0.005  # wall seconds per simulated second


class QuickTrue(CannedRunner):
    """The canned tools (DCGM takes `duration_s`); ``true``, the pre-pull pods' command, takes no time."""

    def run(self, argv: Sequence[str], env: Mapping[str, str], node: str, hosts: Sequence[Host]) -> ToolRun:
        done = super().run(argv, env, node, hosts)
        return ToolRun(done.stdout, done.exit_code, 0.0) if tuple(argv) == ("true",) else done


class PodWatch(threading.Thread):
    """The emulated cluster's pod changes of the run, in the order they happened (the store's watch history,
    so no state is missed however briefly it lasted): the pre-pull pods seen, and what DCGM did meanwhile."""

    def __init__(self, api: EmulatedApi) -> None:
        super().__init__(daemon=True)
        self.api = api
        self.stop = threading.Event()
        self.prepull: dict[str, dict[str, Any]] = {}
        self.ended_while_dcgm_ran: set[str] = set()
        self.nodes: dict[str, str] = {}  # pod -> the node it was bound to
        self._rv = 0
        self._dcgm_running: set[str] = set()

    def run(self) -> None:
        while not self.stop.wait(0.02):
            self.drain()

    def drain(self) -> None:
        for change in self.api.store.changes_since(self._rv):
            self._rv = change.rv
            pod = change.obj
            if change.resource != "pods" or (pod["metadata"].get("labels") or {}).get(RUN_ID_KEY) != "t1":
                continue
            name, phase = pod["metadata"]["name"], (pod.get("status") or {}).get("phase")
            if pod["spec"].get("nodeName"):
                self.nodes[name] = pod["spec"]["nodeName"]
            if name.startswith("dcgm-"):
                if phase == "Running" and change.type != "DELETED":
                    self._dcgm_running.add(name)
                else:
                    self._dcgm_running.discard(name)
            elif name.startswith("prepull-"):
                self.prepull[name] = pod
                if phase == "Succeeded" and self._dcgm_running:
                    self.ended_while_dcgm_ran.add(name)


def pulls_of(api: EmulatedApi, watch: PodWatch, prefix: str) -> list[str]:
    """The kubelet's Pulled messages for the run's pods named `prefix`... on the cold node."""
    events, _ = api.store.list("events", None)
    return [e["message"] for e in events
            if e.get("reason") == "Pulled" and e["involvedObject"]["name"].startswith(prefix)
            and watch.nodes.get(e["involvedObject"]["name"]) == COLD]  # fmt: skip


def run_dcgm_then_nccl(tmp_path: Path, prepull: bool) -> tuple[PodWatch, list[str]]:
    """DCGM on the cold node (with the pre-pull batch beside it, or not), then nccl-tests on it and a warm node."""
    dcgm = {COLD: DcgmWorkload(f"dcgm-{COLD}", COLD, 8, ("dcgmi", "diag", "-r", "3", "-j"), 3600.0)}
    alongside = batch_for(["nccl"], [COLD], 3600.0) if prepull else None
    nccl = NcclWorkload("all-reduce", (COLD, "gpu-0008"), 8, ("all_reduce_perf", "-b", "8"), {}, 3600.0)
    with EmulatedApi(QuickTrue(duration_s=400.0), SCALE, image_pull=PULLS) as api:
        watch = PodWatch(api)
        with KubeCluster(SETTINGS, "t1", api.api_client()) as kube:
            scheduler = Scheduler(kube, SharedFolder(tmp_path), None, budget_s=60)
            watch.start()
            try:
                results = scheduler.results(Batch("dcgm", "dcgm", dcgm, 3600.0, alongside=alongside))
                assert scheduler.close(10.0) == []  # the background batch ended with DCGM's
                assert results[COLD].ok, results[COLD].reason
                left = labelled(api, leases=False)
                assert left == [], f"objects left after the DCGM batch: {left}"
                nccl_results = scheduler.results(Batch("nccl", "nccl", {"all-reduce": nccl}, 3600.0))
                assert nccl_results["all-reduce"].ok, nccl_results["all-reduce"].reason
            finally:
                watch.stop.set()
                watch.join(5)
                watch.drain()
        return watch, pulls_of(api, watch, "all-reduce")


@pytest.mark.slow
def test_prepull_pods_run_beside_dcgm_without_gpus_and_nccl_then_starts_without_a_pull(tmp_path: Path) -> None:
    watch, nccl_pulls = run_dcgm_then_nccl(tmp_path, prepull=True)
    assert watch.prepull, "no pre-pull pod was seen while DCGM ran"
    assert all(name.startswith(f"prepull-nccl-{COLD}") for name in watch.prepull)
    for pod in watch.prepull.values():
        assert pod["spec"]["nodeName"] == COLD
        assert pod["metadata"]["labels"][RUN_ID_KEY] == "t1"
        (container,) = pod["spec"]["containers"]
        assert container["image"] == SETTINGS.images["nccl"]
        assert container["resources"]["requests"] == {"nvidia.com/gpu": "0"}  # no GPU, no RDMA device
    assert watch.ended_while_dcgm_ran == set(watch.prepull)  # pulled and done while DCGM still ran
    assert nccl_pulls, "no Pulled event for the nccl pods on the cold node"
    assert all("already present on machine" in m for m in nccl_pulls), nccl_pulls


@pytest.mark.slow
def test_without_prepull_nccl_waits_for_its_image_on_the_cold_node(tmp_path: Path) -> None:
    watch, nccl_pulls = run_dcgm_then_nccl(tmp_path, prepull=False)
    assert watch.prepull == {}
    assert any(m.startswith(f'Successfully pulled image "{SETTINGS.images["nccl"]}" in 204.800s') for m in nccl_pulls)


def prepull_of(tmp_path: Path, kube_extra: str, selected: set[str]) -> Batch | None:
    """The pre-pull batch the DCGM batch carries, for the shipped sim profile with `kube_extra` in its kube section."""
    folder = sim_cluster_folder(tmp_path)
    profile_file = folder / "cluster.yaml"
    profile_file.write_text(profile_file.read_text().replace("kube:\n", f"kube:\n{kube_extra}", 1))
    profile = load_profile("sim", folder.parent)
    context = RunContext.create(profile, BaselineStore(folder).latest(), returned_nodes=("sim-node-07",),
                                run_id="ra-test-prepull", started=datetime.now(UTC))  # fmt: skip
    run = Criteria(context, cast(Cluster, object()), SharedFolder(tmp_path), None, selected=frozenset(selected))
    return run.diagnostics.batch().alongside


SUITE = {"test_gpu_diagnostics", "test_fabric", "test_smoke_step", "test_loss_continuity"}


def test_the_profile_chooses_what_is_pulled_ahead_and_can_turn_it_off(tmp_path: Path) -> None:
    on = prepull_of(tmp_path / "on", "", SUITE)
    assert on is not None
    assert not on.gpus
    assert sorted(on.workloads) == ["nccl-sim-node-07", "smoke-sim-node-07"]  # the returned node only
    assert {(w.image, w.gpus, w.rdma) for w in on.workloads.values()} == {("nccl", 0, False), ("smoke", 0, False)}
    only_fabric = prepull_of(tmp_path / "fabric", "", {"test_gpu_diagnostics", "test_fabric"})
    assert only_fabric is not None
    assert sorted(only_fabric.workloads) == ["nccl-sim-node-07"]  # only what a selected criterion will run
    assert prepull_of(tmp_path / "dcgm", "", {"test_gpu_diagnostics"}) is None
    assert prepull_of(tmp_path / "off", "  prepull_images: false\n", SUITE) is None
    with pytest.raises(ProfileError, match="prepull_images"):
        prepull_of(tmp_path / "bad", "  prepull_images: sometimes\n", SUITE)


def test_the_pull_model_names_what_it_cannot_read() -> None:
    from acceptance.errors import UsageError

    with pytest.raises(UsageError, match=r"s\.yaml: image_pull: unknown key\(s\) \['bandwith'\]"):
        PullModel.from_mapping({"bandwith": "1GiB"}, "s.yaml")
    with pytest.raises(UsageError, match=r"image_pull\.bandwidth must be more than 0"):
        PullModel.from_mapping({"bandwidth": "0MiB"}, "s.yaml")
    with pytest.raises(UsageError, match=r"image_pull\.cold_nodes: expected a list of node names or 'all'"):
        PullModel.from_mapping({"cold_nodes": "sim-node-07"}, "s.yaml")
    model = PullModel.from_mapping({"bandwidth": "100MiB", "sizes": {"nccl-tests": "1GiB"}}, "s.yaml")
    assert model.seconds("ghcr.io/x/nccl-tests:1") == pytest.approx(10.24)
    assert model.cold("any-node")


def test_a_node_pulls_one_image_at_a_time_and_a_second_request_joins_the_pull() -> None:
    from acceptance.sim.model.images import ImageCache

    cache = ImageCache(PULLS, time_scale=1.0)
    assert cache.request("gpu-0001", "nccl-tests:2.26", 0.0) is None  # a warm node has every image
    first = cache.request(COLD, "nccl-tests:2.26", 0.0)
    assert first == (pytest.approx(204.8), pytest.approx(204.8), 0.0)
    assert cache.request(COLD, "nccl-tests:2.26", 10.0) == first  # the same pull
    second = cache.request(COLD, "dcgm:4.2.3", 10.0)  # waits for the first
    assert second == (pytest.approx(205.8), pytest.approx(1.0), pytest.approx(194.8))
    assert cache.request(COLD, "nccl-tests:2.26", 300.0) is None  # there now
