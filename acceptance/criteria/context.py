"""The frozen context of one acceptance run: what every criterion reads, in every pytest process.

Fixed when the run starts: the profile, the loaded baseline, the target nodes, the mode, and
the agreed margins — the baseline's when judging, the profile's only when recording a new
baseline. Where the profile states a margin differently, `margin_notes` says so, one line each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from acceptance.baseline import LoadedBaseline
from acceptance.clusters import backend_of
from acceptance.margins import Margins, judged_with_notes
from acceptance.profile import Profile


@dataclass(frozen=True)
class LogSources:
    """Training logs handed in rather than run (``--smoke-log``, ``--pre-incident-log``, ``--restore-step``)."""

    smoke: Path | None = None
    pre_incident: Path | None = None
    restore_step: int | None = None


@dataclass(frozen=True)
class ProbationOptions:
    """Criterion 5's inputs: the acceptance report to start from (``--probation-from``), and where reports are
    looked for by ticket. (A simulated probation's faults are the backend's.)"""

    from_report: Path | None = None
    reports_root: Path | None = None


@dataclass(frozen=True)
class RunContext:
    """One run's fixed facts (see module docstring)."""

    profile: Profile
    baseline: LoadedBaseline | None
    targets: tuple[str, ...]
    run_id: str
    started: datetime
    margins: Margins
    margin_notes: Mapping[str, str] = field(default_factory=dict)
    ticket: str | None = None
    logs: LogSources = field(default_factory=LogSources)
    force_record: str | None = None
    baseline_trust: str = ""  # how the baseline is trusted (signed by whom, or unsigned by request)
    agreement: str = ""  # which parties signed the baseline ("provider-signed only"); "" when parties are not named
    probation: ProbationOptions = field(default_factory=ProbationOptions)

    @classmethod
    def create(
        cls,
        profile: Profile,
        baseline: LoadedBaseline | None,
        *,
        returned_nodes: tuple[str, ...],
        run_id: str,
        started: datetime,
        ticket: str | None = None,
        logs: LogSources | None = None,
        force_record: str | None = None,
        baseline_trust: str = "",
        agreement: str = "",
        probation: ProbationOptions | None = None,
    ) -> RunContext:
        """The context of a run; the margins come from `baseline` when there is one."""
        margins, notes = profile.margins, {}
        if baseline is not None:
            margins = baseline.baseline.margins
            notes = judged_with_notes(profile.margins, margins, profile.path.name, baseline.sha256)
        return cls(
            profile=profile,
            baseline=baseline,
            targets=tuple(returned_nodes) or profile.nodes,
            run_id=run_id,
            started=started,
            margins=margins,
            margin_notes=notes,
            ticket=ticket,
            logs=logs or LogSources(),
            force_record=force_record,
            baseline_trust=baseline_trust,
            agreement=agreement,
            probation=probation or ProbationOptions(),
        )

    @property
    def recording(self) -> bool:
        return self.baseline is None

    @property
    def mode(self) -> str:
        return "record-baseline" if self.recording else "judge"

    @property
    def margins_from(self) -> str:
        return "profile" if self.recording else "baseline"

    @property
    def simulated(self) -> bool:
        """A cluster over the simulator, as its backend says (`acceptance.clusters.backend_of`)."""
        return backend_of(self.profile).simulated

    @property
    def nccl_tests(self) -> tuple[str, ...]:
        """Judging: the tests of the baseline (its commands); recording: the profile's."""
        if self.baseline is not None:
            return self.baseline.baseline.nccl_names
        return self.profile.test_names

    @property
    def gpu_budget_s(self) -> float:
        """The longest the GPU work of this run can last (every deadline added up, plus slack).

        Localization adds its deadline (recording: the pair baselines, one nccl deadline per test).

        Bounds how long a pytest process waits for another that holds the GPUs.
        """
        p = self.profile
        smoke = 2 * p.smoke.timeout_s if p.smoke else 0.0
        tests = max(1, len(self.nccl_tests))
        localize = (
            (p.nccl_timeout_s * tests if self.recording else p.localize.deadline_s) if p.localize.enabled else 0.0
        )
        return p.dcgm_timeout_s + p.nccl_timeout_s * tests + smoke + localize + 600.0

    @property
    def deadline(self) -> datetime:
        """When the whole run must be over (the profile's ``run.deadline`` after the start, by default the
        GPU budget): work not started by then is not started, a batch still awaited then is given up."""
        seconds = self.profile.run_deadline_s
        return self.started + timedelta(seconds=seconds if seconds is not None else self.gpu_budget_s)
