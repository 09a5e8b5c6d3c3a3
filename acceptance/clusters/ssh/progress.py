"""Where an awaited workload is over SSH (pure: which host commands have ended in, `WorkloadProgress` out).

A host's processes start when the workload is submitted (there is no scheduler and no image to pull),
so a workload is *running* until every one of its host commands has ended, then *done* with its status.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from acceptance.clusters.base import Handle, RunResult, WorkloadProgress, workload_kind, workload_nodes


def _elapsed(handle: Handle, now: datetime) -> float:
    return max(0.0, (now - handle.submitted).total_seconds())


def running_progress(
    handles: Sequence[Handle], commands: Sequence[tuple[Handle, bool]], deadline_s: float, now: datetime | None = None
) -> list[WorkloadProgress]:
    """`commands`: each host command's handle and whether it has ended, in any order."""
    now = now or datetime.now(UTC)
    out = []
    for handle in handles:
        ended = [done for h, done in commands if h is handle]
        finished = sum(ended)
        note = f"{finished}/{len(ended)} hosts finished" if len(ended) > 1 and finished else ""
        out.append(
            WorkloadProgress(
                name=handle.workload.name,
                kind=workload_kind(handle.workload),
                nodes=workload_nodes(handle.workload),
                phase="done" if ended and all(ended) else "running",
                elapsed_s=_elapsed(handle, now),
                deadline_s=deadline_s,
                note=note,
            )
        )
    return out


def done_progress(
    handles: Sequence[Handle], results: Sequence[RunResult], deadline_s: float, now: datetime | None = None
) -> list[WorkloadProgress]:
    """The last word: every workload done, with its status."""
    now = now or datetime.now(UTC)
    return [
        WorkloadProgress(
            name=h.workload.name,
            kind=r.kind,
            nodes=workload_nodes(h.workload),
            phase="done",
            elapsed_s=_elapsed(h, now),
            deadline_s=deadline_s,
            status=r.status,
        )
        for h, r in zip(handles, results, strict=True)
    ]
