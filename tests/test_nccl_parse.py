"""The nccl-tests parser on hand-written fixtures and on edited corpus files (hypothesis)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acceptance.cmd.parse_nccl import read_nccl
from acceptance.errors import ParseError
from acceptance.tools.nccl import NcclCapture, NcclTest, parse, parse_text
from tests.hostile import NOISE_LINES
from tests.shared import CORPUS, FIXTURES, corpus_files, needs_shared

NCCL_FIXTURES = FIXTURES / "nccl"


def test_per_iteration_columns_go_to_extras() -> None:
    capture = read_nccl(NCCL_FIXTURES / "nccl-tests-2.19.2-allreduce-2node-16rank-per-iteration-I1.txt")
    run = capture.runs[0]
    assert capture.status == "ok"
    assert run.collective == "all_reduce"
    assert len(run.rows) == 11
    first = run.rows[0]
    assert first.oop
    assert first.oop.busbw == 44.31
    assert first.oop.extras["i_p99_us"] == 47.47
    assert first.ip
    assert first.ip.extras == {
        "i_min_us": 43.48,
        "i_max_us": 48.81,
        "i_p99_us": 48.36,
        "i_cv_pct": 2.3,
    }
    assert run.params["per_iteration"] is True
    assert run.nccl_version == "2.29.3"
    assert "i_cv%" in run.params["columns"]


def test_timeout_hang_is_a_failure_with_the_timeout_line() -> None:
    capture = read_nccl(NCCL_FIXTURES / "nccl-tests-2.17.8-allreduce-2node-timeout-T30-hang.txt")
    run = capture.runs[0]
    assert capture.status == "failed"
    assert run.status == "failed"
    assert len(run.rows) == 8
    assert run.rows[-1].size == 1 << 27
    assert (run.errors[0].line, run.errors[0].text) == (34, "gpu-01: Test timeout (30s) common.cu:412")
    assert any(e.text.startswith("gpu-02: Test timeout") for e in run.errors)
    assert any("cut short" in e.text for e in run.errors)


def test_split_rows_warn_and_srun_labels() -> None:
    capture = read_nccl(NCCL_FIXTURES / "nccl-tests-2.17.8-allreduce-srun-label-warn-mid-table-split-rows.txt")
    run = capture.runs[0]
    assert capture.status == "ok"
    assert [r.size for r in run.rows] == [1 << k for k in range(20, 31)]
    split = next(r for r in run.rows if r.size == 1 << 24)
    assert split.oop
    assert split.oop.busbw == 286.22
    assert split.line == 32
    glued = next(r for r in run.rows if r.size == 1 << 27)
    assert glued.oop
    assert glued.oop.time_us == 599.24
    assert [e.line for e in run.errors] == [34]
    assert "NCCL WARN NET/IB : Got async event : port error" in run.errors[0].text
    assert (run.nccl_version, run.cuda_version) == ("2.29.2", "12.8")


def test_json_report() -> None:
    capture = read_nccl(NCCL_FIXTURES / "nccl-tests-2.17.8-allreduce-J-report.json")
    run = capture.runs[0]
    assert capture.status == "ok"
    assert run.collective == "all_reduce"
    assert run.nccl_version == "2.29.2"
    assert (run.nranks, run.hosts) == (16, ("gpu-01", "gpu-02"))
    assert [r.size for r in run.rows] == [1 << k for k in range(20, 25)]
    assert {r.root for r in run.rows} == {-1}
    assert run.out_of_bounds == 0
    assert run.avg_busbw == pytest.approx(150.827384)
    test = NcclTest.from_argv(run.params["argv"])
    assert test.collective == "all_reduce"
    assert test.option("maxbytes") == 16 << 20


def test_json_report_cut_short_is_incomplete() -> None:
    capture = read_nccl(NCCL_FIXTURES / "nccl-tests-2.17.8-allreduce-J-report-cut-short.json")
    assert capture.status == "incomplete"
    assert len(capture.runs[0].rows) == 3


def test_json_garbage_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as info:
        parse_text('{"version": 3, "nccl_ver', "r.json")
    assert info.value.source == "r.json"


def test_no_nccl_output_is_not_ok() -> None:
    assert parse_text("").status == "incomplete"
    capture = parse_text("Authorization required, but no authorization protocol specified\n")
    assert capture.status == "incomplete"
    assert capture.runs == ()


def test_caller_names_the_collective_when_output_does_not() -> None:
    path = CORPUS / "nccl" / "nccl-tests-pre2.17-allreduce-2node-16rank-a100-unhandled-system-error-prterun.txt"
    if not path.exists():
        pytest.skip("../shared is absent")
    run = read_nccl(path, collective="all_reduce_perf").runs[0]
    assert (run.collective, run.params["collective_from"]) == ("all_reduce", "caller")


def test_bad_header_is_a_parse_error_naming_the_line() -> None:
    text = "# nThread 1 nGpus one minBytes 8\n"
    with pytest.raises(ParseError) as info:
        parse_text(text, "cap.txt")
    assert (info.value.source, info.value.line) == ("cap.txt", 1)


def test_orphaned_half_row_is_flagged() -> None:
    head = (
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
        "validation: 1 graph: 0\n#\n# Using devices\n#\n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "     time   algbw   busbw  #wrong \n"
    )
    rows = (
        "           8             2     float     sum      -1    45.91    0.00    0.00      0"
        "    45.49    0.00    0.00      0\n"
        "    579.3    0.00    0.00      0    580.1    0.00    0.00      0\n"
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0 \n#\n"
    )
    capture = parse_text(head + rows)
    assert capture.status == "incomplete"
    assert "size was lost" in capture.runs[0].errors[0].text


#: failure lines: they change the status (they are failures), never the rows
FAILURES = [
    "prterun detected that one or more processes exited with non-zero status,",
    "srun: error: gpu-07: task 3: Exited with exit code 1",
    "gpu-07: Test NCCL failure common.cu:1012 'unhandled system error / '",
]

_TEXT_FILES = corpus_files("nccl")


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def _shape(capture: NcclCapture) -> list[object]:
    return [(r.collective, r.status, r.rows, r.ranks, r.avg_busbw, r.out_of_bounds) for r in capture.runs]


@needs_shared
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_truncation_never_reports_partial_data_as_ok(data: st.DataObject) -> None:
    """A capture cut at any line is ok only if it holds nothing but complete, unchanged reports."""
    path = data.draw(st.sampled_from(_TEXT_FILES))
    lines = _lines(path)
    full = parse(lines, str(path))
    cut = data.draw(st.integers(0, len(lines) - 1))
    try:
        part = parse(lines[:cut], str(path))
    except ParseError:
        return
    if part.status == "ok":
        assert full.runs[: len(part.runs)] == part.runs
        assert all(r.status == "ok" for r in part.runs)


@pytest.mark.heavy
@needs_shared
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_noise_lines_anywhere_do_not_change_rows(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(_TEXT_FILES))
    lines = _lines(path)
    noisy = list(lines)
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(noisy)))
        noisy.insert(at, data.draw(st.sampled_from(NOISE_LINES)) + "\n")
    clean, dirty = parse(lines), parse(noisy)
    assert [s[1:] for s in _shape(dirty)] == [s[1:] for s in _shape(clean)]
    for before, after in zip(clean.runs, dirty.runs, strict=True):
        # a command line (`+ mpirun … all_reduce_perf`) names the collective of a report that does not,
        # when the table allows it; it never overrides what the report or its table says
        assert after.collective == before.collective or (
            before.collective is None
            and after.collective == "all_reduce"
            and after.params["collective_from"] == "command"
        )


@needs_shared
def test_a_command_line_the_table_contradicts_does_not_name_the_collective() -> None:
    """Found by the noise property: an all_reduce_perf command line before an all_gather table (redop `none`,
    which no reduction prints) made it all_reduce; the table's evidence wins over a line that may be another's."""
    lines = _lines(CORPUS / "nccl" / "nccl-2.21-allgather-8node-32rank-a100-size0-rows.txt")
    command = "+ mpirun -np 16 --hostfile /etc/mpi/hostfile all_reduce_perf -b 8 -e 8G -f 2 -g 1\n"
    run = parse([command, *lines]).runs[0]
    assert (run.collective, run.params["collective_from"]) == ("all_gather", "inferred")
    allowed = parse(["+ mpirun -np 32 all_gather_perf -b 0 -e 1G\n", *lines]).runs[0]
    assert (allowed.collective, allowed.params["collective_from"]) == ("all_gather", "command")


@needs_shared
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_failure_lines_anywhere_fail_the_capture_but_keep_the_rows(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(_TEXT_FILES))
    lines = _lines(path)
    noisy = list(lines)
    noisy.insert(data.draw(st.integers(0, len(noisy))), data.draw(st.sampled_from(FAILURES)) + "\n")
    got, plain = parse(noisy), parse(lines)
    assert [r.rows for r in got.runs] == [r.rows for r in plain.runs]
    assert got.status == "failed"


@needs_shared
def test_tagged_and_untagged_give_the_same_rows() -> None:
    path = CORPUS / "nccl" / "nccl-tests-2.17.8-allreduce-sendrecv-2node-smoke-inplace-NA.txt"
    plain = _lines(path)
    tagged = ["[1,0]<stdout>:" + line for line in plain]
    assert _shape(parse(tagged)) == _shape(parse(plain))
    stamped = ["2026-11-29T22:14:03.123456789Z " + line for line in plain]
    assert _shape(parse(stamped)) == _shape(parse(plain))


def test_streaming_accepts_any_iterable() -> None:
    text = (NCCL_FIXTURES / "nccl-tests-2.19.2-allreduce-2node-16rank-per-iteration-I1.txt").read_text()
    assert parse(io.StringIO(text)) == parse(iter(text.splitlines()))


def test_cputime_and_timestamp_columns() -> None:
    text = (
        "# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
        "validation: 0 graph: 0\n#\n# Using devices\n#\n"
        "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  cputime   algbw"
        "   busbw  #wrong           timestamp\n"
        "        1024           256     float     sum      -1    12.50    0.08    0.08     N/A    12.40    0.08"
        "    0.08     N/A  2026-11-29 22:14:03\n"
        "        2048           512     float     sum      -1    12.90    0.16    0.16     N/A    12.80    0.16"
        "    0.16     N/A  2026-11-29 22:14:04\n"
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.12 \n#\n"
    )
    run = parse_text(text, collective="all_reduce").runs[0]
    assert run.status == "ok"
    assert [r.timestamp for r in run.rows] == ["2026-11-29 22:14:03", "2026-11-29 22:14:04"]
    assert run.rows[1].oop
    assert run.rows[1].oop.time_us == 12.9
    assert run.rows[1].oop.wrong is None


@pytest.mark.heavy
@settings(max_examples=100, deadline=None)
@given(st.data())
def test_json_report_cut_anywhere_is_never_ok(data: st.DataObject) -> None:
    text = (NCCL_FIXTURES / "nccl-tests-2.17.8-allreduce-J-report.json").read_text()
    cut = data.draw(st.integers(1, len(text) - 1))
    try:
        capture = parse_text(text[:cut], "r.json")
    except ParseError:
        return
    assert capture.status != "ok"
