"""What a criterion sees of its run: the narrow view a criterion object is built with.

A criterion reads the frozen `RunContext`, submits through the one `Scheduler`, keeps what it
found in the `SharedFolder`, and asks the few other criteria it depends on (fabric waits for the
diagnostics and hands a failure to localization; the smoke and loss criteria share one training
log) only through the protocols below. This module imports no criterion, so no criterion imports
the `Criteria` that builds them all (`acceptance.criteria.run`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from acceptance.clusters.base import Cluster
from acceptance.criteria.context import RunContext
from acceptance.criteria.evidence import Evidence
from acceptance.criteria.localize_result import LocalizeResult
from acceptance.criteria.scheduler import Batch, Scheduler
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.judge.verdict import Verdict
from acceptance.tools import trainlog


class DiagnosticsPart(Protocol):
    """Criterion 1 as the others use it."""

    def finish_first(self) -> None:
        """Let the DCGM batch end before this process's next batch holds the GPUs."""

    def verdict(self, node: str) -> Verdict: ...


class PrePullPart(Protocol):
    """The images pulled while DCGM runs."""

    def batch(self) -> Batch | None: ...


class FabricPart(Protocol):
    """Criterion 2 as localization uses it."""

    def command(self, name: str) -> tuple[tuple[str, ...], dict[str, str], list[str]]: ...

    def judged(self, name: str) -> Verdict: ...

    def failing_nodes(self, name: str) -> list[str]: ...


class LocalizePart(Protocol):
    """Fabric localization as criterion 2 uses it."""

    def for_failure(self, name: str) -> LocalizeResult | None: ...

    def record_pairs(self, name: str, argv: Sequence[str], env: Mapping[str, str]) -> Verdict | None: ...


class TrainingPart(Protocol):
    """The training logs that criteria 3 and 4 share."""

    @property
    def restore_step(self) -> int | None: ...

    @property
    def stopped(self) -> Mapping[str, str]: ...  # why the harness stopped a run of the job early, by run

    @property
    def launches(self) -> Mapping[str, str]: ...  # how the cluster started a run's ranks, by run (where it says)

    def runs_job(self) -> bool: ...

    def smoke(self) -> trainlog.TrainLog: ...

    def pre_incident(self) -> trainlog.TrainLog: ...


class RunParts(Protocol):
    """One pytest process's run as a criterion object sees it (`acceptance.criteria.run.Criteria` is one)."""

    @property
    def context(self) -> RunContext: ...

    @property
    def cluster(self) -> Cluster: ...

    @property
    def folder(self) -> SharedFolder: ...

    @property
    def evidence(self) -> Evidence | None: ...

    @property
    def scheduler(self) -> Scheduler: ...

    @property
    def selected(self) -> frozenset[str]:
        """The suite modules this run has."""

    @property
    def nccl_selected(self) -> frozenset[str] | None:
        """Its fabric items' tests (None: all)."""

    @property
    def diagnostics(self) -> DiagnosticsPart: ...

    @property
    def prepull(self) -> PrePullPart: ...

    @property
    def fabric(self) -> FabricPart: ...

    @property
    def localize(self) -> LocalizePart: ...

    @property
    def training(self) -> TrainingPart: ...
