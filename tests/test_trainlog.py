"""Training-log parsers: every corpus sample and every fixture format, with expectations per file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from acceptance.cli import main
from acceptance.cmd.parse_trainlog import read_trainlog
from acceptance.errors import ParseError
from acceptance.tools.trainlog import FORMATS, parse
from tests.shared import CORPUS, FIXTURES, corpus_files, needs_shared

TL = FIXTURES / "trainlogs"


def _events(log):
    return [(e.type, e.step) for e in log.events]


# ---------------------------------------------------------------------- corpus
CORPUS_EXPECT = {
    "hf_trainer_state_checkpoint-1000_mistral_translator.json": dict(
        format="hf-trainer-state",
        n=100,
        first=(10, "loss", 2.4977),
        last=(1000, "loss", 0.4539),
        events=[("checkpoint_save", 1000)],
        no_time=True,
    ),
    "lightning_csvlogger_metrics_slm_training.csv": dict(
        format="lightning-csv",
        n=134,
        first=(49, "loss", 8.620475769042969),
        last=(5739, "step_time_s", None),
        events=[],
        timed=20,
        time_at=(286, 155.4527130126953 / 287),
    ),
    "megatron_deepspeed_bloom176b_loss_spike_31216.log": dict(
        format="megatron-deepspeed",
        n=11,
        first=(31214, "step_time_s", 106.46),
        last=(31251, "loss", 2.235667),
        events=[],
        max_loss=(31219, 5.098124),
    ),
    "megatron_lm_ci_golden_values_resume_tp4pp1.json": dict(
        format="megatron-golden-json",
        n=21,
        first=(1, "step_time_s", 3.83089),
        last=(100, "loss", 9.5087),
        events=[],
    ),
    "megatron_lm_straggler_minmax_per_rank.log": dict(format="megatron-straggler", n=0, events=[], timers=7),
}


@needs_shared
def test_every_corpus_trainlog_has_expectations():
    names = {p.name for p in corpus_files("trainlogs")}
    assert names == set(CORPUS_EXPECT), "a corpus file was added or removed: write its expectations"


@needs_shared
@pytest.mark.parametrize("name", sorted(CORPUS_EXPECT))
def test_corpus_trainlog(name):
    """Each real log parses into the records its .source describes."""
    expect = CORPUS_EXPECT[name]
    log = read_trainlog(CORPUS / "trainlogs" / name)
    frame = log.frame()
    assert log.format == expect["format"]
    assert len(log) == expect["n"]
    assert _events(log) == expect["events"]
    for key in ("first", "last"):
        if key in expect:
            step, column, value = expect[key]
            row = frame.iloc[0 if key == "first" else -1]
            assert row["step"] == step
            if value is not None:
                assert row[column] == pytest.approx(value)
    if expect.get("no_time"):
        assert "step_time_s" not in frame
    if "timed" in expect:
        assert frame["step_time_s"].notna().sum() == expect["timed"]
        step, value = expect["time_at"]
        assert frame.loc[frame.step == step, "step_time_s"].dropna().iloc[0] == pytest.approx(value)
    if "max_loss" in expect:
        step, value = expect["max_loss"]
        worst = frame.loc[frame["loss"].idxmax()]
        assert (worst["step"], worst["loss"]) == (step, pytest.approx(value))
        assert (frame["rank"] == 7).all()
        assert frame["grad_norm"].max() == pytest.approx(960.351)
    if "timers" in expect:
        assert len(log.timers) == expect["timers"]
        rtt = log.timers[0]
        assert (rtt.metric, rtt.unit, rtt.min_value, rtt.min_rank, rtt.max_value, rtt.max_rank) == (
            "Rtt",
            "ms",
            3453.08,
            8,
            3468.20,
            0,
        )


# ---------------------------------------------------------------------- fixtures
def test_megatron_pre_incident_log():
    log = read_trainlog(TL / "megatron_lm_pre_incident.log")
    frame = log.frame()
    assert log.format == "megatron-lm"
    assert list(frame["step"]) == list(range(1, 431))
    assert frame["step_time_s"].iloc[0] == pytest.approx(14.8)
    assert (np.diff(frame["consumed_samples"]) == 128).all()
    assert _events(log) == [
        ("checkpoint_save", 100),
        ("checkpoint_save", 200),
        ("eval", 200),
        ("checkpoint_save", 300),
        ("checkpoint_save", 400),
    ]


def test_megatron_resume_line_gives_the_checkpoint_step():
    log = read_trainlog(TL / "megatron_lm_resumed_ok.log")
    assert _events(log) == [("resume", 400)]
    assert log.frame()["step"].iloc[0] == 401
    assert (log.frame()["segment"] == 1).all()


def test_megatron_multirank_interleaved_glued_and_cut_records():
    """Four ranks printing one record give one row; glued and cut records are recovered."""
    log = read_trainlog(TL / "megatron_lm_multirank.log")
    frame = log.frame()
    assert list(frame["step"]) == list(range(1, 13))
    assert frame["loss"].tolist()[8:11] == pytest.approx([4.1, 4.0, 3.9])
    assert frame["step_time_s"].iloc[10] == pytest.approx(1.011)
    assert frame["rank"].iloc[0] == 0
    assert _events(log) == [("nan", 12), ("skip", 12)]
    assert bool(frame["nan"].iloc[-1])
    assert frame["skipped"].iloc[-1] == 2
    assert log.status() == "failed"
    assert [t.metric for t in log.timers] == ["Rtt", "Pwr"]
    assert log.timers[0].step == 11


def test_per_rank_records_that_differ_are_kept_with_their_rank():
    lines = [
        "[rank0]: iteration        1/      10 | elapsed time per iteration (ms): 1000.0 | lm loss: 2.0E+00 |",
        "[rank1]: iteration        1/      10 | elapsed time per iteration (ms): 1100.0 | lm loss: 2.0E+00 |",
    ]
    frame = parse(lines).frame()
    assert frame["rank"].tolist() == [0, 1]
    assert frame["step_time_s"].tolist() == pytest.approx([1.0, 1.1])


@pytest.mark.parametrize(
    ("name", "fmt", "n", "events", "column", "first_value"),
    [
        (
            "megatron_deepspeed.log",
            "megatron-deepspeed",
            10,
            [("checkpoint_save", 109)],
            "consumed_tokens",
            419430400,
        ),
        ("gpt_neox.log", "gpt-neox", 10, [], "step_time_s", 1.3419),
        ("nemo2.log", "nemo2", 12, [], "step_time_s", 3.91),
        (
            "torchtitan_resume.log",
            "torchtitan",
            20,
            [("resume", 10), ("checkpoint_save", 30)],
            "tokens_per_s",
            2520,
        ),
        (
            "nanogpt.log",
            "nanogpt",
            31,
            [("start", None), ("eval", 0), ("eval", 26), ("checkpoint_save", 25), ("nan", 29), ("nan", 30)],
            "step_time_s",
            12.43661,
        ),
        ("deepspeed_engine.log", "deepspeed", 5, [("skip", 40)], "samples_per_s", 28.1),
        ("hf_trainer_console.log", "hf-trainer-console", 3, [("eval", 12)], "loss", 2.4977),
        ("generic.csv", "csv", 20, [], "step_time_s", 0.251),
        ("lightning_metrics.csv", "lightning-csv", 12, [], "loss", 6.0),
    ],
)
def test_fixture_formats(name, fmt, n, events, column, first_value):
    log = read_trainlog(TL / name)
    assert (log.format, len(log), _events(log)) == (fmt, n, events)
    assert log.frame()[column].dropna().iloc[0] == pytest.approx(first_value)
    # the format can also be forced
    assert len(read_trainlog(TL / name, format=fmt)) == n


def test_hf_console_curly_quotes_and_notes():
    log = read_trainlog(TL / "hf_trainer_console.log")
    assert log.frame()["loss"].tolist() == pytest.approx([2.4977, 2.1159, 1.498])
    assert any("train_runtime 75.0" in note for note in log.notes)


def test_lightning_epoch_time_becomes_per_step_time_and_rows_merge():
    frame = read_trainlog(TL / "lightning_metrics.csv").frame()
    timed = frame.dropna(subset=["step_time_s"])
    assert timed["step"].tolist() == [39, 79, 119]
    assert timed["step_time_s"].tolist() == pytest.approx([40.0 / 40, 10.1 / 40, 10.2 / 40])


def test_generic_jsonl_needs_and_uses_a_column_mapping():
    with pytest.raises(ParseError, match="step field"):
        read_trainlog(TL / "generic_custom.jsonl")
    log = read_trainlog(
        TL / "generic_custom.jsonl", columns={"step": "it", "loss": "train/loss", "step_time_ms": "dt_ms"}
    )
    frame = log.frame()
    assert list(frame["step"]) == list(range(1, 21))  # the eval record is not a step
    assert frame["step_time_s"].iloc[0] == pytest.approx(0.251)


def test_nan_strings_in_json_are_nan_events():
    doc = {"lm loss": {"values": {"1": 3.0, "2": "nan"}}, "iteration-time": {"values": {"1": 1.0, "2": 1.0}}}
    log = parse([json.dumps(doc)])
    assert _events(log) == [("nan", 2)]
    assert log.frame()["nan"].tolist() == [False, True]


def test_unrecognised_input_names_file_line_and_expectation():
    with pytest.raises(ParseError) as info:
        read_trainlog(TL / "not_a_trainlog.txt")
    assert info.value.line == 1
    assert info.value.text == "hello"
    assert "megatron-lm" in info.value.expected
    with pytest.raises(ParseError, match="empty"):
        parse([], "empty.log")
    with pytest.raises(ParseError, match="format among"):
        parse(["x"], format="nope")


def test_keep_restricts_columns():
    log = read_trainlog(TL / "megatron_lm_pre_incident.log", keep=["step_time_s"])
    assert set(log.columns) == {"step", "step_time_s"}


def test_to_json_shape():
    doc = read_trainlog(TL / "nanogpt.log").to_json()
    assert doc["kind"] == "trainlog"
    assert doc["format"] == "nanogpt"
    assert doc["status"] == "failed"
    assert doc["steps"][0] == {
        "step": 0,
        "step_time_s": pytest.approx(12.43661),
        "loss": 4.2664,
        "nan": False,
    }
    assert doc["steps"][29]["loss"] is None
    assert doc["steps"][29]["nan"] is True
    assert {
        "type": "checkpoint_save",
        "step": 25,
        "line": 31,
        "detail": "saving checkpoint to out-shakespeare-char",
    } in doc["events"]
    assert json.loads(json.dumps(doc)) == doc
    assert set(FORMATS) >= {"megatron-lm", "nemo2", "torchtitan", "lightning-csv", "jsonl", "csv"}


def test_parse_cli(capsys):
    assert main(["parse", "trainlog", str(TL / "megatron_lm_resumed_ok.log")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["events"][0]["type"] == "resume"
    assert len(doc["steps"]) == 120
    assert main(["parse", "trainlog", str(TL / "nanogpt.log")]) == 1
    capsys.readouterr()
    assert main(["parse", "trainlog", str(TL / "not_a_trainlog.txt")]) == 2
    assert "not_a_trainlog.txt:1" in capsys.readouterr().err
    args = [
        "parse",
        "trainlog",
        str(TL / "generic_custom.jsonl"),
        "--column",
        "step=it",
        "--column",
        "loss=train/loss",
    ]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["steps"][0] == {"step": 1, "loss": 2.99}
    assert main(["parse", "trainlog", str(TL / "generic.csv"), "--column", "bogus=x"]) == 2


def test_streaming_accepts_a_generator(tmp_path: Path):
    def lines():
        for s in range(1, 4):
            yield f"iter {s}: loss {1.0 / s:.4f}, time 100.00ms, mfu 1.00%\n"

    log = parse(lines())
    assert log.frame()["loss"].tolist() == pytest.approx([1.0, 0.5, 0.3333])
    assert math.isclose(log.frame()["step_time_s"].iloc[0], 0.1)


@pytest.mark.parametrize(
    "name", ["megatron_lm_pre_incident.log", "megatron_lm_resumed_ok.log", "megatron_lm_multirank.log"]
)
def test_fast_path_gives_the_same_records(monkeypatch, name):
    """The bulk path for long logs (few kept columns) equals the line parser, chunk edges included."""
    from acceptance.tools.trainlog import fast as trainlog_fast

    monkeypatch.setattr(trainlog_fast, "CHUNK", 37)
    monkeypatch.setattr(trainlog_fast, "MIN_GROUP", 2)
    monkeypatch.setattr(trainlog_fast, "MIN_RUN", 2)
    bulk_rows = []
    real = trainlog_fast.FastParser._bulk

    def spy(self, chunk, a, b):
        out = real(self, chunk, a, b)
        bulk_rows.append(b - a if out else 0)
        return out

    monkeypatch.setattr(trainlog_fast.FastParser, "_bulk", spy)
    keep = ["step_time_s", "loss", "consumed_samples"]
    slow = read_trainlog(TL / name)
    fast = read_trainlog(TL / name, keep=keep)
    if name != "megatron_lm_multirank.log":  # every record there has a rank prefix
        assert sum(bulk_rows) > len(slow) // 2
    assert trainlog_fast.usable(fast.format, keep)
    assert set(fast.columns) <= {"step", "segment", "rank", *keep}
    for column in ("step", *keep):
        np.testing.assert_array_equal(fast.columns[column], slow.columns[column])
    assert fast.events == slow.events


def test_noise_lines_between_records_change_nothing():
    """Arbitrary non-record lines (launcher chatter, warnings, stack traces) are ignored."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    records = (TL / "megatron_lm_resumed_ok.log").read_text().splitlines(keepends=True)[3:23]
    expected = parse(records).frame()
    noise = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n|"), max_size=80)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(noise, min_size=len(records), max_size=len(records)))
    def check(junk):
        lines = [part for rec, extra in zip(records, junk, strict=True) for part in (rec, extra + "\n")]
        got = parse(lines).frame()
        assert got[["step", "loss", "step_time_s"]].equals(expected[["step", "loss", "step_time_s"]])

    check()


def test_unprefixed_ranks_out_of_order_are_deduplicated_but_a_prefixed_repeat_is_kept():
    rec = {
        s: f" iteration {s:8d}/      10 | elapsed time per iteration (ms): 1000.0 | lm loss: {s}.0E+00 |"
        for s in (1, 2, 3)
    }
    frame = parse([rec[1], rec[2], rec[1], rec[3], rec[2], rec[3]]).frame()
    assert frame["step"].tolist() == [1, 2, 3]
    again = parse([f"[rank0]:{rec[1]}", f"[rank0]:{rec[2]}", f"[rank0]:{rec[1]}"]).frame()
    assert again["step"].tolist() == [1, 2, 1]
