"""One batch of workloads in one line, while it runs and when it ends (pure: progress records in, text out).

    dcgm on 16 nodes (sim-node-01..sim-node-16): 4 pulling image, 12 running | 4m05s of 1h00m | ...
    nccl-all_reduce_perf on 16 nodes (sim-node-01..sim-node-16): running | 0m42s of 30m00s
    dcgm on 16 nodes (sim-node-01..sim-node-16): 16 succeeded in 15m02s (deadline 1h00m)

A `BatchStatus` is plain data both ways (`to_json`, `from_json`): the process that waits for a batch
writes it into the run folder, and the pytest controller prints it (with pytest-xdist the waiting
process is a worker whose output pytest does not show).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from acceptance.clusters.base import Phase, RunStatus, WorkloadProgress

FOLDER = "progress"  # the run folder's subfolder where each batch's waiting process writes `<key>.json`


def duration(seconds: float) -> str:
    """``245`` → ``4m05s``, ``3600`` → ``1h00m``, ``42`` → ``0m42s`` (always a unit a person reads at a glance)."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def where(nodes: Sequence[str]) -> str:
    """The nodes a batch runs on, in a few words: one or three names, or a count and the first and last."""
    names = sorted(set(nodes))
    if not names:
        return "no node yet"
    if len(names) <= 3:
        return ", ".join(names)
    return f"{len(names)} nodes ({names[0]}..{names[-1]})"


def _counts(counter: Mapping[str, int], order: Sequence[str], single: bool) -> str:
    known = [k for k in order if counter.get(k)] + sorted(k for k in counter if k not in order and counter[k])
    if single and len(known) == 1:
        return known[0]
    return ", ".join(f"{counter[k]} {k}" for k in known)


@dataclass(frozen=True)
class BatchStatus:
    """A batch's workloads by phase (and, once ended, by outcome) at one moment."""

    key: str
    workloads: int
    where: str
    phases: Mapping[str, int]
    outcomes: Mapping[str, int]
    elapsed_s: float
    deadline_s: float
    note: str = ""
    updated: float = 0.0  # wall clock (epoch seconds) of the observation

    @property
    def done(self) -> bool:
        return not any(self.phases.values())

    def line(self, width: int | None = None) -> str:
        """The status line; cut to `width` characters (a terminal line that must not wrap)."""
        head = f"{self.key} on {self.where}: "
        single = self.workloads == 1
        if self.done:
            text = f"{head}{_counts(self.outcomes, get_args(RunStatus), single)} in {duration(self.elapsed_s)} " \
                   f"(deadline {duration(round(self.deadline_s))})"  # fmt: skip
        else:
            states = Counter(dict(self.phases))
            finished = sum(self.outcomes.values())
            if finished:
                states["done"] = finished
            text = f"{head}{_counts(states, get_args(Phase), single)} | " \
                   f"{duration(self.elapsed_s)} of {duration(round(self.deadline_s))}"  # fmt: skip
        if self.note:
            text += f" | {self.note}"
        if width is not None and len(text) > width:
            text = text[: max(0, width - 3)] + "..."
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key, "workloads": self.workloads, "where": self.where, "phases": dict(self.phases),
            "outcomes": dict(self.outcomes), "elapsed_s": self.elapsed_s, "deadline_s": self.deadline_s,
            "note": self.note, "updated": self.updated,
        }  # fmt: skip

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> BatchStatus:
        return cls(
            key=str(doc["key"]),
            workloads=int(doc["workloads"]),
            where=str(doc["where"]),
            phases={str(k): int(v) for k, v in dict(doc["phases"]).items()},
            outcomes={str(k): int(v) for k, v in dict(doc["outcomes"]).items()},
            elapsed_s=float(doc["elapsed_s"]),
            deadline_s=float(doc["deadline_s"]),
            note=str(doc.get("note", "")),
            updated=float(doc.get("updated", 0.0)),
        )


def summarize(key: str, progress: Sequence[WorkloadProgress], *, note: str = "", updated: float = 0.0) -> BatchStatus:
    """The batch `key` from its workloads' progress; `note` is the batch's own remark while it runs.

    Elapsed and deadline are those of the longest-running workload still awaited (of all, once every
    one ended); the note of a workload (the scheduler's message, a failure's reason) wins over `note`.
    """
    running = [p for p in progress if p.phase != "done"]
    shown = running or list(progress)
    phases: Counter[str] = Counter(p.phase for p in running)
    outcomes: Counter[str] = Counter(p.status or "error" for p in progress if p.phase == "done")
    pool = running or [p for p in progress if p.status != "succeeded"]
    remark = next((f"{p.name}: {p.note}" for p in pool if p.note), "")
    nodes = [n for p in progress for n in p.nodes]
    return BatchStatus(
        key=key,
        workloads=len(progress),
        where=where(nodes),
        phases=dict(phases),
        outcomes=dict(outcomes),
        elapsed_s=max((p.elapsed_s for p in shown), default=0.0),
        deadline_s=max((p.deadline_s for p in shown), default=0.0),
        note=remark or (note if running else ""),
        updated=updated,
    )
