"""What criterion 5 judges (series handed in by `acceptance.metrics`) and what it finds in them.

Times are timezone-aware UTC. Hardware series are sparse: the metrics layer sends back only the
points that may matter (a changed XID, a counter that went up, a slowdown bit set), plus, per
node and minute, how many GPUs reported at all, so that missing data is seen as missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import pandas as pd

from acceptance.units import format_duration

POINT_COLUMNS = ("time", "node", "gpu", "uuid", "value")
CENSUS_COLUMNS = ("signal", "metric", "node", "gpu", "uuid", "blank")
PRESENCE_COLUMNS = ("time", "node", "gpus")
GPU_PRESENCE_COLUMNS = ("time", "node", "gpu", "uuid", "present")


def empty(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})


@dataclass(frozen=True)
class HardwareSeries:
    """dcgm-exporter series of the returned nodes over the window.

    - `census`: one row per series found (signal, metric read, node, gpu, uuid; `blank`: every value
      was a DCGM "no data" sentinel).
    - `points`: per signal key, the points that may be a recurrence (time, node, gpu, uuid, value):
      a new XID code; a counter's increase over the minute to `time`; a non-zero gauge; a bitmask
      with slowdown bits set (at the scrape interval).
    - `presence`: per node and bucket end `time`, how many GPU series had a sample in the bucket
      (`bucket_s`); a node without a row for a bucket sent nothing.
    - `gpu_presence`: per GPU, for the nodes where fewer GPUs than expected reported.
    """

    nodes: tuple[str, ...]
    gpus_per_node: int
    census: pd.DataFrame
    points: Mapping[str, pd.DataFrame]
    presence: pd.DataFrame
    gpu_presence: pd.DataFrame
    bucket_s: float = 60.0
    scrape_s: float = 15.0


@dataclass(frozen=True)
class WatchdogLine:
    """An NCCL watchdog timeout in a rank's log."""

    time: datetime | None
    rank: int | None
    source: str
    line: int
    text: str


@dataclass(frozen=True)
class JobSeries:
    """The production job: step time (seconds) and progress (the step counter), both time-indexed.

    `baseline_step_s` is the job's own reference (the median of the baseline's smoke sample).
    A series is None when the profile names no source for it.
    """

    step_time: pd.Series | None
    progress: pd.Series | None
    baseline_step_s: float | None
    watchdog: tuple[WatchdogLine, ...] = ()
    logs_read: int = 0
    source: str = ""


@dataclass(frozen=True)
class Finding:
    """One thing seen in the window: a recurrence (`fails`) or a note that is not one."""

    time: datetime
    signal: str
    what: str
    node: str | None = None
    gpu: str | None = None
    uuid: str | None = None
    value: float | str | None = None
    rule: str = ""
    fails: bool = True

    def where(self) -> str:
        if self.node and self.gpu is not None:
            return f"{self.node} GPU {self.gpu}" + (f" ({self.uuid})" if self.uuid else "")
        return self.node or "the job"

    def line(self) -> str:
        rule = f" (rule: {self.rule})" if self.rule else ""
        return f"{self.what} on {self.where()} at {stamp(self.time)}{rule}"


@dataclass(frozen=True)
class Gap:
    """A stretch of the window without data from `subject` (a node, or the job)."""

    subject: str
    start: datetime
    end: datetime
    what: str = "no samples"
    slack_s: float = 0.0  # how much longer it may have been (data seen per minute, not per sample)

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    def longer_than(self, limit_s: float) -> bool:
        """Whether the gap may exceed `limit_s` (missing data is never taken for the benefit of the doubt)."""
        return self.seconds + self.slack_s > limit_s

    def line(self) -> str:
        return (
            f"{self.what} from {self.subject} {stamp(self.start)}–{stamp(self.end)} ({format_duration(self.seconds)})"
        )


@dataclass(frozen=True)
class Coverage:
    """How well a signal was observed: collected, not collected, not supported (DCGM blanks), partial."""

    signal: str
    title: str
    state: str
    detail: str = ""


@dataclass(frozen=True)
class PartResult:
    """What one family of signals (hardware, cluster, job) found."""

    family: str
    findings: tuple[Finding, ...] = ()
    gaps: tuple[Gap, ...] = ()
    coverage: tuple[Coverage, ...] = ()
    counts: Mapping[str, str] = field(default_factory=dict)
    figures: Mapping[str, float | int | str] = field(default_factory=dict)
    plot: pd.DataFrame | None = None
    notes: tuple[str, ...] = ()
    unavailable: str | None = None  # the family could not be read at all (a query failure, no source)


def stamp(when: datetime) -> str:
    """``2026-12-01T03:00Z``; seconds only when they are not zero."""
    text = pd.Timestamp(when).tz_convert("UTC").strftime("%Y-%m-%dT%H:%M:%S")
    return (text[:-3] if text.endswith(":00") else text) + "Z"
