"""Read criterion 5's series from a source: the hardware signals of the returned nodes and the job's series.

I/O through a `MetricsSource` (a real Prometheus or offline dumps); the judging is
`acceptance.judge.recurrence`'s. The job's rank logs are read here too, for NCCL watchdog lines
(`acceptance.tools.torchlogs`; glog lines carry no year or zone: the window's year, UTC).
"""

from __future__ import annotations

import glob
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from acceptance.judge.recurrence_records import (
    CENSUS_COLUMNS,
    GPU_PRESENCE_COLUMNS,
    HardwareSeries,
    JobSeries,
    WatchdogLine,
    empty,
)
from acceptance.judge.recurrence_rules import (
    BITS,
    HW_SIGNALS,
    INCREMENT,
    NONZERO,
    PRESENCE_METRIC,
    RATE,
    XID,
    RecurrenceRules,
    Window,
)
from acceptance.metrics import base
from acceptance.metrics.base import Grid, MetricsSource
from acceptance.tools import torchlogs

HOW = {XID: base.XID_CHANGES, INCREMENT: base.INCREASES, RATE: base.INCREASES, NONZERO: base.NONZERO, BITS: base.BITS}
BUCKET_S = 60.0
WATCHDOG = ("watchdog-timeout", "watchdog-exception")  # torchlogs kinds: the watchdog took the job down


@dataclass(frozen=True)
class JobSources:
    """Where the production job's series are (profile ``recurrence.job``)."""

    step_time: str | None = None
    progress: str | None = None
    logs: tuple[str, ...] = ()


def judged_until(window: Window) -> datetime:
    return window.until


def collect_hardware(
    source: MetricsSource,
    nodes: Sequence[str],
    window: Window,
    rules: RecurrenceRules,
    gpus_per_node: int,
    scrape_s: float,
) -> HardwareSeries:
    """Every hardware signal of `nodes` over the judged part of `window`."""
    start, end = window.start, judged_until(window)
    metrics = [m for s in HW_SIGNALS for m in s.metrics]
    found = source.census([*metrics, PRESENCE_METRIC], nodes, start, end)
    census_rows = []
    points: dict[str, pd.DataFrame] = {}
    for signal in HW_SIGNALS:
        have = [m for m in signal.metrics if m in set(found["metric"])]
        if not have:
            continue
        metric = have[0]
        rows = found[found["metric"] == metric]
        census_rows.append(rows.assign(signal=signal.key))
        step = BUCKET_S if signal.kind in (INCREMENT, RATE) else scrape_s
        mask = rules.slowdown_mask if signal.kind == BITS else 0
        live = sorted(set(rows.loc[~rows["blank"].astype(bool), "node"]))
        if live:
            points[signal.key] = source.points(HOW[signal.kind], metric, live, Grid(start, end, step), mask)
    census = pd.concat(census_rows, ignore_index=True)[list(CENSUS_COLUMNS)] if census_rows else empty(CENSUS_COLUMNS)
    grid = Grid(start, end, BUCKET_S)
    presence = source.presence(PRESENCE_METRIC, nodes, grid)
    expected = found[found["metric"] == PRESENCE_METRIC].groupby("node")["gpu"].nunique().to_dict()
    fewest = presence.groupby("node")["gpus"].min().to_dict() if len(presence) else {}
    drill = [
        source.gpu_presence(PRESENCE_METRIC, node, grid)
        for node in nodes
        if node in fewest and fewest[node] < max(gpus_per_node, int(expected.get(node, 0)))
    ]
    gpu_presence = pd.concat(drill, ignore_index=True) if drill else empty(GPU_PRESENCE_COLUMNS)
    return HardwareSeries(tuple(nodes), gpus_per_node, census, points, presence, gpu_presence, BUCKET_S, scrape_s)


def log_files(patterns: Sequence[str], extra: Sequence[Path] = ()) -> list[Path]:
    """The job's rank logs: the profile's glob patterns, plus files a simulator wrote."""
    found = {Path(p) for pattern in patterns for p in glob.glob(pattern, recursive=True)}
    return sorted(p for p in (*found, *extra) if p.is_file())


def collect_job(
    source: MetricsSource | None,
    job: JobSources,
    window: Window,
    baseline_step_s: float | None,
    logs: Sequence[Path],
    scrape_s: float,
) -> JobSeries:
    """The job's step time and progress from the source, and watchdog lines from its rank logs."""
    grid = Grid(window.start, judged_until(window), scrape_s)
    step_time = source.job_series(job.step_time, grid) if source is not None and job.step_time else None
    progress = source.job_series(job.progress, grid) if source is not None and job.progress else None
    lines, seen = [], set()
    for path in logs:
        text = path.read_text(encoding="utf-8", errors="replace")
        for error in torchlogs.parse(text, str(path), year=window.start.year).errors:
            if error.kind not in WATCHDOG or (error.rank, error.text) in seen:
                continue  # the same record repeated inside an exception's text counts once
            seen.add((error.rank, error.text))
            when = error.time.replace(tzinfo=UTC) if error.time is not None else None
            lines.append(WatchdogLine(when, error.rank, str(path), error.line, error.text))
    where = source.describe() if source is not None else "no metrics source"
    return JobSeries(step_time, progress, baseline_step_s, tuple(lines), len(logs), where)
