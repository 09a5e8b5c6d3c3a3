"""The judges on the simulator's Megatron-style logs: healthy passes, faults fail the right criterion."""

from __future__ import annotations

import pytest

from acceptance.cli import main
from acceptance.judge.loss import LossPolicy, judge_loss
from acceptance.judge.steptime import StepTimePolicy, judge_steptime
from acceptance.judge.verdict import Status
from acceptance.tools.trainlog import parse

TRAIN = [
    "python",
    "pretrain_gpt.py",
    "--train-iters",
    "1200",
    "--log-interval",
    "1",
    "--save-interval",
    "200",
]
TRAIN += ["--eval-interval", "500"]
RESUME = [*TRAIN, "--load", "/ckpt", "--ckpt-step", "1000", "--exit-interval", "1100"]


def _sim(capsys, argv, scenario=None):
    extra = ["--scenario", scenario] if scenario else []
    assert main(["sim", "run", *extra, "--", *argv]) == 0
    return parse(capsys.readouterr().out.splitlines(keepends=True), f"sim:{scenario or 'healthy'}")


@pytest.fixture
def pre(capsys):
    return _sim(capsys, [*TRAIN, "--save", "/ckpt"])


@pytest.mark.parametrize(
    ("scenario", "steptime", "loss", "loss_text"),
    [
        (None, Status.PASS, Status.PASS, "loss continuous after restore at step 1000"),
        ("gpu-throttle", Status.FAIL, Status.PASS, "loss continuous"),
        ("bad-restore", Status.PASS, Status.FAIL, "loss level shifted"),
        ("bad-restore-step-off", Status.PASS, Status.FAIL, "first step after restore is"),
    ],
)
def test_sim_scenarios(capsys, pre, scenario, steptime, loss, loss_text):
    assert pre.format == "megatron-lm"
    assert [e.step for e in pre.events_of("checkpoint_save")] == [200, 400, 600, 800, 1000, 1200]
    run = _sim(capsys, RESUME, scenario)
    assert run.events_of("resume")[0].step == 1000
    st = judge_steptime(pre, run, StepTimePolicy())
    assert st.status is steptime, st.message()
    lv = judge_loss(pre, run, None, LossPolicy())
    assert lv.status is loss, lv.message()
    assert loss_text in lv.summary
