"""The learning rate at every post-restore step against the pre-incident run's schedule.

The pre-incident log is the schedule's only witness (warm-up, cosine or linear decay, constant:
the log does not say which). Each post-restore step's learning rate is compared with:

* the pre-incident log's own value at that step, when the pre-incident run logged it (the run
  went past the checkpoint before the incident): equal within the relative tolerance;
* inside the pre-incident log's range but between two logged steps: between those two values
  (a schedule is monotone between close points), widened by the tolerance;
* past the pre-incident log's last step: between the last value held (the schedule flattens, as
  at the end of a warm-up), its straight-line continuation (the median of the pairwise slopes of
  the last `SLOPE_POINTS` values, robust to the printed values' rounding) and a parabola
  least-squares fitted to the last `CURVE_POINTS` values (the bend of a cosine), widened by the
  tolerance and by `SLACK` of the largest predicted change.

The first step outside is named with its value and the schedule's. An LR multiplied or reset at
any step falls far outside; a slow drift within the printed precision cannot be told from rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from acceptance.tools.trainlog import TrainLog

SLOPE_POINTS = 10
CURVE_POINTS = 50
SLACK = 0.25


@dataclass(frozen=True)
class Schedule:
    """The pre-incident learning rate per logged step (steps increasing, one value a step)."""

    steps: np.ndarray
    lr: np.ndarray

    @classmethod
    def empty(cls) -> Schedule:
        return cls(np.empty(0, dtype=np.int64), np.empty(0))

    @classmethod
    def of(cls, log: TrainLog, rows: np.ndarray) -> Schedule:
        """The finite learning rates of `log` at the rows where the boolean mask `rows` is set;
        a step logged twice (another rank, a replay after an earlier restore) keeps its last value."""
        if "lr" not in log.columns or not len(log):
            return cls.empty()
        steps, lr = log.columns["step"][rows], log.columns["lr"][rows]
        ok = np.isfinite(lr)
        steps, lr = steps[ok], lr[ok]
        if not len(steps):
            return cls.empty()
        order = np.argsort(steps, kind="stable")[::-1]  # last occurrence first, for np.unique
        unique, first = np.unique(steps[order], return_index=True)
        return cls(unique.astype(np.int64), lr[order][first].astype(float))

    def __len__(self) -> int:
        return len(self.steps)


@dataclass(frozen=True)
class Departure:
    """The first post-restore step off the schedule (`step` None when none), and a note when
    some steps could not be checked."""

    step: int | None = None
    text: str = ""
    note: str = ""


def _slope(steps: np.ndarray, lr: np.ndarray) -> float:
    x, y = steps[-SLOPE_POINTS:].astype(float), lr[-SLOPE_POINTS:]
    i, j = np.triu_indices(len(x), k=1)
    return float(np.median((y[j] - y[i]) / (x[j] - x[i]))) if len(i) else 0.0


def _continued(steps: np.ndarray, lr: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lowest and highest learning rate the schedule may take at the steps `at` past its end."""
    last_step, last = int(steps[-1]), float(lr[-1])
    h = (at - last_step).astype(float)
    line = last + _slope(steps, lr) * h
    preds = [np.full(len(at), last), line]
    x, y = steps[-CURVE_POINTS:].astype(float), lr[-CURVE_POINTS:]
    if len(x) >= 5:
        span = float(x[-1] - x[0]) or 1.0
        coef = np.polyfit((x - x[-1]) / span, y, 2)
        preds.append(np.polyval(coef, h / span))
    low, high = np.minimum.reduce(preds), np.maximum.reduce(preds)
    change = SLACK * np.maximum(np.abs(high - last), np.abs(low - last))
    return low - change, high + change


def lr_departure(schedule: Schedule, steps: np.ndarray, lr: np.ndarray, tol: float) -> Departure:
    """Check the post-restore learning rates `lr` at `steps` against `schedule` (see the module)."""
    if not len(schedule) or not len(steps):
        return Departure()
    s_steps, s_lr = schedule.steps, schedule.lr
    at = np.searchsorted(s_steps, steps)
    inside = at < len(s_steps)
    exact = np.zeros(len(steps), dtype=bool)
    exact[inside] = s_steps[at[inside]] == steps[inside]
    low = np.full(len(steps), np.nan)
    high = np.full(len(steps), np.nan)
    basis = np.full(len(steps), "", dtype=object)
    # logged by the pre-incident run at this very step
    low[exact] = high[exact] = s_lr[at[exact]]
    basis[exact] = "the pre-incident log's value at this step"
    # between two logged steps
    between = inside & ~exact & (at > 0)
    left, right = s_lr[at[between] - 1], s_lr[at[between]]
    low[between], high[between] = np.minimum(left, right), np.maximum(left, right)
    basis[between] = [f"between its values at steps {s_steps[a - 1]} and {s_steps[a]}" for a in at[between].tolist()]
    # past the last logged step: hold or continue the line
    past = ~inside
    note = ""
    if past.any():
        if len(s_steps) < 2:
            note = f"learning rate not checked past step {s_steps[-1]}: the pre-incident log has one value only"
        else:
            low[past], high[past] = _continued(s_steps, s_lr, steps[past])
            first = int(s_steps[max(0, len(s_steps) - CURVE_POINTS)])
            basis[past] = f"continued from its steps {first}..{s_steps[-1]}"
    # before the first logged step (a pre-incident log that starts late): not checked
    checked = np.isfinite(low)
    scale = np.maximum(np.abs(low), np.abs(high))
    scale = np.where(scale > 0, scale, float(np.max(np.abs(s_lr))) or 1.0)
    slack = tol * scale
    off = checked & ((lr < low - slack) | (lr > high + slack))
    if not off.any():
        return Departure(note=note)
    i = int(np.flatnonzero(off)[0])
    expected = f"{low[i]:.4g}" if low[i] == high[i] else f"{low[i]:.4g}..{high[i]:.4g}"
    reference = high[i] if lr[i] > high[i] else low[i]
    ratio = f", {lr[i] / reference:.3g}×" if reference else ""
    text = (
        f"learning rate {lr[i]:.4g} at step {steps[i]} after the restore, the pre-incident schedule gives "
        f"{expected} ({basis[i]}{ratio}; tolerance {tol:.2%})"
    )
    return Departure(int(steps[i]), text, note)
