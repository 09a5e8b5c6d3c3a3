"""`acceptance parse nccl FILE`: JSON on stdout, exit 0 / 1 / 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acceptance.cli import main
from tests.shared import CORPUS, FIXTURES, needs_shared


def test_clean_run_exits_0_with_design_shape(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "nccl" / "nccl-tests-2.19.2-allreduce-2node-16rank-per-iteration-I1.txt"
    assert main(["parse", "nccl", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"kind", "status", "runs", "errors"}
    assert (doc["kind"], doc["status"]) == ("nccl-tests", "ok")
    run = doc["runs"][0]
    assert {
        "collective",
        "nccl_tests_version",
        "nccl_version",
        "nranks",
        "hosts",
        "ranks",
        "params",
        "rows",
        "avg_busbw",
        "out_of_bounds",
        "status",
        "errors",
    } <= set(run)
    assert set(run["ranks"][0]) >= {"rank", "host", "device", "busid", "gpu"}
    assert set(run["rows"][0]) == {"size", "count", "type", "redop", "root", "oop", "ip"}
    assert set(run["rows"][0]["oop"]) >= {"time_us", "algbw", "busbw", "wrong"}


def test_failed_run_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "nccl" / "nccl-tests-2.17.8-allreduce-2node-timeout-T30-hang.txt"
    assert main(["parse", "nccl", str(path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "failed"
    assert doc["runs"][0]["errors"][0] == {
        "line": 34,
        "text": "gpu-01: Test timeout (30s) common.cu:412",
        "host": "gpu-01",
        "kind": "test",
    }


@needs_shared
def test_a_run_that_died_before_the_header_is_a_failure_naming_its_host(capsys: pytest.CaptureFixture[str]) -> None:
    """Launcher errors only (PALS could not allocate the NIC): a failure with every failure line, not exit 2."""
    path = CORPUS / "nccl" / "launcher-only-cxi-alloc-failed-no-nccl-output.txt"
    assert main(["parse", "nccl", str(path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert (doc["status"], doc["runs"]) == ("failed", [])
    assert doc["errors"] == [
        {
            "line": 1,
            "text": "start failed on x3006c0s1b1n0: CXI alloc failed on cxi0: request exceeds ACs limits",
            "host": "x3006c0s1b1n0",
            "kind": "launcher",
        },
        {"line": 2, "text": "CXI alloc failed on cxi1: request exceeds ACs limits", "host": None, "kind": "launcher"},
    ]


def test_text_with_nothing_of_nccl_exits_2_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("we tried again and the copy failed\nsee ticket 12\n")
    assert main(["parse", "nccl", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert str(path) in captured.err
    assert "the copy failed" in captured.err


@needs_shared
def test_collective_option_names_old_output(capsys: pytest.CaptureFixture[str]) -> None:
    path = CORPUS / "nccl" / "nccl-tests-pre2.17-allreduce-2node-16rank-a100-unhandled-system-error-prterun.txt"
    assert main(["parse", "nccl", str(path), "--collective", "all_reduce_perf"]) == 1
    assert json.loads(capsys.readouterr().out)["runs"][0]["collective"] == "all_reduce"


def test_bad_collective_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "nccl" / "nccl-tests-2.17.8-allreduce-J-report.json"
    with pytest.raises(SystemExit) as info:
        main(["parse", "nccl", str(path), "--collective", "gossip"])
    assert info.value.code == 2
    assert "gossip" in capsys.readouterr().err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "nccl", str(tmp_path / "nope.txt")]) == 2
    assert "nope.txt" in capsys.readouterr().err


def test_bad_header_exits_2_with_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cap.txt"
    path.write_text("noise\n# nThread 1 nGpus x\n")
    assert main(["parse", "nccl", str(path)]) == 2
    assert f"{path}:2" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "line", "text"),
    [
        ("duplicated", 30, "size 4194304 where the sweep (minBytes 1048576 maxBytes 1073741824 step: 2(factor))"),
        ("deleted", 30, "size 8388608 where the sweep (minBytes 1048576 maxBytes 1073741824 step: 2(factor))"),
        ("N/A", 30, "N/A where the out-of-place busbw belongs at size 4194304 (float)"),
    ],
)
def test_a_row_repeated_missing_or_unmeasured_exits_1_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: str, line: int, text: str
) -> None:
    """Issue 23: such tables parsed `ok` (exit 0) and could be recorded as a baseline."""
    lines = (FIXTURES / "nccl" / "nccl-tests-2.17.8-allreduce-srun-label-warn-mid-table-split-rows.txt").read_text()
    rows = lines.splitlines(keepends=True)
    assert rows[29].startswith("0:      4194304 ")
    if change == "duplicated":
        rows.insert(29, rows[29])
    elif change == "deleted":
        del rows[29]
    else:
        rows[29] = rows[29].replace(" 136.83 ", "    N/A ", 1)
    path = tmp_path / "capture.txt"
    path.write_text("".join(rows))
    assert main(["parse", "nccl", str(path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "incomplete"
    errors = [e for e in doc["runs"][0]["errors"] if e["kind"] == "output"]
    assert errors[0]["line"] == line + (1 if change == "duplicated" else 0)
    assert errors[0]["text"].startswith(text)
