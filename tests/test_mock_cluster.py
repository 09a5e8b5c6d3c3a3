"""Criteria 0-2 judged on a `MockCluster`: the suite's own criteria code, the simulator's model, no HTTP, no threads.

The shipped simulated agreement (profile and handover baseline of ``--cluster=sim``) is judged against
the model with the faults of the simulator injected: healthy passes, a degraded NIC fails the fabric,
an XID on a GPU fails its node's DCGM diagnostics.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acceptance import criteria
from acceptance.baseline import BaselineStore
from acceptance.clusters.base import Cluster, DcgmWorkload, Handle, NcclWorkload, ProgressSink, WorkloadResult
from acceptance.clusters.mock import MockCluster
from acceptance.criteria import recording
from acceptance.criteria.context import RunContext
from acceptance.criteria.run import Criteria
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.judge.verdict import Status, Verdict
from acceptance.profile import Profile, load_profile
from tests.suite_run import sim_cluster_folder

SELECTED = frozenset(criteria.module(n) for n in (0, 1, 2))
RETURNED = "sim-node-07"


def profile_of(tmp_path: Path) -> tuple[Profile, Path]:
    folder = sim_cluster_folder(tmp_path)
    return load_profile("sim", folder.parent), folder


def run_on(tmp_path: Path, faults: Sequence[str] = (), returned: tuple[str, ...] = (RETURNED,)) -> Criteria:
    profile, folder = profile_of(tmp_path)
    context = RunContext.create(
        profile, BaselineStore(folder).latest(), returned_nodes=returned, run_id="ra-mock", started=datetime.now(UTC)
    )
    cluster: Cluster = MockCluster.from_profile(profile, context.run_id, faults)
    (tmp_path / "run").mkdir()
    return Criteria(context, cluster, SharedFolder(tmp_path / "run"), None, selected=SELECTED)


def verdicts(run: Criteria) -> dict[str, Verdict]:
    """Every item of criteria 0-2 as the suite's items ask for them."""
    out = {f"preflight/{k}": v for k, v in run.preflight.result().verdicts.items()}
    out |= {f"dcgm/{node}": run.diagnostics.verdict(node) for node in run.context.targets}
    out |= {f"nccl/{name}": run.fabric.verdict(name) for name in run.context.nccl_tests}
    return out


def failing(found: dict[str, Verdict]) -> dict[str, str]:
    return {k: v.summary for k, v in found.items() if v.status is not Status.PASS}


def test_a_healthy_cluster_passes_criteria_0_to_2_in_memory(tmp_path: Path) -> None:
    """Every preflight check, the returned node's DCGM and all four nccl-tests pass against the shipped baseline."""
    started = time.perf_counter()
    found = verdicts(run_on(tmp_path))
    elapsed = time.perf_counter() - started
    assert failing(found) == {}
    assert set(found) >= {"preflight/versions", f"dcgm/{RETURNED}", "nccl/all_reduce_perf"}
    assert len([k for k in found if k.startswith("nccl/")]) == 4
    print(f"criteria 0-2 on a MockCluster: {elapsed * 1000:.0f} ms")


def test_a_degraded_nic_fails_the_fabric_and_nothing_else(tmp_path: Path) -> None:
    """nic-degraded on the returned node: DCGM still passes (the GPUs are fine), every nccl-test fails."""
    found = failing(verdicts(run_on(tmp_path, [f"nic-degraded@{RETURNED}"])))
    assert found, "a degraded NIC passed"
    assert {k.partition("/")[0] for k in found} == {"nccl"}
    assert all("busbw" in s and f"localized in 2 rounds: {RETURNED}" in s for s in found.values()), found
    assert set(found) == {f"nccl/{n}" for n in ("all_gather_perf", "all_reduce_perf", "alltoall_perf",
                                                  "reduce_scatter_perf")}  # fmt: skip


def test_an_xid_on_a_gpu_fails_its_node_s_dcgm(tmp_path: Path) -> None:
    """gpu-xid on GPU 5 of the returned node fails its DCGM item, naming the GPU."""
    run = run_on(tmp_path, [f"gpu-xid@{RETURNED}:5"])
    verdict = run.diagnostics.verdict(RETURNED)
    assert verdict.status is Status.FAIL
    assert "GPU 5" in verdict.summary, verdict.summary
    assert "XID 79" in verdict.summary, verdict.summary
    assert run.preflight.result().verdicts["nodes"].passed


def test_a_node_that_is_down_is_unschedulable_not_run(tmp_path: Path) -> None:
    """A workload on a NotReady node is a result with a reason (as the scheduler reports it), not a run."""
    profile, _ = profile_of(tmp_path)
    cluster = MockCluster.from_profile(profile, faults=["node-down@sim-node-14"])
    dcgm = DcgmWorkload("dcgm-14", "sim-node-14", 8, ("dcgmi", "diag", "-r", "1", "-j"))
    nccl = NcclWorkload("ar", ("sim-node-01", "sim-node-02"), 8, ("all_reduce_perf", "-b", "1M", "-e", "8M"))
    down, ok = cluster.wait(cluster.submit([dcgm, nccl]), 60)
    assert (down.status, down.exit_code, down.output) == ("unschedulable", None, "")
    assert "sim-node-14 is NotReady" in down.reason
    assert ok.ok
    assert "Avg bus bandwidth" in ok.output
    assert ok.placement == {"sim-node-01": "sim-node-01", "sim-node-02": "sim-node-02"}
    assert not cluster.inventory().node("sim-node-14").ready  # type: ignore[union-attr]
    assert [e.reason for e in cluster.node_signals(["sim-node-14"], datetime.now(UTC))][1:] == ["NodeNotReady"]


def test_a_result_past_its_deadline_is_a_timeout(tmp_path: Path) -> None:
    """DCGM r3 takes simulated minutes: with a deadline of one second it is a timeout, not a pass."""
    profile, _ = profile_of(tmp_path)
    cluster = MockCluster.from_profile(profile)
    (result,) = cluster.wait(
        cluster.submit([DcgmWorkload("d", RETURNED, 8, ("dcgmi", "diag", "-r", "3", "-j"), 1.0)]), 1
    )
    assert (result.status, result.exit_code, result.ok) == ("timeout", None, False)


CUT_SHORT = "the run's deadline (the profile's run.deadline) passed while this workload ran: no final state within 0 s"


class CutShort(MockCluster):
    """Every workload stopped by the cluster halfway through what it prints (as the run's deadline stops it)."""

    def wait(
        self, handles: Sequence[Handle], deadline_s: float, *, progress: ProgressSink | None = None
    ) -> list[WorkloadResult]:
        whole = super().wait(handles, deadline_s, progress=progress)
        return [dataclasses.replace(r, output=r.output[: len(r.output) // 2], status="error", reason=CUT_SHORT,
                                    exit_code=None) for r in whole]  # fmt: skip


def test_what_a_workload_cut_short_printed_is_not_judged_its_items_are_errors_naming_why(tmp_path: Path) -> None:
    """Half a DCGM document was once "DCGM output not understood (Expecting ',' delimiter)", not the deadline;
    half an nccl-tests log (a slow NIC's rows among them) is never a FAIL of the fabric."""
    profile, folder = profile_of(tmp_path)
    context = RunContext.create(
        profile, BaselineStore(folder).latest(), returned_nodes=(RETURNED,), run_id="ra-mock", started=datetime.now(UTC)
    )
    mock = MockCluster.from_profile(profile, context.run_id, [f"nic-degraded@{RETURNED}"])
    (tmp_path / "run").mkdir()
    cluster = CutShort(mock.runner, context.run_id, mock.env, mock.images)
    run = Criteria(context, cluster, SharedFolder(tmp_path / "run"), None, selected=SELECTED)
    found = {f"dcgm/{RETURNED}": run.diagnostics.verdict(RETURNED)}
    found |= {f"nccl/{name}": run.fabric.verdict(name) for name in run.context.nccl_tests}
    assert {k: v.status for k, v in found.items()} == dict.fromkeys(found, Status.ERROR)
    for verdict in found.values():
        assert CUT_SHORT in verdict.summary, verdict.summary
        assert "not understood" not in verdict.summary


def test_a_handle_of_another_cluster_is_refused(tmp_path: Path) -> None:
    profile, _ = profile_of(tmp_path)
    one, other = MockCluster.from_profile(profile), MockCluster.from_profile(profile)
    (handle,) = one.submit([DcgmWorkload("d", RETURNED, 8, ("dcgmi", "diag", "-r", "1", "-j"))])
    with pytest.raises(Exception, match="was not submitted to this mock cluster"):
        other.wait([handle], 1)


def test_recording_a_baseline_on_it_keeps_what_the_shipped_one_keeps(tmp_path: Path) -> None:
    """``--record-baseline`` through the criteria and `recording` on a MockCluster: the same sections, conditions
    and node set as the shipped simulated baseline (recorded through the emulator), and nothing missing."""
    profile, folder = profile_of(tmp_path)
    shipped = json.loads(BaselineStore(folder).latest().path.read_text())
    context = RunContext.create(profile, None, returned_nodes=(), run_id="ra-mock", started=datetime.now(UTC))
    (tmp_path / "run").mkdir()
    run_folder = SharedFolder(tmp_path / "run")
    selected = frozenset(criteria.module(n) for n in (0, 1, 2, 3))
    run = Criteria(context, MockCluster.from_profile(profile), run_folder, None, selected=selected)
    assert failing(verdicts(run)) == {}
    assert run.smoke.verdict().status is Status.PASS
    doc = recording.assemble(context, recording.parts_of(context, run_folder), when=datetime.now(UTC), simulated=True)
    assert set(doc["results"]) == set(shipped["results"])
    assert set(doc["conditions"]) == set(shipped["conditions"])
    for key in ("nodes", "kubernetes_version", "node_spec"):
        assert doc["conditions"][key] == shipped["conditions"][key], key
    assert doc["conditions"]["dcgm"] == shipped["conditions"]["dcgm"]  # version, level and image digest
    assert sorted(doc["conditions"]["nccl"]) == sorted(shipped["conditions"]["nccl"])


def test_the_scheduler_submits_each_node_s_dcgm_once_for_all_items(tmp_path: Path) -> None:
    """Three returned nodes, three DCGM items: one batch of three workloads, each submitted once."""
    returned = ("sim-node-03", "sim-node-07", "sim-node-11")
    run = run_on(tmp_path, returned=returned)
    assert all(run.diagnostics.verdict(node).passed for node in returned)
    assert isinstance(run.cluster, MockCluster)
    dcgm = [w for w in run.cluster.submitted if isinstance(w, DcgmWorkload)]
    assert sorted(w.node for w in dcgm) == list(returned)
