"""Criterion 4's learning-rate check at every post-restore step, and skipped iterations (issue 23).

Before: the schedule was checked at the first post-restore step only (an LR ×100 one step later
passed), and Megatron's "number of skipped iterations: 5" after the restore passed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from acceptance.judge.loss import LossPolicy, judge_loss
from acceptance.judge.verdict import Status
from acceptance.tools.trainlog import parse


def _meg(step: int, lr: float, *, skipped: int = 0) -> str:
    loss = 2.0 + 0.01 * math.sin(step)
    return (
        f" iteration {step:8d}/   10000 | consumed samples: {step * 128:12d} | "
        "elapsed time per iteration (ms): 1000.0 | "
        f"learning rate: {lr:.6E} | global batch size:   128 | lm loss: {loss:.6E} | loss scale: 1.0 | "
        f"number of skipped iterations: {skipped:3d} | number of nan iterations:   0 |\n"
    )


def cosine(step: int, warmup: int = 100, total: int = 10000, peak: float = 3e-4) -> float:
    if step <= warmup:
        return peak * step / warmup
    return 0.5 * peak * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))


def _logs(
    schedule, pre: range, post: range, *, at: dict[int, float] | None = None, skipped: dict[int, int] | None = None
):
    at, skipped = at or {}, skipped or {}
    before = parse([_meg(s, schedule(s)) for s in pre])
    after = parse([_meg(s, at.get(s, schedule(s)), skipped=skipped.get(s, 0)) for s in post])
    return before, after


def test_an_lr_times_100_one_step_after_the_first_fails_naming_the_step_and_both_values() -> None:
    before, after = _logs(cosine, range(1, 401), range(401, 460), at={402: cosine(402) * 100})
    v = judge_loss(before, after, 400, LossPolicy())
    assert v.status is Status.FAIL, v.message()
    assert v.figures["first_offending_step"] == 402
    assert v.summary.startswith(f"learning rate {cosine(402) * 100:.4g} at step 402 after the restore")
    assert f"schedule gives {float(f'{cosine(402):.6E}'):.4g}" in v.summary
    assert "100×" in v.summary


def test_a_step_the_pre_incident_run_logged_must_have_its_value() -> None:
    """The pre-incident run went to step 430 before the incident; the restore is at 400."""
    wrong = cosine(415) * 1.01
    before, after = _logs(cosine, range(1, 431), range(401, 460), at={415: wrong})
    v = judge_loss(before, after, 400, LossPolicy())
    assert v.status is Status.FAIL
    assert v.figures["first_offending_step"] == 415
    assert "the pre-incident log's value at this step" in v.summary
    before, after = _logs(cosine, range(1, 431), range(401, 460))
    assert judge_loss(before, after, 400, LossPolicy()).status is Status.PASS


@pytest.mark.parametrize(
    ("name", "schedule", "restore", "post"),
    [
        ("cosine decay, 300 steps past the log", cosine, 400, 300),
        ("early cosine decay", lambda s: cosine(s, total=2000), 300, 200),
        ("warm-up ends during the smoke run", lambda s: min(s, 250) * 1e-6, 200, 150),
        ("warm-up into a cosine decay", lambda s: cosine(s, warmup=250, total=3000), 200, 150),
        ("linear decay to zero", lambda s: 3e-4 * max(0.0, 1 - s / 500), 400, 150),
        ("constant", lambda s: 1e-4, 400, 100),
        ("inverse square root", lambda s: 1e-3 / math.sqrt(max(s, 1)), 400, 300),
    ],
)
def test_healthy_schedules_pass_at_every_step(name, schedule, restore, post) -> None:
    before, after = _logs(schedule, range(1, restore + 1), range(restore + 1, restore + post + 1))
    v = judge_loss(before, after, restore, LossPolicy())
    assert "learning rate" not in v.summary, f"{name}: {v.summary}"
    assert v.status is Status.PASS, f"{name}: {v.message()}"


def test_an_lr_reset_at_the_first_step_still_fails() -> None:
    before, after = _logs(cosine, range(1, 401), range(401, 460), at={s: 3e-4 for s in range(401, 460)})
    v = judge_loss(before, after, 400, LossPolicy())
    assert v.figures["first_offending_step"] == 401
    assert v.summary.startswith("learning rate 0.0003 at step 401")
    assert judge_loss(before, after, 400, LossPolicy(lr_override=True)).status is Status.PASS


def test_skipped_iterations_after_the_restore_fail_naming_count_and_step() -> None:
    before, after = _logs(cosine, range(1, 401), range(401, 460), skipped={410: 5, 420: 1})
    v = judge_loss(before, after, 400, LossPolicy())
    assert v.status is Status.FAIL
    assert v.figures["first_offending_step"] == 410
    assert v.summary.startswith("5 skipped iterations at step 410 after the restore at step 400")
    assert "6 in all over 2 reports" in v.summary


def test_skipped_iterations_before_the_resume_line_of_one_log_are_not_post_restore() -> None:
    lines = [_meg(s, cosine(s), skipped=3 if s == 120 else 0) for s in range(1, 151)]
    lines.append("  successfully loaded checkpoint from /ckpt [ t 1/1, p 1/1 ] at iteration 140\n")
    lines += [_meg(s, cosine(s)) for s in range(141, 200)]
    log = parse(lines)
    v = judge_loss(log, log, None, LossPolicy())
    assert v.status is Status.PASS, v.message()
    lines[-10] = _meg(190, cosine(190), skipped=2)
    log = parse(lines)
    v = judge_loss(log, log, None, LossPolicy())
    assert v.summary.startswith("2 skipped iterations at step 190 after the restore at step 140")


def test_deepspeed_overflow_lines_after_the_restore_are_findings() -> None:
    lines = [
        "[2024-01-01 10:00:00,000] [INFO] [engine.py:1000:_load_checkpoint] Loaded checkpoint ckpt/global_step400\n",
        *(f"[Rank 0] step={s}, skipped=0, lr=[{cosine(s):.6e}], mom=[(0.9, 0.95)]\n" for s in range(401, 405)),
        "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768\n",
        *(f"[Rank 0] step={s}, skipped=1, lr=[{cosine(s):.6e}], mom=[(0.9, 0.95)]\n" for s in range(405, 409)),
    ]
    after = parse(lines)
    before = parse([f"[Rank 0] step={s}, skipped=0, lr=[{cosine(s):.6e}], mom=[(0.9, 0.95)]\n" for s in range(1, 401)])
    v = judge_loss(before, after, None, LossPolicy())
    assert v.status is Status.FAIL
    assert v.summary.startswith("1 skipped iteration at line 6 after the restore at step 400")


def test_unit_schedule_between_and_past() -> None:
    from acceptance.judge.loss_schedule import Schedule, lr_departure

    sched = Schedule(np.array([10, 20, 30]), np.array([1.0, 2.0, 3.0]))
    ok = lr_departure(sched, np.array([15, 20, 35, 40]), np.array([1.5, 2.0, 3.5, 3.0]), 1e-3)
    assert ok.step is None
    bad = lr_departure(sched, np.array([15, 25]), np.array([1.5, 3.5]), 1e-3)
    assert (bad.step, "between its values at steps 20 and 30" in bad.text) == (25, True)
    one = lr_departure(Schedule(np.array([10]), np.array([1.0])), np.array([11]), np.array([5.0]), 1e-3)
    assert one.step is None
    assert "one value only" in one.note
