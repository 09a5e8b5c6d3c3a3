"""Plots of criteria 3 and 4 in the HTML report: smoke step time vs baseline, loss around the restore.

Found by table columns (see `data.verdict_payload`), as in `plots`:

- step time: `step_time` or `step_time_s`, no `loss` (optional `series`: `smoke` /
  `baseline`, `kept`: survived the drops, `step`; figures `baseline_median`, `smoke_median`,
  `margin` and `margin_direction` (read back as a `Margin`), `unit`, `ratio`, `ci_low`, `ci_high`)
- loss: `step`, `loss` (optional `phase`: `before` / `after`, `trend`, `z`; figures
  `restore_step`, `first_offending_step`, `sigma`, `space`, `spike_z`, `shift_z`)

A function returns None when there is nothing to draw; the page then says "not run".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from acceptance.margins import ABOVE
from acceptance.report.data import iter_tables
from acceptance.report.plots import BAD_COLOR, BASE_COLOR, NOW_COLOR, margin_of, margin_sign, png_uri

LOSS_COLUMNS = {"step", "loss"}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _figure(figures: Mapping[str, Any], name: str) -> float | None:
    return _number(figures.get(name))


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def _step_table(verdicts: Iterable[Mapping[str, Any]]) -> tuple[Mapping[str, Any], list[dict[str, Any]], str] | None:
    """The first step-time verdict with rows: (verdict, rows, time column). Tables with a
    `loss` column (criterion 4 keeps the log's columns) are not step-time tables."""
    for column in ("step_time", "step_time_s"):
        for verdict, rows in iter_tables(verdicts, {column}):
            columns = set((verdict.get("table") or {}).get("columns", []))
            if "loss" not in columns and any(_number(r.get(column)) is not None for r in rows):
                return verdict, rows, column
    return None


def _time_scale(unit: str, values: list[float]) -> tuple[float, str]:
    """Seconds under one second read better as milliseconds."""
    if unit == "s" and values and max(values) < 1:
        return 1000.0, "ms"
    return 1.0, unit


def steptime_lines(verdict: Mapping[str, Any]) -> list[tuple[float, str, str, str]]:
    """The reference lines of a step-time verdict's plot, in seconds (or its unit): (x, color, style, label) of
    the baseline median, the margin's limit on the side its direction says is worse, and the smoke median."""
    figures = verdict.get("figures") or {}
    kept, _trace = _series(verdict)
    every = [v for values in kept.values() for v in values]
    scale, unit = _time_scale(str(figures.get("unit") or "s"), every)
    base_median = _figure(figures, "baseline_median") or _median(kept.get("baseline", []))
    smoke_median = _figure(figures, "smoke_median") or _median(kept.get("smoke", []))
    margin = margin_of(figures, ABOVE)
    lines: list[tuple[float, str, str, str]] = []
    if base_median is not None:
        lines.append((base_median * scale, BASE_COLOR, "--", f"baseline median {base_median * scale:.4g} {unit}"))
        if margin is not None:
            limit = margin.limit(base_median) * scale
            factor = f"(1 {margin_sign(margin)} {margin.fraction:.0%})"
            lines.append((limit, BAD_COLOR, ":", f"limit {factor} × baseline median {limit:.4g} {unit}"))
    if smoke_median is not None:
        ratio = f" ({smoke_median / base_median - 1:+.1%})" if base_median else ""
        lines.append((smoke_median * scale, NOW_COLOR, "-", f"smoke median {smoke_median * scale:.4g} {unit}{ratio}"))
    return lines


def _series(verdict: Mapping[str, Any]) -> tuple[dict[str, list[float]], dict[str, list[tuple[float, float, bool]]]]:
    """The kept step times per series, and each series per step: (step, time, kept)."""
    found = _step_table([verdict])
    kept: dict[str, list[float]] = {}
    trace: dict[str, list[tuple[float, float, bool]]] = {}
    if found is None:
        return kept, trace
    _verdict, rows, column = found
    for row in rows:
        value = _number(row.get(column))
        if value is None:
            continue
        name = str(row.get("series") or "smoke")
        keep = row.get("kept") is not False
        if keep:
            kept.setdefault(name, []).append(value)
        step = _number(row.get("step"))
        if step is not None:
            trace.setdefault(name, []).append((step, value, keep))
    return kept, trace


def steptime_plot(verdicts: Iterable[Mapping[str, Any]]) -> str | None:
    """Step-time distributions of the kept steps, smoke run vs baseline (overlaid histograms,
    baseline median, the margin's limit, smoke median: `steptime_lines`), and, when the
    table has steps, the smoke run's step time per step with the dropped steps marked."""
    from matplotlib.figure import Figure  # imported on use: a run that draws no plot need not load matplotlib

    found = _step_table(verdicts)
    if found is None:
        return None
    verdict = found[0]
    figures = verdict.get("figures") or {}
    kept, trace = _series(verdict)
    every = [v for values in kept.values() for v in values]
    scale, unit = _time_scale(str(figures.get("unit") or "s"), every)
    lines = steptime_lines(verdict)

    smoke_trace = trace.get("smoke", [])
    fig = Figure(figsize=(11, 4), dpi=100)
    if smoke_trace:
        ax, ax_t = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    else:
        ax, ax_t = fig.add_subplot(), None
    if every:
        edges = np.histogram_bin_edges(np.asarray(every) * scale, bins=min(60, max(10, len(every) // 10)))
        for name in sorted(kept, key=lambda n: (n != "baseline", n)):
            values = np.asarray(kept[name]) * scale
            color = BASE_COLOR if name == "baseline" else NOW_COLOR
            label = f"{name} ({len(values)} kept steps)"
            ax.hist(values, bins=edges, density=True, color=color, alpha=0.35, label=label)
            ax.hist(values, bins=edges, density=True, color=color, histtype="step", linewidth=1.2)
    for x, color, style, label in lines:
        ax.axvline(x, color=color, linestyle=style, linewidth=1.5, label=label)
    ax.set_xlabel(f"step time ({unit})")
    ax.set_ylabel("density")
    ax.set_yticks([])
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="best", fontsize="x-small", framealpha=0.85)
    ax.set_title("kept steps: smoke run vs baseline", fontsize="medium")
    if ax_t is not None:
        _trace_panel(ax_t, smoke_trace, scale, unit, [y for y, *_ in lines])
        for y, color, style, _label in lines:
            ax_t.axhline(y, color=color, linestyle=style, linewidth=1.2)
    fig.suptitle(_steptime_title(verdict, figures), fontsize="medium")
    fig.tight_layout()
    return png_uri(fig)


def _trace_panel(ax: Any, trace: list[tuple[float, float, bool]], scale: float, unit: str, refs: list[float]) -> None:
    """The smoke run per step: kept steps as dots, dropped ones as crosses; dropped steps far
    above the rest (a warm-up step, a checkpoint save) sit on the top edge as triangles."""
    ok = [(s, v * scale) for s, v, keep in trace if keep]
    out = [(s, v * scale) for s, v, keep in trace if not keep]
    if ok:
        ax.scatter(*zip(*ok, strict=True), s=6, color=NOW_COLOR, label="kept")
    top = _trace_top([v for _, v in ok] + refs, [v for _, v in out])
    shown = [(s, v) for s, v in out if top is None or v <= top]
    off = [s for s, v in out if top is not None and v > top]
    if shown:
        ax.scatter(*zip(*shown, strict=True), s=14, marker="x", color=BASE_COLOR, label="dropped")
    if off and top is not None:
        every = [v for _, v in ok + shown] + refs
        ax.set_ylim(min(every) - 0.05 * (top - min(every)), top)
        ax.scatter(off, [top] * len(off), s=18, marker="^", color=BASE_COLOR, clip_on=False, label="dropped, off scale")
    ax.set_xlabel("smoke step")
    ax.set_ylabel(f"step time ({unit})")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="x-small", framealpha=0.85)
    ax.set_title("smoke run per step (warm-up, restore, outliers dropped)", fontsize="medium")


def _trace_top(kept: list[float], dropped: list[float]) -> float | None:
    """Upper y limit of the per-step panel when a dropped step (a checkpoint save, a warm-up
    step) lies far above the kept ones; None when everything fits."""
    if not kept or not dropped:
        return None
    low, high = min(kept), max(kept)
    limit = high + 0.6 * ((high - low) or abs(high) * 0.05)
    return limit if max(dropped) > limit else None


def _steptime_title(verdict: Mapping[str, Any], figures: Mapping[str, Any]) -> str:
    status = str(verdict.get("status") or "").upper()
    ratio, lo, hi = _figure(figures, "ratio"), _figure(figures, "ci_low"), _figure(figures, "ci_high")
    margin = margin_of(figures, ABOVE)
    text = "step time: smoke run vs baseline"
    if ratio is not None:
        text = f"smoke step time {ratio - 1:+.1%} vs baseline"
        if lo is not None and hi is not None:
            text += f" (CI {lo - 1:+.1%}..{hi - 1:+.1%})"
    if margin is not None:
        text += f", margin {margin_sign(margin)}{margin.fraction:.0%}"
    return f"{text}: {status}" if status else text


def _loss_rows(verdicts: Iterable[Mapping[str, Any]]) -> tuple[Mapping[str, Any], list[dict[str, Any]]] | None:
    for verdict, rows in iter_tables(verdicts, LOSS_COLUMNS):
        if any(_number(r.get("step")) is not None for r in rows):
            return verdict, rows
    return None


def loss_plot(verdicts: Iterable[Mapping[str, Any]]) -> str | None:
    """Loss before and after the restore with the fitted trend (and its ±spike_z·σ band), the
    restore step as a vertical line, offending points in red; below, the z-scores and limits."""
    from matplotlib.figure import Figure  # imported on use: a run that draws no plot need not load matplotlib

    found = _loss_rows(verdicts)
    if found is None:
        return None
    verdict, rows = found
    figures = verdict.get("figures") or {}
    restore, first_bad = _figure(figures, "restore_step"), _figure(figures, "first_offending_step")
    spike, shift = _figure(figures, "spike_z"), _figure(figures, "shift_z")
    sigma, log_space = _figure(figures, "sigma"), figures.get("space") == "log-loss"
    phases: dict[str, list[tuple[float, float]]] = {}
    trend: list[tuple[float, float]] = []
    zs: list[tuple[float, float]] = []
    broken: list[float] = []
    for row in rows:
        step = _number(row.get("step"))
        if step is None:
            continue
        phase = str(row.get("phase") or "after")
        loss = _number(row.get("loss"))
        if loss is None:
            broken.append(step)
        else:
            phases.setdefault(phase, []).append((step, loss))
        if (value := _number(row.get("trend"))) is not None:
            trend.append((step, value))
        if phase == "after" and (value := _number(row.get("z"))) is not None:
            zs.append((step, value))
    for points in (*phases.values(), trend, zs):
        points.sort()
    if not phases and not broken:
        return None
    fig = Figure(figsize=(11, 5.2 if zs else 3.8), dpi=100)
    if zs:
        ax, ax_z = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    else:
        ax, ax_z = fig.add_subplot(), None
    for phase, color, label in (
        ("before", BASE_COLOR, "loss before the incident"),
        ("after", NOW_COLOR, "loss after restore"),
    ):
        points = phases.get(phase, [])
        if points:
            ax.plot(*zip(*points, strict=True), color=color, linewidth=1, marker=".", markersize=3, label=label)
    if trend:
        x, y = np.array([p[0] for p in trend]), np.array([p[1] for p in trend])
        cut = restore if restore is not None else min((p[0] for p in phases.get("after", [])), default=x.max())
        pre = x <= cut
        ax.plot(x[pre], y[pre], color="black", linewidth=1.2, label="trend (Theil–Sen fit)")
        ax.plot(x[~pre], y[~pre], color="black", linewidth=1.2, linestyle="--", label="trend, extrapolated")
        if sigma is not None and spike is not None:
            width = spike * sigma
            low, high = (y * np.exp(-width), y * np.exp(width)) if log_space else (y - width, y + width)
            ax.fill_between(x, low, high, color="black", alpha=0.08, label=f"trend ± {spike:g}σ")
    if spike is not None and zs:
        loss_at = dict(phases.get("after", []))
        bad = [(s, loss_at[s]) for s, z in zs if abs(z) > spike and s in loss_at]
        if bad:
            ax.scatter(*zip(*bad, strict=True), color=BAD_COLOR, s=22, zorder=4, label=f"|z| > {spike:g}")
    if broken:
        ax.scatter(
            broken,
            [0.03] * len(broken),
            transform=ax.get_xaxis_transform(),
            marker="x",
            color=BAD_COLOR,
            label="loss NaN/Inf",
        )
    axes = [ax] if ax_z is None else [ax, ax_z]
    for axis in axes:
        if restore is not None:
            axis.axvline(restore, color=BAD_COLOR, linestyle="--", linewidth=1.2)
        if first_bad is not None and first_bad != restore:
            axis.axvline(first_bad, color=BAD_COLOR, linestyle=":", linewidth=1.2)
        axis.grid(True, alpha=0.3)
    if restore is not None:
        ax.plot([], [], color=BAD_COLOR, linestyle="--", label=f"restore at step {restore:g}")
    if first_bad is not None and first_bad != restore:
        ax.plot([], [], color=BAD_COLOR, linestyle=":", label=f"first offending step {first_bad:g}")
    ax.set_ylabel("loss")
    ax.legend(loc="best", fontsize="x-small", framealpha=0.85, ncols=2)
    if ax_z is not None:
        ax_z.plot(*zip(*zs, strict=True), color=NOW_COLOR, linewidth=1, marker=".", markersize=3)
        for limit, style, name in ((spike, "--", "spike"), (shift, ":", "shift")):
            if limit is not None:
                ax_z.axhline(limit, color=BAD_COLOR, linestyle=style, linewidth=1, label=f"±{limit:g} ({name} limit)")
                ax_z.axhline(-limit, color=BAD_COLOR, linestyle=style, linewidth=1)
        ax_z.set_ylabel("z after restore")
        ax_z.legend(loc="upper right", fontsize="x-small", framealpha=0.85, ncols=2)
    axes[-1].set_xlabel("step")
    status = str(verdict.get("status") or "").upper()
    ax.set_title(f"loss around the restore: {status}" if status else "loss around the restore", fontsize="medium")
    fig.tight_layout()
    return png_uri(fig)
