"""Severity by training impact, with its two clocks, who joins, and when it moves up a level.

The agreement (profile ``severity:``) names three levels, most severe first:

- ``down``: the job is down across the cluster (no steps since T);
- ``degraded``: the job runs with degraded throughput (steps slower than the agreed rule, e.g.
  +10% sustained for 15 min);
- ``node_out``: one node is out while the job continues on a reduced set (fewer ranks than the
  baseline's full size).

Each level has two clocks — ``respond`` (time to first engineering response) and ``restore``
(target time to restore capacity) — and optionally ``resolve`` (time to close the incident, which
criterion 5's pass does), ``joins`` (who joins from the provider) and ``escalate_after`` (when an
unrestored incident moves up one level). The profile's older top-level ``ack`` and ``resolve`` are
the defaults of every level's ``respond`` and ``restore``. Clocks start when the bundle is made and
count only the agreed coverage hours (profile ``coverage:``, `acceptance.agreement.coverage`; 24x7,
i.e. plain wall-clock time, when absent); every deadline carries the calendar it was counted in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from acceptance.agreement.coverage import Coverage, deadline
from acceptance.incident.model import LEVEL_TITLES, LEVELS, Clock, Severity, Window
from acceptance.units import format_duration, parse_duration

DEFAULT_SLOWER_BY = 0.10
DEFAULT_SUSTAINED_S = 900.0


@dataclass(frozen=True)
class LevelPolicy:
    name: str
    respond_s: float | None = None
    restore_s: float | None = None
    resolve_s: float | None = None
    joins: tuple[str, ...] = ()
    escalate_after_s: float | None = None


@dataclass(frozen=True)
class DegradedRule:
    """Steps at least `slower_by` slower than before the change, for at least `sustained_s`."""

    slower_by: float = DEFAULT_SLOWER_BY
    sustained_s: float = DEFAULT_SUSTAINED_S
    stated: bool = False

    def describe(self) -> str:
        where = "agreed in the profile" if self.stated else "default: the profile states no degraded rule"
        return f"step time +{self.slower_by:.0%} or more for {format_duration(self.sustained_s)} ({where})"


@dataclass(frozen=True)
class SeverityPolicy:
    levels: Mapping[str, LevelPolicy] = field(default_factory=dict)
    degraded: DegradedRule = field(default_factory=DegradedRule)
    coverage: Coverage = field(default_factory=Coverage)

    @classmethod
    def from_profile(cls, raw: Mapping[str, Any] | None, coverage: Coverage | None = None) -> SeverityPolicy:
        """From the profile's validated ``severity:`` mapping (None: no agreement on severity) and its
        parsed ``coverage:`` (None: 24x7)."""
        raw = raw or {}

        def seconds(value: Any) -> float | None:
            return parse_duration(value) if value is not None else None

        ack, resolve = seconds(raw.get("ack")), seconds(raw.get("resolve"))
        levels: dict[str, LevelPolicy] = {}
        stated = raw.get("levels") or {}
        for name in LEVELS:
            level = stated.get(name) or {}
            if not level and ack is None and resolve is None:
                continue
            levels[name] = LevelPolicy(
                name=name,
                respond_s=seconds(level.get("respond")) if "respond" in level else ack,
                restore_s=seconds(level.get("restore")) if "restore" in level else resolve,
                resolve_s=seconds(level.get("resolve")),
                joins=tuple(str(j) for j in level.get("joins") or ()),
                escalate_after_s=seconds(level.get("escalate_after")),
            )
        rule = raw.get("degraded_rule")
        degraded = (
            DegradedRule(
                float(rule.get("slower_by", DEFAULT_SLOWER_BY)),
                parse_duration(rule.get("for", DEFAULT_SUSTAINED_S)),
                stated=True,
            )
            if rule
            else DegradedRule()
        )
        return cls(levels, degraded, coverage or Coverage())


@dataclass(frozen=True)
class Impact:
    """What the evidence says about the job, for the proposal."""

    window: Window
    ratio: float | None = None  # median step time after / before the change
    slow_for_s: float | None = None  # how long the slower steps lasted in the logs
    world_size: int | None = None
    full_size: int | None = None  # the baseline's nodes x GPUs per node
    job_failed: bool = False  # error lines or a launcher failure after the last step


def propose(impact: Impact, rule: DegradedRule) -> tuple[str | None, str]:
    """(level, why) from the evidence; level None when the evidence proposes none."""
    w = impact.window
    if w.how == "hang" or (impact.job_failed and w.how in ("errors-only", "hang")):
        since = w.first_bad_utc or w.last_healthy_utc
        when = f" since {since:%Y-%m-%d %H:%M:%S} UTC" if since else ""
        last = f" (last step {w.last_healthy_step})" if w.last_healthy_step is not None else ""
        return "down", f"no training steps{when}{last}; the job failed"
    if w.how == "change-point" and impact.ratio is not None:
        slower = impact.ratio - 1
        lasted = impact.slow_for_s or 0.0
        if slower >= rule.slower_by and lasted >= rule.sustained_s:
            return "degraded", (
                f"step time +{slower:.1%} from step {w.first_bad_step} for "
                f"{format_duration(lasted)} (rule: {rule.describe()})"
            )
        if slower >= rule.slower_by:
            return None, (
                f"step time +{slower:.1%} from step {w.first_bad_step}, but only for "
                f"{format_duration(lasted)} so far (rule: {rule.describe()}); watch it"
            )
    if impact.world_size is not None and impact.full_size is not None and impact.world_size < impact.full_size:
        return "node_out", (
            f"the job runs on {impact.world_size} ranks, fewer than the baseline's full size {impact.full_size}"
        )
    if impact.world_size is not None and impact.full_size is None:
        return None, f"world size {impact.world_size}; no baseline full size to compare it with"
    return None, "the evidence shows no stop, no sustained slowdown and no reduced set"


def severity(policy: SeverityPolicy, level: str | None, reason: str, opened: datetime) -> Severity:
    """The proposed level with its clocks (deadlines from `opened`), who joins and the escalation."""
    if level is None:
        return Severity(None, reason, rule=policy.degraded.describe(), calendar=policy.coverage.describe())
    found = policy.levels.get(level)
    if found is None:
        return Severity(
            level,
            reason + f"; the profile states no clocks for level {level!r}",
            rule=policy.degraded.describe(),
            calendar=policy.coverage.describe(),
        )
    calendar = policy.coverage.describe()
    clocks = tuple(
        _clock(name, seconds, opened, policy.coverage)
        for name, seconds in (("respond", found.respond_s), ("restore", found.restore_s), ("resolve", found.resolve_s))
        if seconds is not None
    )
    index = LEVELS.index(level)
    up = LEVELS[index - 1] if index > 0 else None
    at = deadline(opened, found.escalate_after_s, policy.coverage).at_utc if found.escalate_after_s and up else None
    return Severity(level, reason, clocks, found.joins, up if at else None, at, policy.degraded.describe(), calendar)


def _clock(name: str, seconds: float, opened: datetime, coverage: Coverage) -> Clock:
    end = deadline(opened, seconds, coverage)
    return Clock(name, seconds, end.at_utc, end.calendar, end.start_outside_coverage, end.counted_from_utc)


def title(level: str | None) -> str:
    return LEVEL_TITLES.get(level or "", "no level proposed")
