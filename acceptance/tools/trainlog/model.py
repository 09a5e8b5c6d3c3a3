"""The parsed training log: per-step columns, events, per-rank timers.

Columns are accumulated in typed arrays (8 bytes a value), one per field that the log
actually carries (and the caller keeps), so memory grows with the kept columns only.
"""

from __future__ import annotations

import math
from array import array
from collections import OrderedDict
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

# Canonical per-step columns, in the order `frame()` shows them.
CANONICAL: tuple[str, ...] = (
    "step",
    "step_time_s",
    "loss",
    "lr",
    "consumed_samples",
    "consumed_tokens",
    "global_batch_size",
    "grad_norm",
    "loss_scale",
    "skipped",
    "nan",
    "tokens_per_s",
    "samples_per_s",
    "tflops",
    "epoch",
    "rank",
    "segment",
)
INT_COLUMNS = frozenset({"step", "segment"})
COUNT_COLUMNS = frozenset({"skipped"})
BOOL_COLUMNS = frozenset({"nan"})
NULLABLE_INT_COLUMNS = frozenset({"rank"})


_DEDUPE_WINDOW = 512


@dataclass(frozen=True)
class Event:
    """Something that happened at a step: a fresh start, a restore, a checkpoint save, a skipped or NaN step.

    For `resume`, `step` is the checkpoint step that was loaded (the first step run after
    it is `step + 1`); for `start`, the first step the log says it runs; None when the log does
    not say. `line` is the 1-based line number.
    """

    type: str
    step: int | None
    line: int
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "step": self.step, "line": self.line, "detail": self.detail}


@dataclass(frozen=True)
class RankTimer:
    """A min/max-across-ranks figure with the rank holding each extreme (Megatron --log-straggler)."""

    metric: str
    unit: str
    min_value: float
    min_rank: int
    max_value: float
    max_rank: int
    step: int | None
    line: int

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "unit": self.unit,
            "min": self.min_value,
            "min_rank": self.min_rank,
            "max": self.max_value,
            "max_rank": self.max_rank,
            "step": self.step,
            "line": self.line,
        }


@dataclass(frozen=True)
class LineError:
    """A line the reader could not take whole (a last line cut mid-line, a damaged record): dropped, and said so."""

    line: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "text": self.text}


@dataclass(frozen=True)
class TrainLog:
    """One parsed training log.

    `columns` maps a column name to a numpy array (all the same length); missing values
    are NaN. `nan` is 1 where the log itself reported a NaN/Inf loss or NaN iterations,
    never merely because a field was absent. `errors` are the lines dropped because they
    could not be read whole (the log is then `incomplete`).
    """

    format: str
    source: str
    columns: Mapping[str, np.ndarray] = field(repr=False)
    events: tuple[Event, ...] = ()
    timers: tuple[RankTimer, ...] = ()
    notes: tuple[str, ...] = ()
    errors: tuple[LineError, ...] = ()

    def __len__(self) -> int:
        return len(self.columns["step"]) if "step" in self.columns else 0

    def frame(self, rows: np.ndarray | None = None) -> pd.DataFrame:
        """The steps as a DataFrame (one row per logged step and rank), canonical columns first;
        `rows` (integer positions) selects some rows without copying the others."""
        data: dict[str, Any] = {}
        names = [c for c in CANONICAL if c in self.columns]
        names += sorted(c for c in self.columns if c not in CANONICAL)
        for name in names:
            col = self.columns[name] if rows is None else self.columns[name][rows]
            if name in INT_COLUMNS:
                data[name] = col.astype(np.int64, copy=False)
            elif name in BOOL_COLUMNS:
                data[name] = np.nan_to_num(col, nan=0.0) > 0
            elif name in COUNT_COLUMNS:
                data[name] = np.nan_to_num(col, nan=0.0).astype(np.int64)
            elif name in NULLABLE_INT_COLUMNS:
                data[name] = pd.Series(col).astype("Int64").array
            else:
                data[name] = col
        return pd.DataFrame(data)

    @property
    def steps(self) -> pd.DataFrame:
        return self.frame()

    def events_of(self, kind: str) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.type == kind)

    def status(self) -> str:
        """`failed` when the log reports a NaN/Inf step; `incomplete` when a line was dropped
        because it could not be read whole (a last line cut mid-line); else `ok`."""
        if self.events_of("nan"):
            return "failed"
        return "incomplete" if self.errors else "ok"

    def to_json(self) -> dict[str, Any]:
        """The stable document `acceptance parse trainlog` prints."""
        frame = self.frame()
        rows: list[dict[str, Any]] = []
        for record in frame.to_dict(orient="records"):
            rows.append({str(k): _json_scalar(v) for k, v in record.items()})
        return {
            "kind": "trainlog",
            "format": self.format,
            "source": self.source,
            "status": self.status(),
            "steps": rows,
            "events": [e.to_json() for e in self.events],
            "timers": [t.to_json() for t in self.timers],
            "notes": list(self.notes),
            "errors": [e.to_json() for e in self.errors],
        }


def _json_scalar(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer | int):
        return int(value)
    if isinstance(value, np.floating | float):
        f = float(value)
        return f if math.isfinite(f) else None
    return value


class StepTable:
    """Column-wise accumulator of step records (the only mutable object of a parse)."""

    def __init__(self, keep: Collection[str] | None = None) -> None:
        self._keep = None if keep is None else frozenset(keep) | {"step"}
        self._cols: dict[str, array[float]] = {}
        self._steps: array[int] = array("q")
        self._recent: OrderedDict[tuple[int, int], tuple[tuple[tuple[str, float], ...], set[int | None]]] = (
            OrderedDict()
        )
        self._segment = 0

    def __len__(self) -> int:
        return len(self._steps)

    @property
    def segment(self) -> int:
        """Index of the run segment: 0, then +1 at each restore."""
        return self._segment

    @segment.setter
    def segment(self, value: int) -> None:
        self._segment = value

    @property
    def last_step(self) -> int | None:
        return self._steps[-1] if self._steps else None

    def _column(self, name: str) -> array[float]:
        col = self._cols.get(name)
        if col is None:
            col = array("d", [math.nan]) * len(self._steps)
            self._cols[name] = col
        return col

    def add(self, step: int, fields: Mapping[str, float], rank: int | None = None) -> bool:
        """Append one step record; drop it when it repeats an identical record of this step
        (same segment, among the last few hundred steps) printed by another rank, or by ranks
        without prefixes, which cannot be told apart. An identical record printed again by
        the same known rank is a real repeat and is kept. Returns whether a row was added."""
        if not -(1 << 63) <= step < 1 << 63:
            raise OverflowError(f"step {step} is out of range")
        if self._keep is None:
            kept = tuple(fields.items())
        else:
            kept = tuple((k, v) for k, v in fields.items() if k in self._keep)
        key = (step, self.segment)
        seen = self._recent.get(key)
        if seen is not None and seen[0] == kept and (rank is None or rank not in seen[1]):
            seen[1].add(rank)
            return False
        self._recent[key] = (kept, {rank})
        if len(self._recent) > _DEDUPE_WINDOW:
            self._recent.popitem(last=False)
        n = len(self._steps)
        cols = self._cols
        for name, value in kept:
            col = cols.get(name)
            (col if col is not None else self._column(name)).append(value)
        filled = len(kept)
        if rank is not None and (self._keep is None or "rank" in self._keep):
            self._column("rank").append(float(rank))
            filled += 1
        if self._segment and (self._keep is None or "segment" in self._keep):
            self._column("segment").append(float(self._segment))
            filled += 1
        if filled != len(cols):
            for col in cols.values():
                if len(col) == n:
                    col.append(math.nan)
        self._steps.append(step)
        return True

    def extend(self, steps: np.ndarray, columns: Mapping[str, np.ndarray]) -> None:
        """Append many plain records at once (no dedupe: the caller checked steps increase)."""
        n, k = len(self._steps), len(steps)
        for name, values in columns.items():
            if self._keep is not None and name not in self._keep:
                continue
            col = self._column(name)
            col.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
        for col in self._cols.values():
            if len(col) == n:
                col.extend(array("d", [math.nan]) * k)
        if self._segment and "segment" in self._cols:
            self._cols["segment"][n:] = array("d", [float(self._segment)]) * k
        self._steps.frombytes(np.ascontiguousarray(steps, dtype=np.int64).tobytes())

    def merge_last(self, step: int, fields: Mapping[str, float]) -> bool:
        """Fill the last row's fields when it has the same step (sparse tables, split records)."""
        if not self._steps or self._steps[-1] != step:
            return False
        for name, value in fields.items():
            if self._keep is not None and name not in self._keep:
                continue
            self._column(name)[-1] = value
        return True

    def upsert(self, step: int, fields: Mapping[str, float], rank: int | None = None) -> None:
        if not self.merge_last(step, fields):
            self.add(step, fields, rank)

    def columns(self) -> dict[str, np.ndarray]:
        # Zero-copy views: the arrays are not appended to once the parse is over.
        out: dict[str, np.ndarray] = {"step": np.frombuffer(self._steps, dtype=np.int64)}
        for name, col in self._cols.items():
            out[name] = np.frombuffer(col, dtype=np.float64)
        if "segment" in out:
            out["segment"] = np.nan_to_num(out["segment"], nan=0.0)
        return out

    def iter_names(self) -> Iterator[str]:
        yield from self._cols
