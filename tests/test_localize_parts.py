"""The pieces around the planner: the profile's localize section, the simulator's group physics, the group
command and what a group test measured, and the pair baseline in a new baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptance.baseline import BaselineStore, validate
from acceptance.clusters.base import WorkloadResult
from acceptance.criteria.localize import baseline_part
from acceptance.criteria.localize_run import GroupCommand, measure, reference_of, sweep
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.errors import ProfileError
from acceptance.judge.localize_groups import PairReference
from acceptance.profile import load_profile, load_profile_file
from acceptance.sim.runtime import Host
from acceptance.tools import nccl
from tests.test_sim_support import hosts_for, make_runner, mpirun_nccl

ROOT = Path(__file__).resolve().parents[1]
SIM = ROOT / "baselines" / "sim"


def _busbw(text: str) -> float:
    busbw = nccl.parse_text(text).runs[0].rows[-1].oop.busbw  # type: ignore[union-attr]
    assert busbw is not None
    return busbw


def profile_with(tmp_path: Path, localize: dict[str, Any]) -> Path:
    data = yaml.safe_load((SIM / "cluster.yaml").read_text())
    data["localize"] = localize
    folder = tmp_path / "c1"
    folder.mkdir()
    (folder / "cluster.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder / "cluster.yaml"


def test_the_shipped_profile_localizes_with_the_simulators_labels() -> None:
    s = load_profile("sim", ROOT / "baselines").localize
    assert (s.enabled, s.deadline_s, s.max_rounds, s.sweep_sizes) == (True, 1200.0, 4, 3)
    assert (s.topology.leaf_label, s.topology.spine_label) == ("acceptance.sim/leaf-group", "acceptance.sim/spine")


def test_a_listed_topology_for_hosts_without_labels(tmp_path: Path) -> None:
    nodes = [f"sim-node-{i:02d}" for i in range(1, 17)]
    topology = {"leaves": {"leaf-a": nodes[:8], "leaf-b": nodes[8:]}, "spines": {"spine-1": ["leaf-a", "leaf-b"]}}
    path = profile_with(tmp_path, {"enabled": False, "topology": topology})
    s = load_profile_file(path).localize
    assert s.enabled is False
    assert s.topology.leaves["leaf-b"] == tuple(nodes[8:])
    assert s.topology.spines == {"spine-1": ("leaf-a", "leaf-b")}


@pytest.mark.parametrize(
    ("localize", "message"),
    [
        ({"topology": {"leaves": {"l1": ["sim-node-01", "nope"]}}}, r"localize\.topology\.leaves\.l1: found 'nope', "
         r"expected a node of nodes\.names"),
        ({"topology": {"leaves": {"l1": ["sim-node-01"]}}}, r"no leaf for sim-node-02"),
        ({"topology": {"leaf_label": "x", "leaves": {"l1": ["sim-node-01"]}}}, r"both leaf_label and leaves"),
        ({"topology": {"leaves": {"l1": ["sim-node-01"], "l2": ["sim-node-01"]}}}, r"sim-node-01 also in l1"),
        ({"deadline": "soon"}, r"localize\.deadline"),
        ({"rounds": 3}, r"localize"),
    ],
)  # fmt: skip
def test_a_bad_localize_section_names_file_line_and_path(
    tmp_path: Path, localize: dict[str, Any], message: str
) -> None:
    path = profile_with(tmp_path, localize)
    with pytest.raises(ProfileError, match=message) as info:
        load_profile_file(path)
    assert str(path) in str(info.value)


def test_a_bad_leaf_uplink_slows_only_groups_crossing_that_leaf() -> None:
    runner = make_runner(["leaf-uplink@sim-node-03"], nodes=32)  # leaves of 8: leaf-01 is sim-node-01..08
    crossing = _busbw(mpirun_nccl(runner, ["sim-node-01", "sim-node-09"]).stdout)
    inside = _busbw(mpirun_nccl(runner, ["sim-node-01", "sim-node-02"]).stdout)
    elsewhere = _busbw(mpirun_nccl(runner, ["sim-node-09", "sim-node-17"]).stdout)
    assert crossing < 0.65 * inside
    assert elsewhere == pytest.approx(inside, rel=0.03)


def test_a_nic_fault_on_a_rail_the_run_does_not_use_does_not_slow_it() -> None:
    runner = make_runner(["nic-degraded@sim-node-02:6"])
    tool = ["all_reduce_perf", "-b", "1G", "-e", "1G", "-g", "1"]
    four = mpirun_nccl(runner, ["sim-node-01", "sim-node-02"], tool)
    argv = ["mpirun", "-np", "8", "-N", "4", *tool]
    half = runner.run(argv, {}, "sim-node-01", hosts_for(["sim-node-01", "sim-node-02"], 4))
    full_peak, half_peak = _busbw(four.stdout), _busbw(half.stdout)
    assert full_peak < 0.7 * 368
    assert half_peak > 0.95 * 368 / 2


def test_a_flapping_link_flaps_alike_in_every_session_whatever_the_job_names() -> None:
    def pattern(prefix: str) -> list[bool]:
        runner = make_runner(["link-flap@sim-node-09"])
        argv = ["mpirun", "-np", "16", "all_reduce_perf", "-b", "1G", "-e", "1G", "-g", "1"]
        out = []
        for i in range(10):
            hosts = [Host(f"{prefix}-{i}-worker-{k}", node, 8) for k, node in enumerate(("sim-node-09", "sim-node-10"))]
            out.append(_busbw(runner.run(argv, {}, "sim-node-09", hosts).stdout) < 0.85 * 368)
        return out

    first = pattern("job-a")
    assert first == pattern("job-b")
    assert any(first)
    assert not all(first)


def test_the_group_command_is_the_failing_tests_with_a_short_sweep() -> None:
    argv = ("all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "1", "-w", "5", "-n", "20")
    series = nccl.NcclTest.from_argv(argv).sizes()
    assert series[0] == 8
    assert series[-1] == 16 << 30
    sizes = sweep(argv, None, 2 << 30, 3, 1 << 20)
    assert sizes == [512 << 20, 1 << 30, 2 << 30]
    assert sweep(argv, None, 1 << 20, 3, 1 << 20) == [1 << 20]
    command = GroupCommand.of("all_reduce_perf", argv, {"NCCL_ALGO": "Ring"}, sizes)
    assert command.argv == ("all_reduce_perf", "-g", "1", "-b", str(512 << 20), "-e", str(2 << 30), "-f", "2",
                            "-n", "20", "-w", "5")  # fmt: skip
    batch = command.batch("loc-r1", "localize", [("a", "b"), ("c", "d")], 8, 60.0)
    assert list(batch.workloads) == ["loc-r1-g01", "loc-r1-g02"]
    assert batch.workloads["loc-r1-g02"].nodes == ("c", "d")  # type: ignore[union-attr]
    linear = GroupCommand.of("t", ("all_reduce_perf", "-b", "1M", "-e", "4M", "-i", "1M"), {}, [1 << 20, 2 << 20])
    assert "-f" in linear.argv


def _result(text: str, code: int, placement: dict[str, str]) -> WorkloadResult:
    status = "succeeded" if code == 0 else "failed"
    return WorkloadResult("g", "nccl", text, code, status, "", None, None, placement, (), (), "")  # type: ignore[arg-type]


def test_what_a_group_measured_or_which_node_its_error_lines_name() -> None:
    command = GroupCommand.of("all_reduce_perf", ("all_reduce_perf", "-b", "1G", "-e", "2G", "-f", "2"), {},
                              [1 << 30, 2 << 30])  # fmt: skip
    good = mpirun_nccl(make_runner(), ["sim-node-01", "sim-node-02"], command.argv)
    m = measure(("sim-node-01", "sim-node-02"), _result(good.stdout, 0, {}), command)
    assert sorted(m.busbw) == [1 << 30, 2 << 30]
    assert not m.failure
    bad = mpirun_nccl(make_runner(["gpu-xid@sim-node-03:5"]), ["sim-node-02", "sim-node-03"], command.argv)
    placement = {"nccl-worker-0": "sim-node-02", "nccl-worker-1": "sim-node-03"}
    m = measure(("sim-node-02", "sim-node-03"), _result(bad.stdout, bad.exit_code, placement), command)
    assert m.blamed == ("sim-node-03",)
    assert m.failure.startswith("run failed, exit ")
    assert "nccl-worker-1: Test " in m.failure
    peers_only = "\n".join(line for line in bad.stdout.splitlines() if "Test CUDA failure" not in line)
    m = measure(("sim-node-02", "sim-node-03"), _result(peers_only, bad.exit_code, placement), command)
    assert m.blamed == ()
    empty = measure(("a", "b"), _result("", 1, {}), command)
    assert empty.failure == "failed: no output"


def test_the_pair_baseline_is_part_of_a_new_baseline_and_of_the_shipped_one(tmp_path: Path) -> None:
    profile = load_profile("sim", ROOT / "baselines")
    folder = SharedFolder(tmp_path)
    part = baseline_part(folder, profile)
    assert part.missing == tuple(f"pair baseline of {t}" for t in profile.test_names)
    for name in profile.test_names:
        folder.write_part("pairs", name, {"argv": ["all_reduce_perf"], "env": {}, "sizes": [1 << 30], "groups": [
            {"nodes": ["sim-node-01", "sim-node-09"], "leaves": ["leaf-01", "leaf-02"], "crossing": True,
             "busbw": {str(1 << 30): 350.0}}]})  # fmt: skip
    part = baseline_part(folder, profile)
    assert part.missing == ()
    assert set(part.results["pairs"]) == set(profile.test_names)
    shipped = BaselineStore(SIM).latest().baseline
    pairs = shipped.data["results"]["pairs"]
    assert set(pairs) == set(shipped.nccl_names)
    doc = dict(shipped.data)
    doc["results"] = {**doc["results"], "pairs": {"all_reduce_perf": {"argv": [], "sizes": [], "groups": []}}}
    with pytest.raises(Exception, match="pairs"):
        validate(doc, "test")
    reference = reference_of(pairs["all_reduce_perf"])
    assert isinstance(reference, PairReference)
    assert 360 < (reference.expected(True, 16 << 30) or 0) < 375
    assert reference.expected(False, 3 << 30) is None
