"""DCGM results of many nodes as a node × test heatmap: the cells, as data (`heatmap_html` draws them).

A cell is one node's result in one DCGM test: the worst status over its GPUs, which GPUs did not
pass, and the node's evidence file. A node whose diagnostic gave no table (it never ran, or its
output could not be read) still gets a cell in every test, ``missing``, so a 1024-node map never
hides the node that failed hardest. Pure: verdict payloads and the report's file list in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acceptance.report.data import ReportData
from acceptance.report.evidence_links import EvidenceIndex
from acceptance.report.plots import DIAGNOSTICS_COLUMNS, diagnostics_matrix
from acceptance.report.statuses import BAD_STATUSES

# Worst first: the cell shows the worst status of the node's GPUs.
SEVERITY = {"fail": 5, "error": 5, "missing": 4, "warn": 3, "skip": 2, "pass": 0}
STATUSES = ("pass", "fail", "warn", "skip", "missing")  # the legend's order (error is drawn as fail)


def severity(status: str) -> int:
    return SEVERITY.get(status, 4)


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """``node-2`` before ``node-10``."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name) if p)


@dataclass(frozen=True)
class Cell:
    node: str
    test: str
    status: str  # the worst over the node's GPUs
    not_passed: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (status, GPUs) for every status but pass
    gpus: int = 0
    link: str | None = None  # the node's DCGM evidence (its output) where the cell did not pass

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def label(self) -> str:
        """``fail: GPU 5`` or ``pass ×8``; what a failing cell says next to it."""
        if self.passed:
            return f"pass ×{self.gpus}"
        if not self.not_passed:
            return f"{self.status}: no result"
        return "; ".join(f"{status}: GPU {', '.join(gpus)}" for status, gpus in self.not_passed)


@dataclass(frozen=True)
class Heatmap:
    tests: tuple[str, ...]
    nodes: tuple[str, ...]  # natural order
    cells: Mapping[tuple[str, str], Cell]  # (node, test) → cell; every pair is present

    def column(self, test: str) -> list[Cell]:
        return [self.cells[(node, test)] for node in self.nodes]

    def not_passed(self, test: str) -> list[Cell]:
        return [c for c in self.column(test) if not c.passed]


def _cell(node: str, test: str, statuses: Mapping[str, str], link: str | None) -> Cell:
    by_status: dict[str, list[str]] = {}
    for gpu in sorted(statuses, key=natural_key):
        by_status.setdefault(statuses[gpu], []).append(gpu)
    if not by_status:
        return Cell(node, test, "missing", link=link)
    worst = max(by_status, key=severity)
    bad = tuple(
        (status, tuple(gpus)) for status, gpus in sorted(by_status.items(), key=lambda kv: -severity(kv[0]))
        if status != "pass"
    )  # fmt: skip
    return Cell(node, test, worst, bad, len(statuses), link if worst != "pass" else None)


def build(verdicts: Iterable[Mapping[str, Any]], files: Sequence[str] | EvidenceIndex = ()) -> Heatmap:
    """The heatmap of DCGM verdict payloads (tables with node, gpu, test, status); `files`: the report's."""
    verdicts = list(verdicts)
    index = files if isinstance(files, EvidenceIndex) else EvidenceIndex(files)
    tests, rows, status = diagnostics_matrix(verdicts)
    gpus_of: dict[str, list[str]] = {}
    for node, gpu in rows:
        gpus_of.setdefault(node, []).append(gpu)
    links = _links(verdicts, index)
    for verdict in verdicts:  # a failed node without a table: a missing cell in every test
        figures = verdict.get("figures") or {}
        node = str(figures.get("node") or "")
        if node and node not in gpus_of and str(verdict.get("status")) in BAD_STATUSES:
            gpus_of[node] = []
            links[node] = next(iter(index.of(1, verdict)), None)
    nodes = tuple(sorted(gpus_of, key=natural_key))
    cells = {
        (node, test): _cell(
            node,
            test,
            {gpu: status.get((node, gpu, test), "missing") for gpu in gpus_of[node]},
            links[node],
        )
        for node in nodes
        for test in tests
    }
    return Heatmap(tuple(tests), nodes, cells)


def _links(verdicts: Iterable[Mapping[str, Any]], index: EvidenceIndex) -> dict[str, str | None]:
    """Each node's DCGM output: the evidence of the first verdict with a table of the node's rows.

    That verdict is the node's own (`judge.diagnostics.judge_node` names the node as subject and in
    every row), so its evidence is the node's.
    """
    links: dict[str, str | None] = {}
    for verdict in verdicts:
        table = verdict.get("table") or {}
        columns = list(table.get("columns", []))
        if set(columns) >= DIAGNOSTICS_COLUMNS:  # the tables `diagnostics_matrix` reads (`iter_tables`)
            at = columns.index("node")  # their node column alone: no row dicts a second time (8192 rows at 1024 nodes)
            for node in {str(row[at]) for row in table.get("rows", [])} - links.keys():
                links[node] = next(iter(index.of(1, verdict)), None)
    return links


def of_report(data: ReportData, files: Sequence[str] | EvidenceIndex = ()) -> Heatmap:
    """The heatmap of criterion 1's verdicts in a report."""
    return build((v for t in data.tests if t.criterion[0] == 1 for v in t.verdicts), files)
