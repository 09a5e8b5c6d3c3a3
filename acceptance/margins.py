"""The agreed margins: one type, one set of defaults, one sign convention.

A margin is a tolerance agreed at handover. The baseline records the margins it was
signed off with; later runs judge with those, never with today's profile (the profile's
margins are read only when a baseline is recorded). When the two differ, each difference
is stated in one line, and changing an agreed margin is a new dated baseline
(`acceptance baseline amend`).

A verdict carries the margin it applied as one `Margin` (its figure ``margin``): the tolerance
as a positive fraction of the baseline value (0.05 = 5 %) and its direction, which way is worse:
``below`` (higher is better: busbw may drop at most by the margin) or ``above`` (lower is better:
step time may rise at most by the margin). It reaches junit as the properties ``margin`` (the
fraction) and ``margin_direction``, and the report's plots read both back (`Margin.from_figures`).
The sign convention is `Margin.signed`, and only there.

The smoke run's stopping rule is agreed the same way (`smoke_*`, from the profile's
``smoke.sequential``): ``fixed`` runs the smoke job its whole length (`smoke_max_steps`) and
judges once; ``mixture`` may stop it as soon as a confidence sequence decides, never before
`smoke_min_steps` (`acceptance.judge.steptime_seq`). A baseline that does not record a rule was
agreed with the fixed one, and judges with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from acceptance.units import format_duration, format_size, parse_duration, parse_size

Direction = Literal["below", "above"]
#: higher is better: a value may fall below the baseline by at most the margin (busbw)
BELOW: Direction = "below"
#: lower is better: a value may rise above the baseline by at most the margin (step time)
ABOVE: Direction = "above"
DIRECTIONS: tuple[Direction, ...] = (BELOW, ABOVE)
MINUS = "\u2212"
#: the smoke run's stopping rules (`acceptance.judge.steptime_seq`)
STOP_RULES = ("mixture", "fixed")
#: what a baseline that predates a margin agreed instead of today's default
_BEFORE_RECORDED: dict[str, Any] = {"smoke_stop_rule": "fixed"}
_SEQUENTIAL_KEYS = {
    "method": "smoke_stop_rule",
    "alpha": "smoke_stop_alpha",
    "min_steps": "smoke_min_steps",
    "max_steps": "smoke_max_steps",
    "block_steps": "smoke_block_steps",
    "tune_steps": "smoke_tune_steps",
}


@dataclass(frozen=True)
class Margin:
    """One agreed tolerance, as a verdict applies it: a fraction of the baseline value, and which way is worse."""

    fraction: float
    direction: Direction

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"margin direction {self.direction!r}: expected one of {', '.join(DIRECTIONS)}")
        if not (math.isfinite(self.fraction) and self.fraction >= 0):
            raise ValueError(f"margin {self.fraction!r}: expected a fraction >= 0, such as 0.05")

    @classmethod
    def busbw(cls, fraction: float) -> Margin:
        """The busbw margin: higher is better."""
        return cls(fraction, BELOW)

    @classmethod
    def step_time(cls, fraction: float) -> Margin:
        """The step-time margin: lower is better."""
        return cls(fraction, ABOVE)

    @property
    def higher_is_better(self) -> bool:
        return self.direction == BELOW

    @property
    def signed(self) -> float:
        """The margin as a signed change from the baseline (−0.05 below, +0.05 above): the sign convention."""
        return -self.fraction if self.higher_is_better else self.fraction

    def limit(self, reference: float) -> float:
        """The worst value still within the margin of `reference` (a ratio when `reference` is 1)."""
        return reference * (1 + self.signed)

    def within(self, value: float, reference: float = 1.0) -> bool:
        """`value` is no worse than the limit of `reference`."""
        limit = self.limit(reference)
        return value >= limit if self.higher_is_better else value <= limit

    def figures(self) -> dict[str, float | str]:
        """As the flat figures junit and the report's data carry: ``margin`` and ``margin_direction``."""
        return {"margin": self.fraction, "margin_direction": self.direction}

    @classmethod
    def from_figures(cls, figures: Mapping[str, Any], default: Direction) -> Margin | None:
        """Back from `figures` (None without a ``margin``); `default` is the direction of a report's
        data that predates ``margin_direction``: that of the quantity its plot draws."""
        value = figures.get("margin")
        if not isinstance(value, int | float) or isinstance(value, bool) or not (math.isfinite(value) and value >= 0):
            return None
        direction = figures.get("margin_direction", default)
        return cls(float(value), direction if direction in DIRECTIONS else default)


@dataclass(frozen=True)
class Margins:
    """Agreed tolerances; fractions are of the baseline value."""

    busbw_tolerance: float = 0.05
    busbw_min_size: int = 1 << 20
    step_time_tolerance: float = 0.05
    loss_spike_z: float = 6.0
    loss_shift_z: float = 3.0
    probation_s: float = 24 * 3600.0
    smoke_stop_rule: str = "fixed"
    smoke_stop_alpha: float = 0.05
    smoke_min_steps: int = 50
    smoke_max_steps: int = 200
    smoke_block_steps: int = 10
    smoke_tune_steps: int = 60

    def __post_init__(self) -> None:
        for name in ("busbw_tolerance", "step_time_tolerance"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 <= value < 1.0):
                raise ValueError(f"{name} {value!r}: expected a fraction in [0, 1), such as 0.05")
        for name in ("loss_spike_z", "loss_shift_z", "probation_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} {value!r}: expected a finite number > 0")
        if self.busbw_min_size < 0:
            raise ValueError(f"busbw_min_size {self.busbw_min_size!r}: expected a size >= 0")
        if self.smoke_stop_rule not in STOP_RULES:
            raise ValueError(f"smoke_stop_rule {self.smoke_stop_rule!r}: expected one of {', '.join(STOP_RULES)}")
        if not (math.isfinite(self.smoke_stop_alpha) and 0 < self.smoke_stop_alpha < 0.5):
            raise ValueError(f"smoke_stop_alpha {self.smoke_stop_alpha!r}: expected a probability in (0, 0.5)")
        for name in ("smoke_min_steps", "smoke_max_steps", "smoke_block_steps", "smoke_tune_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} {getattr(self, name)!r}: expected a whole number of steps >= 1")
        if self.smoke_min_steps > self.smoke_max_steps:
            raise ValueError(
                f"smoke_min_steps {self.smoke_min_steps!r}: expected at most smoke_max_steps {self.smoke_max_steps}"
            )
        if self.smoke_tune_steps < self.smoke_block_steps:
            raise ValueError(
                f"smoke_tune_steps {self.smoke_tune_steps!r}: "
                f"expected at least smoke_block_steps {self.smoke_block_steps}"
            )

    @classmethod
    def from_profile(cls, raw: Mapping[str, Any], sequential: Mapping[str, Any] | None = None) -> Margins:
        """From a profile's ``margins:`` (sizes as ``1M``, the window as ``probation: 24h``) and
        its ``smoke.sequential:`` (``method``, ``alpha``, ``min_steps``, ``max_steps``,
        ``block_steps``, ``tune_steps``)."""
        d = cls()
        seq = {
            field: (str if field == "smoke_stop_rule" else type(getattr(d, field)))(sequential[key])
            for key, field in _SEQUENTIAL_KEYS.items()
            if sequential and key in sequential
        }
        return cls(
            **seq,  # type: ignore[arg-type]
            busbw_tolerance=float(raw.get("busbw_tolerance", d.busbw_tolerance)),
            busbw_min_size=parse_size(raw.get("busbw_min_size", d.busbw_min_size)),
            step_time_tolerance=float(raw.get("step_time_tolerance", d.step_time_tolerance)),
            loss_spike_z=float(raw.get("loss_spike_z", d.loss_spike_z)),
            loss_shift_z=float(raw.get("loss_shift_z", d.loss_shift_z)),
            probation_s=parse_duration(raw.get("probation", d.probation_s)),
        )

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Margins:
        """From a baseline's ``margins`` (a margin an older baseline did not record takes the default,
        or what was agreed before it was recorded: the fixed smoke length)."""
        d = cls()
        old = {f.name: _BEFORE_RECORDED.get(f.name, getattr(d, f.name)) for f in fields(cls)}
        return cls(**{f.name: type(getattr(d, f.name))(doc.get(f.name, old[f.name])) for f in fields(cls)})

    def to_json(self) -> dict[str, float | int | str]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def differences(self, agreed: Margins) -> list[tuple[str, str, str, str]]:
        """(field, what, value here, agreed value) for each margin where `self` differs from `agreed`."""
        out = []
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(agreed, f.name)
            if mine != theirs:
                label, show = _WORDS[f.name]
                out.append((f.name, label, show(mine), show(theirs)))
        return out


def _pct(value: float) -> str:
    return f"{value * 100:.4g}%"


_WORDS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "busbw_tolerance": ("busbw tolerance", _pct),
    "busbw_min_size": ("smallest busbw size judged", lambda v: format_size(int(v))),
    "step_time_tolerance": ("step time tolerance", _pct),
    "loss_spike_z": ("loss spike z", lambda v: f"{v:g}"),
    "loss_shift_z": ("loss shift z", lambda v: f"{v:g}"),
    "probation_s": ("probation window", format_duration),
    "smoke_stop_rule": ("smoke stopping rule", str),
    "smoke_stop_alpha": ("smoke stopping rule alpha", lambda v: f"{v:g}"),
    "smoke_min_steps": ("fewest smoke steps", lambda v: f"{v} steps"),
    "smoke_max_steps": ("most smoke steps", lambda v: f"{v} steps"),
    "smoke_block_steps": ("smoke block length", lambda v: f"{v} steps"),
    "smoke_tune_steps": ("smoke sequence tuned at", lambda v: f"{v} steps"),
}


def judged_with_notes(profile: Margins, agreed: Margins, profile_file: str, baseline_sha256: str) -> dict[str, str]:
    """Margin name → one line, for each margin the profile states differently from the agreed one."""
    return {
        name: f"{what} {here} in {profile_file}, {then} agreed at handover (baseline sha256 {baseline_sha256[:12]}…): "
        f"judging with {then}"
        for name, what, here, then in profile.differences(agreed)
    }
