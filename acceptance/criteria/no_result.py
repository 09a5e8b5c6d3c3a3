"""Verdicts about workloads that gave nothing to judge (shared by the criteria that run workloads)."""

from __future__ import annotations

from acceptance.clusters.base import WorkloadResult
from acceptance.errors import AcceptanceError
from acceptance.judge.verdict import Status, Verdict
from acceptance.units import format_duration


def nothing_to_judge(result: WorkloadResult) -> bool:
    """True for a workload that printed nothing, or that the cluster or the run's deadline stopped (status
    ``error``): what it printed then is the start of its output, never a whole one to judge."""
    return result.status == "error" or not result.output.strip()


def no_output(subject: str, result: WorkloadResult, todo: str) -> Verdict:
    """A workload that gave nothing to judge (`nothing_to_judge`): ERROR when the cluster could not run it or
    it was cut short, FAIL when it ran and died."""
    took = ""
    if result.started and result.finished and result.finished > result.started:
        took = f" after {format_duration((result.finished - result.started).total_seconds())}"
    status = Status.ERROR if result.status in ("unschedulable", "timeout", "error") else Status.FAIL
    return Verdict(
        status,
        subject,
        f"{subject}: {result.status}{took}: {result.reason or 'no output'}; {todo}",
        {"status": result.status, "exit_code": result.exit_code},
        tuple(e.get("message", "") for e in result.events if e.get("type") == "Warning")
        + ((result.log_tail,) if result.log_tail else ()),
    )


def not_judged(subject: str, exc: AcceptanceError) -> Verdict:
    """A workload that gave nothing to judge (the cluster's API failed, a deadline passed): ERROR, never FAIL."""
    return Verdict(
        Status.ERROR, subject, f"{subject}: cannot judge: {exc}; see the evidence folder", {"reason": str(exc)}
    )
