"""The nccl-tests parser never reports half a result as a clean one (issue 19, part 5), over every capture.

Repeats the experiments that found the defects, on every corpus capture and every fixture:
random cuts (a truncated output is never `ok` unless cut between two complete reports, and then
it is exactly those reports), damaged data rows (an error with the row's line number, never `ok`,
the other rows untouched), noise lines anywhere (the rows never change), `nan`/`inf` never handed
on as numbers.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any

import pytest

from acceptance.errors import ParseError
from acceptance.tools.nccl import NcclCapture, NcclRun, parse_text
from acceptance.tools.nccl.layout import _NUMBER, NonFinite, _value
from tests.hostile import NOISE_LINES, cuts, damaged_rows, nccl_files, read
from tests.shared import CORPUS, FIXTURES, needs_shared

FILES = nccl_files()
TEXT_FILES = [p for p in FILES if p.suffix != ".json"]
ids = [p.name[:70] for p in FILES]


def _data(run: NcclRun) -> dict[str, Any]:
    """What a run measured: everything but its status and error lines (failure lines may follow a cut)."""
    doc = run.to_json()
    del doc["status"], doc["errors"]
    return doc


def _numbers(capture: NcclCapture) -> list[float]:
    return [
        value
        for run in capture.runs
        for row in run.rows
        for half in (row.oop, row.ip)
        if half is not None
        for value in (half.time_us, half.algbw, half.busbw, half.wrong, *half.extras.values())
        if value is not None
    ]


@pytest.mark.parametrize("path", FILES, ids=ids)
def test_a_cut_capture_is_ok_only_when_cut_between_complete_reports(path: Path) -> None:
    text = read(path)
    full = parse_text(text, str(path))
    for cut in cuts(text, 30, path.name):
        part_text = text[:cut]
        refused: ParseError | None = None
        try:
            part = parse_text(part_text, str(path))
        except ParseError as exc:
            refused = exc
        if refused is not None:
            assert refused.source == str(path)  # refused naming the file: allowed, never a wrong "ok"
            continue
        assert all(math.isfinite(v) for v in _numbers(part))
        if part.status != "ok":
            continue
        assert path.suffix != ".json" or not text[cut:].strip(), f"a JSON report cut at {cut} is ok"
        k = len(part.runs)
        assert [_data(r) for r in part.runs] == [_data(r) for r in full.runs[:k]], f"cut at {cut}"
        whole_lines = part_text.count("\n")
        tail = part_text[part_text.rfind("\n") + 1 :].strip()
        started = whole_lines + (1 if tail not in ("", "#") else 0)
        if k < len(full.runs):
            assert full.runs[k].lines[0] > started, f"cut at {cut} falls inside report {k + 1} yet is ok"


@needs_shared
def test_the_cut_of_the_issue_ending_in_a_report_s_first_words_is_not_ok() -> None:
    """`head -c 8178` of the 5-collective 8xH100 baseline ends in `# nccl-tests ver`: 3 of 5 reports, not ok."""
    text = read(CORPUS / "nccl" / "nccl-tests-2.17.8-5colls-1node-8xh100-nvswitch-baseline-ok.txt")
    at = text.index("# nccl-tests version", text.index("# Collective test concluded: reduce_scatter_perf"))
    part = parse_text(text[: at + len("# nccl-tests ver")])
    assert (part.status, len(part.runs)) == ("incomplete", 3)
    assert all(r.status == "ok" for r in part.runs)
    assert "the capture ends inside line" in part.errors[-1].text


@needs_shared
def test_a_cut_inside_a_later_report_s_header_keeps_the_complete_reports() -> None:
    """Those cuts gave exit 2 and threw the complete reports away; they are kept, the capture incomplete."""
    text = read(CORPUS / "nccl" / "nccl-tests-2.17.8-5colls-10node-80rank-h100-double-ok.txt")
    full = parse_text(text)
    for k, run in enumerate(full.runs[1:], start=1):
        header = text.index("# nThread", text.index(f"# Collective test starting: {run.program}"))
        for cut in range(header + 2, header + 60, 7):
            part = parse_text(text[:cut])
            assert part.status == "incomplete"
            assert [_data(r) for r in part.runs[:k]] == [_data(r) for r in full.runs[:k]]
            assert part.runs[k].status == "incomplete"


_TAG = re.compile(r"\[\d+,\d+\]<stdout>:|\d+: ")


def _rows_of(path: Path) -> list[tuple[int, int]]:
    """(run index, row line): the first and last rows of the first run, the middle row of the last run."""
    full = parse_text(read(path))
    runs = [(i, [row.line for row in run.rows]) for i, run in enumerate(full.runs) if run.rows]
    if not runs:
        return []
    (first, lines), (last, more) = runs[0], runs[-1]
    return sorted({(first, lines[0]), (first, lines[-1]), (last, more[len(more) // 2])})


@pytest.mark.parametrize("path", TEXT_FILES, ids=[p.name[:70] for p in TEXT_FILES])
def test_a_damaged_data_row_is_an_error_with_its_line_and_never_ok(path: Path) -> None:
    text = read(path)
    lines = text.splitlines(keepends=True)
    full = parse_text(text)
    for run_index, number in _rows_of(path):
        raw = lines[number - 1]
        tagged = _TAG.match(raw)
        tag = tagged.group(0) if tagged else ""
        original = {row.line: row for row in full.runs[run_index].rows}
        for kind, bad in damaged_rows(raw[len(tag) :]).items():
            damaged = parse_text("".join([*lines[: number - 1], tag + bad + "\n", *lines[number:]]))
            where = f"{path.name}:{number} {kind}"
            run = damaged.runs[run_index]
            assert damaged.status != "ok", where
            assert run.status != "ok", where
            assert number in [e.line for e in run.errors], where
            assert all(row.line != number for row in run.rows), where
            assert all(original[row.line] == row for row in run.rows), where
            assert all(math.isfinite(v) for v in _numbers(damaged)), where


@pytest.mark.parametrize("path", TEXT_FILES, ids=[p.name[:70] for p in TEXT_FILES])
def test_noise_inserted_anywhere_never_changes_the_rows(path: Path) -> None:
    lines = read(path).splitlines(keepends=True)
    rows = [r.rows for r in parse_text("".join(lines)).runs]
    step = max(1, len(lines) // 12)
    for at in range(0, len(lines) + 1, step):
        for noise in NOISE_LINES[at % 5 :: 5]:
            noisy = [*lines[:at], noise + "\n", *lines[at:]]
            assert [r.rows for r in parse_text("".join(noisy)).runs] == rows, f"{noise!r} at line {at + 1}"


ROW = (
    "     1048576        262144     float     sum      -1    44.37   23.63   44.31      {w}"
    "    44.37   23.63   44.31      0"
)
HEAD = (
    "# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902\n"
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0\n#\n# Using devices\n"
    "#  Rank  0 Group  0 Pid   4101 on     gpu-01 device  0 [0000:19:00] NVIDIA H200\n#\n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw"
    "  #wrong \n"
)
TAIL = (
    "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 44.31 \n#\n"
    "# Collective test concluded: all_reduce_perf\n#\n"
)


def test_a_wrong_count_is_a_failure_whatever_the_trailer_says() -> None:
    run = parse_text(HEAD + ROW.format(w="    5") + "\n" + TAIL).runs[0]
    assert run.status == "failed"
    assert run.errors[-1].line == 9
    assert (
        "#wrong 5 out-of-place at size 1048576 (float) although the trailer says 0 out of bounds" in run.errors[-1].text
    )


@pytest.mark.parametrize("token", ["nan", "-nan", "inf", "Infinity"])
def test_nan_and_inf_in_a_text_row_are_a_failure_never_a_number(token: str) -> None:
    capture = parse_text(HEAD + ROW.format(w="    0").replace("44.31", token, 1) + "\n" + TAIL)
    assert capture.status == "failed"
    assert capture.runs[0].rows == ()
    assert "non-finite value" in capture.runs[0].errors[0].text


def test_nan_in_a_json_report_is_a_failure_never_a_number() -> None:
    text = (FIXTURES / "nccl" / "nccl-tests-2.17.8-allreduce-J-report.json").read_text()
    assert '"bus_bw":' in text
    at = text.index('"bus_bw":') + len('"bus_bw":')
    end = text.index(",", at)
    capture = parse_text(text[:at] + '"nan"' + text[end:])
    assert capture.status == "failed"
    assert all(math.isfinite(v) for v in _numbers(capture))
    assert "is nan" in capture.runs[0].errors[-1].text
    for literal in ("NaN", "Infinity", "-1.5"):
        assert parse_text(text[:at] + literal + text[end:]).status != "ok"


def test_numbers_are_read_strictly() -> None:
    """Every token of up to four characters: read exactly when it is an unsigned decimal (the spec regex)."""
    alphabet = "0123456789.eE+-_nai/xN\u0661"

    for n in range(1, 4):
        for chars in itertools.product(alphabet, repeat=n):
            token = "".join(chars)
            if token == "N/A":
                continue
            expected = float(token) if _NUMBER.fullmatch(token) and token.isascii() else None
            try:
                got = _value(token)
            except NonFinite:
                got = None
                assert token.lower() in ("nan", "inf", "-nan", "+nan", "-inf", "+inf")
            except ValueError:
                got = None
            assert got == expected, token


def test_rows_built_on_the_fast_path_are_the_dataclass_s_rows() -> None:
    """The plain-row path fills the records' fields directly: every field, the same values, still frozen."""
    import dataclasses

    from acceptance.tools.nccl.layout import _half_of, _row_of
    from acceptance.tools.nccl.records import NcclHalf, NcclRow

    half = _half_of(44.37, 23.63, 44.31, None)
    row = _row_of(1048576, 262144, "float", "sum", -1, half, half, 9)
    for record, expected in (
        (half, NcclHalf(44.37, 23.63, 44.31, None)),
        (row, NcclRow(1048576, 262144, "float", "sum", -1, half, half, None, 9)),
    ):
        for f in dataclasses.fields(record):  # every field set (a slot left empty raises AttributeError)
            assert getattr(record, f.name) == getattr(expected, f.name), f.name
    assert half == NcclHalf(44.37, 23.63, 44.31, None)
    assert row == NcclRow(1048576, 262144, "float", "sum", -1, half, half, None, 9)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.size = 0  # type: ignore[misc]
