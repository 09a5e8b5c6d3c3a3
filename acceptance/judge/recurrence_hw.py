"""Criterion 5, hardware: dcgm-exporter signals of the returned nodes, every GPU, over the window.

Pure: `HardwareSeries` in, `PartResult` out. Missing data is never "no recurrence": a node
without samples for longer than the agreed gap is a `Gap`; a field the exporter does not send
is "not collected"; a field that holds DCGM's blank sentinel is "not supported".
"""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from acceptance.judge.recurrence_plot import PLOT_POINTS, hardware_plot
from acceptance.judge.recurrence_records import Coverage, Finding, Gap, HardwareSeries, PartResult
from acceptance.judge.recurrence_rules import (
    BITS,
    HW_SIGNALS,
    INCREMENT,
    NONZERO,
    RATE,
    XID,
    HwSignal,
    RecurrenceRules,
    Window,
    bit_names,
)
from acceptance.tools.dcgm import XID_MEANINGS
from acceptance.units import format_duration

__all__ = ["PLOT_POINTS", "judge_hardware"]


def _ts(value: object) -> datetime:
    return pd.Timestamp(value).to_pydatetime()  # type: ignore[arg-type]


def bucket_ends(window: Window, bucket_s: float, rules: RecurrenceRules) -> pd.DatetimeIndex:
    """The bucket ends judged for coverage: the whole window, or up to now less the ingest delay."""
    last = window.until if not window.open else window.now - timedelta(seconds=rules.ingest_delay_s)
    count = int((last - window.start).total_seconds() // bucket_s)
    return pd.DatetimeIndex([window.start + timedelta(seconds=bucket_s * (k + 1)) for k in range(max(0, count))])


def _runs(missing: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of each run of True."""
    out: list[tuple[int, int]] = []
    start = None
    for i, flag in enumerate(missing):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            out.append((start, i - 1))
            start = None
    if start is not None:
        out.append((start, len(missing) - 1))
    return out


def node_gaps(data: HardwareSeries, ends: pd.DatetimeIndex) -> tuple[list[Gap], pd.DataFrame]:
    """Gaps per node, and the GPU count per node and bucket (0 where nothing came)."""
    counts = pd.DataFrame(0, index=ends, columns=list(data.nodes), dtype="int64")
    if len(data.presence):
        presence = data.presence.astype({"gpus": "int64"})
        table = presence.pivot_table(index="time", columns="node", values="gpus", aggfunc="max")
        table.index = pd.DatetimeIndex(table.index)
        counts = table.reindex(index=ends, columns=list(data.nodes)).fillna(0).astype("int64")
    step = timedelta(seconds=data.bucket_s)
    gaps = []
    for node in data.nodes:
        for first, last in _runs((counts[node] <= 0).to_numpy()):
            gaps.append(Gap(node, _ts(ends[first]) - step, _ts(ends[last]), slack_s=data.bucket_s))
    return gaps, counts


def _expected(data: HardwareSeries) -> dict[str, int]:
    seen = data.census.groupby("node")["gpu"].nunique().to_dict() if len(data.census) else {}
    return {n: max(data.gpus_per_node, int(seen.get(n, 0))) for n in data.nodes}


def vanished(data: HardwareSeries, counts: pd.DataFrame, rules: RecurrenceRules) -> list[Finding]:
    """A GPU whose series stop while its node keeps reporting (fell off the bus), for long enough."""
    out: list[Finding] = []
    expected = _expected(data)
    need = max(1, int(np.ceil(rules.vanished_s / data.bucket_s)))
    rule = f"every GPU reports; none silent for {format_duration(rules.vanished_s)} while its node reports"
    for node in data.nodes:
        short = ((counts[node] > 0) & (counts[node] < expected[node])).to_numpy()
        runs = [r for r in _runs(short) if r[1] - r[0] + 1 >= need]
        if not runs:
            continue
        first = _ts(counts.index[runs[0][0]]) - timedelta(seconds=data.bucket_s)
        gp = data.gpu_presence[data.gpu_presence["node"] == node] if len(data.gpu_presence) else data.gpu_presence
        named = _missing_gpus(gp, counts.index[runs[0][0] : runs[0][1] + 1])
        low = int(counts[node].iloc[runs[0][0]])
        if not named:
            what = f"only {low} of {expected[node]} GPUs reporting (a GPU fell off the bus?)"
            out.append(Finding(first, "vanished_gpu", what, node, None, None, low, rule))
            continue
        for gpu, uuid, when in named:
            what = f"GPU stopped reporting while its node kept reporting (fell off the bus?); {low} of {expected[node]}"
            out.append(Finding(when, "vanished_gpu", what, node, gpu, uuid or None, low, rule))
    return out


def _missing_gpus(gp: pd.DataFrame, span: pd.Index) -> list[tuple[str, str, datetime]]:
    if not len(gp):
        return []
    out = []
    inside = gp[gp["time"].isin(span)]
    for (gpu, uuid), rows in gp.groupby(["gpu", "uuid"], sort=True):
        absent = inside[(inside["gpu"] == gpu) & (~inside["present"].astype(bool))]
        never = rows[rows["present"].astype(bool)].empty
        if len(absent) or never:
            when = absent["time"].min() if len(absent) else span[0]
            out.append((str(gpu), str(uuid), _ts(when)))
    return out


def coverage_of(signal: HwSignal, data: HardwareSeries) -> tuple[Coverage, str | None]:
    """How `signal` was observed on the returned nodes, and the metric read for it."""
    rows = data.census[data.census["signal"] == signal.key] if len(data.census) else data.census
    if not len(rows):
        how = "" if signal.default_on else f"; off in dcgm-exporter's default counters: enable {signal.metric}"
        return Coverage(signal.key, signal.title, "not collected", f"no {'/'.join(signal.metrics)} series{how}"), None
    metric = str(rows["metric"].iloc[0])
    blank = rows["blank"].astype(bool)
    nodes = sorted(set(rows["node"]))
    missing = [n for n in data.nodes if n not in nodes]
    if blank.all():
        return Coverage(signal.key, signal.title, "not supported", f"{metric} holds DCGM's blank value"), metric
    detail = f"{metric} on {int((~blank).sum())} GPUs"
    if blank.any() or missing:
        extra = f"; not collected on {', '.join(missing)}" if missing else ""
        return Coverage(signal.key, signal.title, "partial", f"{detail}; {int(blank.sum())} blank{extra}"), metric
    return Coverage(signal.key, signal.title, "collected", detail), metric


def _rows(points: pd.DataFrame) -> list[tuple[datetime, str, str, str, float]]:
    ordered = points.sort_values(["time", "node", "gpu"], kind="stable")
    return [
        (_ts(t), str(n), str(g), str(u), float(v))
        for t, n, g, u, v in zip(
            ordered["time"], ordered["node"], ordered["gpu"], ordered["uuid"], ordered["value"], strict=True
        )
    ]


def _signal_findings(signal: HwSignal, points: pd.DataFrame, rules: RecurrenceRules, scrape_s: float) -> list[Finding]:
    rows = _rows(points) if len(points) else []
    out: list[Finding] = []
    if signal.kind == XID:
        last: dict[tuple[str, str], tuple[float, datetime]] = {}
        for t, node, gpu, uuid, code in rows:
            prev = last.get((node, gpu))
            last[(node, gpu)] = (code, t)
            if prev is not None and prev[0] == code and (t - prev[1]).total_seconds() <= 120:
                continue
            xid = int(code)
            listed = xid in rules.xid_codes
            meaning = XID_MEANINGS.get(xid, "not in NVIDIA's list of hardware XIDs")
            what = f"XID {xid} ({meaning})" + ("" if listed else ": not an agreed recurrence code")
            out.append(
                Finding(
                    t,
                    signal.key,
                    what,
                    node,
                    gpu,
                    uuid,
                    xid,
                    "XID in " + ",".join(map(str, rules.xid_codes)),
                    fails=listed,
                )
            )
    elif signal.kind in (INCREMENT, NONZERO):
        seen: set[tuple[str, str]] = set()
        for t, node, gpu, uuid, value in rows:
            if (node, gpu) in seen:
                continue
            seen.add((node, gpu))
            what = f"{signal.title} +{value:g}" if signal.kind == INCREMENT else f"{signal.title} = {value:g}"
            out.append(Finding(t, signal.key, what, node, gpu, uuid, value, "none in the window"))
    elif signal.kind == RATE:
        limit = rules.threshold(signal)
        seen = set()
        peak: dict[tuple[str, str], float] = {}
        for _t, node, gpu, _uuid, value in rows:
            peak[(node, gpu)] = max(peak.get((node, gpu), 0.0), value)
        for t, node, gpu, uuid, value in rows:
            if value > limit and (node, gpu) not in seen:
                seen.add((node, gpu))
                top = peak[(node, gpu)]
                what = f"{signal.title} up to {top:g}/min"
                out.append(Finding(t, signal.key, what, node, gpu, uuid, top, f"at most {limit:g}/min"))
    elif signal.kind == BITS:
        out.extend(_slowdowns(signal, rows, rules, scrape_s))
    return out


def _slowdowns(
    signal: HwSignal, rows: list[tuple[datetime, str, str, str, float]], rules: RecurrenceRules, scrape_s: float
) -> list[Finding]:
    out: list[Finding] = []
    runs: dict[tuple[str, str], list[tuple[datetime, datetime, str, int]]] = {}
    for t, node, gpu, uuid, value in rows:
        mask = int(value) & rules.slowdown_mask
        if not mask:
            continue
        spans = runs.setdefault((node, gpu), [])
        if spans and (t - spans[-1][1]).total_seconds() <= 2 * scrape_s:
            first, _, u, bits = spans[-1]
            spans[-1] = (first, t, u, bits | mask)
        else:
            spans.append((t, t, uuid, mask))
    rule = f"{'|'.join(rules.slowdown_reasons)} for less than {format_duration(rules.slowdown_s)}"
    for (node, gpu), spans in sorted(runs.items()):
        for first, last, uuid, bits in spans:
            took = (last - first).total_seconds() + scrape_s
            if took >= rules.slowdown_s:
                what = f"{' + '.join(bit_names(bits))} for {format_duration(took)}"
                out.append(Finding(first, signal.key, what, node, gpu, uuid, bits, rule))
                break
    return out


def _counts(signal: HwSignal, cov: Coverage, points: pd.DataFrame, rules: RecurrenceRules) -> str:
    if cov.state in ("not collected", "not supported"):
        return cov.state
    if not len(points):
        return "0/min max" if signal.kind == RATE else "0"
    values = points["value"].astype(float)
    if signal.kind == XID:
        return str(int(values.isin([float(c) for c in rules.xid_codes]).sum()))
    if signal.kind == RATE:
        return f"{values.max():g}/min max"
    if signal.kind == INCREMENT:
        return f"{values.sum():g}"
    if signal.kind == BITS:
        return f"{points.groupby(['node', 'gpu']).ngroups} GPUs with slowdown bits"
    return str(len(points.groupby(["node", "gpu"])))


def judge_hardware(data: HardwareSeries, rules: RecurrenceRules, window: Window) -> PartResult:
    """Every hardware signal of the returned nodes over the judged part of the window."""
    ends = bucket_ends(window, data.bucket_s, rules)
    gaps, counts = node_gaps(data, ends)
    findings = vanished(data, counts, rules)
    coverage, tallies = [], {}
    for signal in HW_SIGNALS:
        cov, _metric = coverage_of(signal, data)
        coverage.append(cov)
        points = data.points.get(signal.key)
        if points is None or not len(points):
            points = pd.DataFrame(columns=["time", "node", "gpu", "uuid", "value"])
        else:
            points = points[(points["time"] >= window.start) & (points["time"] <= window.until)]
        tallies[signal.key] = _counts(signal, cov, points, rules)
        findings.extend(_signal_findings(signal, points, rules, data.scrape_s))
    expected = sum(_expected(data).values())
    reporting = int(counts.sum(axis=1).min()) if len(counts) else 0
    figures: dict[str, float | int | str] = {
        "gpus_expected": expected,
        "gpus_reporting_min": reporting,
        "coverage_hw": round(float((counts > 0).to_numpy().mean()), 4) if len(counts) else 0.0,
    }
    figures.update({f"hw.{k}": v for k, v in tallies.items()})
    collected = {c.signal for c in coverage if c.state in ("collected", "partial")}
    plot = hardware_plot(data, counts, window, collected)
    notes = []
    if not len(data.presence) and not len(data.census):
        notes.append(
            f"no dcgm-exporter series at all for {', '.join(data.nodes)}: is the node label right? "
            "(prometheus.node_label; in some deployments dcgm-exporter's Hostname is its pod's name)"
        )
    ordered = tuple(sorted(findings, key=lambda f: f.time))
    return PartResult("hardware", ordered, tuple(gaps), tuple(coverage), tallies, figures, plot, tuple(notes))
