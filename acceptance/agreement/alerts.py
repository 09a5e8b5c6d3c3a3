"""The provider's Prometheus alerting rules, from the agreement's own definitions.

Each side alerts on its own signals, the provider without waiting for a ticket. The rules are made
from the objects criterion 5 and the severity levels judge with, never restated: criterion 5's
`RecurrenceRules` (the XID codes, the per-minute limits, the slowdown reasons and time, the vanished
time, the step-time rise, its smoothing and the time it must last, the hang time), its signals
(`HW_SIGNALS`, `PRESENCE_METRIC`) and its PromQL builders (`acceptance.metrics.promql`), and the
profile's severity levels with their respond clocks in the agreed coverage hours.

Which level a rule names: a hardware signal of a node takes that node out of the job (``node_out``),
the sustained step-time rise is the definition of ``degraded``, a hang stops the job (``down``).

    text = alert_rules(AlertInputs(...))   # Prometheus rule-file YAML

Pure: text out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from acceptance.agreement.coverage import Coverage
from acceptance.incident.severity import SeverityPolicy
from acceptance.judge.recurrence_rules import (
    BITS,
    HW_SIGNALS,
    INCREMENT,
    NONZERO,
    PRESENCE_METRIC,
    RATE,
    XID,
    HwSignal,
    RecurrenceRules,
)
from acceptance.metrics import promql
from acceptance.units import format_duration

HARDWARE_LEVEL = "node_out"
STEP_TIME_LEVEL = "degraded"
HANG_LEVEL = "down"
EPS = 1e-9  # criterion 5 compares the smoothed ratio with the rise less this much (float rounding)
# How long a GPU that stopped reporting stays an alert (its series must have existed this recently).
VANISHED_LOOKBACK_S = 3600.0
TO_AGREE = "to agree"


@dataclass(frozen=True)
class AlertInputs:
    cluster: str
    rules: RecurrenceRules
    policy: SeverityPolicy
    nodes: tuple[str, ...]
    node_label: str = "Hostname"
    selector: str = ""  # extra matchers of dcgm-exporter's series, e.g. job="dcgm-exporter"
    step_time: str | None = None  # the job's step-time expression (PromQL), recurrence.job.step_time
    progress: str | None = None  # the job's step counter, recurrence.job.progress
    baseline_step_s: float | None = None  # the median of the baseline's smoke sample
    interval_s: float = 15.0  # the rule group's evaluation interval (the scrape interval)
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class AlertRule:
    name: str
    expr: str
    for_s: float
    level: str
    signal: str
    summary: str
    rule: str


def _seconds(value: float) -> str:
    return f"{round(value)}s"


def _respond(policy: SeverityPolicy, level: str) -> tuple[str, str]:
    """(respond clock, the words that carry it) of `level`."""
    found = policy.levels.get(level)
    calendar = policy.coverage.describe()
    if found is None or found.respond_s is None:
        return TO_AGREE, f"respond clock of level {level}: {TO_AGREE} (the profile states none)"
    where = "" if policy.coverage == Coverage() else f" in coverage hours {calendar}"
    return format_duration(found.respond_s), f"respond within {format_duration(found.respond_s)}{where}"


def _hardware(signal: HwSignal, a: AlertInputs) -> AlertRule:
    sel = promql.selector(signal.metric, a.node_label, a.nodes, a.selector)
    r = a.rules
    title = signal.title
    if signal.kind == XID:
        listed = " or ".join(f"{sel} == {code}" for code in r.xid_codes)
        expr = f"({promql.xid_changes(sel)}) and ({listed})"
        rule = "a new XID in " + ",".join(map(str, r.xid_codes))
        return AlertRule("GpuXidRecurrence", expr, 0, HARDWARE_LEVEL, signal.key, f"{title}: a listed XID", rule)
    name = "Gpu" + "".join(part.capitalize() for part in signal.key.split("_"))
    if signal.kind == INCREMENT:
        return AlertRule(
            name, promql.increases(sel), 0, HARDWARE_LEVEL, signal.key, f"{title} increased", "no increase"
        )
    if signal.kind == NONZERO:
        return AlertRule(name, promql.nonzero(sel), 0, HARDWARE_LEVEL, signal.key, f"{title} set", "0 (never set)")
    if signal.kind == RATE:
        limit = r.threshold(signal)
        expr = f"({promql.increases(sel)}) > {limit:g}"
        rule = f"at most {limit:g}/min"
        return AlertRule(name, expr, 0, HARDWARE_LEVEL, signal.key, f"{title} above {limit:g}/min", rule)
    if signal.kind == BITS:
        expr = promql.bits(sel, r.slowdown_mask)
        rule = f"{'|'.join(r.slowdown_reasons)} for less than {format_duration(r.slowdown_s)}"
        summary = f"{title} for {format_duration(r.slowdown_s)}"
        # criterion 5 counts each sample as one scrape interval long: a run of samples spanning the agreed
        # time less one interval is a slowdown of the agreed time
        lasting = max(0.0, r.slowdown_s - a.interval_s)
        return AlertRule(name, expr, lasting, HARDWARE_LEVEL, signal.key, summary, rule)
    raise ValueError(f"no alert rule for signal kind {signal.kind!r}")


def _vanished(a: AlertInputs) -> AlertRule:
    sel = promql.selector(PRESENCE_METRIC, a.node_label, a.nodes, a.selector)
    seen, silent = _seconds(VANISHED_LOOKBACK_S), _seconds(a.rules.vanished_s)
    gone = f"present_over_time({sel}[{seen}]) unless present_over_time({sel}[{silent}])"
    node_reports = f"present_over_time({sel}[{_seconds(2 * a.interval_s)}])"
    expr = f"({gone}) and on({a.node_label}) ({node_reports})"
    rule = f"every GPU reports; none silent for {format_duration(a.rules.vanished_s)} while its node reports"
    summary = "GPU stopped reporting while its node kept reporting (fell off the bus?)"
    return AlertRule("GpuVanished", expr, 0, HARDWARE_LEVEL, "vanished_gpu", summary, rule)


def _step_time(a: AlertInputs) -> AlertRule | None:
    if not a.step_time or a.baseline_step_s is None:
        return None
    r = a.rules
    # criterion 5 smooths with a rolling median over (t - smoothing, t]; a range 1 ms short of it holds the
    # same samples whether the range is closed (Prometheus 2) or left-open (Prometheus 3)
    span = f"{round(r.step_time_smoothing_s * 1000) - 1}ms:{_seconds(a.interval_s)}"
    smooth = f"quantile_over_time(0.5, ({a.step_time})[{span}])"
    expr = f"{smooth} / {a.baseline_step_s!r} >= {1 + r.step_time_rise - EPS:.12g}"
    rule = f"+{r.step_time_rise:.0%} median for {format_duration(r.step_time_sustained_s)}"
    summary = (
        f"step time median +{r.step_time_rise:.0%} or more over the baseline {a.baseline_step_s:.4g} s "
        f"for {format_duration(r.step_time_sustained_s)}: degraded"
    )
    return AlertRule("JobStepTimeDegraded", expr, r.step_time_sustained_s, STEP_TIME_LEVEL, "step_time", summary, rule)


def _hang(a: AlertInputs) -> AlertRule | None:
    if not a.progress:
        return None
    r = a.rules
    # the counter unchanged at every point from the hang time ago to now; 1 ms more than the hang time keeps
    # the point at its start whether the range is closed (Prometheus 2) or left-open (Prometheus 3)
    span = f"{round(r.hang_s * 1000) + 1}ms:{_seconds(a.interval_s)}"
    expr = f"changes(({a.progress})[{span}]) == 0"
    rule = f"a step at least every {format_duration(r.hang_s)}"
    return AlertRule("JobHang", expr, 0, HANG_LEVEL, "hang", f"no step for {format_duration(r.hang_s)}", rule)


def rules_of(a: AlertInputs) -> list[AlertRule]:
    """Every alert rule the agreement defines, in criterion 5's order of signals."""
    out = [_hardware(s, a) for s in HW_SIGNALS]
    out.append(_vanished(a))
    out += [r for r in (_step_time(a), _hang(a)) if r is not None]
    return out


def missing(a: AlertInputs) -> list[str]:
    """What the agreement does not state, so a rule could not be written."""
    out = []
    if not a.step_time:
        out.append("the degraded rule: the profile names no step-time series (recurrence.job.step_time)")
    elif a.baseline_step_s is None:
        out.append("the degraded rule: the baseline has no smoke step-time sample to compare with")
    if not a.progress:
        out.append("the hang rule: the profile names no step counter (recurrence.job.progress)")
    return out


def as_document(a: AlertInputs) -> dict[str, Any]:
    rules: list[dict[str, Any]] = []
    for rule in rules_of(a):
        respond, words = _respond(a.policy, rule.level)
        entry: dict[str, Any] = {"alert": rule.name, "expr": rule.expr}
        if rule.for_s:
            entry["for"] = _seconds(rule.for_s)
        entry["labels"] = {"severity": rule.level, "cluster": a.cluster, "signal": rule.signal}
        entry["annotations"] = {
            "summary": rule.summary,
            "rule": rule.rule,
            "respond": respond,
            "respond_clock": words,
            "coverage": a.policy.coverage.describe(),
        }
        rules.append(entry)
    return {
        "groups": [{"name": f"recovery-acceptance-{a.cluster}", "interval": _seconds(a.interval_s), "rules": rules}]
    }


def alert_rules(a: AlertInputs, header: Sequence[str] = ()) -> str:
    """The rule file: a comment header (what it was made from, what was left out), then the YAML."""
    lines = [f"# {h}" for h in header]
    lines += [f"# not written: {m}" for m in missing(a)]
    lines += [f"# {n}" for n in a.notes]
    body = yaml.safe_dump(as_document(a), sort_keys=False, width=10_000, allow_unicode=True)
    return "\n".join(lines) + ("\n" if lines else "") + body
