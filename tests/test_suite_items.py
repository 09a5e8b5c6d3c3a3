"""The suite's items (acceptance/test_*.py) as pytest calls them, on a MockCluster run, in process.

The end-to-end runs of the suite (tests/test_suite_sim.py) start the simulated cluster; these call each
item function with the real `acceptance.suite.Suite` over criteria 0-2 judged in memory, so the fast tier
runs the suite's own code: a PASS records the verdict's figures, a FAIL is the verdict's one-line reason, a
criterion that does not apply (or a broken preflight) is a skip that says why.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from acceptance import (
    test_fabric,
    test_gpu_diagnostics,
    test_loss_continuity,
    test_preflight,
    test_recurrence,
    test_site_checks,
    test_smoke_step,
)
from acceptance.clusters.mock import MockCluster
from acceptance.criteria.context import RunContext
from acceptance.criteria.run import Criteria
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.judge.verdict import Status
from acceptance.report.statuses import PREFLIGHT_SKIP
from acceptance.suite import Suite
from tests.test_mock_cluster import RETURNED, SELECTED, profile_of, run_on


class _Session:
    """What `Suite` asks of the plugin's session: the run's one `Criteria`, and a deadline that has not passed."""

    def __init__(self, run: Criteria) -> None:
        self._run = run
        self.context = run.context
        self.deadline_checks = 0

    def check_deadline(self) -> None:
        self.deadline_checks += 1

    def run(self) -> Criteria:
        return self._run


def _suite(run: Criteria) -> tuple[Suite, Any, list[Any]]:
    """A `Suite` for one item; the item keeps its junit properties, the list the verdicts the hook saw."""
    seen: list[Any] = []
    hook = SimpleNamespace(pytest_acceptance_verdict=lambda item, verdict: seen.append(verdict))
    item = SimpleNamespace(config=SimpleNamespace(hook=hook), user_properties=[], stash={}, name="item")
    return Suite(_Session(run), item), item, seen  # type: ignore[arg-type]


def test_a_healthy_run_passes_every_item_of_criteria_0_to_2_and_records_their_figures(tmp_path: Path) -> None:
    run = run_on(tmp_path)
    preflight = (
        test_preflight.test_cluster_answers,
        test_preflight.test_node_set_ready,
        test_preflight.test_versions_as_agreed,
        test_preflight.test_no_leftover_objects,
    )
    calls = [
        *preflight,
        *(lambda s, n=n: test_fabric.test_nccl_busbw(s, n) for n in run.context.nccl_tests),
        lambda s: test_gpu_diagnostics.test_dcgm_diagnostics(s, RETURNED),
    ]
    for call in calls:
        suite, item, seen = _suite(run)
        call(suite)
        assert [v.status for v in seen] == [Status.PASS]
        assert ("verdict", "pass") in item.user_properties
        assert suite.session.deadline_checks >= 1  # type: ignore[attr-defined]
    assert len(calls) == 4 + 4 + 1


def test_a_failing_verdict_fails_its_item_with_its_reason(tmp_path: Path) -> None:
    run = run_on(tmp_path, [f"nic-degraded@{RETURNED}"])
    suite, item, seen = _suite(run)
    with pytest.raises(pytest.fail.Exception) as failed:
        test_fabric.test_nccl_busbw(suite, "all_reduce_perf")
    assert [v.status for v in seen] == [Status.FAIL]
    assert "busbw" in str(failed.value)
    assert f"localized in 2 rounds: {RETURNED}" in str(failed.value)
    assert ("verdict", "fail") in item.user_properties


def test_items_that_do_not_apply_skip_saying_why(tmp_path: Path) -> None:
    run = run_on(tmp_path)
    with pytest.raises(pytest.skip.Exception, match="no --ticket or --probation-from: criterion 5 judges"):
        test_recurrence.test_no_recurrence(_suite(run)[0])
    # without a handover baseline the run records one: there is no restore whose loss could jump
    profile, _ = profile_of(tmp_path / "recording")
    context = RunContext.create(profile, None, returned_nodes=(), run_id="ra-mock", started=datetime.now(UTC))
    assert context.recording
    cluster = MockCluster.from_profile(profile, context.run_id)
    (tmp_path / "recording" / "run").mkdir()
    recording = Criteria(context, cluster, SharedFolder(tmp_path / "recording" / "run"), None, selected=SELECTED)
    with pytest.raises(pytest.skip.Exception, match="no restore at handover"):
        test_loss_continuity.test_loss_continuity(_suite(recording)[0])
    with pytest.raises(pytest.skip.Exception, match="not while recording a baseline"):
        test_recurrence.test_no_recurrence(_suite(recording)[0])


def test_a_node_set_that_is_not_ready_skips_the_items_that_need_it(tmp_path: Path) -> None:
    run = run_on(tmp_path, ["node-down@sim-node-14"])
    with pytest.raises(pytest.fail.Exception, match="sim-node-14"):
        test_preflight.test_node_set_ready(_suite(run)[0])
    for item in (
        lambda s: test_fabric.test_nccl_busbw(s, "all_reduce_perf"),
        lambda s: test_gpu_diagnostics.test_dcgm_diagnostics(s, RETURNED),
        test_smoke_step.test_smoke_step_time,
        test_loss_continuity.test_loss_continuity,
        lambda s: test_site_checks.test_site_check(s, ("any", "sim-node-01")),
    ):
        with pytest.raises(pytest.skip.Exception, match=PREFLIGHT_SKIP):
            item(_suite(run)[0])
