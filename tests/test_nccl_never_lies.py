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


@pytest.mark.heavy
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


@pytest.mark.heavy
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


@pytest.mark.heavy
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


def _row_numbers(path: Path) -> list[tuple[int, int, int]]:
    """(run index, row index, line) of the first, a middle and the last row of every run with rows."""
    out = []
    for i, run in enumerate(parse_text(read(path)).runs):
        rows = list(run.rows)
        for k in sorted({0, len(rows) // 2, len(rows) - 1} if rows else set()):
            out.append((i, k, rows[k].line))
    return out


def _mutated(lines: list[str], number: int, kind: str) -> str:
    raw = lines[number - 1]
    if kind == "deleted":
        return "".join([*lines[: number - 1], *lines[number:]])
    if kind == "duplicated":
        return "".join([*lines[:number], raw, *lines[number:]])
    tagged = _TAG.match(raw)
    tag = tagged.group(0) if tagged else ""
    size = raw[len(tag) :].split()[0]
    at = raw.index(size, len(tag))
    zero = raw[:at] + "0".rjust(len(size)) + raw[at + len(size) :]
    return "".join([*lines[: number - 1], zero, *lines[number:]])


@pytest.mark.heavy
@pytest.mark.parametrize("kind", ["deleted", "duplicated", "size 0"])
@pytest.mark.parametrize("path", TEXT_FILES, ids=[p.name[:70] for p in TEXT_FILES])
def test_a_row_deleted_duplicated_or_sized_0_is_never_ok(path: Path, kind: str) -> None:
    """Issue 23: a table whose sizes do not follow the header's sweep, or repeat, is not a clean run.

    Every run's first, middle and last row is deleted, duplicated, or its size set to 0 (rows of at
    least 1 MiB: below, rounding to chunks per rank can print 0 for real). The run is not ok and an
    error names the row's line or the next one's (a deleted row: the row before the gap, or the first row
    whose size shows it: after a deleted or repeated `0` row more `0` rows fit the sweep until the sizes grow).
    """
    text = read(path)
    lines = text.splitlines(keepends=True)
    full = parse_text(text)
    for run_index, row_index, number in _row_numbers(path):
        original = full.runs[run_index]
        if original.status != "ok":
            continue
        if kind == "size 0" and original.rows[row_index].size < (1 << 20):
            continue
        damaged = parse_text(_mutated(lines, number, kind), str(path))
        where = f"{path.name}:{number} {kind}"
        run = damaged.runs[run_index]
        assert damaged.status != "ok", where
        assert run.status == "incomplete", where
        lines_named = [e.line for e in run.errors if e.kind == "output"]
        assert lines_named, where
        if kind == "deleted" or original.rows[row_index].size == 0:
            assert lines_named[0] >= number - 1, where  # at the gap, or where the sizes leave the sweep
        else:
            assert lines_named[0] in (number, number + 1), where


def _sweep_text(sizes: list[int], header_max: int | None = None) -> str:
    rows = "".join(ROW.replace("1048576", f"{s:>7}", 1).format(w="    0") + "\n" for s in sizes)
    top = header_max if header_max is not None else sizes[-1]
    return HEAD.replace("maxBytes 1048576", f"maxBytes {top}") + rows + TAIL


def test_the_sizes_follow_the_header_s_sweep() -> None:
    assert parse_text(_sweep_text([1048576, 2097152, 4194304])).status == "ok"
    cases = {
        "repeated": ([1048576, 2097152, 2097152, 4194304], 11, "size 2097152 where the sweep"),
        "missing": ([1048576, 4194304], 10, "size 4194304 where the sweep"),
        "missing last": ([1048576, 2097152], 10, "the table ends at size 2097152 but the sweep"),
        "size 0": ([1048576, 0, 4194304], 10, "size 0 where the sweep"),
    }
    for name, (sizes, line, text) in cases.items():
        run = parse_text(_sweep_text(sizes, 4194304)).runs[0]
        assert run.status == "incomplete", name
        error = next(e for e in run.errors if e.kind == "output")
        assert (error.line, error.text[: len(text)]) == (line, text), name
        assert "minBytes 1048576 maxBytes 4194304 step: 2(factor)" in error.text, name


def test_a_sweep_by_bytes_adds_the_step() -> None:
    """`-i 1048576`: `step: 1048576(bytes)`, sizes 1, 2, 3 MiB."""
    text = _sweep_text([1048576, 2097152, 3145728]).replace("step: 2(factor)", "step: 1048576(bytes)")
    assert parse_text(text).status == "ok"
    run = parse_text(text.replace("    3145728", "    4194304")).runs[0]
    assert run.status == "incomplete"
    assert "size 4194304 where the sweep (minBytes 1048576 maxBytes 3145728 step: 1048576(bytes))" in run.errors[0].text


def test_a_sweep_that_restarts_for_each_type_or_cycle_is_the_sweep() -> None:
    """`-d all` restarts the sweep per type (a new row key); `-N 2` prints it twice with the same key."""
    twice = _sweep_text([1048576, 2097152, 1048576, 2097152])
    assert parse_text(twice).status == "ok"
    half = ROW.replace("1048576", "2097152", 1).format(w="    0").replace(" float ", "  half ")
    typed = _sweep_text([1048576, 2097152]).replace(TAIL, ROW.format(w="    0").replace(" float ", "  half ") + "\n")
    assert parse_text(typed + half + "\n" + TAIL).status == "ok"
    assert parse_text(typed + TAIL).status == "incomplete"  # `half` stops after its first size


@pytest.mark.parametrize("column", [5, 6, 7, 9, 10, 11])
def test_na_where_a_measurement_belongs_is_never_ok(column: int) -> None:
    """Issue 23: N/A for a time, algbw or busbw (either half) is a damaged row, never a clean N/A."""
    tokens = ROW.format(w="    0").split()
    tokens[column] = "N/A"
    run = parse_text(HEAD + "   " + "   ".join(tokens) + "\n" + TAIL).runs[0]
    assert run.status == "incomplete"
    assert run.rows == ()
    assert [e.line for e in run.errors] == [9]
    place = "out-of-place" if column < 9 else "in-place"
    name = ("time", "algbw", "busbw")[(column - 5) % 4]
    assert f"N/A where the {place} {name} belongs at size 1048576" in run.errors[0].text


@pytest.mark.parametrize(
    ("validation", "program", "oop", "ip", "ok"),
    [
        (0, "all_reduce_perf", "N/A", "N/A", True),  # -c 0: nothing is checked
        (1, "all_reduce_perf", "N/A", "0", False),  # the out-of-place count belongs there
        (1, "all_reduce_perf", "0", "N/A", False),  # all_reduce checks its in-place result
        (1, "sendrecv_perf", "0", "N/A", True),  # sendrecv never does
        (1, "alltoall_perf", "0", "N/A", True),
        (1, "alltoall_perf", "N/A", "N/A", False),
    ],
)
def test_na_in_wrong_only_where_nccl_tests_prints_it(
    validation: int, program: str, oop: str, ip: str, ok: bool
) -> None:
    tokens = ROW.format(w="    0").split()
    tokens[8], tokens[12] = oop, ip
    text = (
        HEAD.replace("validation: 1", f"validation: {validation}").replace("all_reduce_perf", program)
        + "   "
        + "   ".join(tokens)
        + "\n"
        + TAIL.replace("all_reduce_perf", program)
    )
    run = parse_text(text).runs[0]
    assert (run.status == "ok") is ok
    if not ok:
        assert run.errors[0].line == 9
        assert "#wrong is N/A" in run.errors[0].text


def test_a_json_report_with_a_null_busbw_or_a_repeated_result_is_not_ok() -> None:
    import json

    doc = json.loads((FIXTURES / "nccl" / "nccl-tests-2.17.8-allreduce-J-report.json").read_text())
    assert parse_text(json.dumps(doc)).status == "ok"
    nulled = json.loads(json.dumps(doc))
    nulled["results"][2]["out_of_place"]["bus_bw"] = None
    capture = parse_text(json.dumps(nulled))
    assert capture.status == "incomplete"
    assert "results[2] (size 4194304): out_of_place.bus_bw is null where a measurement belongs" in [
        e.text for e in capture.runs[0].errors
    ]
    repeated = json.loads(json.dumps(doc))
    repeated["results"].insert(2, repeated["results"][1])
    capture = parse_text(json.dumps(repeated))
    assert capture.status == "incomplete"
    assert capture.runs[0].errors[-1].text.startswith("results[2]: size 2097152 where the sweep")
