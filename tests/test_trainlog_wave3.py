"""corpus-wave3 training logs: the facts read by hand from each file, and properties over every
training-log corpus file (issue 24).

Properties: a decoration added to every line (indentation, a tab, markdown `> ` quoting, a
`    # ` comment marker) or CRLF line ends change no fact: format, status, every step's values,
the events with their lines, the timers.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pytest

from acceptance.cmd.parse_trainlog import read_trainlog
from acceptance.errors import ParseError
from acceptance.judge.loss import LossPolicy, judge_loss
from acceptance.tools import trainlog
from tests.hostile import read
from tests.shared import CORPUS3, corpus_files, needs_shared, wave3_files

BLOOM = "megatron-deepspeed-bloom176b-resume-universal-checkpoint-default7-prefix-after-restart-line.log"
JEAN_ZAY = "megatron-lm-2021-jean-zay-iterations-glued-rank-memory-lines-then-scancel-killing-subprocess.out"
TITAN_INDENTED = "torchtitan-training-completed-then-sigabrt-at-exit-childfailed-8-space-indented-mkdocs.log"


def _events(log: trainlog.TrainLog) -> list[tuple[str, int | None]]:
    return [(e.type, e.step) for e in log.events]


def _path(kind: str, name: str) -> Path:
    path = CORPUS3 / kind / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


@needs_shared
def test_every_wave3_trainlog_has_its_facts_test() -> None:
    assert {p.name for p in wave3_files("trainlogs")} == {BLOOM, JEAN_ZAY}


@needs_shared
def test_bloom_176b_resume_from_the_universal_checkpoint() -> None:
    """Lines 1-3: step 94768, the engineer's `after restart`, step 94769; resumed from
    global_step94767_universal (the page's heading): the counter continues from the checkpoint."""
    log = read_trainlog(_path("trainlogs", BLOOM))
    frame = log.frame()
    assert log.format == "megatron-deepspeed"
    assert frame["step"].tolist() == [94768, 94769]
    assert frame["loss"].tolist() == pytest.approx([1.943883, 1.934365])
    assert frame["step_time_s"].tolist() == pytest.approx([215.82, 215.99])  # "(s)": seconds
    assert frame["lr"].tolist() == pytest.approx([7.610e-06, 7.609e-06])
    assert frame["consumed_samples"].tolist() == [177927088, 177929136]  # + the global batch size 2048
    assert frame["consumed_tokens"].tolist() == [364394676224, 364398870528]
    assert frame["tflops"].tolist() == pytest.approx([145.31, 145.19])
    assert (frame["rank"] == 7).all()  # "[default7]:"
    assert _events(log) == []  # no load line; "after restart" is prose, not a framework's resume line
    assert (log.status(), log.errors) == ("ok", ())
    # the first step is the checkpoint's + 1: criterion 4's first-step check holds for step 94767
    before = trainlog.parse([" iteration    94767/  115311 | lm loss: 1.95E+00 | learning rate: 7.610E-06 |\n"])
    v = judge_loss(before, log, 94767, LossPolicy())
    assert v.figures["first_step_after"] == 94768
    assert "first step after restore" not in v.summary


@needs_shared
def test_megatron_lm_2021_jean_zay() -> None:
    """20 step lines every 10 iterations; the first has no `lm loss` (all 10 iterations skipped by
    the loss scaler); `time (ms)` timer lines, glued `[Rank N]` memory lines and the scancel tail are
    not steps."""
    log = read_trainlog(_path("trainlogs", JEAN_ZAY))
    frame = log.frame().set_index("step")
    assert log.format == "megatron-lm"
    assert frame.index.tolist() == list(range(10, 201, 10))
    assert math.isnan(frame.loc[10, "loss"])
    assert frame.loc[10, "lr"] == 0.0
    assert frame.loc[10, "loss_scale"] == 8388608.0
    assert frame.loc[10, "step_time_s"] == pytest.approx(2.1522)
    assert frame.loc[20, "loss"] == pytest.approx(12.03115)
    assert frame.loc[30, "loss"] == pytest.approx(22.47505)
    assert frame.loc[30, "grad_norm"] == pytest.approx(16.999)
    assert frame.loc[110, "step_time_s"] == pytest.approx(1.5641)  # the step after the validation
    assert frame.loc[200, "loss"] == pytest.approx(7.365868)
    assert frame.loc[200, "lr"] == pytest.approx(1.342e-04)
    assert frame["skipped"].tolist()[:4] == [10, 8, 1, 0]
    assert frame["consumed_samples"].tolist() == [4 * s for s in range(10, 201, 10)]
    assert "rank" not in frame  # the `[Rank N]` memory lines are no records
    assert _events(log) == [("skip", 10), ("skip", 20), ("skip", 30), ("eval", 100), ("eval", 200)]
    assert not log.timers
    assert (log.status(), log.errors) == ("ok", ())


@needs_shared
def test_torchtitan_lines_of_the_watchdog_folder_indented_8_blanks() -> None:
    """Line 1: `step: 640/644 = 99.3789%  loss:  6.2116 ... tps: 52,142  mfu: 3.09%` (the newer
    step field with its total); line 2 the last-step save of step 644; line 3 only says it finished."""
    log = read_trainlog(_path("watchdog", TITAN_INDENTED))
    frame = log.frame()
    assert log.format == "torchtitan"
    assert frame["step"].tolist() == [640]
    assert frame["loss"].tolist() == pytest.approx([6.2116])
    assert frame["tokens_per_s"].tolist() == [52142]
    assert frame["rank"].tolist() == [0]
    assert _events(log) == [("checkpoint_save", 644)]


# ---------------------------------------------------------------------- properties
def _corpus() -> list[Path]:
    return [*corpus_files("trainlogs"), *wave3_files("trainlogs")]


CORPUS_FILES = _corpus()


def _facts(text: str, name: str) -> Any:
    try:
        log = trainlog.parse(io.StringIO(text, newline=""), name)
    except ParseError as exc:
        return ("ParseError", exc.line)
    frame = log.frame()
    rows = [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
        for row in frame.to_dict(orient="records")
    ]
    return (
        log.format,
        log.status(),
        rows,
        [(e.type, e.step, e.line) for e in log.events],
        [(t.metric, t.unit, t.min_value, t.min_rank, t.max_value, t.max_rank, t.step, t.line) for t in log.timers],
        [e.line for e in log.errors],
    )


def _decorated(text: str, prefix: str, crlf: bool) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        end = line[len(body) :]
        out.append(prefix + body + ("\r\n" if crlf and end else end))
    return "".join(out)


@needs_shared
@pytest.mark.parametrize(
    ("prefix", "crlf"), [("    ", False), ("\t", False), ("> ", False), ("    # ", False), ("", True), ("  > ", True)]
)
@pytest.mark.parametrize("path", CORPUS_FILES, ids=[p.name[:60] for p in CORPUS_FILES])
def test_a_decoration_on_every_line_or_crlf_changes_no_fact(path: Path, prefix: str, crlf: bool) -> None:
    text = read(path)
    assert _facts(_decorated(text, prefix, crlf), path.name) == _facts(text, path.name)


@needs_shared
@pytest.mark.parametrize("prefix", ["    # ", "> ", "  "])
@pytest.mark.parametrize("name", [BLOOM, JEAN_ZAY])
def test_the_bulk_reader_of_a_decorated_megatron_log_gives_the_same_records(
    tmp_path: Path, name: str, prefix: str
) -> None:
    text = read(_path("trainlogs", name))
    decorated = tmp_path / name
    decorated.write_text(_decorated(text, prefix, False), newline="")
    keep = ["step_time_s", "loss", "lr"]
    plain, bulk = read_trainlog(_path("trainlogs", name), keep=keep), read_trainlog(decorated, keep=keep)
    assert set(bulk.columns) == set(plain.columns)
    for column, values in plain.columns.items():
        assert bulk.columns[column].tolist() == pytest.approx(values.tolist(), nan_ok=True), column
    assert bulk.events == plain.events


@pytest.mark.parametrize("glue", ["\r", "", "\n"])
def test_records_glued_to_tqdm_bars_are_read(glue: str) -> None:
    """A data-loading bar redrawn with `\\r` and never ended: the next record lands on its line."""
    bar = "Loading shards:  99%|█████████▉| 161/163 [01:15<00:00,  2.24it/s]"
    record = (
        " iteration       11/    1000 | consumed samples:           44 | elapsed time per iteration (ms): 1376.1 |"
        " learning rate: 1.500E-04 | global batch size:     4 | lm loss: 2.247505E+01 | loss scale: 16384.0 |"
        " number of skipped iterations:   0 | number of nan iterations:   0 |"
    )
    titan = (
        "[rank0]:2025-04-01 00:25:47,084 - root - INFO - step: 12  loss:  6.2116  memory: 87.04GiB(93.48%)  "
        "tps: 52,142  mfu: 3.09%"
    )
    frame = trainlog.parse([f"\r{bar}\r{bar}{glue}{record}\n"]).frame()
    assert frame["step"].tolist() == [11]
    assert frame["step_time_s"].tolist() == pytest.approx([1.3761])
    assert frame["loss"].tolist() == pytest.approx([22.47505])
    titan_frame = trainlog.parse([f"{bar}{glue}{titan}\n"]).frame()
    assert (titan_frame["step"].tolist(), titan_frame["loss"].tolist()) == ([12], [6.2116])
