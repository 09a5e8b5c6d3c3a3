"""DCGM and training-log parsers never hand on a cut or damaged output as a whole one (issue 19, part 5).

Random cuts of every corpus sample and fixture: a cut DCGM output is `pass` only when it is the
whole diagnostic; a cut training log yields the full log's steps with the same values (the last
may lose fields it never got), never a number read from a cut line, and a JSON log cut anywhere
is a ParseError with its line (it was an IndexError). An all-skip DCGM run says `skip` and what
was skipped, agreeing with its exit status.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from acceptance.cli import main
from acceptance.errors import ParseError
from acceptance.tools import dcgm, trainlog
from tests.hostile import cuts, dcgm_files, read, trainlog_files
from tests.shared import CORPUS, FIXTURES, needs_shared

DCGM = dcgm_files()
LOGS = trainlog_files()


def _parse_dcgm(text: str, path: Path) -> dcgm.DcgmReport | ParseError:
    try:
        return dcgm.parse(text, str(path))
    except ParseError as exc:
        return exc


@pytest.mark.parametrize("path", DCGM, ids=[p.name[:70] for p in DCGM])
def test_a_cut_dcgm_output_passes_only_when_it_is_the_whole_diagnostic(path: Path) -> None:
    text = read(path)
    full = _parse_dcgm(text, path)
    for cut in cuts(text, 20, path.name):
        part = _parse_dcgm(text[:cut], path)
        if isinstance(part, ParseError):  # refused, naming the file: allowed, never a wrong pass
            assert part.source == str(path)
            continue
        if part.status == "pass":
            assert part == full, f"{path.name} cut at {cut} passes unlike the whole output"


def _steps(log: trainlog.TrainLog) -> list[dict[str, Any]]:
    ignore = {"segment", "nan", "skipped", "rank"}
    return [
        {k: v for k, v in record.items() if k not in ignore and not (isinstance(v, float) and math.isnan(v))}
        for record in log.frame().to_dict(orient="records")
    ]


@pytest.mark.heavy
@pytest.mark.parametrize("path", LOGS, ids=[p.name[:70] for p in LOGS])
def test_a_cut_training_log_never_hands_on_a_number_it_did_not_read_whole(path: Path) -> None:
    text = read(path)
    try:
        full = trainlog.parse(io.StringIO(text), str(path))
    except ParseError:
        return  # not a training log (the fixture that says so)
    whole = _steps(full)
    sparse = full.format == "lightning-csv"  # rows of one step merged from several CSV rows
    for cut in cuts(text, 18, path.name):
        refused: ParseError | None = None
        try:
            log = trainlog.parse(io.StringIO(text[:cut]), str(path), full.format)
        except ParseError as exc:  # no whole record left, or a cut JSON document: refused, naming the file
            refused = exc
        if refused is not None:
            assert refused.source == str(path)
            continue
        got = _steps(log)
        assert len(got) <= len(whole), f"{path.name} cut at {cut}"
        for i, step in enumerate(got):
            where = f"{path.name} cut at {cut}, step row {i}"
            if i == len(got) - 1 or sparse:
                assert all(whole[i].get(k) == v for k, v in step.items()), where
            else:
                assert step == whole[i], where


def test_the_issue_s_cut_megatron_lines_are_dropped_and_noted() -> None:
    """`lr 6.42466` for `6.424660E-05`, `step_time_s 0.001` for `1216.0 ms`: such a last line is dropped."""
    line = (
        " [2025-03-20 10:22:37] iteration       12/    2000 | consumed samples:         1536 | "
        "elapsed time per iteration (ms): 1216.0 | learning rate: 6.424660E-05 | global batch size:   128 | "
        "lm loss: 9.921003E+00 | loss scale: 1.0 | number of skipped iterations:   0 | "
        "number of nan iterations:   0 |\n"
    )
    earlier = line.replace("iteration       12/", "iteration       11/")
    for cut_at in ("learning rate: 6.42466", "elapsed time per iteration (ms): 1", "lm loss: 9.921003E+00 |"):
        text = earlier + line[: line.index(cut_at) + len(cut_at)]
        log = trainlog.parse(io.StringIO(text))
        assert log.frame()["step"].tolist() == [11], cut_at
        assert log.notes[-1].startswith("line 2: the log ends inside this line (no line end): dropped:")
    whole = trainlog.parse(io.StringIO(earlier + line.rstrip("\n")))
    assert whole.frame()["step"].tolist() == [11, 12]  # complete though its line end is missing


@pytest.mark.parametrize(
    "name",
    ["hf_trainer_state_checkpoint-1000_mistral_translator.json", "megatron_lm_ci_golden_values_resume_tp4pp1.json"],
)
@needs_shared
def test_a_structured_json_log_cut_anywhere_is_a_parse_error_with_its_line(name: str) -> None:
    text = (CORPUS / "trainlogs" / name).read_text()
    for cut in cuts(text, 27, name):
        with pytest.raises(ParseError) as info:
            trainlog.parse(io.StringIO(text[:cut]), name)
        assert info.value.line >= 1
        assert info.value.source == name


def test_a_cut_jsonl_or_csv_last_line_is_dropped_and_noted() -> None:
    jsonl = (FIXTURES / "trainlogs" / "generic_custom.jsonl").read_text()
    columns = {"step": "it", "loss": "train/loss", "step_time_ms": "dt_ms"}
    cut = trainlog.parse(io.StringIO(jsonl[:-12]), format="jsonl", columns=columns)
    assert len(cut) == 19
    assert "dropped" in cut.notes[-1]
    csv = (FIXTURES / "trainlogs" / "generic.csv").read_text()
    cut_csv = trainlog.parse(io.StringIO(csv[:-3]), format="csv")
    assert len(cut_csv) == 19
    assert "dropped" in cut_csv.notes[-1]


@pytest.mark.parametrize(
    "name",
    [
        "dcgm-4.4.2-r3-text-gb10-k8s-pod-all-skip.txt",
        "dcgm-3.3.9-r3-text-2xrtxpro6000-srun-doubled-output-all-skip.txt",
    ],
)
@needs_shared
def test_an_all_skip_run_says_skip_and_what_was_skipped(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """It printed "status": "pass" and exited 1, with no field saying why."""
    assert main(["parse", "dcgm", str(CORPUS / "dcgm" / name)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "skip"
    assert "software" not in doc["skipped"]
    assert set(doc["skipped"]) == {t["name"] for t in doc["tests"] if t["status"] == "skip"} != set()
