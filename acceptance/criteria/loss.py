"""Criterion 4: loss from the restored step onward stays within the run's usual variation.

Exact checks first (resumed step = checkpoint step + 1, no gaps, no NaN/Inf, schedule
continuous), then robust z-scores of log-loss against the pre-incident trend, with the
agreed z limits. Judged after a repair only: there is no restore at handover.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from acceptance.criteria.no_result import not_judged
from acceptance.errors import AcceptanceError, JobFailed
from acceptance.judge.loss import LossPolicy, judge_loss
from acceptance.judge.verdict import Status, Verdict
from acceptance.margins import Margins

if TYPE_CHECKING:
    from acceptance.criteria.runparts import RunParts, TrainingPart

SUBJECT = "loss continuity"


def policy(margins: Margins) -> LossPolicy:
    return LossPolicy(spike_z=margins.loss_spike_z, shift_z=margins.loss_shift_z)


def stopped_early(training: TrainingPart, key: str) -> str:
    """Why the harness stopped the `key` run of the job early ("" when it ran whole); logs handed in never stop."""
    return training.stopped.get(key, "")


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
        found = policy(self.run.context.margins)
        stopped = stopped_early(training, "smoke")
        if stopped:  # stopped early for criterion 3: never judge on fewer steps than this criterion's own minimum
            steps = after.columns.get("step")
            after_restore = int(np.count_nonzero(np.unique(steps) > (training.restore_step or 0))) \
                if steps is not None else 0  # fmt: skip
            if after_restore < found.check_steps:
                said = (f"{SUBJECT}: the smoke job was stopped ({stopped}) after {after_restore} steps past the "
                        f"restore, fewer than the {found.check_steps} this criterion judges; rerun it")  # fmt: skip
                return Verdict(Status.INCONCLUSIVE, SUBJECT, said)
        try:
            return judge_loss(before, after, training.restore_step, found)
        except (AcceptanceError, ValueError) as exc:
            return Verdict(Status.ERROR, SUBJECT, f"{SUBJECT}: cannot judge ({exc})")
