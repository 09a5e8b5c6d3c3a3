"""Rows kept as the text nccl-tests printed (`NcclRows`) read as the line-by-line path reads them, and
their JSON written from the text is, character for character, `json.dumps` of their records."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptance.cmd.jsonout import pretty
from acceptance.jsontext import JsonItems
from acceptance.tools.nccl import NcclRow, parse, parse_text
from acceptance.tools.nccl.layout import PLAIN_ROW_LINE, plain_row
from acceptance.tools.nccl.rows import NcclRows
from tests.hostile import nccl_files, read

TEXT_FILES = [p for p in nccl_files() if p.suffix == ".txt"]


def _lines(path: Path) -> list[str]:
    return list(io.StringIO(read(path), newline=""))


def _rows(rows: object) -> list[tuple[NcclRow, int]]:
    assert isinstance(rows, NcclRows | tuple)
    return [(r, r.line) for r in rows]


@pytest.mark.parametrize("path", TEXT_FILES, ids=lambda p: p.name[:60])
def test_rows_kept_as_text_are_the_rows_read_line_by_line(path: Path) -> None:
    """Lines given without their line ends never take the text path (it needs the end): the same runs."""
    lines = _lines(path)
    fast = parse(lines, str(path))
    slow = parse([line.rstrip("\r\n") for line in lines], str(path))
    assert [_rows(r.rows) for r in fast.runs] == [_rows(r.rows) for r in slow.runs]
    assert [r.status for r in fast.runs] == [r.status for r in slow.runs]
    assert fast.status == slow.status
    for run in fast.runs:
        assert isinstance(run.rows, NcclRows)
        assert run.rows.json_texts() == [json.dumps(r.to_json()) for r in run.rows]


HEADER = (
    (
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1"
        " validation: 1 graph: 0\n"
    )
    + """#
# Using devices
#  Rank  0 Group  0 Pid  78499 on gpu-1 device  0 [0000:30:00] NVIDIA H200
#  Rank  1 Group  0 Pid  77729 on gpu-2 device  0 [0000:30:00] NVIDIA H200
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""
)
KEYS, HALF = "     1048576        262144     float     sum      -1", "    44.37   23.63   44.31      0"
CLEAN = KEYS + HALF + HALF + "\n"
TRAILER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 4.26966 \n#\n"

_number = st.one_of(
    st.floats(0, 1e7, allow_nan=False).map(lambda v: f"{v:.2f}"),
    st.floats(0, 1e30, allow_nan=False).map(lambda v: f"{v:g}"),
    st.floats(0, 1e30, allow_nan=False).map(lambda v: f"{v:.3e}"),
    st.integers(0, 10**30).map(str),
    st.sampled_from(["0", "0.00", ".5", "5.", "007.25", "1e5", "1E-05"]),
)
_row = st.tuples(
    st.integers(0, 10**12),
    st.integers(0, 10**12),
    st.sampled_from(["float", "bfloat16", "int8", "f8e4m3", "T_9"]),
    st.sampled_from(["sum", "none", "mulsum", "x"]),
    st.integers(-1, 64),
    st.lists(_number, min_size=3, max_size=3),
    st.sampled_from(["0", "N/A"]),
    st.lists(_number, min_size=3, max_size=3),
    st.sampled_from(["0", "N/A"]),
)


def _line(row: tuple[int, int, str, str, int, list[str], str, list[str], str]) -> str:
    size, count, kind, redop, root, oop, oop_wrong, ip, ip_wrong = row
    values = "".join(f" {v:>7}" for v in [*oop, oop_wrong, *ip, ip_wrong])
    return f"{size:12d}  {count:12d}  {kind:>8}  {redop:>6}  {root:6d}{values}\n"


@pytest.mark.heavy
@settings(max_examples=300, deadline=None)
@given(st.lists(_row, min_size=1, max_size=12))
def test_any_clean_row_reads_and_writes_as_its_record(rows: list[tuple]) -> None:  # type: ignore[type-arg]
    """Whatever numbers a clean row holds (points, exponents, leading zeros, N/A in #wrong), the text path gives
    the record `plain_row` reads and the JSON `json.dumps` writes of it. The sizes are the header's sweep and the
    row key the first row's (a table's rows follow its sweep); validation is off, so any #wrong may be N/A."""
    _, count, kind, redop, root = rows[0][:5]
    rows = [(8 << i, count, kind, redop, root, *r[5:]) for i, r in enumerate(rows)]
    header = HEADER.replace("maxBytes 1073741824", f"maxBytes {8 << (len(rows) - 1)}").replace(
        "validation: 1", "validation: 0"
    )
    lines = [_line(r) for r in rows]  # most match PLAIN_ROW_LINE; a 3-digit exponent (1e-272) takes the checked path
    run = parse_text(header + "".join(lines) + TRAILER).runs[0]
    assert run.status == "ok"
    expected = [plain_row(line.split(), n) for n, line in enumerate(lines, header.count("\n") + 1)]
    assert _rows(run.rows) == [(r, r.line) for r in expected if r is not None]
    assert run.rows.json_texts() == [json.dumps(r.to_json()) for r in expected if r is not None]  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", ["1e400", "1" * 400, "1" * 200 + "e200"])
def test_a_number_too_long_for_a_float_is_never_inf(value: str) -> None:
    """`float("1e400")` is inf: such a row is a non-finite measurement, the run failed, not a number passed on."""
    row = f"{KEYS}    44.37   23.63 {value}      0{HALF}\n"
    assert not PLAIN_ROW_LINE(row)
    capture = parse_text(HEADER + row + TRAILER)
    assert capture.status == "failed"
    assert "non-finite" in capture.runs[0].errors[0].text
    assert capture.runs[0].rows == ()


def test_a_non_zero_wrong_is_read_at_once_and_fails_the_run() -> None:
    bad = CLEAN.replace("44.31      0\n", "44.31      3\n")
    assert PLAIN_ROW_LINE(CLEAN)
    assert not PLAIN_ROW_LINE(bad)
    capture = parse_text(HEADER + CLEAN + bad + CLEAN + TRAILER)
    assert capture.status == "failed"
    assert [r.line for r in capture.runs[0].rows] == [9, 10, 11]
    assert "#wrong 3 in-place at size 1048576" in capture.runs[0].errors[0].text


def test_rows_compare_and_pickle_as_the_tuple_of_their_records() -> None:
    import pickle

    run = parse_text(
        HEADER + _line((8, 2, "float", "sum", -1, ["1.0", "2", "3"], "0", ["4", "5", "6"], "0")) + TRAILER
    ).runs[0]
    assert isinstance(run.rows, NcclRows)
    as_tuple = tuple(run.rows)
    assert run.rows == as_tuple
    assert as_tuple == run.rows
    assert run.rows == list(as_tuple)
    assert run.rows[0] == as_tuple[0]
    assert run.rows[-1:] == as_tuple[-1:]
    assert pickle.loads(pickle.dumps(run)) == run
    with pytest.raises(ValueError, match="2 row lines but 1 line numbers"):
        NcclRows((), ["a\n", "b\n"], [1])


def test_pretty_lays_out_items_encoded_already_as_it_would_their_values() -> None:
    items = [{"a": 1.0, "b": None}, {"a": 2, "b": [1, "\u00e9"]}]
    encoded = JsonItems(json.dumps(i) for i in items)
    for inline_from in (1, 2, 3, 5):
        assert pretty({"rows": encoded}, inline_from) == pretty({"rows": items}, inline_from)
    assert pretty({"rows": JsonItems()}, 3) == pretty({"rows": []}, 3)
