"""The acceptance suite end to end on the simulated cluster, through the real Kubernetes backend."""

from __future__ import annotations

import pytest

from tests.suite_run import run_suite, sim_cluster_folder

pytestmark = pytest.mark.slow

NODES = [f"sim-node-{i:02d}" for i in range(1, 17)]
FABRIC = ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf"]


def fabric(name: str) -> str:
    return f"test_nccl_busbw[{name}]"


def dcgm(node: str) -> str:
    return f"test_dcgm_diagnostics[{node}]"


def test_healthy_cluster_passes_every_item(pytester: pytest.Pytester) -> None:
    run = run_suite(pytester)
    assert run.result.ret == 0, run.result.stdout.str()[-3000:]
    outcomes = run.outcomes
    assert len(outcomes) == 4 + 16 + 4
    assert set(outcomes.values()) == {"passed"}
    props = run.properties(fabric("all_reduce_perf"))
    assert props["verdict"] == "pass"
    assert float(props["worst_ratio"]) > 0.95
    assert (run.report_dir / "report.html").is_file()
    assert (run.report_dir / "MANIFEST.json").is_file()


def test_degraded_nic_fails_fabric_and_only_fabric(pytester: pytest.Pytester) -> None:
    run = run_suite(pytester, "--sim-fault=nic-degraded@sim-node-07")
    assert run.result.ret == 1
    outcomes = run.outcomes
    assert {name for name, o in outcomes.items() if o != "passed"} == {fabric(n) for n in FABRIC}
    message = run.message(fabric("all_reduce_perf"))
    assert "all_reduce_perf: busbw" in message
    assert "at handover" in message
    assert "margin −5%" in message


def test_gpu_xid_fails_that_node_and_gpu_and_the_fabric(pytester: pytest.Pytester) -> None:
    run = run_suite(pytester, "--sim-fault=gpu-xid@sim-node-03:5")
    outcomes = run.outcomes
    failed = {name for name, o in outcomes.items() if o != "passed"}
    assert dcgm("sim-node-03") in failed
    assert not {dcgm(n) for n in NODES if n != "sim-node-03"} & failed
    message = run.message(dcgm("sim-node-03"))
    assert "sim-node-03 GPU 5" in message
    assert "XID 79" in message
    assert run.properties(dcgm("sim-node-03"))["gpu5.diagnostic"] == "fail"
    assert fabric("all_reduce_perf") in failed
    assert "NCCL failure" in run.message(fabric("all_reduce_perf"))


def test_different_nccl_version_makes_fabric_not_comparable(pytester: pytest.Pytester) -> None:
    run = run_suite(pytester, "--sim-fault=nccl-version")
    outcomes = run.outcomes
    assert {name for name, o in outcomes.items() if o != "passed"} == {fabric(n) for n in FABRIC}
    message = run.message(fabric("all_reduce_perf"))
    assert "NOT-COMPARABLE" in message
    assert "NCCL 2.27.3 now, 2.26.5 at handover" in message


def test_node_down_fails_preflight_and_the_rest_skip_with_its_reason(pytester: pytest.Pytester) -> None:
    run = run_suite(pytester, "--sim-fault=node-down@sim-node-14")
    outcomes = run.outcomes
    assert outcomes["test_node_set_ready"] == "failed"
    assert "sim-node-14: NotReady" in run.message("test_node_set_ready")
    skipped = {name for name, o in outcomes.items() if o == "skipped"}
    assert skipped == {dcgm(n) for n in NODES} | {fabric(n) for n in FABRIC}
    assert "preflight failed: node set: sim-node-14: NotReady" in run.message(fabric("all_reduce_perf"))


def test_xdist_gives_the_same_verdicts_and_objects_as_one_process(pytester: pytest.Pytester) -> None:
    one = run_suite(pytester, "--sim-fault=nic-degraded@sim-node-07", "-p", "no:xdist")
    one_outcomes, one_objects = one.outcomes, one.objects_created()
    (pytester.path / "report").rename(pytester.path / "report-n0")
    four = run_suite(pytester, "--sim-fault=nic-degraded@sim-node-07", "-n", "4")
    assert four.outcomes == one_outcomes
    strip = lambda names: sorted(n.split("-ra-")[0] for n in names)  # noqa: E731 - run ids differ
    assert strip(four.objects_created()) == strip(one_objects)
    assert len(one_objects) == 16 + 4


def test_record_mode_refuses_on_a_failing_node_and_never_overwrites(pytester: pytest.Pytester) -> None:
    folder = sim_cluster_folder(pytester.path, with_baseline=False)
    run = run_suite(pytester, "--record-baseline", "--sim-fault=ecc-dbe@sim-node-05:2", baselines=folder.parent)
    assert run.result.ret == 1
    run.result.stdout.fnmatch_lines(["*baseline NOT recorded: 1 check(s) did not pass*sim-node-05*--force-record*"])
    assert not list(folder.glob("handover-*.json"))
    (pytester.path / "report").rename(pytester.path / "report-1")
    run = run_suite(pytester, "--record-baseline", baselines=folder.parent)
    assert run.result.ret == 0, run.result.stdout.str()[-3000:]
    (first,) = folder.glob("handover-*.json")
    before = first.read_bytes()
    (pytester.path / "report").rename(pytester.path / "report-2")
    run = run_suite(pytester, baselines=folder.parent)
    assert run.result.ret == 0, run.result.stdout.str()[-3000:]
    assert first.read_bytes() == before
