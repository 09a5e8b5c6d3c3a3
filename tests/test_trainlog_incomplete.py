"""A log cut inside its last line is `incomplete`, and says which line it dropped (issue 23).

It was `status: ok` with the line dropped silently from the JSON (only a note said so).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.tools import trainlog
from tests.shared import FIXTURES

TL = FIXTURES / "trainlogs"


def _cut(tmp_path: Path, name: str, keep_bytes: int) -> Path:
    text = (TL / name).read_bytes()
    out = tmp_path / name
    out.write_bytes(text[:keep_bytes])
    return out


def test_a_megatron_log_cut_mid_line_is_incomplete_with_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = (TL / "megatron_lm_resumed_ok.log").read_text()
    lines = whole.splitlines(keepends=True)
    keep = sum(len(line) for line in lines[:8]) + 60  # line 9 cut after 60 characters
    path = _cut(tmp_path, "megatron_lm_resumed_ok.log", keep)
    assert main(["parse", "trainlog", str(path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "incomplete"
    assert doc["errors"] == [{"line": 9, "text": lines[8][:60].strip()}]
    assert [s["step"] for s in doc["steps"]][-1] == 405  # line 9 (step 406) is not handed on
    # the whole file is clean, with an empty error list
    assert main(["parse", "trainlog", str(TL / "megatron_lm_resumed_ok.log")]) == 0
    clean = json.loads(capsys.readouterr().out)
    assert (clean["status"], clean["errors"]) == ("ok", [])


def test_the_bulk_path_reports_the_same_cut_line(tmp_path: Path) -> None:
    from acceptance.cmd.parse_trainlog import read_trainlog

    whole = (TL / "megatron_lm_pre_incident.log").read_bytes()
    last_record = whole.rstrip(b"\n").rfind(b"\n", 0, whole.rfind(b"iteration")) + 1
    path = _cut(tmp_path, "megatron_lm_pre_incident.log", last_record + 120)  # inside the last record
    slow = read_trainlog(path)
    fast = read_trainlog(path, keep=["step_time_s", "loss"])
    assert slow.status() == fast.status() == "incomplete"
    assert slow.errors == fast.errors
    assert len(slow.errors) == 1


@pytest.mark.parametrize(
    ("name", "fmt", "columns"),
    [("generic_custom.jsonl", "jsonl", {"step": "it", "loss": "train/loss"}), ("generic.csv", "csv", None)],
)
def test_a_cut_jsonl_or_csv_line_is_an_error_too(name: str, fmt: str, columns: dict[str, str] | None) -> None:
    text = (TL / name).read_text()
    log = trainlog.parse(io.StringIO(text[:-3]), name, fmt, columns)
    assert log.status() == "incomplete"
    assert log.errors[0].line == text[:-3].count("\n") + 1
    assert log.to_json()["errors"][0]["text"] == text[:-3].splitlines()[-1].strip()


def test_a_nan_log_stays_failed_even_when_cut() -> None:
    text = (TL / "nanogpt.log").read_text()
    log = trainlog.parse(io.StringIO(text + "iter 31: loss 4.1"))
    assert log.status() == "failed"
    assert log.errors[-1].text == "iter 31: loss 4.1"
