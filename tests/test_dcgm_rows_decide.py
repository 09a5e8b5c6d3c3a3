"""A failed GPU (or other entity) row fails the node whatever DCGM's summary of its test says.

The outputs are real samples (corpus and project fixtures) with one row changed: a GPU's
result set to Fail under a test whose summary stays Pass, in JSON and in the text table.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from acceptance.cli import main
from acceptance.cmd.parse_dcgm import read_dcgm
from acceptance.judge.diagnostics import DiagnosticsPolicy, judge_node
from acceptance.judge.verdict import Status
from acceptance.tools.dcgm import DcgmReport, parse
from tests.shared import CORPUS, FIXTURES, needs_shared
from tests.test_dcgm_parse import STRESS, row, table

POLICY = DiagnosticsPolicy()
PASS8 = FIXTURES / "dcgm" / "dcgm-4.4.1-r3-json-8gpu-h200-pass.json"
GB10 = CORPUS / "dcgm" / "dcgm-4.2.3-r1-json-gb10-software-fail-persistence-mode.json"


def _tests(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for c in doc["DCGM Diagnostic"]["test_categories"] for t in c["tests"]]


def pass_over_failed_gpu(source: Path, test: str, gpu: int, tmp_path: Path) -> Path:
    """`source` with GPU `gpu`'s result of `test` set to Fail and the test's summary set to Pass."""
    doc = json.loads(source.read_text(encoding="utf-8"))
    entry = next(t for t in _tests(doc) if t["name"] == test)
    result = next(r for r in entry["results"] if r.get("entity_group") == "GPU" and r["entity_id"] == gpu)
    result["status"] = "Fail"
    entry["test_summary"]["status"] = "Pass"
    out = tmp_path / f"pass-over-failed-gpu{gpu}-{source.name}"
    out.write_text(json.dumps(doc, indent="\t"), encoding="utf-8")
    return out


def _cli(path: Path) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["parse", "dcgm", str(path)])
    return code, json.loads(out.getvalue())


def test_a_gpu_fail_under_a_pass_summary_fails_the_node_naming_gpu_and_test(tmp_path: Path) -> None:
    path = pass_over_failed_gpu(PASS8, "pcie", 3, tmp_path)
    report = read_dcgm(path)
    v = judge_node("sim-node-03", report, read_dcgm(PASS8), 8, POLICY, exit_code=0, level=3, reference_level=3)
    assert v.status is Status.FAIL
    assert report.status == "fail"
    pcie = report.test("pcie")
    assert pcie is not None
    assert (pcie.status, pcie.summary, pcie.gpus[3]) == ("fail", "pass", "fail")
    assert v.summary.startswith("sim-node-03 GPU 3: pcie failed (DCGM's summary of the test says Pass)")
    assert v.figures["test.pcie"] == "fail"
    assert v.figures["summary_disagrees"] == "pcie"
    assert any("pcie: DCGM's summary says Pass but GPU3 failed" in e for e in v.evidence), v.evidence


def test_the_parse_cli_records_the_disagreement_and_exits_1(tmp_path: Path) -> None:
    code, doc = _cli(pass_over_failed_gpu(PASS8, "targeted_power", 6, tmp_path))
    assert code == 1
    assert doc["status"] == "fail"
    assert doc["summary_disagrees"] == [
        {"test": "targeted_power", "summary": "pass", "status": "fail", "failed": ["GPU6"]}
    ]
    entry = next(t for t in doc["tests"] if t["name"] == "targeted_power")
    assert (entry["status"], entry["summary"], entry["gpus"]["6"]) == ("fail", "pass", "fail")
    assert DcgmReport.from_json(doc) == read_dcgm(pass_over_failed_gpu(PASS8, "targeted_power", 6, tmp_path))


@needs_shared
def test_the_corpus_gb10_sample_with_its_summary_turned_pass_still_fails(tmp_path: Path) -> None:
    """The real DCGM 4.2.3 document, its software summary changed to Pass over GPU 0's Fail."""
    report = read_dcgm(pass_over_failed_gpu(GB10, "software", 0, tmp_path))
    assert report.status == "fail"
    v = judge_node("gb10", report, None, [0], POLICY)
    assert v.status is Status.FAIL
    assert v.summary.startswith("gb10 GPU 0: software failed (Persistence Mode: Persistence mode for GPU 0")
    assert "(DCGM's summary of the test says Pass)" in v.summary


def test_a_failed_cpu_entity_under_a_pass_summary_fails_the_node(tmp_path: Path) -> None:
    doc = json.loads(PASS8.read_text(encoding="utf-8"))
    entry = next(t for t in _tests(doc) if t["name"] == "memory")
    warning = {"error_category": 15, "error_id": 44, "error_severity": 1, "warning": "CPU 0 miscompare"}
    cpu = {"entity_group": "CPU", "entity_group_id": 7, "entity_id": 0, "status": "Fail", "warnings": [warning]}
    entry["results"].append(cpu)
    path = tmp_path / "cpu0-fail.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    report = read_dcgm(path)
    v = judge_node("n", report, None, 8, POLICY)
    assert v.status is Status.FAIL
    assert v.summary.startswith("n: memory failed on CPU0 (CPU 0 miscompare")
    memory = report.test("memory")
    assert memory is not None
    assert (memory.status, memory.summary, dict(memory.entities)) == ("fail", "pass", {"CPU0": "fail"})
    assert report.gpus[0] == "pass"  # the CPU row is no GPU's


def test_dcgm4_text_gpu_row_fail_under_an_overall_pass_row_fails() -> None:
    text = table(STRESS, row("targeted_stress", "Pass"), row("", "GPU0: Pass"), row("", "GPU1: Fail"))
    report = parse(text)
    v = judge_node("n", report, None, 2, POLICY)
    assert v.status is Status.FAIL
    assert v.summary.startswith("n GPU 1: targeted_stress failed (DCGM's summary of the test says Pass)")
    assert report.status == "fail"
    test = report.test("targeted_stress")
    assert test is not None
    assert (test.status, test.summary, dict(test.gpus)) == ("fail", "pass", {0: "pass", 1: "fail"})


def test_dcgm4_text_cpu_row_fail_under_an_overall_pass_row_fails() -> None:
    report = parse(table(STRESS, row("cpu_eud", "Pass"), row("", "CPU0: Fail"), row("", "GPU0: Pass")))
    assert judge_node("n", report, None, 1, POLICY).status is Status.FAIL
    test = report.test("cpu_eud")
    assert test is not None
    assert (test.status, dict(test.entities)) == ("fail", {"CPU0": "fail"})


def test_dcgm3_text_gpu_row_fail_is_not_overwritten_by_pass_all() -> None:
    text = table(STRESS, row("Targeted Stress", "Pass - All"), row("", "Fail - GPU: 0   "))
    report = parse(text)
    test = report.test("targeted_stress")
    assert test is not None
    assert test.gpus[0] == "fail"
    assert test.status == "fail"
    assert judge_node("n", report, None, 2, POLICY).status is Status.FAIL


def test_a_stored_report_with_a_failed_gpu_under_a_pass_test_still_fails() -> None:
    """A report written before tests carried `summary` (a baseline, a ticket) is judged by its rows too."""
    doc = read_dcgm(PASS8).to_json()
    entry = next(t for t in doc["tests"] if t["name"] == "diagnostic")
    entry["gpus"]["2"] = "fail"
    for t in doc["tests"]:
        t.pop("entities", None), t.pop("summary", None)
    doc.pop("summary_disagrees", None)
    v = judge_node("n", DcgmReport.from_json(doc), None, 8, POLICY)
    assert v.status is Status.FAIL
    assert v.summary.startswith("n GPU 2: diagnostic failed (DCGM's summary of the test says Pass)")


@pytest.mark.parametrize("status", ["Skip", "Pass"])
def test_rows_that_agree_with_the_summary_add_no_note(status: str) -> None:
    report = parse(table(STRESS, row("targeted_power", status), row("", f"GPU0: {status}")))
    assert report.summary_disagrees() == []
    assert report.tests[0].summary is None
