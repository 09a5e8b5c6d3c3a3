"""`MetricsSource` over a real Prometheus: PromQL that sends back only what may matter, in chunks.

Queries are cut into chunks of `chunk` (default 24 h: 5,760 evaluation times at a 15-second
step, within Prometheus' 11,000-point limit per series) and the node set into groups of
`nodes_per_query` (256 nodes: 2,048 GPUs, 11.8 M samples a day per metric, within the default
limit of 50 M samples a query), so a window of any length across any number of GPUs stays within
the server's limits. Each question is asked in two passes: an instant query per chunk finds the
series that may matter (each series read once), and only those are asked step by step.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from acceptance.errors import QueryFailed
from acceptance.metrics import promql
from acceptance.metrics.base import BITS, INCREASES, NONZERO, XID_CHANGES, Grid, QueryStats
from acceptance.metrics.client import PrometheusClient
from acceptance.metrics.settings import PrometheusSettings

POINTS = ["time", "node", "gpu", "uuid", "value"]
LOOKBACK_S = 300.0  # Prometheus' default lookback: an instant value may come from a sample this old


def _when(stamp: Any) -> pd.Timestamp:
    return pd.Timestamp(float(stamp), unit="s", tz="UTC")


class PrometheusSource:
    """The profile's Prometheus (or the simulator's, on loopback)."""

    def __init__(self, settings: PrometheusSettings, client: PrometheusClient | None = None, note: str = "") -> None:
        self.settings = settings
        self.stats = QueryStats()
        self.client = client or PrometheusClient(settings, self.stats)
        self.client.stats = self.stats
        self.note = note

    def describe(self) -> str:
        return self.client.describe() + (f"; {self.note}" if self.note else "")

    def close(self) -> None:
        self.client.close()

    def _groups(self, nodes: Sequence[str]) -> list[Sequence[str]]:
        size = max(1, self.settings.nodes_per_query)
        return [nodes[i : i + size] for i in range(0, len(nodes), size)]

    def _sel(self, metric: str, nodes: Sequence[str]) -> str:
        return promql.selector(metric, self.settings.node_label, nodes, self.settings.selector)

    def _range(self, expr: str, grid: Grid) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for first, last in grid.chunks(self.settings.chunk_s):
            out.extend(self.client.query_range(expr, first, last, grid.step_s))
        return out

    def _rows(self, result: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        label = self.settings.node_label
        rows = []
        for series in result:
            metric = series.get("metric") or {}
            node, gpu, uuid = metric.get(label, ""), metric.get("gpu", ""), metric.get("UUID", "")
            for stamp, value in series.get("values") or ():
                rows.append((_when(stamp), node, gpu, uuid, float(value)))
        return rows

    def census(self, metrics: Sequence[str], nodes: Sequence[str], start: datetime, end: datetime) -> pd.DataFrame:
        label = self.settings.node_label
        rows: list[tuple[str, str, str, str, bool]] = []
        span = min((end - start).total_seconds(), 3600.0)
        for group in self._groups(nodes):
            match = promql.names_selector(metrics, label, group, self.settings.selector)
            found = self.client.series(match, start, end)
            present = sorted({m["__name__"] for m in found})
            blank: set[tuple[str, str, str]] = set()
            for metric in present:
                for series in self.client.query(promql.blank(self._sel(metric, group), span), end):
                    labels = series.get("metric") or {}
                    blank.add((metric, labels.get(label, ""), labels.get("gpu", "")))
            for labels in found:
                key = (labels["__name__"], labels.get(label, ""), labels.get("gpu", ""))
                rows.append((*key, labels.get("UUID", ""), key in blank))
        frame = pd.DataFrame(rows, columns=["metric", "node", "gpu", "uuid", "blank"])
        return frame.drop_duplicates(["metric", "node", "gpu", "uuid"]).reset_index(drop=True)

    def _grid_of(self, grid: Grid, first: Any, last: Any) -> pd.DatetimeIndex:
        times = grid.times()
        return times[(times >= pd.Timestamp(first)) & (times <= pd.Timestamp(last))]

    def presence(self, metric: str, nodes: Sequence[str], grid: Grid) -> pd.DataFrame:
        """Per chunk, sample counts per series first; a node whose series missed no scrape reported every minute,
        and only the other nodes are asked minute by minute."""
        label = self.settings.node_label
        rows: list[tuple[Any, ...]] = []
        frames: list[pd.DataFrame] = []
        for group in self._groups(nodes):
            known = self.client.series(self._sel(metric, group), grid.start, grid.end)
            series_of: dict[str, int] = {}
            for labels in known:
                series_of[labels.get(label, "")] = series_of.get(labels.get(label, ""), 0) + 1
            for first, last in grid.chunks(self.settings.chunk_s):
                span = (last - first).total_seconds() + grid.step_s
                full = span / self.settings.scrape_interval_s - 1
                counts: dict[str, list[float]] = {}
                for series in self.client.query(promql.sample_counts(self._sel(metric, group), span), last):
                    node = (series.get("metric") or {}).get(label, "")
                    counts.setdefault(node, []).append(float((series.get("value") or (0, "0"))[1]))
                steady = [n for n, c in counts.items() if len(c) >= series_of.get(n, 0) and min(c) >= full]
                times = self._grid_of(grid, first, last)
                if steady:
                    frames.append(
                        pd.DataFrame(
                            {
                                "time": np.tile(times, len(steady)),
                                "node": np.repeat(steady, len(times)),
                                "gpus": np.repeat([len(counts[n]) for n in steady], len(times)),
                            }
                        )
                    )
                unsure = [n for n in group if n not in steady and n in counts]
                if not unsure:
                    continue
                expr = promql.presence(self._sel(metric, unsure), label, grid.step_s)
                for series in self.client.query_range(expr, first, last, grid.step_s):
                    node = (series.get("metric") or {}).get(label, "")
                    rows.extend((_when(t), node, int(float(v))) for t, v in series.get("values") or ())
        if rows:
            frames.append(pd.DataFrame(rows, columns=["time", "node", "gpus"]))
        if not frames:
            return pd.DataFrame(
                {
                    "time": pd.Series(dtype="datetime64[ns, UTC]"),
                    "node": pd.Series(dtype=str),
                    "gpus": pd.Series(dtype="int64"),
                }
            )
        out = pd.concat(frames, ignore_index=True)
        return out.astype({"gpus": "int64"})

    def gpu_presence(self, metric: str, node: str, grid: Grid) -> pd.DataFrame:
        found = self._rows(self._range(promql.gpu_presence(self._sel(metric, [node]), grid.step_s), grid))
        seen = pd.DataFrame(found, columns=POINTS)
        times = grid.times()
        rows: list[tuple[Any, ...]] = []
        for (gpu, uuid), part in seen.groupby(["gpu", "uuid"], sort=True):
            have = set(part.loc[part["value"] > 0, "time"])
            rows.extend((t, node, gpu, uuid, t in have) for t in times)
        return pd.DataFrame(rows, columns=["time", "node", "gpu", "uuid", "present"])

    def _expression(self, how: str, sel: str, step_s: float, mask: int) -> str:
        if how == XID_CHANGES:
            return promql.xid_changes(sel)
        if how == INCREASES:
            return promql.increases(sel, step_s)
        if how == NONZERO:
            return promql.nonzero(sel)
        if how == BITS:
            return promql.bits(sel, mask)
        raise QueryFailed(f"{how} {sel}", "unknown question")

    def points(self, how: str, metric: str, nodes: Sequence[str], grid: Grid, mask: int = 0) -> pd.DataFrame:
        """Per chunk, an instant query finds the series that may have a point; only they are asked step by step."""
        label = self.settings.node_label
        reach = LOOKBACK_S + (60.0 if how in (XID_CHANGES, INCREASES) else 0.0)
        rows: list[tuple[Any, ...]] = []
        for group in self._groups(nodes):
            for first, last in grid.chunks(self.settings.chunk_s):
                span = (last - first).total_seconds() + reach
                flagged: dict[str, set[str]] = {}
                for series in self.client.query(promql.suspects(how, self._sel(metric, group), span), last):
                    labels = series.get("metric") or {}
                    flagged.setdefault(labels.get(label, ""), set()).add(labels.get("gpu", ""))
                for node, gpus in sorted(flagged.items()):
                    gpu_match = f'gpu=~"{"|".join(promql.regex_literal(g) for g in sorted(gpus))}"'
                    extra = ",".join(x for x in (self.settings.selector.strip().strip(",{}"), gpu_match) if x)
                    sel = promql.selector(metric, label, [node], extra)
                    expr = self._expression(how, sel, grid.step_s, mask)
                    rows.extend(self._rows(self.client.query_range(expr, first, last, grid.step_s)))
        return pd.DataFrame(rows, columns=POINTS)

    def job_series(self, expression: str, grid: Grid) -> pd.Series:
        best: dict[pd.Timestamp, float] = {}
        for series in self._range(expression, grid):
            for stamp, value in series.get("values") or ():
                when = _when(stamp)
                best[when] = max(best.get(when, float("-inf")), float(value))
        return pd.Series(best, dtype=float).sort_index()
