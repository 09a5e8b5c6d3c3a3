"""Criterion 3: the smoke run's step time is within the agreed margin of the handover sample.

Judged against the job's own run-to-run variation (`acceptance.judge.steptime`). Adds to a
new baseline: the smoke run's per-step times, at full size.

When the baseline agrees the sequential rule (``smoke_stop_rule: mixture``), the smoke run's log
is read as it arrives (a backend that `StreamsLogs`) and the job is stopped once the step-time
verdict is decided and criterion 4 has the post-restore steps it needs (`watch`); the verdict is
then the rule's replay of the log the job left (`acceptance.judge.steptime_seq.judge_sequential`),
which stops at the same step, and says how many steps it used and why it stopped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from acceptance.criteria.context import RunContext
from acceptance.criteria.loss import policy as loss_policy
from acceptance.criteria.loss import stopped_early
from acceptance.criteria.no_result import not_judged
from acceptance.criteria.parts import BaselinePart
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.errors import AcceptanceError, JobFailed
from acceptance.judge.loss import LossPolicy
from acceptance.judge.steptime import StepTimePolicy, judge_steptime
from acceptance.judge.steptime_seq import Reference, SequentialRule, decide, judge_sequential, prepare
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


def hold_steps(restore_step: int | None, loss: LossPolicy) -> int:
    """The smoke steps criterion 4 needs before the job may be stopped: its `check_steps` after a
    restore (the smoke log starts at the restored step), none when there is no restore to judge."""
    return loss.check_steps if restore_step is not None else 0


def reference_series(recorded: dict[str, Any]) -> pd.Series:
    """The baseline's recorded smoke step times as a series indexed by step."""
    steps = recorded.get("step") or list(range(1, len(recorded["step_time_s"]) + 1))
    return pd.Series(recorded["step_time_s"], index=pd.Index(steps, dtype="int64"), name="step_time_s")


def watch(
    reference: Reference,
    rule: SequentialRule,
    found: StepTimePolicy,
    hold: int,
    parse: Callable[[str], trainlog.TrainLog],
) -> Callable[[str], str | None]:
    """What reads the smoke log as it streams in: given the text so far, why to stop the job now
    (the rule decided, and at least `hold` steps are logged), or None to let it run."""

    def stop_now(text: str) -> str | None:
        try:
            log = parse(text)
            decision = decide(reference, log, rule, found, hold_steps=hold, subject=SUBJECT)
        except (AcceptanceError, ValueError):  # a partial log not readable yet: read on
            return None
        return decision.reason if decision.stop and decision.outcome in ("pass", "fail") else None

    return stop_now


def stream_watch(
    ctx: RunContext, restore_step: int | None, parse: Callable[[str], trainlog.TrainLog]
) -> Callable[[str], str | None] | None:
    """The smoke log's reader while the job runs (`watch`), when the baseline's agreed rule may stop it
    early; None with the fixed rule, or with no baseline sample to judge against (recording runs it whole)."""
    if ctx.baseline is None or ctx.margins.smoke_stop_rule == "fixed":
        return None
    recorded = ctx.baseline.baseline.data["results"].get("smoke")
    if not recorded:
        return None
    rule = SequentialRule.from_margins(ctx.margins)
    found = policy(ctx.profile, ctx.margins)
    try:
        reference = prepare(reference_series(recorded), rule, dataclasses.replace(found, margin=rule.margin))
    except ValueError:  # judged whole at the end, where the verdict says why it cannot be judged
        return None
    return watch(reference, rule, found, hold_steps(restore_step, loss_policy(ctx.margins)), parse)


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
        launch = self.run.training.launches.get("smoke")
        if ctx.baseline is None:
            sample = recorded_step_times(smoke)
            self.run.folder.write_part("smoke", "steps", sample)
            if launch:
                self.run.folder.write_part("smoke", "conditions", {"launch": launch})
            n = len(sample["step"])
            return Verdict(Status.PASS, SUBJECT, f"{SUBJECT}: {n} steps recorded for the baseline",
                           {"steps_recorded": n})  # fmt: skip
        recorded = ctx.baseline.baseline.data["results"].get("smoke")
        if not recorded:
            return Verdict(
                Status.ERROR, SUBJECT,
                f"{SUBJECT}: the baseline {ctx.baseline.path.name} has no step-time sample; record one",
            )  # fmt: skip
        differs = launch_difference(launch, ctx.baseline.baseline.data["conditions"].get("smoke"))
        if differs:
            return Verdict(Status.NOT_COMPARABLE, SUBJECT,
                           f"{SUBJECT}: not comparable with the handover baseline: {differs}", {"differences": 1},
                           (differs,))  # fmt: skip
        reference = reference_series(recorded)
        try:
            if ctx.margins.smoke_stop_rule != "fixed":
                return self._sequential(reference, smoke)
            return judge_steptime(reference, smoke, policy(ctx.profile, ctx.margins), subject=SUBJECT)
        except (AcceptanceError, ValueError) as exc:
            return Verdict(Status.ERROR, SUBJECT, f"{SUBJECT}: cannot judge ({exc})")

    def _hold(self) -> int:
        return hold_steps(self.run.training.restore_step, loss_policy(self.run.context.margins))

    def _sequential(self, reference: pd.Series, smoke: trainlog.TrainLog) -> Verdict:
        ctx = self.run.context
        rule = SequentialRule.from_margins(ctx.margins)
        decision = judge_sequential(reference, smoke, rule, policy(ctx.profile, ctx.margins), hold_steps=self._hold(),
                                    subject=SUBJECT)  # fmt: skip
        verdict = decision.verdict
        assert verdict is not None, "judge_sequential always ends with a verdict"
        stopped = stopped_early(self.run.training, "smoke")
        if stopped:
            reason = f"{decision.reason}; the job was stopped then"
        else:
            reason = f"{decision.reason}; the job ran to its end"
        figures = {**verdict.figures, "steps_used": decision.steps_used, "stop_reason": reason,
                   "job_stopped": bool(stopped), "hold_steps": self._hold()}  # fmt: skip
        return dataclasses.replace(verdict, figures=figures)


def launch_difference(now: str | None, handover: Any) -> str | None:
    """How the smoke job's launch today differs from the handover's, in words; None when the same, or when the
    handover did not record one."""
    then = handover.get("launch") if isinstance(handover, dict) else None
    if not then or now == then:
        return None
    return f"launched with {now or 'unknown'} now, {then} at handover"


def baseline_part(folder: SharedFolder, profile: Profile) -> BaselinePart:
    """The smoke run's step times, and how it was launched where the cluster says, when the run had a smoke job."""
    parts = folder.parts("smoke")
    smoke, conditions = parts.get("steps"), parts.get("conditions")
    return BaselinePart(conditions={"smoke": conditions} if smoke and conditions else {},
                        results={"smoke": smoke} if smoke else {})  # fmt: skip
