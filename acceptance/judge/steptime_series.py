"""The steady-state step-time sample of a run: what is dropped before comparing, and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from acceptance.tools.trainlog import TrainLog

if TYPE_CHECKING:
    from collections.abc import Mapping


class _Rules(Protocol):
    @property
    def warmup_steps(self) -> int: ...
    @property
    def warmup_intervals(self) -> int: ...
    @property
    def after_restore_steps(self) -> int: ...
    @property
    def outlier_factor(self) -> float: ...
    @property
    def drop_event_steps(self) -> bool: ...


@dataclass(frozen=True)
class Steady:
    """Kept step times (in logged order), their steps, per-segment samples and the drops.

    `all_steps`, `all_values` and `kept` are the whole finite series before the drops, with a
    mask of the steps kept (what the report plots); empty when not given."""

    values: np.ndarray
    steps: np.ndarray
    unit: str
    segments: tuple[np.ndarray, ...]
    dropped: Mapping[str, int] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    all_steps: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    all_values: np.ndarray = field(default_factory=lambda: np.empty(0))
    kept: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=bool))

    def frame(self, series: str, limit: int | None = None) -> pd.DataFrame:
        """The whole series as rows `series`, `step`, `step_time`, `kept` (for the report); a
        series longer than `limit` is thinned to every k-th step, evenly over the run."""
        stride = max(1, -(-len(self.all_values) // limit)) if limit else 1
        return pd.DataFrame(
            {
                "series": series,
                "step": self.all_steps[::stride].astype(np.int64),
                "step_time": self.all_values[::stride].astype(float),
                "kept": self.kept[::stride].astype(bool),
            }
        )


def _time_column(log: TrainLog) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Per-step time (s); throughput-only logs give time per token or per sample instead."""
    cols = log.columns
    for column, unit, invert in (
        ("step_time_s", "s", False),
        ("tokens_per_s", "s/token", True),
        ("samples_per_s", "s/sample", True),
    ):
        values = cols.get(column)
        if values is None:
            continue
        ok = np.isfinite(values)
        if not ok.any():
            continue
        t = 1.0 / values[ok] if invert else values[ok]
        steps = cols["step"][ok]
        segment = cols["segment"][ok].astype(np.int64) if "segment" in cols else np.zeros(len(t), np.int64)
        rank = cols.get("rank")
        if rank is not None and len(np.unique(rank[ok][np.isfinite(rank[ok])])) > 1:
            # Several ranks printing one step: the slowest rank is the step's time.
            data = pd.DataFrame({"segment": segment, "step": steps, "t": t})
            data = data.groupby(["segment", "step"], sort=False, as_index=False).agg(t=("t", "max"))
            segment, steps, t = data["segment"].to_numpy(), data["step"].to_numpy(), data["t"].to_numpy()
        return segment, steps, t, unit
    raise ValueError(f"{log.source}: the log has no step time or throughput column ({log.format})")


def step_times(log: TrainLog) -> pd.Series:
    """The log's raw per-step times (s, or s/token, s/sample for throughput-only logs), indexed
    by step: what a handover baseline stores at full size. Raises ValueError without timing."""
    _, steps, t, _ = _time_column(log)
    return pd.Series(t, index=steps, name="step_time")


def _steps_list(steps: np.ndarray, limit: int = 8) -> str:
    shown = ", ".join(str(int(s)) for s in steps[:limit])
    return shown + (f", ... ({len(steps)} in all)" if len(steps) > limit else "")


def steady_series(data: pd.Series | TrainLog, rules: _Rules, label: str) -> Steady:
    """Drop warm-up, after-restore, event and outlier steps; say what was dropped."""
    events: dict[int, str] = {}
    if isinstance(data, TrainLog):
        segment, steps, values, unit = _time_column(data)
        if rules.drop_event_steps:
            for event in data.events:
                if event.type in ("checkpoint_save", "eval") and event.step is not None:
                    events[event.step] = event.type
    else:
        unit = "s"
        values = data.to_numpy(dtype=float)
        steps = (
            data.index.to_numpy(dtype=np.int64)
            if pd.api.types.is_integer_dtype(data.index)
            else np.arange(1, len(values) + 1)
        )
        segment = np.zeros(len(values), dtype=np.int64)
        keep_finite = np.isfinite(values)
        values, steps, segment = values[keep_finite], steps[keep_finite], segment[keep_finite]

    keep = np.ones(len(values), dtype=bool)
    dropped: dict[str, int] = {}
    evidence: list[str] = []
    warm = np.zeros(len(values), dtype=bool)
    restore = np.zeros(len(values), dtype=bool)
    segments = np.unique(segment) if segment.any() else np.zeros(1, dtype=np.int64)
    for seg in segments:
        mask = segment == seg if len(segments) > 1 else np.ones(len(segment), dtype=bool)
        seg_steps = steps[mask]
        interval = int(np.median(np.diff(seg_steps))) if len(seg_steps) > 1 else 1
        interval = max(interval, 1)
        if seg == 0:
            span = max(rules.warmup_steps, rules.warmup_intervals * interval)
            warm[mask] = seg_steps < seg_steps.min() + span
        else:
            span = max(rules.after_restore_steps, rules.warmup_intervals * interval)
            restore[mask] = seg_steps < seg_steps.min() + span
    for name, mask, why in (
        ("warmup", warm, "warm-up"),
        ("after_restore", restore & ~warm, "first after a restore"),
    ):
        dropped[name] = int(mask.sum())
        if mask.any():
            evidence.append(f"{label}: dropped {mask.sum()} {why} steps ({_steps_list(steps[mask])})")
        keep &= ~mask
    if events:
        interval = int(np.median(np.diff(steps))) if len(steps) > 1 else 1
        marked = set(events) | {s + max(interval, 1) for s in events}
        wanted = np.fromiter(marked, dtype=np.int64)
        span = int(steps.max() - steps.min()) if len(steps) else 0
        at_event = np.isin(steps, wanted, kind="table" if span < 50_000_000 else None) & keep
        dropped["events"] = int(at_event.sum())
        if at_event.any():
            evidence.append(
                f"{label}: dropped {at_event.sum()} steps at checkpoint/eval events ({_steps_list(steps[at_event])})"
            )
        keep &= ~at_event
    else:
        dropped["events"] = 0
    if keep.any():
        median = float(np.median(values[keep]))
        slow = keep & (values > rules.outlier_factor * median)
        dropped["outliers"] = int(slow.sum())
        if slow.any():
            evidence.append(
                f"{label}: dropped {slow.sum()} outlier steps > {rules.outlier_factor:g}× median "
                f"({_steps_list(steps[slow])})"
            )
        keep &= ~slow
    else:
        dropped["outliers"] = 0
    kept_segments = tuple(values[keep & (segment == s)] for s in segments) if len(segments) > 1 else (values[keep],)
    return Steady(values[keep], steps[keep], unit, kept_segments, dropped, tuple(evidence), steps, values, keep)
