"""The banner's decision: ACCEPTED only when every condition holds, over every combination of item states."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from acceptance.report.data import ReportData, TestRecord
from acceptance.report.decision import Banner, State, classify, decide
from acceptance.report.statuses import PREFLIGHT_SKIP

MODULES = {
    0: "test_preflight.py::test_nodes",
    1: "test_gpu_diagnostics.py::test_dcgm_diagnostics[n1]",
    2: "test_fabric.py::test_nccl_busbw[all_reduce_perf]",
    3: "test_smoke_step.py::test_smoke_step_time",
    4: "test_loss_continuity.py::test_loss_continuity",
    5: "test_recurrence.py::test_no_recurrence",
}


def payload(status: str, summary: str = "", **figures: Any) -> dict[str, Any]:
    return {"status": status, "subject": "s", "summary": summary or f"{status} summary", "figures": figures,
            "evidence": [], "table": {"columns": [], "rows": []}}  # fmt: skip


# Each kind of item a run can hold: (outcome, skip reason, verdicts) and the banner it alone allows.
KINDS: dict[str, tuple[str, str, tuple[dict[str, Any], ...], Banner]] = {
    "pass": ("passed", "", (payload("pass"),), Banner.ACCEPTED),
    "pass-no-verdict": ("passed", "", (), Banner.ACCEPTED),
    "fail": ("failed", "FAIL: x", (payload("fail"),), Banner.NOT_ACCEPTED),
    "error-verdict": ("failed", "ERROR: x", (payload("error"),), Banner.NOT_ACCEPTED),
    "error-outcome": ("error", "fixture broke", (), Banner.NOT_ACCEPTED),
    "not-comparable": ("failed", "", (payload("not-comparable"),), Banner.NOT_ACCEPTED),
    "inconclusive": ("failed", "", (payload("inconclusive"),), Banner.NOT_ACCEPTED),
    "skip-not-applicable": ("skipped", "no --ticket: criterion 5 judges the probation later", (), Banner.ACCEPTED),
    "skip-preflight": ("skipped", f"{PREFLIGHT_SKIP}node n3 NotReady", (), Banner.NOT_ACCEPTED),
    "pending": ("skipped", "PENDING: window open", (payload("pending", "6h of 1d elapsed"),), Banner.PENDING),
    "pending-reason-only": ("skipped", "PENDING: window open", (), Banner.PENDING),
    # a verdict that is not a pass on an item pytest let pass is still not accepted
    **{
        f"{status}-verdict-on-passed-item": ("passed", "", (payload("pass"), payload(status)), Banner.NOT_ACCEPTED)
        for status in ("fail", "error", "not-comparable", "inconclusive")
    },
    "not-comparable-verdict-on-skipped-item": ("skipped", "n/a", (payload("not-comparable"),), Banner.NOT_ACCEPTED),
    "pending-verdict-on-passed-item": ("passed", "", (payload("pending"),), Banner.PENDING),
    "unknown-outcome": ("weird", "", (), Banner.NOT_ACCEPTED),
}
RANK = {Banner.ACCEPTED: 0, Banner.PENDING: 1, Banner.NOT_ACCEPTED: 2}


def alone(kind: str, criterion: int) -> Banner:
    """The banner one item allows: a by-design skip excuses only criterion 5 (criteria 0-4 must be judged)."""
    if kind == "skip-not-applicable" and criterion < 5:
        return Banner.NOT_ACCEPTED
    return KINDS[kind][3]


def record(criterion: int, kind: str, suffix: str = "") -> TestRecord:
    outcome, reason, verdicts, _ = KINDS[kind]
    return TestRecord(f"acceptance/{MODULES[criterion]}{suffix}", outcome, 0.0, reason, verdicts)


def run_of(*records: TestRecord, interrupted: str = "") -> ReportData:
    """A full acceptance run (criteria 0-4 passed) with `records` added."""
    base = tuple(record(c, "pass", "[base]") for c in range(5))
    return ReportData({"interrupted": interrupted} if interrupted else {}, (*base, *records))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("criterion", range(6))
def test_one_item_decides_as_its_kind_in_any_criterion(criterion: int, kind: str) -> None:
    assert decide(run_of(record(criterion, kind))).banner is alone(kind, criterion)


@pytest.mark.parametrize(("first", "second"), list(itertools.product(KINDS, repeat=2)))
def test_two_items_give_the_worse_of_their_banners(first: str, second: str) -> None:
    """NOT ACCEPTED beats PENDING beats ACCEPTED, whatever the criteria of the two items."""
    for a, b in ((1, 5), (2, 3), (5, 5)):
        expected = max(alone(first, a), alone(second, b), key=RANK.__getitem__)
        assert decide(run_of(record(a, first), record(b, second))).banner is expected, (a, b)


@pytest.mark.parametrize("kind", KINDS)
def test_an_interrupted_run_is_never_accepted_nor_pending(kind: str) -> None:
    decision = decide(run_of(record(1, kind), interrupted="SIGTERM"))
    assert decision.banner is Banner.NOT_ACCEPTED
    assert decision.line().startswith("NOT ACCEPTED: INTERRUPTED (SIGTERM): the run was stopped before it finished")


def test_a_partial_acceptance_run_accepts_nothing() -> None:
    """`-k fabric` that passes: criteria 0, 1, 3 and 4 were not judged."""
    decision = decide(ReportData({}, (record(2, "pass"),)))
    assert decision.banner is Banner.NOT_ACCEPTED
    assert decision.line() == (
        "NOT ACCEPTED: criteria 0, 1, 3, 4 not in this run (a partial selection: -k or a file list); "
        "only a run of criteria 0–4 accepts a cluster"
    )


def first_criteria(*numbers: int) -> tuple[TestRecord, ...]:
    return tuple(record(n, "pass") for n in numbers)


def test_criteria_an_interrupted_run_did_not_finish_are_not_called_a_partial_selection() -> None:
    """SIGTERM during criterion 2 of a full run: 3 and 4 were selected, and never reached."""
    data = ReportData({"interrupted": "SIGTERM", "selected_criteria": [0, 1, 2, 3, 4]}, first_criteria(0, 1, 2))
    decision = decide(data)
    assert decision.banner is Banner.NOT_ACCEPTED
    assert decision.reasons[1:] == ("criteria 3, 4 not judged: the run was interrupted before they finished",)
    assert "partial selection" not in decision.line()


def test_an_interrupted_partial_selection_says_which_criteria_were_which() -> None:
    data = ReportData({"interrupted": "SIGINT", "selected_criteria": [0, 1, 2, 3]}, first_criteria(0, 1))
    assert decide(data).reasons[1:] == (
        "criteria 2, 3 not judged: the run was interrupted before they finished",
        "criterion 4 not in this run (a partial selection: -k or a file list); "
        "only a run of criteria 0–4 accepts a cluster",
    )


def test_an_interrupted_run_whose_selection_is_unknown_names_both_possibilities() -> None:
    """The pytest-xdist controller collects nothing itself: the selection is not known."""
    decision = decide(ReportData({"interrupted": "SIGTERM"}, first_criteria(0, 1, 2, 3)))
    assert decision.reasons[1:] == (
        "criterion 4 not judged: the run was interrupted before it finished, or it was not selected; "
        "only a run of criteria 0–4 accepts a cluster",
    )


def test_a_run_stopped_by_maxfail_says_so_and_what_it_did_not_finish() -> None:
    stopped = {"stopped": "stopping after 1 failures", "selected_criteria": [0, 1, 2, 3, 4]}
    decision = decide(ReportData(stopped, (*first_criteria(0, 1), record(2, "fail"))))
    assert decision.banner is Banner.NOT_ACCEPTED
    assert decision.line() == (
        "NOT ACCEPTED: STOPPED EARLY (stopping after 1 failures: -x or --maxfail): the items after that point did "
        "not run; criteria 3, 4 not judged: the run was stopped early before they finished; 1 item failed (criterion 2)"
    )


def test_a_run_stopped_early_is_not_accepted_even_with_every_criterion_present() -> None:
    """Items of a criterion after the stop did not run, whatever the criteria present say."""
    data = ReportData({"stopped": "stopping after 1 failures"}, first_criteria(0, 1, 2, 3, 4))
    assert decide(data).banner is Banner.NOT_ACCEPTED


def test_a_passing_probation_run_names_criterion_5_in_its_headline() -> None:
    decision = decide(ReportData({}, (record(5, "pass"),)))
    assert decision.line() == "ACCEPTED: the 1 judged item passed (criterion 5: no recurrence during probation)"
    two = decide(ReportData({}, (record(5, "pass"), record(5, "pass", "[again]"))))
    assert two.line() == "ACCEPTED: all 2 judged items passed (criterion 5: no recurrence during probation)"


def test_a_probation_run_alone_is_judged_on_criterion_5() -> None:
    assert decide(ReportData({}, (record(5, "pass"),))).banner is Banner.ACCEPTED
    pending = decide(ReportData({}, (record(5, "pending"),)))
    assert pending.banner is Banner.PENDING
    assert pending.line() == "PENDING: 5. no recurrence during probation still open: 6h of 1d elapsed"
    assert decide(ReportData({}, (record(5, "inconclusive"),))).banner is Banner.NOT_ACCEPTED


@pytest.mark.parametrize(
    "data",
    [ReportData({}, ()), ReportData({}, (record(5, "skip-not-applicable"),))],
    ids=["no test", "only skips"],
)
def test_nothing_judged_is_not_accepted(data: ReportData) -> None:
    decision = decide(data)
    assert decision.banner is Banner.NOT_ACCEPTED
    assert decision.line() in ("NOT ACCEPTED: no test ran", "NOT ACCEPTED: no item was judged")


def test_failures_are_counted_and_labelled_by_criterion() -> None:
    data = run_of(record(1, "fail", "[n2]"), record(2, "not-comparable"), record(1, "error-outcome", "[n3]"))
    decision = decide(data)
    assert decision.line() == "NOT ACCEPTED: 3 items failed (criteria 1, 2)"
    assert [f"{c.heading}: {i.line}" for c in decision.criteria for i in c.having(State.FAILED, State.BLOCKED)] == [
        "1. DCGM diagnostics on every GPU: FAIL: fail summary",
        "1. DCGM diagnostics on every GPU: ERROR: fixture broke",
        "2. nccl-tests within the margin of the baseline: NOT COMPARABLE: not-comparable summary",
    ]


def test_accepted_line_counts_the_judged_items_and_names_what_did_not_apply() -> None:
    decision = decide(run_of(record(5, "skip-not-applicable")))
    assert decision.line() == "ACCEPTED: all 5 judged items passed (criteria 0, 1, 2, 3, 4)"
    (probation,) = [c for c in decision.criteria if c.number == 5]
    assert probation.state is State.NOT_APPLICABLE


def test_passed_items_collapse_into_one_line_per_criterion() -> None:
    dcgm = [
        TestRecord(f"acceptance/test_gpu_diagnostics.py::test_dcgm_diagnostics[n{i}]", "passed", 0.0, "",
                   (payload("pass", node=f"n{i}", level=3),))
        for i in range(15)
    ] + [TestRecord("acceptance/test_gpu_diagnostics.py::test_dcgm_diagnostics[n15]", "failed", 0.0, "",
                    (payload("fail", node="n15", level=3),))]  # fmt: skip
    (criterion,) = decide(ReportData({}, tuple(dcgm))).criteria
    assert criterion.passed_line() == "15/16 nodes passed DCGM r3"
    assert [i.state for i in criterion.items].count(State.PASSED) == 15


def test_classify_keeps_the_deciding_verdict_and_its_line() -> None:
    verdicts = (payload("pass"), payload("not-comparable", "nccl 2.21 vs 2.26 at handover"))
    item = classify(TestRecord("acceptance/test_fabric.py::t", "failed", 0.0, "", verdicts))
    assert item.state is State.FAILED
    assert item.line == "NOT COMPARABLE: nccl 2.21 vs 2.26 at handover"
    assert item.verdict is not None
    assert item.verdict["status"] == "not-comparable"


def test_items_the_preflight_kept_from_running_are_counted_apart_from_failures() -> None:
    data = ReportData({}, (record(0, "fail"), *(record(c, "skip-preflight") for c in (1, 2, 3, 4))))
    assert decide(data).line() == (
        "NOT ACCEPTED: 1 item failed (criterion 0); 4 items not judged (criteria 1, 2, 3, 4)"
    )


def test_a_skipped_acceptance_item_is_not_judged_except_loss_while_recording() -> None:
    """Loss continuity has no restore to judge at handover; anywhere else a skip of criteria 0-4 blocks."""
    skipped_loss = record(4, "skip-not-applicable")
    judging = decide(run_of(skipped_loss))
    assert judging.banner is Banner.NOT_ACCEPTED
    assert judging.line() == "NOT ACCEPTED: 1 item not judged (criterion 4)"
    recording = ReportData({"mode": "record-baseline"}, run_of(skipped_loss).tests)
    assert decide(recording).banner is Banner.ACCEPTED
    smoke = ReportData({"mode": "record-baseline"}, run_of(record(3, "skip-not-applicable")).tests)
    assert decide(smoke).banner is Banner.NOT_ACCEPTED
