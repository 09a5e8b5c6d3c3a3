"""The DCGM heatmap as HTML: per test, a grid of nodes that stays readable from 16 to 1024 nodes.

Plain CSS grid, no script or canvas (the page's policy forbids both). Each row of a grid starts
with its first node's name; the cells of that row that did not pass are named at its end, each a
link to the node's DCGM output. Up to `LABELLED_MAX` nodes every cell also carries its node's
short name; above that a cell is a 10-pixel square (1024 nodes: 16 rows of 64 per test).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from acceptance.report.heatmap import STATUSES, Cell, Heatmap
from acceptance.report.markup import esc as _e

LABELLED_MAX = 128

CSS = """
.hm-legend{margin:.3em 0 .6em;font-size:.9em}.hm-legend span{margin-right:1.2em;white-space:nowrap}
.hm-legend i{display:inline-block;width:.9em;height:.9em;vertical-align:middle;margin-right:.3em}
.hm-test h3{margin:.8em 0 .2em;font-size:1em}.hm-test h3 small{font-weight:normal;color:#555}
.hm{display:grid;gap:1px;align-items:center;font-size:.8em;grid-template-columns:9em repeat(var(--cols),var(--w)) 1fr}
.hm>i,.hm>a,.hm>b{display:block;height:var(--h);background:#3c9a4f;color:#fff;text-align:center;overflow:hidden;
 line-height:var(--h);text-decoration:none;font-style:normal;font-weight:normal}
.hm>.fail,.hm>.error,.hm-legend .fail{background:#c0392b}.hm>.warn,.hm-legend .warn{background:#e69500}
.hm>.skip,.hm-legend .skip{background:#f0d264;color:#222}.hm>.missing,.hm-legend .missing{background:#8c8c8c}
.hm-legend .pass{background:#3c9a4f}
.hm>a,.hm>b{outline:2px solid #222;outline-offset:-1px;position:relative}
.hm-row{color:#555;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding-right:.4em}
.hm-note{padding-left:.6em}.hm-note a{color:#a00;margin-right:.8em;white-space:nowrap}
"""


def _short_names(nodes: Sequence[str]) -> dict[str, str]:
    """What a labelled cell shows: the node name without the prefix all nodes share (``03``)."""
    prefix = os.path.commonprefix(nodes)  # noqa: RUF071 (node names, not paths: character by character is meant)
    while prefix and prefix[-1].isalnum():  # keep whole name parts: sim-node-0|1 → sim-node-
        prefix = prefix[:-1]
    return {n: n[len(prefix) :] or n for n in nodes}


def _cell_html(cell: Cell, short: str | None) -> str:
    text = _e(short) if short is not None else ""
    if cell.passed:
        return f'<i title="{_e(cell.node)}">{text}</i>'
    title = f"{cell.node}: {cell.label}"
    if cell.link:
        return f'<a class="{_e(cell.status)}" href="{_e(cell.link)}" title="{_e(title)}">{text}</a>'
    return f'<b class="{_e(cell.status)}" title="{_e(title)}">{text}</b>'


def _note(cell: Cell) -> str:
    text = f"{cell.node} ({cell.label})"
    return f'<a href="{_e(cell.link)}">{_e(text)}</a>' if cell.link else f"<span>{_e(text)}</span>"


def legend() -> str:
    keys = "".join(f'<span><i class="{s}"></i>{s}</span>' for s in STATUSES)
    return (
        f'<div class="hm-legend">{keys}</div><p class="caption">One cell per node, nodes in name order, each row '
        "headed by its first node; a cell is the worst result of the node's GPUs; the cells of a row that did not "
        "pass are named at its end and link to the node's DCGM output.</p>"
    )


def render(heatmap: Heatmap) -> str:
    """Every test's grid; '' when there is nothing to draw."""
    if not heatmap.nodes or not heatmap.tests:
        return ""
    n = len(heatmap.nodes)
    labelled = n <= LABELLED_MAX
    cols = min(n, 16) if labelled else (32 if n <= 512 else 64)
    size = "--w:2.6em;--h:1.8em" if labelled else "--w:10px;--h:10px"
    shorts = _short_names(heatmap.nodes) if labelled else {}
    parts = [legend()]
    for test in heatmap.tests:
        column = heatmap.column(test)
        bad = sum(1 for c in column if not c.passed)
        rows = []
        for start in range(0, n, cols):
            chunk = column[start : start + cols]
            cells = "".join(_cell_html(c, shorts.get(c.node)) for c in chunk)
            pad = "<span></span>" * (cols - len(chunk))
            notes = "".join(_note(c) for c in chunk if not c.passed)
            rows.append(
                f'<span class="hm-row" title="{_e(chunk[0].node)}">{_e(chunk[0].node)}</span>{cells}{pad}'
                f'<span class="hm-note">{notes}</span>'
            )
        count = f"{bad} of {n} nodes did not pass" if bad else f"all {n} nodes passed"
        parts.append(
            f'<div class="hm-test"><h3>{_e(test)} <small>{count}</small></h3>'
            f'<div class="hm" style="--cols:{cols};{size}">{"".join(rows)}</div></div>'
        )
    return "".join(parts)
