"""Criterion 3's reader of the streamed smoke log (`acceptance.criteria.smoke.watch`): it stops the job
only once step time is decided and criterion 4 has its own minimum of post-restore steps (issue 28)."""

from __future__ import annotations

import re

import pytest

from acceptance.baseline import BaselineStore
from acceptance.criteria.smoke import SUBJECT, hold_steps, reference_series, watch
from acceptance.judge.loss import LossPolicy
from acceptance.judge.steptime import StepTimePolicy
from acceptance.judge.steptime_seq import SequentialRule, prepare
from acceptance.sim.model.runner import SimRunner
from acceptance.sim.model.scenario import load_scenario
from acceptance.tools import trainlog
from tests.suite_run import ROOT

SMOKE = [
    "python", "pretrain_gpt.py", "--train-iters", "1200", "--log-interval", "1", "--save-interval", "200",
    "--eval-interval", "500", "--load", "/ckpt", "--ckpt-step", "1000", "--exit-interval", "1200",
]  # fmt: skip


def _smoke_text(faults: tuple[str, ...] = ()) -> str:
    runner = SimRunner.from_scenario(load_scenario("healthy-16"), list(faults), seed=20261129)
    return runner.run(SMOKE, {}, "sim-node-01", ()).stdout


def _stop_point(text: str, hold: int) -> tuple[int, str | None]:
    """Feed the log line by line, as it streams in: (iterations logged when the reader said stop, why)."""
    recorded = BaselineStore(ROOT / "baselines" / "sim").latest().baseline.data["results"]["smoke"]
    rule = SequentialRule()
    policy = StepTimePolicy(margin=rule.margin)
    reader = watch(prepare(reference_series(recorded), rule, policy), rule, policy, hold,
                   lambda t: trainlog.parse(t.splitlines(keepends=True), source="stream"))  # fmt: skip
    lines = text.splitlines(keepends=True)
    for n in range(1, len(lines) + 1):
        if not re.search(r"iteration\s+\d+/", lines[n - 1]):
            continue
        so_far = "".join(lines[:n])
        reason = reader(so_far)
        if reason:
            return len(re.findall(r"iteration\s+\d+/", so_far)), reason
    return len(re.findall(r"iteration\s+\d+/", text)), None


def test_criterion_4_holds_the_job_for_its_own_minimum_of_post_restore_steps() -> None:
    text = _smoke_text()
    alone, why = _stop_point(text, hold=0)
    assert why == f"decided PASS after {alone} of at most 200 steps"
    held, why_held = _stop_point(text, hold=120)
    assert alone < 120 <= held < 200, (alone, held)
    assert why_held == f"decided PASS after {held} of at most 200 steps"


def test_the_hold_is_criterion_4s_check_steps_after_a_restore_and_none_without_one() -> None:
    assert hold_steps(1000, LossPolicy()) == LossPolicy().check_steps == 50
    assert hold_steps(1000, LossPolicy(check_steps=80)) == 80
    assert hold_steps(None, LossPolicy()) == 0


@pytest.mark.parametrize("fault", ["gpu-throttle@sim-node-05:2"])
def test_a_slowed_job_is_stopped_early_with_a_fail(fault: str) -> None:
    used, why = _stop_point(_smoke_text((fault,)), hold=50)
    assert why is not None
    assert why.startswith("decided FAIL after")
    assert 50 <= used < 200
    assert SUBJECT == "smoke step time"


def test_loss_continuity_never_judges_a_stopped_log_with_fewer_steps_than_its_minimum() -> None:
    """A smoke job stopped before criterion 4's own `check_steps` after the restore is not judged by it."""
    from types import SimpleNamespace

    from acceptance.criteria.loss import LossContinuity
    from acceptance.judge.verdict import Status, Verdict
    from acceptance.margins import Margins

    runner = SimRunner.from_scenario(load_scenario("healthy-16"), seed=20261129)
    pre_argv = [*SMOKE[: SMOKE.index("--load")], "--exit-interval", "1000"]
    pre = trainlog.parse(runner.run(pre_argv, {}, "sim-node-01", ()).stdout.splitlines(keepends=True), source="pre")
    lines = _smoke_text().splitlines(keepends=True)
    cut = [i for i, line in enumerate(lines) if re.search(r"iteration\s+\d+/", line)]

    def verdict(steps: int, stopped: str) -> Verdict:
        smoke = trainlog.parse(lines[: cut[steps - 1] + 1], source="smoke")
        training = SimpleNamespace(pre_incident=lambda: pre, smoke=lambda: smoke, restore_step=1000,
                                   stopped={"smoke": stopped} if stopped else {})  # fmt: skip
        run = SimpleNamespace(training=training, context=SimpleNamespace(margins=Margins()))
        return LossContinuity(run).verdict()  # type: ignore[arg-type]

    held = verdict(49, "decided PASS after 49 of at most 200 steps")
    assert held.status == Status.INCONCLUSIVE
    assert "after 49 steps past the restore, fewer than the 50 this criterion judges" in held.summary
    assert verdict(50, "decided PASS after 50 of at most 200 steps").status == Status.PASS
    assert "stopped" not in verdict(49, "").summary, "a log that ended by itself is judged as before"
