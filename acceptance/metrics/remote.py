"""`MetricsSource` over a real Prometheus: PromQL that sends back only what may matter, in chunks.

Range queries are cut into chunks of `chunk` (default 6 h: 1,440 evaluation times at a
15-second step, far below Prometheus' 11,000-point limit per series) and the node set into
groups of `nodes_per_query`, so a 24-hour window across 1024 GPUs stays within the server's
limits on points and samples per query.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from acceptance.metrics import promql
from acceptance.metrics.base import BITS, INCREASES, NONZERO, XID_CHANGES, Grid, QueryFailed, QueryStats
from acceptance.metrics.client import PrometheusClient
from acceptance.metrics.settings import PrometheusSettings

POINTS = ["time", "node", "gpu", "uuid", "value"]


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

    def presence(self, metric: str, nodes: Sequence[str], grid: Grid) -> pd.DataFrame:
        label = self.settings.node_label
        rows: list[tuple[Any, ...]] = []
        for group in self._groups(nodes):
            expr = promql.presence(self._sel(metric, group), label, grid.step_s)
            for series in self._range(expr, grid):
                node = (series.get("metric") or {}).get(label, "")
                rows.extend((_when(t), node, int(float(v))) for t, v in series.get("values") or ())
        return pd.DataFrame(rows, columns=["time", "node", "gpus"])

    def gpu_presence(self, metric: str, node: str, grid: Grid) -> pd.DataFrame:
        found = self._rows(self._range(promql.gpu_presence(self._sel(metric, [node]), grid.step_s), grid))
        seen = pd.DataFrame(found, columns=POINTS)
        times = grid.times()
        rows: list[tuple[Any, ...]] = []
        for (gpu, uuid), part in seen.groupby(["gpu", "uuid"], sort=True):
            have = set(part.loc[part["value"] > 0, "time"])
            rows.extend((t, node, gpu, uuid, t in have) for t in times)
        return pd.DataFrame(rows, columns=["time", "node", "gpu", "uuid", "present"])

    def points(self, how: str, metric: str, nodes: Sequence[str], grid: Grid, mask: int = 0) -> pd.DataFrame:
        rows: list[tuple[Any, ...]] = []
        for group in self._groups(nodes):
            sel = self._sel(metric, group)
            if how == XID_CHANGES:
                expr = promql.xid_changes(sel)
            elif how == INCREASES:
                expr = promql.increases(sel, grid.step_s)
            elif how == NONZERO:
                expr = promql.nonzero(sel)
            elif how == BITS:
                expr = promql.bits(sel, mask)
            else:
                raise QueryFailed(f"{how} {metric}", "unknown question")
            rows.extend(self._rows(self._range(expr, grid)))
        return pd.DataFrame(rows, columns=POINTS)

    def job_series(self, expression: str, grid: Grid) -> pd.Series:
        best: dict[pd.Timestamp, float] = {}
        for series in self._range(expression, grid):
            for stamp, value in series.get("values") or ():
                when = _when(stamp)
                best[when] = max(best.get(when, float("-inf")), float(value))
        return pd.Series(best, dtype=float).sort_index()
