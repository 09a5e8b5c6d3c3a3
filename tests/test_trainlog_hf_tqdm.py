"""HF Trainer console output with tqdm bars: the step is the trainer's global step, the bar's
rate the step time (issue 24, class 5). The steps were the ordinals of the loss dicts (1, 2, 3
for dicts printed at steps 10, 20, 30) and the step time was not read at all.

The fixtures are made the way the Trainer writes a merged stdout+stderr file: tqdm's `\\r`
redraws, `tqdm.write` clearing the bar before each dict and redrawing it after, an evaluation
bar one row down (`\\n` ... `\\x1b[A`), logger lines glued to a bar state (fixtures/trainlogs/README.md).
"""

from __future__ import annotations

import io
import re

import pytest

from acceptance.cmd.parse_trainlog import read_trainlog
from acceptance.judge.loss import LossPolicy, judge_loss
from acceptance.tools.trainlog import parse
from tests.hostile import read
from tests.shared import FIXTURES

TL = FIXTURES / "trainlogs"
FRESH = TL / "hf_trainer_tqdm_logging_steps_10.log"
RESUMED = TL / "hf_trainer_tqdm_resume_60.log"


def _events(log):
    return [(e.type, e.step) for e in log.events]


@pytest.mark.parametrize("how", ["file", "raw"])
def test_steps_are_the_global_step_not_the_count_of_dicts(how: str) -> None:
    """Read as a file (universal newlines) and as the raw bytes' lines (`\\r` inside lines)."""
    log = read_trainlog(FRESH) if how == "file" else parse(io.StringIO(read(FRESH)), str(FRESH))
    frame = log.frame()
    assert log.format == "hf-trainer-console"
    assert frame["step"].tolist() == list(range(10, 121, 10))  # 12 dicts, logging_steps=10
    assert frame.loc[frame.step == 60, "loss"].item() == pytest.approx(2.0333)
    assert frame.loc[frame.step == 10, "lr"].item() == pytest.approx(1.833e-05)
    # the bar's rate at each dict: "10/120 [00:12<02:11,  1.20s/it]", "40/120 [00:48<01:37,  1.22s/it]"
    assert frame.loc[frame.step == 10, "step_time_s"].item() == pytest.approx(1.20)
    assert frame.loc[frame.step == 40, "step_time_s"].item() == pytest.approx(1.22)
    assert frame.loc[frame.step == 70, "step_time_s"].item() == pytest.approx(1.27)  # the eval's pause in the average
    assert _events(log) == [("eval", 60), ("checkpoint_save", 60), ("eval", 120), ("checkpoint_save", 120)]
    assert log.status() == "ok"


def test_a_resumed_run_keeps_the_bar_s_steps_and_drops_the_rates_the_jump_spoils() -> None:
    """The bar jumps 0 → 61 at the first step after `global step 60`: "61/120 [00:01<00:01, 49.30it/s]";
    tqdm's average carries that jump for about 20 updates (step 80 shows 1.17s/it for 1.21)."""
    log = read_trainlog(RESUMED)
    frame = log.frame()
    assert _events(log)[0] == ("resume", 60)
    assert frame["step"].tolist() == list(range(70, 121, 10))
    assert frame["step_time_s"].isna().tolist() == [True, True, False, False, False, False]
    assert frame.loc[frame.step == 90, "step_time_s"].item() == pytest.approx(1.21)
    assert any("counts the 60 restored steps" in n for n in log.notes)
    # criterion 4 finds the first step on the every-10 grid after the checkpoint
    pre = read_trainlog(FRESH)
    v = judge_loss(pre, log, None, LossPolicy(min_points=5, min_post_points=3))
    assert v.figures["restore_step"] == 60
    assert v.figures["first_step_after"] == 70
    assert "first step after restore" not in v.summary


def test_it_per_s_is_inverted_and_evaluation_bars_are_not_the_training_bar() -> None:
    lines = [
        "  0%|          | 0/100 [00:00<?, ?it/s]\r 50%|█████     | 50/100 [00:12<00:12,  4.00it/s]"
        "\r                                                \r{'loss': 1.25, 'learning_rate': 1e-05, 'epoch': 0.5}\n",
        "\r 50%|█████     | 50/100 [00:12<00:12,  4.00it/s]\n",
        "\r 80%|████████  | 8/10 [00:01<00:00,  9.99it/s]\x1b[A\n",
        "\r 60%|██████    | 60/100 [00:15<00:10,  3.90it/s]\r                  \r{'loss': 1.2, 'epoch': 0.6}\n",
        "\r 60%|██████    | 60/100 [00:15<00:10,  3.90it/s]\n",
    ]
    frame = parse(lines).frame()
    assert frame["step"].tolist() == [50, 60]
    assert frame["step_time_s"].tolist() == pytest.approx([0.25, 1 / 3.90])


def test_without_a_bar_the_step_is_epoch_times_steps_per_epoch() -> None:
    """stdout captured alone: the dicts and the header, no bar."""
    parts = [p for line in read(FRESH).splitlines() for p in line.split("\r")]
    kept = [p + "\n" for p in parts if p.startswith(("{", "[INFO"))]
    log = parse(kept)
    assert log.frame()["step"].tolist() == list(range(10, 121, 10))  # round(0.17 × 60) = 10, ...
    assert any("epoch × 60 steps per epoch" in n for n in log.notes)
    assert "step_time_s" not in log.frame()


def test_dicts_without_any_step_source_are_said_so() -> None:
    lines = ["{'loss': 2.0, 'learning_rate': 1e-05}\n", "{'loss': 1.9, 'learning_rate': 1e-05}\n"]
    log = parse(lines)
    assert log.frame()["step"].tolist() == [1, 2]
    assert re.search(r"line 2: the printed dict says no step .* taken as 2", " ".join(log.notes))


def test_an_explicit_step_key_wins() -> None:
    lines = [
        " 10%|█         | 10/100 [00:10<01:30,  1.00s/it]\r{'loss': 2.0, 'step': 12, 'epoch': 0.1}\n",
    ]
    frame = parse(lines).frame()
    assert frame["step"].tolist() == [12]
    assert "step_time_s" not in frame  # the bar's count is not this step's: its rate is not taken
