"""Criterion 5's signals as plot tables: one value per plot bucket over the window, hours since its start.

Pure. The HTML report draws a panel per signal (`acceptance.report.plots_recurrence`); a signal
that was collected and showed nothing is drawn flat at zero, so every judged signal has a panel.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from acceptance.judge.recurrence_records import HardwareSeries
from acceptance.judge.recurrence_rules import HW_SIGNALS, RATE, XID, Window

PLOT_POINTS = 288
COLUMNS = ["signal", "hours", "value"]


def _bucket(window: Window, step_s: float) -> float:
    return max(step_s, window.length_s / PLOT_POINTS)


def _hours(times: pd.Series, window: Window, bucket: float) -> pd.Series:
    seconds = (pd.to_datetime(times, utc=True) - pd.Timestamp(window.start)).dt.total_seconds()
    return (seconds // bucket) * (bucket / 3600.0)


def _label(key: str) -> str:
    signal = next(s for s in HW_SIGNALS if s.key == key)
    if signal.kind == XID:
        return "XID code"
    return signal.title + (" per min" if signal.kind == RATE else "")


def hardware_plot(data: HardwareSeries, counts: pd.DataFrame, window: Window, collected: set[str]) -> pd.DataFrame:
    """GPUs reporting (the fewest in each bucket), and each collected signal (its largest value in each bucket)."""
    bucket = _bucket(window, data.bucket_s)
    frames = []
    if len(counts):
        total = counts.sum(axis=1)
        frame = pd.DataFrame({"hours": _hours(pd.Series(total.index), window, bucket), "value": total.to_numpy()})
        grouped = frame.groupby("hours")["value"].min().reset_index()
        grouped["signal"] = "GPUs reporting"
        frames.append(grouped)
    for signal in HW_SIGNALS:
        points = data.points.get(signal.key)
        if points is not None and len(points):
            frame = pd.DataFrame({"hours": _hours(points["time"], window, bucket), "value": points["value"]})
            grouped = frame.astype({"value": float}).groupby("hours")["value"].max().reset_index()
        elif signal.key in collected:
            grouped = pd.DataFrame({"hours": [0.0, window.elapsed_s / 3600.0], "value": [0.0, 0.0]})
        else:
            continue
        grouped["signal"] = _label(signal.key)
        frames.append(grouped)
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(frames, ignore_index=True)[COLUMNS]


def ratio_plot(ratio: pd.Series, window: Window) -> pd.DataFrame:
    """The job's smoothed step time over its baseline (the median in each bucket)."""
    if not len(ratio):
        return pd.DataFrame(columns=COLUMNS)
    bucket = _bucket(window, 60.0)
    seconds = (pd.DatetimeIndex(ratio.index) - pd.Timestamp(window.start)).total_seconds()
    frame = pd.DataFrame({"hours": (np.asarray(seconds) // bucket) * (bucket / 3600.0), "value": ratio.to_numpy()})
    out = frame.groupby("hours")["value"].median().reset_index()
    out["signal"] = "step time / baseline"
    return out[COLUMNS]
