"""The run's one ReportRecorder also keeps what the terminal summary and the run's end read."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from acceptance.report.data import VERDICTS_ATTR, ReportRecorder

PROBATION = {"test_recurrence"}


def _report(nodeid: str, when: str, outcome: str, longrepr: object = None, **extra: object) -> Any:
    return SimpleNamespace(nodeid=nodeid, when=when, outcome=outcome, duration=0.1, longrepr=longrepr, **extra)


def _crash(message: str) -> Any:
    return SimpleNamespace(reprcrash=SimpleNamespace(message=message))


def test_every_failed_report_is_one_line_and_skips_are_counted_by_reason() -> None:
    rec = ReportRecorder()
    rec.add(_report("acceptance/test_fabric.py::test_nccl[a]", "call", "failed", _crash("Failed: FAIL: busbw low")))
    rec.add(_report("acceptance/test_fabric.py::test_nccl[a]", "teardown", "failed", "RuntimeError: gone"))
    rec.add(_report("acceptance/test_fabric.py::test_nccl[b]", "call", "failed", ""))
    for node in ("n1", "n2"):
        rec.add(_report(f"acceptance/test_gpu.py::test_dcgm[{node}]", "setup", "skipped", ("f", 1, "Skipped: why")))
    rec.add(_report("acceptance/test_gpu.py::test_dcgm[n3]", "call", "skipped", "not a skip tuple"))
    assert rec.failures == ["test_nccl[a]: busbw low", "test_nccl[a]: RuntimeError: gone", "test_nccl[b]: failed"]
    assert rec.skips == {"why": 2}
    rec.failures.append("not kept")  # the tally is read, never changed from outside
    assert len(rec.failures) == 3


def test_the_probation_verdict_is_the_first_of_the_latest_call_of_its_module() -> None:
    rec = ReportRecorder()
    assert rec.latest_call_verdict(PROBATION) is None
    first, second = {"status": "pending"}, {"status": "pass"}
    rec.add(_report("acceptance/test_recurrence.py::test_no_recurrence", "setup", "passed"))
    rec.add(_report("acceptance/test_recurrence.py::test_no_recurrence", "call", "passed", **{VERDICTS_ATTR: [first]}))
    rec.add(_report("acceptance/test_fabric.py::test_nccl[a]", "call", "passed", **{VERDICTS_ATTR: [second]}))
    assert rec.latest_call_verdict(PROBATION) == first
    rec.add(_report("acceptance/test_recurrence.py::test_again", "call", "passed", **{VERDICTS_ATTR: [second, first]}))
    assert rec.latest_call_verdict(PROBATION) == second
    rec.add(_report("acceptance/test_recurrence.py::test_last", "call", "failed", _crash("boom")))
    assert rec.latest_call_verdict(PROBATION) is None  # the latest call gave no verdict
