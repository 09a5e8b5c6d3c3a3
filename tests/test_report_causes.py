"""The report's headline (one cause for several failures) and its localization matrix, from verdict payloads."""

from __future__ import annotations

from typing import Any

from acceptance.report.causes import finding, headline
from acceptance.report.data import ReportData, TestRecord
from acceptance.report.localize import matrix, render

THROTTLE = (
    "sim-node-05 GPU 2: targeted_stress failed (Detected clocks event due to thermal violation for GPU 2 "
    "[DCGM_FR_CLOCKS_EVENT_THERMAL]) (+1 more) — DCGM 4.2.3 r3; check the node's cooling and airflow"
)


def verdict(status: str, summary: str, **figures: Any) -> dict[str, Any]:
    return {"status": status, "subject": "", "summary": summary, "figures": figures, "evidence": [], "table": {}}


def record(nodeid: str, *verdicts: dict[str, Any], outcome: str = "failed") -> TestRecord:
    return TestRecord(nodeid, outcome, verdicts=verdicts)


DCGM = record("acceptance/test_gpu_diagnostics.py::test_dcgm_diagnostics[sim-node-05]",
            verdict("fail", THROTTLE, node="sim-node-05", worst_gpu=2))  # fmt: skip
SMOKE = record("acceptance/test_smoke_step.py::test_smoke_step_time",
             verdict("fail", "smoke step time 1.336 s vs 1.201 s", ratio=1.128))  # fmt: skip
LOSS_JUMP = record("acceptance/test_loss_continuity.py::test_loss_continuity",
                   verdict("fail", "loss continuity: first step beyond at 1001", worst_z=9.1))  # fmt: skip
NO_LOSS = record("acceptance/test_loss_continuity.py::test_loss_continuity",
                 verdict("fail", "loss continuity: the training job failed; see the evidence folder"))  # fmt: skip


def fabric(name: str, culprit: str = "sim-node-07", kind: str = "nic", ratio: float = 0.612) -> TestRecord:
    figures = {"worst_ratio": ratio, "culprit": culprit, "culprit_kind": kind, "localize_confirmed": True}
    return record(f"acceptance/test_fabric.py::test_nccl_busbw[{name}]", verdict("fail", f"{name}: slow", **figures))


def test_a_throttling_gpu_explains_the_slow_smoke_step() -> None:
    assert headline(ReportData(tests=(DCGM, SMOKE))) == [
        "sim-node-05 GPU 2 thermal throttling (criterion 1) explains smoke step +12.8% (criterion 3)"
    ]


def test_a_localized_node_explains_every_fabric_item_and_the_smoke_step() -> None:
    data = ReportData(tests=(fabric("all_reduce_perf"), fabric("alltoall_perf", ratio=0.81), SMOKE))
    assert headline(data) == [
        "sim-node-07 network (NIC or link) (criterion 2) explains nccl-tests busbw −38.8% (2 items, criterion 2), "
        "smoke step +12.8% (criterion 3)"
    ]


def test_the_same_node_found_by_dcgm_and_by_localization_is_one_cause() -> None:
    data = ReportData(tests=(DCGM, fabric("all_reduce_perf", culprit="sim-node-05", kind="node"), SMOKE))
    assert headline(data) == [
        "sim-node-05 GPU 2 thermal throttling (criteria 1 and 2) explains nccl-tests busbw −38.8% (1 item, "
        "criterion 2), smoke step +12.8% (criterion 3)"
    ]


def test_a_switch_conclusion_is_a_cause_of_its_own() -> None:
    data = ReportData(tests=(fabric("all_reduce_perf", culprit="leaf-01<->leaf-02", kind="switch", ratio=0.7),))
    assert headline(data) == [
        "leaf-01<->leaf-02 (switch link) (criterion 2) explains nccl-tests busbw −30.0% (1 item, criterion 2)"
    ]


def test_two_causes_do_not_claim_the_smoke_step_and_a_loss_jump_is_never_hardware() -> None:
    data = ReportData(tests=(DCGM, fabric("all_reduce_perf"), SMOKE, LOSS_JUMP))
    lines = headline(data)
    assert lines == [
        "sim-node-07 network (NIC or link) (criterion 2) explains nccl-tests busbw −38.8% (1 item, criterion 2)"
    ]
    assert headline(ReportData(tests=(DCGM, LOSS_JUMP))) == []
    assert headline(ReportData(tests=(DCGM, NO_LOSS))) == [
        "sim-node-05 GPU 2 thermal throttling (criterion 1) explains loss continuity: no run to judge (criterion 4)"
    ]


def test_no_failure_no_headline() -> None:
    assert (
        headline(ReportData(tests=(record("acceptance/test_fabric.py::x", verdict("pass", "ok"), outcome="passed"),)))
        == []
    )


def test_dcgm_findings_in_a_few_words() -> None:
    assert finding("sim-node-03 GPU 5: diagnostic failed (XID 79 ...)") == "XID 79"
    assert finding(THROTTLE) == "thermal throttling"
    assert finding("memory failed [DCGM_FR_ECC_DBE]") == "uncorrectable ECC error"
    assert finding("something else") == "failed DCGM diagnostics"


L12, L11 = ["leaf-01", "leaf-02"], ["leaf-01", "leaf-01"]
DETAILS = {
    "test": "all_gather_perf", "culprit": "n-07", "culprit_kind": "nic", "summary": "n-07: every group ...",
    "sizes": [1 << 30], "reference": "the pair baseline recorded at handover", "seconds": 2.0,
    "rounds": [
        {"round": 1, "purpose": "screen", "groups": [
            {"nodes": ["n-01", "n-09"], "leaves": L12, "status": "ok", "ratio": 1.0, "detail": "100%"},
            {"nodes": ["n-07", "n-15"], "leaves": L12, "status": "slow", "ratio": 0.62, "detail": "62%"},
        ]},
        {"round": 2, "purpose": "suspects", "groups": [
            {"nodes": ["n-07", "n-01"], "leaves": L11, "status": "slow", "ratio": 0.62, "detail": "62%"},
        ]},
    ],
}  # fmt: skip


def test_the_matrix_has_a_row_per_node_culprits_first_and_a_column_per_round() -> None:
    rounds, rows, cells = matrix(DETAILS)
    assert rounds == [1, 2]
    assert rows == [("leaf-01", "n-07"), ("leaf-01", "n-01"), ("leaf-02", "n-09"), ("leaf-02", "n-15")]
    assert cells[("n-07", 2)]["nodes"] == ["n-07", "n-01"]
    assert ("n-15", 2) not in cells


def test_the_section_shows_each_localization_once() -> None:
    payloads = [{"details": {"localize": DETAILS}}, {"details": {"localize": DETAILS}}, {"figures": {}}]
    html = render(payloads)
    assert html.count("<table>") == 1
    assert '<td class="fail" title="62%">62% <small>with n-15</small></td>' in html
    assert '<td class="notrun">–</td>' in html
    assert "no localization" in render([{"figures": {}}])
