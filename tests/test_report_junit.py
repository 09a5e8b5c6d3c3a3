"""Verdicts as junit properties and as plain data that crosses pytest-xdist."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd

from acceptance.judge.verdict import Status, Verdict
from acceptance.report import junit
from acceptance.report.data import (
    VERDICTS_ATTR,
    ReportData,
    ReportRecorder,
    attach_verdicts,
    criterion_of,
    dumps,
    verdict_payload,
)


def _fabric() -> Verdict:
    table = pd.DataFrame(
        {"size": [1 << 20, 1 << 28], "busbw_now": [np.float64(40.5), 345.0], "busbw_baseline": [40.0, 380.0]}
    )
    figures = {
        "measured": np.float64(345.0),
        "expected": 380.0,
        "margin": 0.05,
        "ratio": 345 / 380,
        "unit": "GB/s",
        "size": np.int64(1 << 28),
        "wrong": 0,
        "passed": False,
        "node": None,
    }
    return Verdict(Status.FAIL, "all_reduce_perf", "busbw 9.2% below baseline at 256 MiB", figures, ("x",), table)


def test_verdict_properties_carry_every_figure_and_table_row():
    props = junit.verdict_properties(_fabric())
    names = [name for name, _ in props]
    assert names[:3] == ["verdict", "subject", "summary"]
    as_dict = dict(props)
    assert as_dict["verdict"] == "fail"
    assert as_dict["measured"] == "345"
    assert as_dict["expected"] == "380"
    assert as_dict["margin"] == "0.05"
    assert float(as_dict["ratio"]) == 345 / 380
    assert as_dict["size"] == "268435456"
    assert as_dict["passed"] == "false"
    assert as_dict["node"] == ""
    assert as_dict["row.0"] == "size=1048576 busbw_now=40.5 busbw_baseline=40"
    assert as_dict["row.1"] == "size=268435456 busbw_now=345 busbw_baseline=380"
    assert all(isinstance(v, str) for _, v in props)


def test_big_tables_are_capped_and_say_so():
    table = pd.DataFrame({"i": range(junit.MAX_TABLE_ROWS + 5)})
    props = dict(junit.verdict_properties(Verdict(Status.PASS, "s", "ok", table=table)))
    assert f"row.{junit.MAX_TABLE_ROWS - 1}" in props
    assert f"row.{junit.MAX_TABLE_ROWS}" not in props
    assert props["rows.omitted"] == "5"


def test_plot_only_tables_stay_out_of_the_junit():
    table = pd.DataFrame({"series": ["smoke"] * 1000, "step": range(1000), "step_time": [1.2] * 1000})
    table.attrs["plot_only"] = True
    verdict = Verdict(Status.PASS, "smoke step time", "ok", {"ratio": 1.01}, table=table)
    props = dict(junit.verdict_properties(verdict))
    assert props["rows.plot_only"] == "1000"
    assert props["ratio"] == "1.01"
    assert not any(name.startswith("row.") for name in props)
    assert verdict_payload(verdict)["table"]["rows"], "the rows still reach the HTML report"


def test_format_figure_edge_cases():
    assert junit.format_figure(float("nan")) == "nan"
    assert junit.format_figure(True) == "true"
    assert junit.format_figure(1e20) == "1e+20"
    assert junit.format_figure(np.float32(0.5)) == "0.5"


def test_suite_properties_flatten_provenance():
    props = junit.suite_properties(
        {
            "cluster": "sim",
            "simulated": True,
            "baseline": {"file": "b.json", "sha256": "ab"},
            "nodes": ["a", "b"],
        }
    )
    assert props == [
        ("cluster", "sim"),
        ("simulated", "true"),
        ("baseline.file", "b.json"),
        ("baseline.sha256", "ab"),
        ("nodes", "a,b"),
    ]


def test_payload_is_plain_json_and_round_trips():
    verdict = _fabric()
    verdict = Verdict(
        verdict.status,
        verdict.subject,
        verdict.summary,
        {**verdict.figures, "bad": math.inf},
        (),
        verdict.table,
    )
    payload = verdict_payload(verdict)
    text = json.dumps(payload, allow_nan=False)
    back = json.loads(text)
    assert back["figures"]["bad"] is None
    assert back["figures"]["size"] == 1 << 28
    assert back["table"]["columns"] == ["size", "busbw_now", "busbw_baseline"]
    assert back["table"]["rows"][1] == [1 << 28, 345.0, 380.0]
    empty = verdict_payload(Verdict(Status.PASS, "s", "ok", table=pd.DataFrame(columns=["size", "busbw_now"])))
    assert empty["table"] == {"columns": ["size", "busbw_now"], "rows": []}


def _report(nodeid: str, when: str, outcome: str, longrepr: object = None, **extra: object) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, when=when, outcome=outcome, duration=0.5, longrepr=longrepr, **extra)


def test_recorder_combines_phases_and_collects_worker_verdicts():
    rec = ReportRecorder()
    carrier = SimpleNamespace()
    attach_verdicts(carrier, [_fabric()])
    payloads = getattr(carrier, VERDICTS_ATTR)
    for when in ("setup", "call", "teardown"):
        extra = {VERDICTS_ATTR: payloads} if when == "call" else {}
        outcome = "failed" if when == "call" else "passed"
        crash = SimpleNamespace(reprcrash=SimpleNamespace(message="AssertionError: FAIL: busbw low\nmore"))
        rec.add(
            _report(
                "acceptance/test_fabric.py::test_fabric[x]",
                when,
                outcome,
                crash if when == "call" else None,
                **extra,
            )
        )
    rec.add(_report("acceptance/test_recurrence.py::test_p", "setup", "skipped", ("f", 1, "Skipped: no probation")))
    rec.add(_report("acceptance/test_recurrence.py::test_p", "teardown", "passed"))
    rec.add(_report("acceptance/test_preflight.py::test_a", "setup", "passed"))
    rec.add(_report("acceptance/test_preflight.py::test_a", "call", "passed"))
    rec.add(_report("acceptance/test_preflight.py::test_a", "teardown", "failed", "RuntimeError: cleanup failed"))
    data = rec.data({"cluster": "sim"}, simulated=True)
    by_id = {t.nodeid.split("::")[1]: t for t in data.tests}
    assert by_id["test_fabric[x]"].outcome == "failed"
    assert by_id["test_fabric[x]"].reason == "AssertionError: FAIL: busbw low"
    assert by_id["test_fabric[x]"].verdicts[0]["subject"] == "all_reduce_perf"
    assert by_id["test_fabric[x]"].duration_s == 1.5
    assert (by_id["test_p"].outcome, by_id["test_p"].reason) == ("skipped", "no probation")
    assert (by_id["test_a"].outcome, by_id["test_a"].reason) == ("error", "RuntimeError: cleanup failed")
    again = ReportData.from_json(json.loads(dumps(data)))
    assert again == data


def test_criterion_of_nodeid():
    assert criterion_of("acceptance/test_fabric.py::test_fabric[all_reduce_perf]")[0] == 2
    assert criterion_of("acceptance/test_preflight.py::test_x")[0] == 0
    assert criterion_of("tests/test_other.py::t") == (None, "test_other")
