"""Criteria 3 and 4: the smoke run of the customer's job, and the pre-incident log it continues.

Logs come from the command line (``--smoke-log``, ``--pre-incident-log``), from paths in the
profile (``logs:``), or from running the profile's ``smoke`` commands on the cluster. Each run
happens once per acceptance run; its log is kept in the run folder for every process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from acceptance.clusters.base import SmokeWorkload
from acceptance.errors import AcceptanceError, UsageError
from acceptance.judge.loss import LossPolicy, judge_loss
from acceptance.judge.steptime import StepTimePolicy, judge_steptime
from acceptance.judge.steptime_series import step_times
from acceptance.judge.verdict import Status, Verdict
from acceptance.profile import Profile, SmokeSpec
from acceptance.tools import trainlog


@dataclass(frozen=True)
class LogSources:
    """Where the training logs come from when they are handed in rather than run."""

    smoke: Path | None
    pre_incident: Path | None
    restore_step: int | None


@dataclass(frozen=True)
class TrainingLogs:
    """Gets the smoke and pre-incident logs: from files, or by running a workload once per run."""

    profile: Profile
    sources: LogSources
    run_once: Callable[[str, SmokeWorkload], str]  # (key, workload) -> log text

    @property
    def restore_step(self) -> int | None:
        return self.sources.restore_step if self.sources.restore_step is not None else self._spec_restore()

    def _spec_restore(self) -> int | None:
        return self.profile.smoke.restore_step if self.profile.smoke else None

    def _parse(self, text: str, source: str) -> trainlog.TrainLog:
        spec = self.profile.smoke
        columns = self.profile.logs.get("columns")
        fmt = (spec.format if spec else None) or self.profile.logs.get("format")
        return trainlog.parse(text.splitlines(keepends=True), source=source, format=fmt, columns=columns)

    def _file(self, path: Path, what: str) -> trainlog.TrainLog:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"{what} {path}: cannot read it ({exc.strerror})") from None
        return self._parse(text, str(path))

    def _configured(self, key: str) -> Path | None:
        value = self.profile.logs.get(key)
        return (self.profile.path.parent / value).resolve() if value else None

    def smoke(self) -> trainlog.TrainLog:
        path = self.sources.smoke or self._configured("smoke")
        if path is not None:
            return self._file(path, "smoke log")
        spec = self._require_spec()
        return self._run("smoke", spec.command)

    def pre_incident(self) -> trainlog.TrainLog:
        path = self.sources.pre_incident or self._configured("pre_incident")
        if path is not None:
            return self._file(path, "pre-incident log")
        spec = self._require_spec()
        if spec.pre_incident_command is None:
            raise UsageError(
                f"{self.profile.path}: no pre-incident log: pass --pre-incident-log, set logs.pre_incident, "
                "or smoke.pre_incident_command"
            )
        return self._run("pre-incident", spec.pre_incident_command)

    def _require_spec(self) -> SmokeSpec:
        if self.profile.smoke is None:
            raise UsageError(
                f"{self.profile.path}: no smoke job: add a 'smoke' section, or pass --smoke-log and --pre-incident-log"
            )
        return self.profile.smoke

    def _run(self, key: str, argv: tuple[str, ...]) -> trainlog.TrainLog:
        p = self.profile
        spec = self._require_spec()
        workload = SmokeWorkload(f"train-{key}", p.nodes, p.gpus_per_node, argv, dict(spec.env), spec.timeout_s)
        return self._parse(self.run_once(key, workload), f"{key} run of {argv[-1] if argv else 'the job'}")


def step_policy(profile: Profile) -> StepTimePolicy:
    """The agreed margin; the profile's warm-up length when it names one, else the judge's default."""
    policy = StepTimePolicy(margin=profile.margins.step_time_tolerance)
    if profile.smoke and profile.smoke.warmup_steps is not None:
        policy = dataclasses.replace(policy, warmup_steps=profile.smoke.warmup_steps)
    return policy


def loss_policy(profile: Profile) -> LossPolicy:
    return LossPolicy(spike_z=profile.margins.loss_spike_z, shift_z=profile.margins.loss_shift_z)


def recorded_step_times(log: trainlog.TrainLog) -> dict[str, list[Any]]:
    """The per-step times a baseline keeps (steps and seconds), at full size."""
    series = step_times(log)
    return {"step": [int(s) for s in series.index], "step_time_s": [float(t) for t in series]}


def judge_smoke(reference: pd.Series, smoke: trainlog.TrainLog, profile: Profile) -> Verdict:
    try:
        return judge_steptime(reference, smoke, step_policy(profile), subject="smoke step time")
    except (AcceptanceError, ValueError) as exc:
        return Verdict(Status.ERROR, "smoke step time", f"smoke step time: cannot judge ({exc})")


def judge_restore(
    before: trainlog.TrainLog, after: trainlog.TrainLog, restore: int | None, profile: Profile
) -> Verdict:
    try:
        return judge_loss(before, after, restore, loss_policy(profile))
    except (AcceptanceError, ValueError) as exc:
        return Verdict(Status.ERROR, "loss continuity", f"loss continuity: cannot judge ({exc})")
