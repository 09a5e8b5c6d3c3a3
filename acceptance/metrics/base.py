"""What criterion 5 asks of a metrics source, answered alike by a real Prometheus and by offline dumps.

A source answers a few questions about dcgm-exporter series (which series exist, how many
GPUs of each node reported in each minute, which points may be a recurrence) and reads the
production job's series. `PrometheusSource` answers them with PromQL so that only the points
that matter cross the network; `OfflineSource` answers them from text dumps with pandas, with
the same semantics (a test holds both to the same answers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

import pandas as pd

# How a point of a hardware series is picked (see acceptance.judge.recurrence_rules for the kinds).
XID_CHANGES = "xid"  # a non-zero XID gauge that differs from its value a minute earlier
INCREASES = "increase"  # a counter's increase over the minute to the point (> 0)
NONZERO = "nonzero"  # a gauge above zero
BITS = "bits"  # a bitmask gauge with one of the mask's bits set


@dataclass(frozen=True)
class Grid:
    """Evaluation times ``start + step, start + 2 step, ... <= end`` (aligned to the window's start)."""

    start: datetime
    end: datetime
    step_s: float

    def times(self) -> pd.DatetimeIndex:
        count = int((self.end - self.start).total_seconds() // self.step_s)
        return pd.DatetimeIndex([self.start + timedelta(seconds=self.step_s * (k + 1)) for k in range(max(0, count))])

    def chunks(self, chunk_s: float) -> list[tuple[datetime, datetime]]:
        """(first, last) evaluation time of each chunk of at most `chunk_s`."""
        times = self.times()
        if not len(times):
            return []
        per = max(1, int(chunk_s // self.step_s))
        return [
            (times[i].to_pydatetime(), times[min(i + per, len(times)) - 1].to_pydatetime())
            for i in range(0, len(times), per)
        ]


@dataclass
class QueryStats:
    """What a source did: queries sent, points and bytes read, seconds spent waiting on answers."""

    queries: int = 0
    points: int = 0
    bytes: int = 0
    seconds: float = 0.0
    log: list[str] = field(default_factory=list)

    def as_figures(self) -> dict[str, int | float]:
        return {
            "queries": self.queries,
            "points_read": self.points,
            "bytes_read": self.bytes,
            "query_s": round(self.seconds, 3),
        }


class MetricsSource(Protocol):
    """A place where dcgm-exporter's and the job's series can be read (see module docstring)."""

    stats: QueryStats

    def describe(self) -> str:
        """Where the series come from, in one line for the report."""
        ...

    def census(self, metrics: Sequence[str], nodes: Sequence[str], start: datetime, end: datetime) -> pd.DataFrame:
        """One row per series of `metrics` on `nodes` with samples in the span: metric, node, gpu, uuid, blank.

        `blank`: the series' latest value is a DCGM blank sentinel (the field is not supported).
        """
        ...

    def presence(self, metric: str, nodes: Sequence[str], grid: Grid) -> pd.DataFrame:
        """time, node, gpus: how many GPU series of `metric` had a sample in [t - step, t], where any did."""
        ...

    def gpu_presence(self, metric: str, node: str, grid: Grid) -> pd.DataFrame:
        """time, node, gpu, uuid, present: per GPU series of `metric` on `node`, at every grid time."""
        ...

    def points(self, how: str, metric: str, nodes: Sequence[str], grid: Grid, mask: int = 0) -> pd.DataFrame:
        """time, node, gpu, uuid, value: the grid points picked by `how` (XID_CHANGES, INCREASES, NONZERO, BITS)."""
        ...

    def job_series(self, expression: str, grid: Grid) -> pd.Series:
        """The production job's series (the largest value across matching series at each grid time)."""
        ...

    def close(self) -> None: ...
