"""Where an awaited workload is over SSH (pure: which host commands have ended in, `WorkloadProgress` out).

A host's processes start when the workload is submitted (there is no scheduler and no image to pull),
so a workload is *running* until every one of its host commands has ended, then *done* with its status.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from acceptance.clusters.base import Handle, Phase, WorkloadProgress, WorkloadResult


def _elapsed(handle: Handle, now: datetime) -> float:
    return max(0.0, (now - handle.submitted).total_seconds())


def running_progress(
    handles: Sequence[Handle], commands: Sequence[tuple[Handle, bool]], deadline_s: float, now: datetime
) -> list[WorkloadProgress]:
    """`commands`: each host command's handle and whether it has ended, in any order; `now`: the time of the look."""
    out = []
    for handle in handles:
        ended = [done for h, done in commands if h is handle]
        finished = sum(ended)
        note = f"{finished}/{len(ended)} hosts finished" if len(ended) > 1 and finished else ""
        phase: Phase = "done" if ended and all(ended) else "running"
        out.append(WorkloadProgress.of(handle.workload, phase, _elapsed(handle, now), deadline_s, note))
    return out


def done_progress(
    handles: Sequence[Handle], results: Sequence[WorkloadResult], deadline_s: float, now: datetime
) -> list[WorkloadProgress]:
    """The last word: every workload done, with its status (`results` in the order of `handles`)."""
    return [
        WorkloadProgress.of(h.workload, "done", _elapsed(h, now), deadline_s, status=r.status)
        for h, r in zip(handles, results, strict=True)
    ]
