"""The bulk path for long Megatron logs (`trainlog.fast`) gives exactly the line parser's records."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptance.cmd.parse_trainlog import read_trainlog
from acceptance.errors import ParseError
from acceptance.tools.trainlog import fast as trainlog_fast
from acceptance.tools.trainlog import parse
from acceptance.tools.trainlog.fast import parse_fast
from acceptance.tools.trainlog.text import TextLogParser

KEEP = ["step_time_s", "loss", "lr", "consumed_samples"]
DEFAULTS = (trainlog_fast.CHUNK, trainlog_fast.MIN_GROUP, trainlog_fast.MIN_RUN)


def rec(step, time="1222.2", loss="2.206000E+00", lr="2.999900E-04", skipped=0, nan=0, end="\n"):
    return (
        f" [2025-03-20 10:22:37] iteration {step:8d}/  100000 | consumed samples: {step * 128:12d} | "
        f"elapsed time per iteration (ms): {time} | throughput per GPU (TFLOP/s/GPU): 412.0 | "
        f"learning rate: {lr} | global batch size:   128 | lm loss: {loss} | loss scale: 1.0 | "
        f"grad norm: 0.912 | number of skipped iterations: {skipped:3d} | number of nan iterations: {nan:3d} |{end}"
    )


def same(lines, keep=KEEP):
    """Parse with the line parser and the bulk path; assert identical output; return the bulk log."""
    slow = TextLogParser("megatron-lm", "<t>", keep).run(list(lines))
    fast = parse_fast(list(lines), "megatron-lm", "<t>", keep)
    assert set(fast.columns) == set(slow.columns)
    for name in slow.columns:
        np.testing.assert_array_equal(fast.columns[name], slow.columns[name], err_msg=name)
        assert fast.columns[name].dtype == slow.columns[name].dtype
    assert fast.events == slow.events
    assert fast.timers == slow.timers
    assert fast.notes == slow.notes
    return fast


@pytest.fixture
def bulk_rows(monkeypatch):
    """Small chunks and groups so that short inputs exercise the bulk path; counts bulk rows."""
    monkeypatch.setattr(trainlog_fast, "CHUNK", 7)
    monkeypatch.setattr(trainlog_fast, "MIN_GROUP", 2)
    monkeypatch.setattr(trainlog_fast, "MIN_RUN", 2)
    rows: list[int] = []
    real = trainlog_fast.FastParser._bulk

    def spy(self, chunk, a, b):
        out = real(self, chunk, a, b)
        rows.append(b - a if out else 0)
        return out

    monkeypatch.setattr(trainlog_fast.FastParser, "_bulk", spy)
    return rows


def test_plain_long_log_is_taken_in_bulk(bulk_rows):
    lines = [rec(s, time=f"{1200 + s % 7 * 0.3:.1f}", loss=f"{2 + s % 11 * 0.01:.6E}") for s in range(1, 200)]
    log = same(lines)
    assert sum(bulk_rows) > 150
    assert log.columns["step"].tolist() == list(range(1, 200))
    assert log.columns["step_time_s"][2] == float("1200.9") * 1e-3


def test_values_outside_the_fast_float_path_are_exact(bulk_rows):
    values = ["1234567890123456.75", "1.234567E-30", "9.999999E+250", "-1.5", "+2.250", "0.000000E+00", "-0.0", ".5"]
    values += ["12345678901234567890.5", "5.", "1_0.5", "0x10", "1e5"]  # too many digits, or odd shapes
    lines = [rec(s, loss=values[s // 5], lr=values[-1 - s // 5]) for s in range(len(values) * 5)]
    log = same(lines)
    assert sum(bulk_rows) > 30
    assert np.signbit(log.columns["loss"][30])


EDGE_CASES = [
    "[default3]:" + rec(5),  # rank prefix
    "[rank1]: " + rec(6),
    " 0: " + rec(7),
    "> " + rec(8),  # markdown quoting
    "\x1b[32m" + rec(9).rstrip("\n") + "\x1b[0m\n",  # colours
    rec(10, end="") + rec(11),  # glued records
    rec(12).split("| lm loss")[0] + "\n",  # a record cut by a line break ...
    "| lm loss: 2.5E+00 | loss scale: 1.0 |\n",  # ... and its end
    rec(13, skipped=1),
    rec(14, nan=2),
    rec(15, loss="nan"),
    rec(16, loss="1.0E+999"),
    "  successfully saved checkpoint from iteration      16 to /ckpt [ t 1/4, p 1/1 ]\n",
    " loading checkpoint from /ckpt at iteration 10\n",  # resume: steps 11.. again, new segment
    "Resuming training from /ckpt\n",
    "validation loss at iteration 16 | lm loss value: 2.1 |\n",
    "MnRtt/Rnk: 1.2ms/3 | MxRtt/Rnk: 9.9ms/7\n",
    "WARNING: something unrelated happened: é\n",
    rec(17, end="\r\n"),
    rec(18).replace(" | lm loss", "\n| lm loss"),  # one item of the input holding two lines
    rec(19).replace("| lm loss", "\nlm loss"),  # the same, as long as a plain record
]


def test_edge_cases_between_bulk_runs(bulk_rows):
    lines = [rec(s) for s in range(1, 5)]
    step = 20
    for edge in EDGE_CASES:
        lines.append(edge)
        lines += [rec(s) for s in range(step, step + 6)]
        step += 6
    lines.append(rec(step, end=""))  # last line without a newline
    log = same(lines)
    assert sum(bulk_rows) > 50
    assert {e.type for e in log.events} >= {"resume", "checkpoint_save", "skip", "nan", "eval"}


def test_repeats_across_bulk_runs_are_dropped_as_by_the_line_parser(bulk_rows):
    """Ranks without prefixes print the same record: the dedupe window spans bulk runs."""
    block = [rec(s) for s in range(1, 9)]
    noise = "  successfully saved checkpoint from iteration       8 to /ckpt\n"
    log = same([*block, noise, rec(8), rec(7), *block, noise, *[rec(s) for s in range(9, 20)]])
    assert log.columns["step"].tolist() == list(range(1, 20))
    again = same([*block, noise, rec(8, loss="3.0E+00"), *[rec(s) for s in range(9, 20)]])
    assert again.columns["step"].tolist()[:10] == [1, 2, 3, 4, 5, 6, 7, 8, 8, 9]


def test_a_chunk_with_odd_line_ends_goes_through_the_line_parser(bulk_rows):
    same([rec(1, end=""), rec(2, end=""), rec(3) + rec(4), rec(5)])
    same(["é" + rec(1), rec(2), rec(3)])


def test_parse_selects_the_bulk_path_only_for_few_kept_megatron_columns():
    lines = [rec(s) for s in range(1, 30)]
    assert trainlog_fast.usable("megatron-lm", KEEP)
    assert not trainlog_fast.usable("megatron-lm", None)
    assert not trainlog_fast.usable("megatron-lm", ["step_time_s", "rank"])
    assert not trainlog_fast.usable("nemo2", KEEP)
    log = parse(lines, keep=KEEP)
    assert sorted(log.columns) == sorted(["step", *KEEP])


_PIECES = st.one_of(
    st.builds(
        lambda t, loss, lr, sk, nn: ("rec", dict(time=t, loss=loss, lr=lr, skipped=sk, nan=nn)),
        st.sampled_from(["999.9", "1222.2", "12000.5", "1e3", "7"]),
        st.sampled_from(["2.206000E+00", "2.306000E+00", "nan", "inf", "-1.5", "1.0E+999", "123456789012345678.25"]),
        st.sampled_from(["2.999900E-04", "3.000000E-04", "1.0E-30", "0"]),
        st.sampled_from([0, 0, 0, 1]),
        st.sampled_from([0, 0, 0, 3]),
    ),
    st.tuples(st.just("edge"), st.sampled_from(EDGE_CASES)),
    st.tuples(st.just("back"), st.integers(0, 3)),
    st.tuples(st.just("noise"), st.text(st.characters(codec="ascii", exclude_characters="\r\n"), max_size=40)),
)


@pytest.mark.heavy
@given(st.lists(st.tuples(st.integers(1, 12), _PIECES), min_size=1, max_size=25), st.sampled_from([KEEP, ["loss"]]))
@settings(max_examples=120, deadline=None)
def test_any_mixture_of_records_and_other_lines(plan, keep):
    trainlog_fast.CHUNK, trainlog_fast.MIN_GROUP, trainlog_fast.MIN_RUN = 9, 2, 2
    try:
        lines, step = [], 1
        for repeat, (kind, arg) in plan:
            if kind == "rec":
                lines += [rec(s, **arg) for s in range(step, step + repeat)]
                step += repeat
            elif kind == "back":
                step = max(1, step - arg)
            elif kind == "noise":
                lines.append(arg + "\n")
            else:
                lines.append(arg)
        same(lines, keep)
    finally:
        trainlog_fast.CHUNK, trainlog_fast.MIN_GROUP, trainlog_fast.MIN_RUN = DEFAULTS


def _body():
    lines = [rec(s) for s in range(1, 30)]
    for i, edge in enumerate(e for e in EDGE_CASES if e.isascii()):
        lines += [edge, *[rec(s) for s in range(40 + 10 * i, 48 + 10 * i)]]
    return "".join(lines)


FILES = {
    "plain": _body().encode(),
    "crlf": _body().replace("\n", "\r\n").encode(),
    "lone_cr": _body().replace("\n", "\r", 40).encode(),
    "bom_and_bad_utf8": b"\xef\xbb\xbf" + _body().encode().replace(b"unrelated", b"unre\xe2\x82lated\xff"),
    "no_final_newline": _body().rstrip("\n").encode(),
}


@pytest.mark.parametrize("block", [300, 4096, 1 << 21])
@pytest.mark.parametrize("name", sorted(FILES))
def test_files_read_in_binary_blocks_give_the_text_mode_records(tmp_path, monkeypatch, bulk_rows, name, block):
    monkeypatch.setattr(trainlog_fast, "BLOCK", block)
    path = tmp_path / "train.log"
    path.write_bytes(FILES[name])
    with open(path, encoding="utf-8", errors="replace") as handle:
        slow = TextLogParser("megatron-lm", str(path), KEEP).run(handle)
    fast = read_trainlog(path, keep=KEEP)
    assert set(fast.columns) == set(slow.columns)
    for column in slow.columns:
        np.testing.assert_array_equal(fast.columns[column], slow.columns[column], err_msg=column)
    assert fast.events == slow.events
    assert fast.timers == slow.timers
    if block > 300 and not (name == "bom_and_bad_utf8" and block > 4096):  # else no ASCII block of 2+ lines
        assert sum(bulk_rows) > len(slow) // 3


def test_parse_file_falls_back_for_other_formats_and_reports_empty_logs(tmp_path):
    path = tmp_path / "nano.log"
    path.write_text("iter 1: loss 2.5000, time 100.00ms, mfu 1.00%\n")
    assert read_trainlog(path, keep=["loss"]).columns["loss"].tolist() == [2.5]
    path.write_text(" [2025-03-20] iteration        1/      10 | lm loss: nan |\n")
    assert read_trainlog(path, keep=["loss"]).status() == "failed"
    path.write_text("nothing\n" * 40)
    with pytest.raises(ParseError, match="at least one megatron-lm record"):
        read_trainlog(path, format="megatron-lm", keep=["loss"])
    with pytest.raises(ParseError, match="a training log"):
        read_trainlog(path, keep=["loss"])


def test_a_repeated_step_less_resume_line_then_a_record():
    """Two "Resuming training from" lines in a row, then a record: one resume, at the record's step - 1."""
    lines = [rec(s) for s in range(1, 5)] + ["Resuming training from /ckpt\n"] * 2 + [rec(3), rec(4)]
    log = TextLogParser("megatron-lm", "<t>", KEEP).run(lines)
    resumes = [e for e in log.events if e.type == "resume"]
    assert [e.step for e in resumes] == [2]
    same(lines)
