"""Criterion 4: loss from the restored step onward stays within the run's usual variation.

Exact checks first (resumed step = checkpoint step + 1, no gaps, no NaN/Inf, schedule
continuous), then robust z-scores of log-loss against the pre-incident trend, with the
agreed z limits. Judged after a repair only: there is no restore at handover.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acceptance.criteria.outcomes import not_judged
from acceptance.errors import AcceptanceError, JobFailed
from acceptance.judge.loss import LossPolicy, judge_loss
from acceptance.judge.verdict import Status, Verdict
from acceptance.margins import Margins

if TYPE_CHECKING:
    from acceptance.criteria.runparts import RunParts

SUBJECT = "loss continuity"


def policy(margins: Margins) -> LossPolicy:
    return LossPolicy(spike_z=margins.loss_spike_z, shift_z=margins.loss_shift_z)


class LossContinuity:
    """Criterion 4 of one pytest process."""

    def __init__(self, run: RunParts) -> None:
        self.run = run

    def verdict(self) -> Verdict:
        training = self.run.training
        try:
            before, after = training.pre_incident(), training.smoke()
        except JobFailed as exc:
            return Verdict(Status.FAIL, SUBJECT, f"{SUBJECT}: {exc}; see the evidence folder")
        except AcceptanceError as exc:  # the job gave nothing to judge (WorkloadNotRun), or a log no reader knows
            return not_judged(SUBJECT, exc)
        try:
            return judge_loss(before, after, training.restore_step, policy(self.run.context.margins))
        except (AcceptanceError, ValueError) as exc:
            return Verdict(Status.ERROR, SUBJECT, f"{SUBJECT}: cannot judge ({exc})")
