"""Field 2 and 5: the step-time series and the window between the last healthy step and the first bad one.

- The job stopped (error lines, a torchrun failure or a launcher failure after the last logged step):
  the last healthy step is the last one logged, the first bad one the next; its time is the first
  error after the last step (the lost rank's CUDA error, or the watchdog's timestamp).
- The job ran on but slower: one change point in the step times (`changepoint.find_change`).
- No steps at all: the first error line dates the window.

Times are UTC (log times minus the log clock's offset from UTC).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from acceptance.incident.changepoint import find_change
from acceptance.incident.inputs import Parsed
from acceptance.incident.model import Evidence, NcclOutput, StepSeries, Window
from acceptance.incident.nccl import utc
from acceptance.units import format_duration

AROUND = 300  # steps kept on each side of the change for the CSV and the plot
FAILED_KINDS = frozenset({"watchdog-timeout", "nccl-error", "cuda-error", "watchdog-exception", "abort", "exception"})


@dataclass(frozen=True)
class Analysis:
    window: Window
    series: StepSeries
    ratio: float | None
    slow_for_s: float | None
    job_failed: bool


def step_frame(inputs: Sequence[Parsed], offset: timedelta) -> pd.DataFrame:
    """Every logged step of every input: step, rank (<NA> when the log has none), step_time_s, utc (NaT)."""
    frames = []
    for item in inputs:
        if item.steps is None:
            continue
        frame = item.steps.copy()
        if "rank" not in frame:
            frame["rank"] = pd.array([pd.NA] * len(frame), dtype="Int64")
        stamps = {(s.step, s.rank): s.time - offset for s in item.stamps}
        by_step = {s.step: s.time - offset for s in item.stamps}
        frame["utc"] = [
            stamps.get((int(step), None if pd.isna(rank) else int(rank)), by_step.get(int(step)))
            for step, rank in zip(frame["step"], frame["rank"], strict=True)
        ]
        frames.append(frame[["step", "rank", "step_time_s", "utc"]])
    if not frames:
        return pd.DataFrame({"step": [], "rank": [], "step_time_s": [], "utc": []})
    out = pd.concat(frames, ignore_index=True)
    out["utc"] = pd.to_datetime(out["utc"])
    return out.sort_values(["step", "rank"], na_position="first").reset_index(drop=True)


def _per_step(frame: pd.DataFrame) -> pd.DataFrame:
    grouped = frame.groupby("step", sort=True)
    return pd.DataFrame({"step_time_s": grouped["step_time_s"].median(), "utc": grouped["utc"].min()}).reset_index()


def _failures(inputs: Sequence[Parsed], nccl: NcclOutput, offset: timedelta) -> list[tuple[datetime | None, str]]:
    """(UTC time or None, what) of every sign that the job failed."""
    out: list[tuple[datetime | None, str]] = []
    for group in nccl.groups:
        if group.kind in FAILED_KINDS:
            out.append((group.first_utc, f"{group.kind}: {group.text[:100]}"))
    for item in inputs:
        out += [
            (utc(f.time, offset), f"torchrun: rank {f.rank} on {f.host} exit code {f.exitcode}")
            for f in item.torch.failures
        ]
        out += [
            (utc(e.time, offset), f"launcher: {e.text[:100]}")
            for e in item.launcher
            if e.kind in ("rank-exited", "node-failure", "task-failed", "launcher-exit", "daemons-failed")
        ]
    return out


def _after_last_step(inputs: Sequence[Parsed]) -> bool:
    """An error line below the last step line in the same file (for logs whose error lines carry no time)."""
    for item in inputs:
        if not item.stamps and item.steps is None:
            continue
        last = max((s.line for s in item.stamps), default=0)
        if any(e.line > last and e.kind in FAILED_KINDS for e in item.torch.errors) or any(
            f.line > last for f in item.torch.failures
        ):
            return True
    return False


def _checkpoints(
    inputs: Sequence[Parsed], per_step: pd.DataFrame, before: int | None
) -> tuple[int | None, datetime | None, int | None]:
    saves = sorted({s for item in inputs for s in item.saves})
    if before is not None:
        saves = [s for s in saves if s < before]
    if not saves:
        return None, None, None
    interval = int(np.median(np.diff(saves))) if len(saves) > 1 else None
    row = per_step[per_step["step"] == saves[-1]]
    when = _py(row["utc"].iloc[0]) if not row.empty else None
    return saves[-1], when, interval


def analyse(inputs: Sequence[Parsed], nccl: NcclOutput, offset: timedelta, around: datetime | None = None) -> Analysis:
    frame = step_frame(inputs, offset)
    if around is not None and frame["utc"].notna().any():
        near = frame["utc"].isna() | ((frame["utc"] - around).abs() <= pd.Timedelta(hours=6))
        frame = frame[near].reset_index(drop=True)
    per_step = _per_step(frame) if not frame.empty else frame
    failures = _failures(inputs, nccl, offset)
    timed = sorted(t for t, _ in failures if t is not None)
    window: Window
    ratio = slow_for = None
    failed = False
    rows = frame
    if not frame.empty:
        last = per_step.iloc[-1]
        last_step, last_utc = int(last["step"]), _py(last["utc"])
        later = [t for t in timed if last_utc is None or t >= last_utc - timedelta(seconds=1)]
        failed = bool(later) or (bool(failures) and _after_last_step(inputs))
        interval = int(np.median(np.diff(per_step["step"]))) if len(per_step) > 1 else 1
        if failed:
            first_bad_utc = later[0] if later else None
            gap = (
                f", {format_duration((first_bad_utc - last_utc).total_seconds())} later"
                if (first_bad_utc and last_utc)
                else ""
            )
            window = Window(
                "hang",
                last_step,
                last_utc,
                last_step + interval,
                first_bad_utc,
                f"no step after {last_step}; the first error{gap}",
                tuple(Evidence(what) for t, what in failures if t == first_bad_utc)[:3],
            )
            rows = frame[frame["step"] > last_step - 2 * AROUND]
        else:
            change = find_change(per_step["step_time_s"].to_numpy(dtype=float))
            if change is not None:
                before, after = per_step.iloc[change.index - 1], per_step.iloc[change.index]
                ratio = change.ratio
                end, start = _py(per_step["utc"].iloc[-1]), _py(after["utc"])
                slow_for = (end - start).total_seconds() if end is not None and start is not None else None
                window = Window(
                    "change-point",
                    int(before["step"]),
                    _py(before["utc"]),
                    int(after["step"]),
                    _py(after["utc"]),
                    f"step time x{ratio:.3f} from step {int(after['step'])} "
                    f"(median {change.median_before:.3f} s → {change.median_after:.3f} s)",
                )
                rows = frame[
                    (frame["step"] > int(after["step"]) - AROUND) & (frame["step"] < int(after["step"]) + AROUND)
                ]
            else:
                window = Window("none", last_step, last_utc, None, None, "no stop and no change in the step times")
                rows = frame[frame["step"] > last_step - 2 * AROUND]
    elif failures:
        failed = True
        window = Window(
            "errors-only",
            None,
            None,
            None,
            timed[0] if timed else None,
            "no training steps in the logs; the first error dates the window",
            tuple(Evidence(what) for t, what in failures[:3]),
        )
    else:
        window = Window("none", detail="no training steps and no error lines in the logs")
    before_step = window.first_bad_step
    ckpt_step, ckpt_utc, ckpt_interval = (
        _checkpoints(inputs, per_step, before_step) if not frame.empty else (None, None, None)
    )
    med_before = med_after = None
    if window.first_bad_step is not None and not per_step.empty:
        pre = per_step[per_step["step"] < window.first_bad_step]["step_time_s"]
        post = per_step[per_step["step"] >= window.first_bad_step]["step_time_s"]
        med_before = float(pre.median()) if len(pre) else None
        med_after = float(post.median()) if len(post) else None
    series = StepSeries(
        rows=tuple(_row(r) for r in rows.to_dict(orient="records")),
        per_rank=bool(frame["rank"].notna().any()) if not frame.empty else False,
        median_before_s=med_before,
        median_after_s=med_after,
        last_checkpoint_step=ckpt_step,
        last_checkpoint_utc=ckpt_utc,
        checkpoint_interval_steps=ckpt_interval,
    )
    return Analysis(window, series, ratio, slow_for, failed)


def _py(value: Any) -> datetime | None:
    """A pandas time (Timestamp, NaT, None) as a datetime or None."""
    if value is None or value is pd.NaT:
        return None
    stamp: Any = pd.Timestamp(value)
    return None if stamp is pd.NaT else stamp.to_pydatetime()


def _row(record: Mapping[Any, Any]) -> dict[str, Any]:
    rank = record["rank"]
    return {
        "step": int(record["step"]),
        "rank": None if rank is None or rank is pd.NA else int(rank),
        "step_time_s": float(record["step_time_s"]),
        "utc": _py(record["utc"]),
    }
