"""A resumed log with its checkpoint load but no step line yet is a valid log (issue 24, class 5).

It was a ParseError ("a training log (...)"): detection needed a step line. Criterion 4 then
says INCONCLUSIVE, not enough steps, instead of never judging.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.cmd.parse_trainlog import read_trainlog
from acceptance.judge.loss import LossPolicy, judge_loss
from acceptance.judge.verdict import Status
from acceptance.tools.trainlog import parse
from tests.shared import FIXTURES

TL = FIXTURES / "trainlogs"

NO_STEP_YET = {
    "torchtitan": (
        [
            "[rank0]:[titan] 2025-04-22 09:12:10,002 - root - INFO - Loading the checkpoint at step 400.\n",
            "[rank0]:[titan] 2025-04-22 09:12:12,431 - root - INFO - Training starts at step 401.\n",
        ],
        400,
    ),
    "torchtitan-start-line-only": (
        ["[rank0]:[titan] 2025-04-22 09:12:12,431 - root - INFO - Training starts at step 401.\n"],
        400,
    ),
    "megatron-lm": (
        [
            " loading distributed checkpoint from /ckpt at iteration 400\n",
            "  successfully loaded checkpoint from /ckpt [ t 1/4, p 1/1 ] at iteration 400\n",
            "(min, max) time across ranks (ms):\n",
            "    load-checkpoint ................................: (2210.44, 2210.51)\n",
            "training ...\n",
        ],
        400,
    ),
    "hf-trainer-console": (
        [
            "[INFO|trainer.py:2159] 2024-05-01 10:00:00,120 >>   Continuing training from global step 1000\n",
            "  0%|          | 0/8660 [00:00<?, ?it/s]\n",
        ],
        1000,
    ),
}


@pytest.mark.parametrize("name", sorted(NO_STEP_YET))
def test_a_resume_without_a_step_line_is_a_log_with_no_steps(name: str) -> None:
    lines, step = NO_STEP_YET[name]
    log = parse(lines, name)
    assert log.format == name.split("-start", maxsplit=1)[0]
    assert len(log) == 0
    assert [(e.type, e.step) for e in log.events] == [("resume", step)]
    assert log.status() == "ok"


def test_the_cli_prints_it_with_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "resumed.log"
    path.write_text("".join(NO_STEP_YET["torchtitan"][0]))
    assert main(["parse", "trainlog", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["format"], doc["steps"], doc["events"][0]["step"]) == ("torchtitan", [], 400)


def test_criterion_4_says_not_enough_steps(tmp_path: Path) -> None:
    path = tmp_path / "resumed.log"
    path.write_text("".join(NO_STEP_YET["megatron-lm"][0]))
    v = judge_loss(read_trainlog(TL / "megatron_lm_pre_incident.log"), read_trainlog(path), None, LossPolicy())
    assert v.status is Status.INCONCLUSIVE
    assert v.summary == "not enough steps: the log has no step after the restore at step 400 (none run or logged yet)"
    assert v.figures["restore_step"] == 400


def test_a_log_of_other_lines_only_is_still_refused() -> None:
    from acceptance.errors import ParseError

    with pytest.raises(ParseError, match="a training log"):
        parse(["saving the report\n", "Training complete\n"], "x.log")
