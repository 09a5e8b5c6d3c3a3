"""Criterion 5 in the HTML report: each signal over the probation window, one panel per signal.

Found by table columns (see `data.verdict_payload`): `probation_signal`, `hours` (since the
window's start), `value`; figures `window_s`, `elapsed_s`, `window_start`, `time` (of the first
recurrence), `gpus_expected` and `limit.*` (the rules' numeric limits) draw the reference lines.
Returns None when there is nothing to draw; the page then says "not run".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from acceptance.report.data import iter_tables
from acceptance.report.plots import BAD_COLOR, BASE_COLOR, NOW_COLOR, png_uri

COLUMNS = {"probation_signal", "hours", "value"}
_LIMITS = {
    "GPUs reporting": ("gpus_expected", "GPUs expected"),
    "PCIe replays per min": ("limit.pcie_replays_per_min", "rule: at most this per minute"),
    "step time / baseline": ("limit.step_time_ratio", "rule: sustained rise limit"),
}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _when(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _failure_hours(figures: Mapping[str, Any]) -> float | None:
    start, failed = _when(figures.get("window_start")), _when(figures.get("time"))
    if start is None or failed is None:
        return None
    return (failed - start).total_seconds() / 3600.0


def recurrence_plot(verdicts: Iterable[Mapping[str, Any]]) -> str | None:
    """One PNG: a panel per signal against hours since the window's start, with its rule and the failure time."""
    from matplotlib.figure import Figure  # imported on use: a run that draws no plot need not load matplotlib

    for verdict, rows in iter_tables(verdicts, COLUMNS):
        series: dict[str, list[tuple[float, float]]] = {}
        for row in rows:
            x, y = _number(row.get("hours")), _number(row.get("value"))
            if x is not None and y is not None:
                series.setdefault(str(row.get("probation_signal")), []).append((x, y))
        if not series:
            continue
        figures = verdict.get("figures") or {}
        window_h = (_number(figures.get("window_s")) or 86400.0) / 3600.0
        elapsed_h = (_number(figures.get("elapsed_s")) or window_h * 3600) / 3600.0
        failed = _failure_hours(figures)
        fig = Figure(figsize=(10, 1.9 * len(series) + 0.8), dpi=100)
        axes = fig.subplots(len(series), 1, sharex=True, squeeze=False)[:, 0]
        for ax, (name, points) in zip(axes, sorted(series.items()), strict=True):
            points.sort()
            ax.step([p[0] for p in points], [p[1] for p in points], where="post", color=NOW_COLOR, linewidth=1.1)
            ax.plot([p[0] for p in points], [p[1] for p in points], ".", color=NOW_COLOR, markersize=2)
            limit = _LIMITS.get(name)
            value = _number(figures.get(limit[0])) if limit else None
            if limit and value is not None:
                ax.axhline(
                    value,
                    color=BAD_COLOR if "rule" in limit[1] else BASE_COLOR,
                    linestyle=":",
                    linewidth=1.2,
                    label=f"{limit[1]} ({value:g})",
                )
                ax.legend(loc="upper right", fontsize="x-small", framealpha=0.85)
            if failed is not None:
                ax.axvline(failed, color=BAD_COLOR, linewidth=1.2)
            if elapsed_h < window_h:
                ax.axvspan(elapsed_h, window_h, color=BASE_COLOR, alpha=0.15)
            ax.set_ylabel(name, fontsize="x-small", rotation=0, ha="right", va="center")
            ax.grid(True, alpha=0.3)
        axes[-1].set_xlim(0, window_h)
        axes[-1].set_xlabel("hours since the acceptance passed (grey: not yet elapsed; red: first recurrence)")
        fig.suptitle(f"probation of {figures.get('nodes', '?')}: {verdict.get('status', '?')}", fontsize="medium")
        fig.tight_layout()
        return png_uri(fig)
    return None
