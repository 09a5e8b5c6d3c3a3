"""Criterion 5: no recurrence during the agreed probation window after the ticket's passing acceptance.

Runs after an acceptance of ``--ticket`` passed (typically hourly, from a CI schedule): finds and
verifies that acceptance's signed report, which fixes the window's start (when it passed) and
the nodes (those it returned); the window's length is the baseline's agreed ``probation``
margin. Reads dcgm-exporter's and the job's series from the profile's Prometheus (or offline
dumps; on a backend that simulates the probation, the period it serves, the window taken as
elapsed), the cluster's node signals through the backend, and judges them with
`acceptance.judge.recurrence`. Adds nothing to a baseline.
"""

from __future__ import annotations

import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from acceptance import criteria
from acceptance.clusters.base import ProbationPeriod, SimulatesProbation
from acceptance.criteria.probation_report import AcceptanceReport, find_report, load_report
from acceptance.errors import AcceptanceError, QueryFailed, ReportRefused
from acceptance.judge.recurrence import SUBJECT, judge_cluster, judge_hardware, judge_job, judge_probation
from acceptance.judge.recurrence_records import PartResult
from acceptance.judge.recurrence_rules import RecurrenceRules, Window, rules_from_profile
from acceptance.judge.verdict import Status, Verdict
from acceptance.metrics import open_source
from acceptance.metrics.base import MetricsSource
from acceptance.metrics.collect import JobSources, collect_hardware, collect_job, log_files

if TYPE_CHECKING:
    from acceptance.criteria.runparts import RunParts

MODULE = criteria.module(5)
WARMUP_STEPS = 3


def baseline_step_time(results: dict[str, object] | None, warmup: int = WARMUP_STEPS) -> float | None:
    """The job's own reference: the median of the baseline's smoke sample, warm-up steps left out."""
    sample = (results or {}).get("smoke")
    times = sample.get("step_time_s") if isinstance(sample, dict) else None
    if not times:
        return None
    kept = [float(t) for t in times[warmup:]] or [float(t) for t in times]
    return float(statistics.median(kept))


class Recurrence:
    """Criterion 5 of one pytest process."""

    def __init__(self, run: RunParts) -> None:
        self.run = run
        self.simulated: ProbationPeriod | None = None  # the period a simulating backend serves
        self.source: MetricsSource | None = None

    def not_applicable(self) -> str | None:
        """Why this run has no probation to judge (a skip), or None."""
        ctx, probation = self.run.context, self.run.context.probation
        if ctx.recording:
            return "criterion 5 judges a probation after an acceptance, not while recording a baseline"
        if probation.from_report is not None:
            return None
        if not ctx.ticket:
            return (
                "no --ticket or --probation-from: criterion 5 judges the probation that follows a passing "
                f"acceptance; run `pytest acceptance/{MODULE}.py --cluster={ctx.profile.name} --ticket=ID` "
                "after it (hourly, from a CI schedule)"
            )
        if self.run.selected - {MODULE}:
            return (
                f"the probation of {ctx.ticket} starts when this acceptance passes; judge it with "
                f"`pytest acceptance/{MODULE}.py --cluster={ctx.profile.name} --ticket={ctx.ticket}`"
            )
        return None

    def _report(self) -> AcceptanceReport:
        ctx, probation = self.run.context, self.run.context.probation
        allowed = ctx.profile.allowed_signers  # both parties' keys: the report must be signed by one of them
        folder = probation.from_report
        if folder is None:
            if not ctx.ticket or probation.reports_root is None:
                raise ReportRefused("no --ticket and no --probation-from: no acceptance report to start from")
            folder = find_report(probation.reports_root, ctx.profile.name, ctx.ticket)
        return load_report(folder, ctx.profile.name, ctx.ticket, allowed)

    def verdict(self) -> Verdict:
        ctx = self.run.context
        try:
            report = self._report()
        except ReportRefused as refused:
            return Verdict(
                Status.FAIL, SUBJECT, f"acceptance report refused: {refused}", {"report_refused": True}, refused.lines
            )
        rules = rules_from_profile(ctx.profile.recurrence, ctx.profile.severity.get("degraded_rule"))
        window = Window(report.passed_at, ctx.margins.probation_s, datetime.now(UTC))
        try:
            source, logs, notes = self._open(report, window)
            if self.simulated is not None:
                window = Window(report.passed_at, ctx.margins.probation_s, self.simulated.now, simulated=True)
            parts = self._judge(source, logs, report, rules, window)
        except QueryFailed as failed:
            return Verdict(
                Status.INCONCLUSIVE,
                SUBJECT,
                f"cannot read the probation's series: {failed}",
                {"query": failed.query, "answer": failed.answer},
                (f"query: {failed.query}", f"answer: {failed.answer}"),
            )
        except (AcceptanceError, OSError) as exc:
            return Verdict(Status.ERROR, SUBJECT, f"cannot judge the probation: {exc}")
        verdict = judge_probation(parts, report.nodes, rules, window)
        extra = {
            "acceptance_report": str(report.folder),
            "acceptance_run": report.run_id,
            "acceptance_passed": report.passed_at.isoformat(),
            "source": source.describe(),
            **source.stats.as_figures(),
        }
        evidence = (*verdict.evidence, *notes, f"acceptance report {report.folder}: " + "; ".join(report.checks))
        return Verdict(
            verdict.status, verdict.subject, verdict.summary, {**verdict.figures, **extra}, evidence, verdict.table
        )

    @property
    def _simulating(self) -> SimulatesProbation | None:
        """The backend, when it simulates the probation and the profile names no real metrics to read instead."""
        p, cluster = self.run.context.profile, self.run.cluster
        real = p.prometheus or p.recurrence.get("offline_dumps")
        return cluster if isinstance(cluster, SimulatesProbation) and not real else None

    def _open(self, report: AcceptanceReport, window: Window) -> tuple[MetricsSource, list[Path], list[str]]:
        ctx = self.run.context
        job = ctx.profile.recurrence.get("job") or {}
        simulating = self._simulating
        if simulating is not None:
            if self.simulated is None:
                self.simulated = simulating.probation_period(report.nodes, report.passed_at, ctx.margins.probation_s)
            sim = self.simulated
            return sim.source, [*sim.logs, *log_files(job.get("logs", ()))], sim.notes
        if self.source is None:
            self.source = open_source(ctx.profile)
        return self.source, log_files(job.get("logs", ())), []

    def _judge(
        self, source: MetricsSource, logs: list[Path], report: AcceptanceReport, rules: RecurrenceRules, window: Window
    ) -> list[PartResult]:
        ctx = self.run.context
        scrape_s = float(getattr(getattr(source, "settings", None), "scrape_interval_s", 15.0))
        hardware = collect_hardware(source, report.nodes, window, rules, ctx.profile.gpus_per_node, scrape_s)
        job_raw = ctx.profile.recurrence.get("job") or {}
        if self.simulated is not None:
            job_raw = {**self.simulated.job, **job_raw}
        sources = JobSources(job_raw.get("step_time"), job_raw.get("progress"), tuple(job_raw.get("logs", ())))
        results = dict(ctx.baseline.baseline.data["results"]) if ctx.baseline is not None else None
        job = collect_job(source, sources, window, baseline_step_time(results), logs, scrape_s)
        events = self.run.cluster.node_signals(report.nodes, window.start)
        return [
            judge_hardware(hardware, rules, window),
            judge_cluster(events, report.nodes, rules, window),
            judge_job(job, rules, window),
        ]

    def close(self) -> None:
        try:
            if self.simulated is not None:
                self.simulated.close()
            if self.source is not None:
                self.source.close()
        except Exception as exc:  # closing must never change a verdict
            print(f"recovery-acceptance: criterion 5 could not release its metrics source: {exc!r}")
        finally:
            self.simulated = self.source = None
