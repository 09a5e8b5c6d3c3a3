"""One cause, not five red rows: the headline that ties the failures one cause explains.

A *cause* is a hardware finding about one thing: a node's GPU that DCGM failed (criterion 1),
or a culprit the fabric localization confirmed (criterion 2: a node, its network, a switch
link); the same node found both ways is one cause. A cause explains the failures that follow
from it: the fabric items its localization covered, and, when it is the run's only cause, the
smoke step time (criterion 3) and a loss check that had no run to judge (criterion 4). A loss
jump is never put down to hardware. Pure: verdict payloads (`report.data.ReportData`) in, lines out:

    sim-node-05 GPU 2 thermal throttling (criterion 1) explains smoke step +11.3% (criterion 3)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from acceptance.report.data import ReportData
from acceptance.report.statuses import BAD_STATUSES

_FINDINGS = (
    ("THERMAL", "thermal throttling"),
    ("ROW_REMAP", "row remap failure"),
    ("DBE", "uncorrectable ECC error"),
    ("ECC", "ECC errors"),
    ("PCIE", "PCIe errors"),
    ("NVLINK", "NVLink errors"),
    ("POWER", "power violations"),
)


@dataclass
class Cause:
    key: str
    label: str
    criteria: set[int] = field(default_factory=set)
    effects: list[str] = field(default_factory=list)

    def line(self) -> str:
        where = " and ".join(str(c) for c in sorted(self.criteria))
        return f"{self.label} (criteri{'a' if len(self.criteria) > 1 else 'on'} {where}) explains " + ", ".join(
            self.effects
        )


def finding(text: str) -> str:
    """What DCGM found, in a few words (``XID 79``, ``thermal throttling``)."""
    xid = re.search(r"\bXID (\d+)", text, re.IGNORECASE)
    if xid:
        return f"XID {xid.group(1)}"
    upper = text.upper().replace(" ", "_")
    for key, words in _FINDINGS:
        if key in upper:
            return words
    return "failed DCGM diagnostics"


def _pct(ratio: float) -> str:
    x = (ratio - 1) * 100
    return f"{'+' if x >= 0 else '−'}{abs(x):.1f}%"


def _failed(verdicts: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [v for v in verdicts if str(v.get("status")) in BAD_STATUSES]


def _dcgm_causes(data: ReportData) -> dict[str, Cause]:
    out: dict[str, Cause] = {}
    for test in data.tests:
        if test.criterion[0] != 1:
            continue
        for v in _failed(test.verdicts):
            figures = v.get("figures") or {}
            node = str(figures.get("node") or v.get("subject") or "")
            gpu = figures.get("worst_gpu")
            what = finding(" ".join([str(v.get("summary", "")), *map(str, v.get("evidence") or ())]))
            label = f"{node} GPU {gpu} {what}" if isinstance(gpu, int) else f"{node} {what}"
            out.setdefault(node, Cause(node, label, {1}))
    return out


def _localized(data: ReportData) -> list[tuple[str, str]]:
    for test in data.tests:
        for v in test.verdicts:
            figures = v.get("figures") or {}
            if figures.get("localize_confirmed") is True and figures.get("culprit") not in (None, "", "none"):
                names = str(figures["culprit"]).split(",")
                kinds = str(figures.get("culprit_kind", "")).split(",")
                return list(zip(names, kinds + [""] * (len(names) - len(kinds)), strict=True))
    return []


def headline(data: ReportData) -> list[str]:
    """One line per cause that explains other failures (empty when none does)."""
    causes = _dcgm_causes(data)
    localized = _localized(data)
    for name, kind in localized:
        if name in causes:
            causes[name].criteria.add(2)
        else:
            label = {"switch": f"{name} (switch link)", "nic": f"{name} network (NIC or link)"}.get(kind, name)
            causes[name] = Cause(name, label, {2})
    by_criterion: dict[int, list[Mapping[str, Any]]] = {}
    for test in data.tests:
        if test.criterion[0] is not None:
            by_criterion.setdefault(test.criterion[0], []).extend(_failed(test.verdicts))
    fabric = by_criterion.get(2, [])
    if fabric and localized:
        ratios = [float(r) for v in fabric if isinstance(r := (v.get("figures") or {}).get("worst_ratio"), int | float)]
        what = f"nccl-tests busbw {_pct(min(ratios))}" if ratios else "nccl-tests failures"
        for name, _ in localized:
            causes[name].effects.append(f"{what} ({len(fabric)} item{'s' * (len(fabric) > 1)}, criterion 2)")
    if len(causes) == 1:
        (only,) = causes.values()
        for v in by_criterion.get(3, []):
            ratio = (v.get("figures") or {}).get("ratio")
            what = f"smoke step {_pct(float(ratio))}" if isinstance(ratio, int | float) else "smoke run failed"
            only.effects.append(what)
            only.effects[-1] += " (criterion 3)"
        for v in by_criterion.get(4, []):  # the job did not run: no figures; a judged loss jump is not hardware
            if str(v.get("status")) == "error" or not v.get("figures"):
                only.effects.append("loss continuity: no run to judge (criterion 4)")
    return [c.line() for c in causes.values() if c.effects]
