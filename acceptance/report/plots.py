"""Plots of the HTML report, drawn with matplotlib's Agg canvas into PNG data URIs.

Each function takes verdict payloads (see `data.verdict_payload`) and finds its
data by table columns, so a judge opts into a plot by naming its columns:

- fabric: `size`, `busbw_now`, `busbw_baseline` (figures `margin`, a fraction, and
  `margin_direction`, read back as a `Margin`; `collective`)
- DCGM matrix: `node`, `gpu`, `test`, `status`
- step time and loss (criteria 3 and 4): see `plots_training`

A function returns None when there is nothing to draw; the page then says "not run".
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acceptance.margins import BELOW, MINUS, Direction, Margin
from acceptance.report.data import iter_tables

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FABRIC_COLUMNS = {"size", "busbw_now", "busbw_baseline"}
DIAGNOSTICS_COLUMNS = {"node", "gpu", "test", "status"}

NOW_COLOR = "#1f5fbf"
BASE_COLOR = "#7a7a7a"
BAD_COLOR = "#c0392b"


def png_uri(fig: Figure) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer)  # type: ignore[no-untyped-call]
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _numbers(rows: list[dict[str, Any]], *cols: str) -> list[tuple[float, ...]]:
    out = []
    for row in rows:
        values = [row.get(c) for c in cols]
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            out.append(tuple(float(v) for v in values))  # type: ignore[arg-type]
    return out


def margin_of(figures: Mapping[str, Any], default: Direction) -> Margin | None:
    """The margin the verdict was judged with (`default`: its quantity's direction, for data without one)."""
    return Margin.from_figures(figures, default)


def margin_sign(margin: Margin) -> str:
    """How a label shows the margin's side of the baseline: − below it, + above it."""
    return MINUS if margin.higher_is_better else "+"


def _size_label(size: float, _pos: object = None) -> str:
    for unit, factor in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= factor:
            return f"{size / factor:g}{unit}"
    return f"{size:g}"


@dataclass(frozen=True)
class BusbwSeries:
    """What one fabric verdict's plot draws: busbw per size today and at handover, and the margin's band
    (from the baseline to its limit, on the side the margin's direction says is worse) and the sizes past it."""

    title: str
    sizes: list[float]
    now: list[float]
    base: list[float]
    margin: Margin | None
    band: list[tuple[float, float]]  # (low, high) per size
    outside: list[tuple[float, float]]  # (size, busbw today) past the margin's limit


def busbw_series(verdicts: Iterable[Mapping[str, Any]]) -> list[BusbwSeries]:
    """The plot data of each fabric verdict with sizes to draw."""
    out = []
    for verdict, rows in iter_tables(verdicts, FABRIC_COLUMNS):
        points = sorted(_numbers(rows, "size", "busbw_now", "busbw_baseline"))
        points = [p for p in points if p[0] > 0]
        if not points:
            continue
        figures = verdict.get("figures") or {}
        margin = margin_of(figures, BELOW)
        band, outside = [], []
        if margin is not None:
            band = [(min(b, margin.limit(b)), max(b, margin.limit(b))) for _, _, b in points]
            outside = [(s, n) for s, n, b in points if not margin.within(n, b)]
        out.append(BusbwSeries(
            title=str(figures.get("collective") or verdict.get("subject") or "nccl-tests"),
            sizes=[p[0] for p in points], now=[p[1] for p in points], base=[p[2] for p in points],
            margin=margin, band=band, outside=outside,
        ))  # fmt: skip
    return out


def busbw_plots(verdicts: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(title, PNG data URI) per fabric verdict: busbw today vs the baseline band, log x."""
    from matplotlib.figure import Figure  # imported on use: a run that draws no plot need not load matplotlib

    plots = []
    for series in busbw_series(verdicts):
        sizes, margin = series.sizes, series.margin
        fig = Figure(figsize=(8, 4), dpi=100)
        ax = fig.add_subplot()
        if margin is not None:
            ax.fill_between(
                sizes,
                [low for low, _ in series.band],
                [high for _, high in series.band],
                color=BASE_COLOR,
                alpha=0.25,
                label=f"baseline {margin_sign(margin)} {margin.fraction:.0%} margin",
            )
        ax.plot(sizes, series.base, color=BASE_COLOR, linestyle="--", marker=".", label="baseline")
        ax.plot(sizes, series.now, color=NOW_COLOR, marker="o", markersize=3, label="today")
        if margin is not None and series.outside:
            side = "below" if margin.higher_is_better else "above"
            ax.scatter([s for s, _ in series.outside], [n for _, n in series.outside], color=BAD_COLOR, zorder=3,
                       label=f"{side} margin")  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(_size_label)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"{series.title}: busbw vs message size")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="upper left", fontsize="small")
        fig.tight_layout()
        plots.append((series.title, png_uri(fig)))
    return plots


def diagnostics_matrix(
    verdicts: Iterable[Mapping[str, Any]],
) -> tuple[list[str], list[tuple[str, str]], dict[tuple[str, str, str], str]]:
    """Tests (columns), (node, gpu) rows and status per (node, gpu, test), from DCGM verdicts."""
    tests: dict[str, None] = {}
    seen: dict[tuple[str, str], None] = {}  # dicts keep the first-seen order and look up in O(1) (1024 nodes)
    cells: dict[tuple[str, str, str], str] = {}
    for _verdict, table in iter_tables(verdicts, DIAGNOSTICS_COLUMNS):
        for row in table:
            node, gpu, test = str(row["node"]), str(row["gpu"]), str(row["test"])
            tests.setdefault(test)
            seen.setdefault((node, gpu))
            cells[(node, gpu, test)] = str(row["status"])
    rows = list(seen)
    rows.sort(key=lambda r: (r[0], not r[1].isdigit(), int(r[1]) if r[1].isdigit() else 0, r[1]))
    return list(tests), rows, cells
