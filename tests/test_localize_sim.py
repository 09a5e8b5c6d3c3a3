"""The fault matrix of localization on the simulated cluster, through the real Kubernetes backend and emulator.

Each case injects faults, runs the search as a failing fabric item would (the shipped baseline's
all_reduce_perf and its pair baseline), and asserts the conclusion.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acceptance import clusters
from acceptance.baseline import BaselineStore
from acceptance.cli import main
from acceptance.criteria.context import RunContext
from acceptance.criteria.localize_result import LocalizeResult
from acceptance.criteria.run import Criteria
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.judge.verdict import Verdict
from acceptance.profile import load_profile
from tests.suite_run import SCENARIOS, SHIPPED_TIME_SCALE, sim_cluster_folder

pytestmark = pytest.mark.slow

TEST = "all_reduce_perf"


def localize(
    tmp_path: Path, faults: Sequence[str], *, triggered: bool = True, nodes_per_leaf: int | None = None
) -> LocalizeResult:
    folder = sim_cluster_folder(tmp_path, time_scale=SHIPPED_TIME_SCALE)
    if nodes_per_leaf is not None:
        scenario = tmp_path / "four-leaves.yaml"
        scenario.write_text(
            (SCENARIOS / "healthy-16.yaml")
            .read_text()
            .replace("nodes_per_leaf: 8", f"nodes_per_leaf: {nodes_per_leaf}")
        )
        profile_file = folder / "cluster.yaml"
        profile_file.write_text(profile_file.read_text().replace(str(SCENARIOS / "healthy-16.yaml"), str(scenario)))
    profile = load_profile("sim", folder.parent)
    started = datetime.now(UTC)
    context = RunContext.create(
        profile, BaselineStore(folder).latest(), returned_nodes=(), run_id="ra-test-loc", started=started
    )
    cluster = clusters.open(profile, context.run_id, faults=clusters.parse_faults(faults))
    run_folder = tmp_path / "run"
    run_folder.mkdir()
    try:
        run = Criteria(context, cluster, SharedFolder(run_folder), None, selected=frozenset())
        return run.localize.search(TEST, worst=2 << 30, triggered=triggered)
    finally:
        try:
            cluster.cleanup()  # raises when an object of the search is still there
        finally:
            cluster.close()
            shutil.rmtree(run_folder, ignore_errors=True)


def test_a_degraded_nic_is_named_in_two_rounds(tmp_path: Path) -> None:
    found = localize(tmp_path, ["nic-degraded@sim-node-07"])
    c = found.conclusion
    assert (c.culprit, c.culprit_kind, c.confirmed) == ("sim-node-07", "nic", True)
    assert c.rounds <= 3
    assert found.reference == "the pair baseline recorded at handover"
    assert found.sizes == (512 << 20, 1 << 30, 2 << 30)
    assert c.summary.startswith("sim-node-07: every group with it at 6")


def test_a_node_that_is_down_is_named_without_a_test(tmp_path: Path) -> None:
    c = localize(tmp_path, ["node-down@sim-node-14"]).conclusion
    assert (c.culprit, c.culprit_kind) == ("sim-node-14", "node")
    assert c.summary.startswith("sim-node-14: NotReady (not tested)")


def test_two_bad_nodes_are_both_named(tmp_path: Path) -> None:
    c = localize(tmp_path, ["nic-degraded@sim-node-03", "nic-down@sim-node-11:2"]).conclusion
    assert (c.culprit, c.culprit_kind, c.confirmed) == ("sim-node-03,sim-node-11", "nic,nic", True)
    assert c.rounds <= 4


def test_a_slow_spine_is_a_switch_and_no_node(tmp_path: Path) -> None:
    c = localize(tmp_path, ["spine-slow"]).conclusion
    assert (c.culprit, c.culprit_kind, c.rounds) == ("leaf-01<->leaf-02", "switch", 2)
    assert "fabric, not a node" in c.summary


def test_a_bad_leaf_uplink_is_told_from_the_spine(tmp_path: Path) -> None:
    c = localize(tmp_path, ["leaf-uplink@sim-node-06"], nodes_per_leaf=4).conclusion
    assert (c.culprit, c.culprit_kind, c.confirmed) == ("leaf-02<->spine-01", "switch", True)
    assert c.rounds <= 3


def test_a_bad_node_behind_a_slow_spine_is_both(tmp_path: Path) -> None:
    c = localize(tmp_path, ["spine-slow", "nic-degraded@sim-node-05"]).conclusion
    assert (c.culprit, c.culprit_kind, c.confirmed) == ("sim-node-05,leaf-01<->leaf-02", "nic,switch", True)
    assert c.rounds <= 3


def test_a_flapping_link_is_slow_only_sometimes_and_gets_a_repeat(tmp_path: Path) -> None:
    """Round 1 sees nothing, new pairs see sim-node-09's pair slow, the repeat sees both fine: no single culprit."""
    found = localize(tmp_path, ["link-flap@sim-node-09:1"])
    c = found.conclusion
    assert (c.culprit, c.confirmed, c.intermittent, c.rounds) == ("none", False, True, 3)
    assert c.suspects == ("sim-node-02", "sim-node-09")
    mine = [(r["round"], g["status"]) for r in found.rounds for g in r["groups"] if "sim-node-09" in g["nodes"]]
    assert mine == [(1, "ok"), (2, "slow"), (3, "ok")]
    assert found.rounds[2]["purpose"] == "suspects again with known-good peers (intermittent)"


def test_a_healthy_cluster_has_no_culprit_after_one_round_when_asked(tmp_path: Path) -> None:
    found = localize(tmp_path, [], triggered=False)
    assert (found.conclusion.culprit, found.conclusion.rounds, found.conclusion.tests) == ("none", 1, 8)


def test_the_command_line_names_the_culprit_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = sim_cluster_folder(tmp_path, time_scale=SHIPPED_TIME_SCALE)
    status = main(["localize", "--cluster", "sim", "--baselines-dir", str(folder.parent), "--sim-fault",
                   "nic-degraded@sim-node-07", "--test", TEST])  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1
    assert out.splitlines()[0].startswith("culprit: sim-node-07 (nic); 2 round(s), 10 group test(s)")
    assert "  round 1: 8 groups (8 across leaves): 7 within margin" in out
    assert main(["localize", "--cluster", "sim", "--baselines-dir", str(folder.parent), "--test", "nope"]) == 2
    assert "--test nope: not a test of the baseline" in capsys.readouterr().err


def fabric_verdict(tmp_path: Path, edit: tuple[str, str], faults: Sequence[str]) -> Verdict:
    """The fabric item's verdict for all_reduce_perf with the sim profile edited (`edit`: old, new text)."""
    folder = sim_cluster_folder(tmp_path, time_scale=SHIPPED_TIME_SCALE)
    profile_file = folder / "cluster.yaml"
    text = profile_file.read_text()
    assert edit[0] in text
    profile_file.write_text(text.replace(*edit))
    profile = load_profile("sim", folder.parent)
    context = RunContext.create(
        profile, BaselineStore(folder).latest(), returned_nodes=(), run_id="ra-test-edit", started=datetime.now(UTC)
    )
    cluster = clusters.open(profile, context.run_id, faults=clusters.parse_faults(faults))
    (tmp_path / "run").mkdir()
    try:
        return Criteria(context, cluster, SharedFolder(tmp_path / "run"), None, selected=frozenset()).fabric.verdict(
            TEST
        )
    finally:
        try:
            cluster.cleanup()
        finally:
            cluster.close()


def test_a_search_that_cannot_run_says_why_and_the_fabric_item_still_fails(tmp_path: Path) -> None:
    edit = ("leaf_label: acceptance.sim/leaf-group", "leaf_label: rack")
    verdict = fabric_verdict(tmp_path, edit, ["nic-degraded@sim-node-07"])
    assert verdict.status.value == "fail"
    assert verdict.figures["culprit"] == "none"
    assert verdict.figures["localize_confirmed"] is False
    assert "localization could not run: node label 'rack' (localize.topology.leaf_label) missing on sim-node-01" in (
        verdict.summary
    )


def test_localization_turned_off_in_the_profile_adds_nothing(tmp_path: Path) -> None:
    verdict = fabric_verdict(tmp_path, ("localize:\n", "localize:\n  enabled: false\n"), ["nic-degraded@sim-node-07"])
    assert verdict.status.value == "fail"
    assert "culprit" not in verdict.figures
    assert "localized" not in verdict.summary


def test_the_whole_search_stops_at_its_deadline(tmp_path: Path) -> None:
    verdict = fabric_verdict(tmp_path, ("deadline: 20m", "deadline: 1ms"), ["nic-degraded@sim-node-07"])
    assert verdict.status.value == "fail"
    assert (verdict.figures["culprit"], verdict.figures["localize_rounds"]) == ("none", 0)
    assert "search stopped: the search's deadline (0 s) passed after 0 rounds" in verdict.evidence
