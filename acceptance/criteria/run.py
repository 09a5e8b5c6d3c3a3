"""One pytest process's share of an acceptance run: the context, the scheduler and the criteria.

Created on first use by a suite item (after collection, so it knows which criteria were
selected). Every criterion object reads the frozen `RunContext` and submits its workloads
through the one `Scheduler`; none of them names a backend.
"""

from __future__ import annotations

from collections.abc import Sequence

from acceptance.clusters.base import Cluster
from acceptance.criteria.context import RunContext
from acceptance.criteria.diagnostics import Diagnostics
from acceptance.criteria.evidence import Evidence
from acceptance.criteria.fabric import Fabric
from acceptance.criteria.localize import Localize
from acceptance.criteria.loss import LossContinuity
from acceptance.criteria.preflight import Preflight
from acceptance.criteria.prepull import PrePull
from acceptance.criteria.recurrence import Recurrence
from acceptance.criteria.scheduler import ProgressListener, Scheduler
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.criteria.site import SiteCheck, SiteChecks
from acceptance.criteria.smoke import SmokeStep
from acceptance.criteria.training import TrainingLogs
from acceptance.report.folder import ReportFolder


class Criteria:
    """The criteria of one run, as one pytest process sees them."""

    def __init__(
        self,
        context: RunContext,
        cluster: Cluster,
        folder: SharedFolder,
        report: ReportFolder | None,
        *,
        selected: frozenset[str],
        site_checks: Sequence[SiteCheck] = (),
        nccl_selected: frozenset[str] | None = None,
        progress: ProgressListener | None = None,
    ) -> None:
        """`selected`: the suite modules this run has; `nccl_selected`: its fabric items' tests (None: all);
        `progress`: who shows this process's batches while they run."""
        self.context = context
        self.cluster = cluster
        self.folder = folder
        self.evidence = Evidence(report) if report is not None else None
        self.selected = selected
        self.nccl_selected = nccl_selected
        self.scheduler = Scheduler(cluster, folder, self.evidence, context.gpu_budget_s, progress, context.deadline)
        self.preflight = Preflight(self)
        self.diagnostics = Diagnostics(self)
        self.prepull = PrePull(self)
        self.fabric = Fabric(self)
        self.localize = Localize(self)
        self.training = TrainingLogs(self)
        self.smoke = SmokeStep(self)
        self.loss = LossContinuity(self)
        self.site = SiteChecks(self, site_checks)
        self.recurrence = Recurrence(self)

    def close(self) -> None:
        """Release what the criteria hold beyond the cluster (criterion 5's metrics source)."""
        self.recurrence.close()
