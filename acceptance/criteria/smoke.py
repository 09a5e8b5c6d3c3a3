"""Criterion 3: the smoke run's step time is within the agreed margin of the handover sample.

Judged against the job's own run-to-run variation (`acceptance.judge.steptime`). Adds to a
new baseline: the smoke run's per-step times, at full size.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pandas as pd

from acceptance.criteria.outcomes import not_judged
from acceptance.criteria.parts import BaselinePart
from acceptance.criteria.runfolder import RunFolder
from acceptance.errors import AcceptanceError, JobFailed
from acceptance.judge.steptime import StepTimePolicy, judge_steptime
from acceptance.judge.steptime_series import step_times
from acceptance.judge.verdict import Status, Verdict
from acceptance.margins import Margins
from acceptance.profile import Profile
from acceptance.tools import trainlog

if TYPE_CHECKING:
    from acceptance.criteria.runparts import RunParts

SUBJECT = "smoke step time"


def policy(profile: Profile, margins: Margins) -> StepTimePolicy:
    """The agreed margin; the profile's warm-up length when it names one, else the judge's default."""
    found = StepTimePolicy(margin=margins.step_time_tolerance)
    if profile.smoke and profile.smoke.warmup_steps is not None:
        found = dataclasses.replace(found, warmup_steps=profile.smoke.warmup_steps)
    return found


def recorded_step_times(log: trainlog.TrainLog) -> dict[str, list[Any]]:
    """The per-step times a baseline keeps (steps and seconds), at full size."""
    series = step_times(log)
    return {"step": [int(s) for s in series.index], "step_time_s": [float(t) for t in series]}


class SmokeStep:
    """Criterion 3 of one pytest process."""

    def __init__(self, run: RunParts) -> None:
        self.run = run

    def verdict(self) -> Verdict:
        ctx = self.run.context
        try:
            smoke = self.run.training.smoke()
        except JobFailed as exc:
            return Verdict(Status.FAIL, SUBJECT, f"{SUBJECT}: {exc}; see the evidence folder")
        except AcceptanceError as exc:  # the job gave nothing to judge (WorkloadNotRun), or a log no reader knows
            return not_judged(SUBJECT, exc)
        if ctx.baseline is None:
            sample = recorded_step_times(smoke)
            self.run.folder.write_part("smoke", "steps", sample)
            n = len(sample["step"])
            return Verdict(Status.PASS, SUBJECT, f"{SUBJECT}: {n} steps recorded for the baseline",
                           {"steps_recorded": n})  # fmt: skip
        recorded = ctx.baseline.baseline.data["results"].get("smoke")
        if not recorded:
            return Verdict(
                Status.ERROR, SUBJECT,
                f"{SUBJECT}: the baseline {ctx.baseline.path.name} has no step-time sample; record one",
            )  # fmt: skip
        steps = recorded.get("step") or list(range(1, len(recorded["step_time_s"]) + 1))
        reference = pd.Series(recorded["step_time_s"], index=pd.Index(steps, dtype="int64"), name="step_time_s")
        try:
            return judge_steptime(reference, smoke, policy(ctx.profile, ctx.margins), subject=SUBJECT)
        except (AcceptanceError, ValueError) as exc:
            return Verdict(Status.ERROR, SUBJECT, f"{SUBJECT}: cannot judge ({exc})")


def baseline_part(folder: RunFolder, profile: Profile) -> BaselinePart:
    """The smoke run's step times, when the run had a smoke job."""
    smoke = folder.parts("smoke").get("steps")
    return BaselinePart(results={"smoke": smoke} if smoke else {})
