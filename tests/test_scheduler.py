"""The one scheduler: a batch is submitted once per run whichever process asks, and a failing cluster is a result."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acceptance import clusters
from acceptance.clusters.base import (
    ClusterEvent,
    ClusterInventory,
    DcgmWorkload,
    Handle,
    NcclWorkload,
    NodeWorkload,
    ProgressSink,
    SmokeWorkload,
    Workload,
    WorkloadResult,
    workload_from_json,
    workload_to_json,
)
from acceptance.criteria.scheduler import Batch, Scheduler
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.errors import ClusterError, UsageError
from acceptance.profile import load_profile_file
from tests.suite_run import sim_cluster_folder

NOW = datetime(2026, 12, 1, tzinfo=UTC)
WORKLOADS: tuple[Workload, ...] = (
    NcclWorkload("nccl-a", ("n1", "n2"), 8, ("all_reduce_perf", "-b", "8"), {"NCCL_DEBUG": "WARN"}, 60.0),
    DcgmWorkload("dcgm-n1", "n1", 8, ("dcgmi", "diag", "-r", "3", "-j"), 900.0),
    SmokeWorkload("train-smoke", ("n1",), 8, ("python", "train.py"), {}, 300.0),
    NodeWorkload("ib-n1", "n1", ("ib_write_bw", "-d", "mlx5_0"), "perftest", gpus=0, rdma=True, deadline_s=30.0),
)


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.name)
def test_workloads_and_handles_are_plain_data_both_ways(workload: Workload) -> None:
    assert workload_from_json(workload_to_json(workload)) == workload
    handle = Handle(workload, (("Job", "x-1"),), ({"kind": "Job", "metadata": {"name": "x-1"}},), NOW)
    assert Handle.from_json(handle.to_json()) == handle


class CountingCluster:
    """A `Cluster` that runs every workload at once and counts submissions (our own seam, no server)."""

    run_id = "r1"

    def __init__(self, fail: str | None = None) -> None:
        self.submitted: list[str] = []
        self.fail = fail
        self.lock = threading.Lock()

    def describe(self) -> list[str]:
        return ["counting"]

    def attach_info(self) -> dict[str, str]:
        return {}

    def workload_env(self) -> Mapping[str, str]:
        return {}

    def inventory(self) -> ClusterInventory:
        return ClusterInventory("v1", ())

    def submit(self, workloads: Sequence[Workload]) -> list[Handle]:
        if self.fail:
            raise ClusterError(self.fail)
        with self.lock:
            self.submitted.extend(w.name for w in workloads)
        return [Handle(w, (("Job", w.name),), (), NOW) for w in workloads]

    def wait(
        self, handles: Sequence[Handle], deadline_s: float, *, progress: ProgressSink | None = None
    ) -> list[WorkloadResult]:
        out = "output of {}\n"
        return [
            WorkloadResult(
                h.workload.name, "dcgm", out.format(h.workload.name), 0, "succeeded", "", NOW, NOW, {}, (), (), ""
            )
            for h in handles
        ]

    def events(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        return []

    def leftovers(self) -> list[str]:
        return []

    def remove_leftovers(self, older_than_s: float | None, dry_run: bool = False) -> list[str]:
        return []

    def cleanup(self) -> None:
        pass

    def close(self) -> None:
        pass


def _batch() -> Batch:
    workloads = {node: DcgmWorkload(f"dcgm-{node}", node, 8, ("dcgmi",), 60.0) for node in ("n1", "n2", "n3")}
    return Batch("dcgm", "dcgm", workloads, 60.0)


def test_a_batch_is_submitted_once_whichever_process_asks_first(tmp_path: Path) -> None:
    cluster = CountingCluster()
    folder = SharedFolder(tmp_path)
    schedulers = [Scheduler(cluster, folder, None, budget_s=30) for _ in range(4)]  # four pytest processes
    outputs: list[str] = []

    def ask(scheduler: Scheduler) -> None:
        outputs.append(scheduler.results(_batch())["n2"].output)

    threads = [threading.Thread(target=ask, args=(s,)) for s in schedulers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(cluster.submitted) == ["dcgm-n1", "dcgm-n2", "dcgm-n3"]
    assert outputs == ["output of dcgm-n2\n"] * 4
    assert list(schedulers[0].results(_batch())) == ["n1", "n2", "n3"]


def test_a_process_that_takes_over_adopts_the_submission_it_finds(tmp_path: Path) -> None:
    """A process died after submitting: the next one waits for those objects, it does not submit again."""
    cluster = CountingCluster()
    folder = SharedFolder(tmp_path)
    batch = _batch()
    earlier = [Handle(w, (("Job", w.name),), (), NOW).to_json() for w in batch.workloads.values()]
    folder.once("dcgm.submitted", lambda: earlier)
    results = Scheduler(cluster, folder, None, budget_s=30).results(batch)
    assert cluster.submitted == []
    assert results["n3"].ok


def test_a_cluster_that_fails_the_batch_gives_results_with_its_reason(tmp_path: Path) -> None:
    cluster = CountingCluster(fail="the cluster does not serve kubeflow.org/v2beta1 MPIJobs")
    results = Scheduler(cluster, SharedFolder(tmp_path), None, budget_s=30).results(_batch())
    assert {results[n].status for n in results} == {"error"}
    assert "does not serve kubeflow.org/v2beta1" in results["n1"].reason


def test_open_refuses_what_it_cannot_honour(tmp_path: Path) -> None:
    path = sim_cluster_folder(tmp_path) / "cluster.yaml"
    text = path.read_text()
    with pytest.raises(UsageError, match="cannot show gpu-busy; a busy GPU shows through nvidia-smi on SSH hosts"):
        clusters.open(load_profile_file(path), "r1", faults=clusters.parse_faults(["gpu-busy@sim-node-01"]))
    hosts = ", ".join(f"sim-node-{i:02d}: 10.0.0.{i}" for i in range(1, 17))
    path.write_text(text.replace("backend: sim", "backend: ssh") + f"ssh:\n  user: ops\n  hosts: {{{hosts}}}\n")
    with pytest.raises(UsageError, match=r"ssh\.hosts\.sim-node-01: 10\.0\.0\.1 is not a loopback address"):
        clusters.open(load_profile_file(path), "r1")  # simulated hosts (a 'sim' section) listen on loopback only
    path.write_text(text.replace("backend: sim", "backend: kube"))
    with pytest.raises(UsageError, match="--sim-fault needs a simulated cluster"):
        clusters.open(load_profile_file(path), "r1", faults=clusters.parse_faults(["nic-down@sim-node-01"]))
    with pytest.raises(UsageError, match="--ssh-insecure-accept-new applies to SSH clusters"):
        clusters.open(load_profile_file(path), "r1", ssh_accept_new=True)
    missing = f"  namespace: recovery-acceptance\n  kubeconfig: {tmp_path}/none"
    path.write_text(text.replace("backend: sim", "backend: kube").replace("  namespace: recovery-acceptance", missing))
    with pytest.raises(UsageError, match="cannot load Kubernetes credentials"):
        clusters.open(load_profile_file(path), "r1")


class HeldCluster(CountingCluster):
    """A `CountingCluster` whose workloads run until the test lets them end."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def wait(
        self, handles: Sequence[Handle], deadline_s: float, *, progress: ProgressSink | None = None
    ) -> list[WorkloadResult]:
        assert self.release.wait(10.0), "the test never let the workloads end"
        return super().wait(handles, deadline_s, progress=progress)


class RecordingEvidence:
    """Our own seam for `Evidence`: which results were filed."""

    def __init__(self) -> None:
        self.filed: list[str] = []

    def result(self, stem: str, result: WorkloadResult) -> None:
        self.filed.append(stem)


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10.0
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within 10 s"
        time.sleep(0.01)


def _no_gpu_batch() -> Batch:
    workload = NodeWorkload("prepull-nccl-n1", "n1", ("true",), "nccl", gpus=0, rdma=False, deadline_s=60.0)
    return Batch("prepull", "prepull", {"n1": workload}, 60.0, gpus=False)


@pytest.mark.parametrize("ends_before_close", [True, False])
def test_a_background_batch_files_evidence_only_if_it_ends_before_the_session(
    tmp_path: Path, ends_before_close: bool
) -> None:
    cluster, evidence = HeldCluster(), RecordingEvidence()
    scheduler = Scheduler(cluster, SharedFolder(tmp_path), evidence, 60.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="holds GPUs"):
        scheduler.start(_batch())
    scheduler.start(_no_gpu_batch())
    scheduler.start(_no_gpu_batch())  # once per run
    _until(lambda: cluster.submitted == ["prepull-nccl-n1"], "submission")
    result_file = tmp_path / "results" / "prepull.n1.json"
    if ends_before_close:
        cluster.release.set()
        _until(result_file.exists, "result file")
    left = scheduler.close(5.0 if ends_before_close else 0.2)
    cluster.release.set()
    _until(result_file.exists, "result file")
    if ends_before_close:
        assert left == []
        assert evidence.filed == ["prepull/n1"]
    else:
        assert len(left) == 1, left
        assert "batch prepull (holding no GPUs) had not ended" in left[0]
        assert evidence.filed == [], "a batch that outlived the session filed evidence into the signed report"
    assert cluster.submitted == ["prepull-nccl-n1"]
