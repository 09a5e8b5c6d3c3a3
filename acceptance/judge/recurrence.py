"""Criterion 5: no recurrence during the agreed probation window. One verdict from three families of signals.

Pure. PASS only when the whole window has elapsed and nothing recurred; PENDING while the
window is open and nothing has recurred so far; FAIL at the first recurrence, naming the
signal, node, GPU, time and value against its rule; INCONCLUSIVE when data is missing (a gap
longer than the agreed maximum, a family that could not be read at all): missing data is
never "no recurrence".
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from acceptance.clusters.base import (
    GPUS_NOT_ALLOCATABLE,
    NODE_NOT_READY,
    NODE_PROBLEM,
    NODE_READY_CHANGED,
    ClusterEvent,
)
from acceptance.judge.recurrence_hw import judge_hardware
from acceptance.judge.recurrence_job import judge_job
from acceptance.judge.recurrence_records import Finding, PartResult, stamp
from acceptance.judge.recurrence_rules import RecurrenceRules, Window, limits
from acceptance.judge.verdict import Figure, Status, Verdict
from acceptance.units import format_duration

SUBJECT = "probation"
DERIVED = (NODE_NOT_READY, NODE_READY_CHANGED, GPUS_NOT_ALLOCATABLE, NODE_PROBLEM)

__all__ = ["judge_cluster", "judge_hardware", "judge_job", "judge_probation"]


def judge_cluster(
    events: Sequence[ClusterEvent], nodes: Sequence[str], rules: RecurrenceRules, window: Window
) -> PartResult:
    """Node health from the backend: NotReady, GPUs no longer allocatable, node problems, warning events."""
    bad = set(DERIVED) | set(rules.node_event_reasons)
    findings, notes = [], []
    for event in events:
        if event.reason == "Coverage":
            notes.append(event.message)
            continue
        node = event.object.removeprefix("Node/")
        if event.reason not in bad or event.time is None:
            continue
        if not (window.start <= event.time <= window.until):
            continue
        findings.append(
            Finding(
                event.time,
                "node",
                f"{event.reason}: {event.message}",
                node,
                value=event.reason,
                rule="node Ready, every GPU allocatable, no problem condition",
            )
        )
    counts = {"node": f"{len(findings)} node events" if findings else "Ready throughout"}
    return PartResult(
        "cluster",
        tuple(sorted(findings, key=lambda f: f.time)),
        counts=counts,
        notes=tuple(notes),
        figures={"node_events": len(findings)},
    )


def _span(window: Window) -> str:
    return f"{format_duration(window.length_s)} ({stamp(window.start)}–{stamp(window.end)})"


def _checked(parts: Sequence[PartResult], rules: RecurrenceRules) -> str:
    hw = next((p for p in parts if p.family == "hardware"), None)
    job = next((p for p in parts if p.family == "job"), None)
    out = []
    if hw is not None and hw.unavailable is None:
        c = hw.counts
        out.append(f"{c.get('xid', '?')} XID")
        out.append(f"DBE {c.get('ecc_dbe', '?')}")
        remap = c.get("row_remap_failure", "?")
        out.append(f"row-remap failures {remap}, remapped rows {c.get('remapped_rows', '?')}")
        out.append(f"PCIe replays {c.get('pcie_replay', '?')}")
        out.append(f"NVLink errors {c.get('nvlink_crc_flit', '?')}")
        out.append(f"slowdown {c.get('slowdown', '?')}")
    cluster = next((p for p in parts if p.family == "cluster"), None)
    if cluster is not None and cluster.unavailable is None:
        out.append(cluster.counts.get("node", ""))
    if job is not None and job.unavailable is None:
        if "step_time" in job.counts:
            rule = f"+{rules.step_time_rise:.0%} for {format_duration(rules.step_time_sustained_s)}"
            out.append(f"step time {job.counts['step_time']} (rule {rule})")
        out.extend(job.counts[k] for k in ("hang", "watchdog") if k in job.counts)
    return ", ".join(x for x in out if x)


def judge_probation(
    parts: Sequence[PartResult], nodes: Sequence[str], rules: RecurrenceRules, window: Window
) -> Verdict:
    """The one verdict of criterion 5 from its families of signals."""
    where = ", ".join(nodes)
    findings = sorted((f for p in parts for f in p.findings), key=lambda f: f.time)
    failing = [f for f in findings if f.fails]
    gaps = [g for p in parts for g in p.gaps]
    long_gaps = sorted((g for g in gaps if g.longer_than(rules.max_gap_s)), key=lambda g: g.start)
    unavailable = [f"{p.family}: {p.unavailable}" for p in parts if p.unavailable]
    figures: dict[str, Figure] = {
        "window_start": stamp(window.start),
        "window_end": stamp(window.end),
        "window_s": window.length_s,
        "elapsed_s": round(window.elapsed_s),
        "remaining_s": round(window.remaining_s),
        "nodes": where,
        "simulated_window": window.simulated,
        **rules.describe(),
        **limits(rules),
    }
    for part in parts:
        figures.update({k: v for k, v in part.figures.items()})
    evidence = [f.line() for f in findings]
    evidence += [f"gap: {g.line()}" for g in sorted(gaps, key=lambda g: g.start)]
    evidence += [f"{c.title}: {c.state}" + (f" ({c.detail})" if c.detail else "") for p in parts for c in p.coverage]
    evidence += [n for p in parts for n in p.notes] + unavailable
    if window.simulated:
        evidence.append("SIMULATED: the window is simulated as already elapsed")
    table = _plot_table(parts)
    checked = _checked(parts, rules)
    if failing:
        first = failing[0]
        figures.update(
            {
                "signal": first.signal,
                "node": first.node,
                "gpu": first.gpu,
                "uuid": first.uuid,
                "time": stamp(first.time),
                "value": _figure(first.value),
                "rule": first.rule,
            }
        )
        more = f"; {len(failing) - 1} more" if len(failing) > 1 else ""
        summary = f"recurrence {first.line()}{more}"
        return Verdict(Status.FAIL, SUBJECT, summary, figures, tuple(evidence), table)
    if long_gaps or unavailable:
        why = [f"gap longer than {format_duration(rules.max_gap_s)}: {g.line()}" for g in long_gaps[:3]]
        summary = f"cannot tell whether anything recurred on {where}: " + "; ".join(why + unavailable)
        figures.update(
            {
                "gap_start": stamp(long_gaps[0].start),
                "gap_end": stamp(long_gaps[0].end),
                "gap_subject": long_gaps[0].subject,
            }
            if long_gaps
            else {}
        )
        return Verdict(Status.INCONCLUSIVE, SUBJECT, summary, figures, tuple(evidence), table)
    if window.open:
        summary = (
            f"window open on {where}: {format_duration(window.elapsed_s)} of {_span(window)} elapsed, "
            f"{format_duration(window.remaining_s)} to go; so far {checked}"
        )
        return Verdict(Status.PENDING, SUBJECT, summary, figures, tuple(evidence), table)
    sim = "; SIMULATED window, taken as elapsed" if window.simulated else ""
    summary = f"no recurrence on {where} over {_span(window)}: {checked}{sim}"
    return Verdict(Status.PASS, SUBJECT, summary, figures, tuple(evidence), table)


def _figure(value: float | str | None) -> Figure:
    return value


def _plot_table(parts: Sequence[PartResult]) -> pd.DataFrame | None:
    frames = [p.plot for p in parts if p.plot is not None and len(p.plot)]
    if not frames:
        return None
    table = pd.concat(frames, ignore_index=True)
    table = table.rename(columns={"signal": "probation_signal"})
    table.attrs["plot_only"] = True
    return table
