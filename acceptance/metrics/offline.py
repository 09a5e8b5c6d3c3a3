"""`MetricsSource` over a folder of Prometheus / OpenMetrics text dumps, for air-gapped sites.

Each file is one scrape or a whole series dump (the simulator writes OpenMetrics with
timestamps). A sample without a timestamp takes its file's time: a UTC stamp in the file name
(``20261201T030000Z``, or Unix seconds), else the file's modification time; the description
says which. Questions are answered with Prometheus 2.x's semantics (an instant value is the
last sample within 5 minutes; ranges include both ends), so both sources give the same answers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from acceptance.errors import ParseError, QueryFailed, UsageError
from acceptance.metrics.base import BITS, INCREASES, NONZERO, XID_CHANGES, Grid, QueryStats
from acceptance.tools import prometheus
from acceptance.tools.prometheus import FP64_BLANK

LOOKBACK_MS = 300_000
SUFFIXES = (".prom", ".txt", ".om", ".openmetrics", ".metrics")
_STAMP = re.compile(r"(\d{8}T\d{6}Z)|(?<!\d)(\d{10})(?:\.\d+)?(?!\d)")
_SELECTOR = re.compile(r"^\s*(?:max\s*\(\s*)?([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*\)?\s*$")
POINTS = ["time", "node", "gpu", "uuid", "value"]


@dataclass(frozen=True)
class _Series:
    metric: str
    labels: dict[str, str]
    times: np.ndarray  # int64 ms, sorted
    values: np.ndarray


def file_time(path: Path) -> tuple[int, str]:
    """(ms since the epoch, how it was found) for a dump's samples without timestamps."""
    match = _STAMP.search(path.name)
    if match and match.group(1):
        when = datetime.strptime(match.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        return int(when.timestamp() * 1000), "file name"
    if match and match.group(2):
        return int(match.group(2)) * 1000, "file name"
    return int(path.stat().st_mtime * 1000), "modification time"


class OfflineSource:
    """The dumps of a folder, read once."""

    def __init__(self, folder: Path, node_label: str = "Hostname", note: str = "") -> None:
        if not folder.is_dir():
            raise UsageError(f"offline metrics folder {folder} does not exist")
        self.folder = folder
        self.node_label = node_label
        self.note = note
        self.stats = QueryStats()
        files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
        if not files:
            raise UsageError(f"offline metrics folder {folder} has no dump ({', '.join(SUFFIXES)})")
        self.files = files
        self.undated = 0
        self.series = self._load(files)

    def _load(self, files: list[Path]) -> list[_Series]:
        raw: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[list[int], list[float]]] = {}
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            self.stats.bytes += len(text)
            parsed = prometheus.parse(text, str(path))
            default: int | None = None
            for sample in parsed.samples:
                stamp = sample.timestamp_ms
                if stamp is None:
                    if default is None:
                        default, _how = file_time(path)
                        self.undated += 1
                    stamp = default
                times, values = raw.setdefault((sample.name, tuple(sorted(sample.labels))), ([], []))
                times.append(stamp)
                values.append(sample.value)
        out = []
        for (name, labels), (times, values) in raw.items():
            order = np.argsort(np.asarray(times, dtype=np.int64), kind="stable")
            out.append(
                _Series(
                    name, dict(labels), np.asarray(times, dtype=np.int64)[order], np.asarray(values, dtype=float)[order]
                )
            )
        self.stats.points = sum(len(s.times) for s in out)
        return out

    def describe(self) -> str:
        how = f"; {self.undated} files without timestamps dated by name or modification time" if self.undated else ""
        return f"offline dumps in {self.folder} ({len(self.files)} files{how})" + (
            f"; {self.note}" if self.note else ""
        )

    def close(self) -> None:
        return None

    def _of(self, metric: str, nodes: Sequence[str]) -> list[_Series]:
        wanted = set(nodes)
        return [s for s in self.series if s.metric == metric and s.labels.get(self.node_label) in wanted]

    @staticmethod
    def _at(series: _Series, at_ms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(value, present) of the series at each time (the last sample within the lookback)."""
        idx = np.searchsorted(series.times, at_ms, side="right") - 1
        ok = idx >= 0
        safe = np.where(ok, idx, 0)
        ok &= series.times[safe] >= at_ms - LOOKBACK_MS
        return series.values[safe], ok

    @staticmethod
    def _ms(grid: Grid) -> tuple[pd.DatetimeIndex, np.ndarray]:
        times = grid.times()
        return times, times.as_unit("ms").asi8.astype(np.int64)

    def _key(self, series: _Series) -> tuple[str, str, str]:
        return series.labels.get(self.node_label, ""), series.labels.get("gpu", ""), series.labels.get("UUID", "")

    def census(self, metrics: Sequence[str], nodes: Sequence[str], start: datetime, end: datetime) -> pd.DataFrame:
        lo, hi = int(start.timestamp() * 1000), int(end.timestamp() * 1000)
        span = int(min(end.timestamp() * 1000 - lo, 3_600_000))
        rows = []
        for metric in metrics:
            for series in self._of(metric, nodes):
                inside = (series.times >= lo) & (series.times <= hi)
                if not inside.any():
                    continue
                recent = series.values[(series.times >= hi - span) & (series.times <= hi)]
                blank = bool(len(recent)) and bool(recent[-1] >= FP64_BLANK)
                rows.append((metric, *self._key(series), blank))
        return pd.DataFrame(rows, columns=["metric", "node", "gpu", "uuid", "blank"])

    def presence(self, metric: str, nodes: Sequence[str], grid: Grid) -> pd.DataFrame:
        times, at = self._ms(grid)
        step = int(grid.step_s * 1000)
        counts: dict[str, np.ndarray] = {}
        for series in self._of(metric, nodes):
            n = np.searchsorted(series.times, at, side="right") - np.searchsorted(series.times, at - step, side="left")
            node = self._key(series)[0]
            counts[node] = counts.get(node, np.zeros(len(at), dtype=np.int64)) + (n > 0)
        rows = [
            (t, node, int(c))
            for node, values in sorted(counts.items())
            for t, c in zip(times, values, strict=True)
            if c > 0
        ]
        return pd.DataFrame(rows, columns=["time", "node", "gpus"])

    def gpu_presence(self, metric: str, node: str, grid: Grid) -> pd.DataFrame:
        times, at = self._ms(grid)
        step = int(grid.step_s * 1000)
        rows: list[tuple[object, ...]] = []
        for series in sorted(self._of(metric, [node]), key=self._key):
            n = np.searchsorted(series.times, at, side="right") - np.searchsorted(series.times, at - step, side="left")
            _, gpu, uuid = self._key(series)
            rows.extend((t, node, gpu, uuid, bool(c > 0)) for t, c in zip(times, n, strict=True))
        return pd.DataFrame(rows, columns=["time", "node", "gpu", "uuid", "present"])

    def points(self, how: str, metric: str, nodes: Sequence[str], grid: Grid, mask: int = 0) -> pd.DataFrame:
        times, at = self._ms(grid)
        back = at - int((60 if how == XID_CHANGES else grid.step_s) * 1000)
        frames = []
        for series in self._of(metric, nodes):
            value, ok = self._at(series, at)
            ok &= value < FP64_BLANK
            if how == XID_CHANGES:
                before, had = self._at(series, back)
                pick = ok & (value > 0) & ~(had & (before == value))
                shown = value
            elif how == INCREASES:
                before, had = self._at(series, back)
                shown = value - before
                pick = ok & had & (before < FP64_BLANK) & (shown > 0)
            elif how == NONZERO:
                pick, shown = ok & (value > 0), value
            elif how == BITS:
                whole = np.where(ok, value, 0).astype(np.int64)
                pick, shown = ok & ((whole & mask) != 0), value
            else:
                raise QueryFailed(f"{how} {metric}", "unknown question for the offline source")
            if pick.any():
                node, gpu, uuid = self._key(series)
                frames.append(
                    pd.DataFrame(
                        {
                            "time": times[pick],
                            "node": node,
                            "gpu": gpu,
                            "uuid": uuid,
                            "value": shown[pick].astype(float),
                        }
                    )
                )
        if not frames:
            return pd.DataFrame(columns=POINTS)
        return pd.concat(frames, ignore_index=True)[POINTS]

    def job_series(self, expression: str, grid: Grid) -> pd.Series:
        match = _SELECTOR.match(expression)
        if match is None:
            raise QueryFailed(
                expression,
                "the offline source reads a plain selector such as "
                'name{label="value"} (or max(...) of one), not a PromQL expression',
            )
        name, text = match.group(1), match.group(2)
        try:
            wanted = dict(prometheus.parse_labels(text, expression, 0)) if text else {}
        except ParseError as exc:
            raise QueryFailed(expression, str(exc)) from None
        times, at = self._ms(grid)
        best = np.full(len(at), -np.inf)
        for series in self.series:
            if series.metric == name and all(series.labels.get(k) == v for k, v in wanted.items()):
                value, ok = self._at(series, at)
                best = np.where(ok, np.maximum(best, value), best)
        keep = np.isfinite(best)
        return pd.Series(best[keep], index=times[keep], dtype=float)
