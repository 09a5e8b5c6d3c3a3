"""Criterion 5, the job: sustained step-time rise against the job's own baseline, hangs, NCCL watchdog timeouts.

Pure: `JobSeries` in, `PartResult` out. The agreed definition of degraded: the median step time,
smoothed over `step_time_smoothing_s`, at least `step_time_rise` above the baseline median without
interruption for `step_time_sustained_s` (a +10% rise for 14 minutes is not an incident, for 16
it is).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from acceptance.judge.recurrence_plot import ratio_plot
from acceptance.judge.recurrence_records import Coverage, Finding, Gap, JobSeries, PartResult
from acceptance.judge.recurrence_rules import RecurrenceRules, Window
from acceptance.units import format_duration

EPS = 1e-9


def _ts(value: object) -> datetime:
    return pd.Timestamp(value).to_pydatetime()  # type: ignore[arg-type]


def _in_window(series: pd.Series, window: Window) -> pd.Series:
    series = series.sort_index()
    index = pd.DatetimeIndex(series.index)
    keep = (index >= pd.Timestamp(window.start)) & (index <= pd.Timestamp(window.until))
    return series[keep].astype(float)


def series_gaps(series: pd.Series, window: Window, rules: RecurrenceRules, subject: str) -> list[Gap]:
    """Stretches longer than the agreed gap without a sample (window edges included)."""
    last = window.until if not window.open else window.now - timedelta(seconds=rules.ingest_delay_s)
    inner = pd.DatetimeIndex(series.index).as_unit("ns").asi8
    edges = np.concatenate(([pd.Timestamp(window.start).value], inner, [pd.Timestamp(max(last, window.start)).value]))
    wide = np.flatnonzero(np.diff(edges) > rules.max_gap_s * 1e9)
    return [
        Gap(subject, _ts(pd.Timestamp(edges[i], tz="UTC")), _ts(pd.Timestamp(edges[i + 1], tz="UTC"))) for i in wide
    ]


def sustained_rise(step_time: pd.Series, baseline_s: float, rules: RecurrenceRules) -> tuple[Finding | None, pd.Series]:
    """The first stretch where the smoothed median stays at least `rise` above the baseline for the agreed time.

    Returns the finding (None when there is none) and the smoothed ratio to the baseline.
    """
    if not len(step_time):
        return None, step_time
    smooth = step_time.rolling(f"{int(rules.step_time_smoothing_s)}s").median()
    ratio = smooth / baseline_s
    above = (ratio >= 1 + rules.step_time_rise - EPS).to_numpy()
    times = pd.DatetimeIndex(ratio.index)
    start = None
    for i, flag in enumerate(above):
        if flag and start is None:
            start = i
        if (not flag or i == len(above) - 1) and start is not None:
            end = i if flag else i - 1
            took = (times[end] - times[start]).total_seconds()
            if took >= rules.step_time_sustained_s - EPS:
                peak = float(np.median(ratio.iloc[start : end + 1]))
                what = (
                    f"step time median +{(peak - 1) * 100:.1f}% vs the baseline {baseline_s:.3g} s "
                    f"for {format_duration(took)}"
                )
                rule = f"+{rules.step_time_rise:.0%} for {format_duration(rules.step_time_sustained_s)}"
                return Finding(_ts(times[start]), "step_time", what, value=round(peak, 4), rule=rule), ratio
            start = None
    return None, ratio


def hangs(progress: pd.Series, rules: RecurrenceRules) -> Finding | None:
    """The first time the step counter stood still for the agreed time (to its next step, or its last sample)."""
    if not len(progress):
        return None
    values = progress.to_numpy()
    times = pd.DatetimeIndex(progress.index)
    last_move = 0
    for i in range(1, len(values) + 1):
        moved = i < len(values) and values[i] > values[last_move]
        if moved or i == len(values):
            stop = times[i] if moved else times[-1]
            took = (stop - times[last_move]).total_seconds()
            if took >= rules.hang_s:
                what = f"no step for {format_duration(took)} (stuck at step {values[last_move]:g})"
                return Finding(
                    _ts(times[last_move]),
                    "hang",
                    what,
                    value=float(values[last_move]),
                    rule=f"a step at least every {format_duration(rules.hang_s)}",
                )
            last_move = i
    return None


def judge_job(job: JobSeries, rules: RecurrenceRules, window: Window) -> PartResult:
    """The production job's signals over the judged part of the window."""
    findings: list[Finding] = []
    gaps: list[Gap] = []
    coverage: list[Coverage] = []
    notes: list[str] = []
    counts: dict[str, str] = {}
    figures: dict[str, float | int | str] = {}
    plot = pd.DataFrame(columns=["signal", "hours", "value"])
    if job.step_time is None and job.progress is None and not job.logs_read:
        return PartResult(
            "job",
            unavailable="the profile names no source of the production job's step time "
            "(recurrence.job.step_time / progress / logs)",
        )
    if job.step_time is not None:
        steps = _in_window(job.step_time, window)
        gaps.extend(series_gaps(steps, window, rules, "the job's step-time series"))
        if job.baseline_step_s is None:
            coverage.append(
                Coverage(
                    "step_time",
                    "step time",
                    "no baseline",
                    "the baseline has no smoke step-time sample to compare with",
                )
            )
        else:
            coverage.append(
                Coverage(
                    "step_time",
                    "step time",
                    "collected" if len(steps) else "not collected",
                    f"{len(steps)} samples; baseline median {job.baseline_step_s:.4g} s",
                )
            )
            found, ratio = sustained_rise(steps, job.baseline_step_s, rules)
            if found is not None:
                findings.append(found)
            if len(steps):
                median = float(steps.median()) / job.baseline_step_s - 1
                counts["step_time"] = f"median {median * 100:+.1f}%"
                figures["step_time_median_change"] = round(median, 4)
                figures["step_time_baseline_s"] = job.baseline_step_s
                plot = ratio_plot(ratio, window)
    else:
        coverage.append(Coverage("step_time", "step time", "not collected", "no step-time source in the profile"))
    if job.progress is not None:
        progress = _in_window(job.progress, window)
        gaps.extend(series_gaps(progress, window, rules, "the job's step counter"))
        coverage.append(
            Coverage(
                "hang",
                "progress",
                "collected" if len(progress) else "not collected",
                f"{len(progress)} samples of the step counter",
            )
        )
        stall = hangs(progress, rules)
        if stall is not None:
            findings.append(stall)
        counts["hang"] = "hang" if stall is not None else "no hang"
    else:
        coverage.append(Coverage("hang", "progress", "not collected", "no step counter in the profile"))
    timeouts = 0
    for line in job.watchdog:
        if line.time is None:
            notes.append(
                f"NCCL watchdog timeout without a time in {line.source}:{line.line} (not placed in the window)"
            )
            continue
        if window.start <= line.time <= window.until:
            timeouts += 1
            if timeouts == 1:
                rank = f" (rank {line.rank})" if line.rank is not None else ""
                findings.append(
                    Finding(
                        line.time,
                        "watchdog",
                        f"NCCL watchdog timeout{rank}: {line.text[:160]}",
                        value=line.rank,
                        rule="no NCCL watchdog timeout",
                    )
                )
    if job.logs_read:
        counts["watchdog"] = f"{timeouts} watchdog timeouts"
        coverage.append(Coverage("watchdog", "NCCL watchdog", "collected", f"{job.logs_read} rank logs read"))
    figures["watchdog_timeouts"] = timeouts
    return PartResult(
        "job",
        tuple(sorted(findings, key=lambda f: f.time)),
        tuple(gaps),
        tuple(coverage),
        counts,
        figures,
        plot,
        tuple(notes),
    )
