"""The agreed margins: one type, one set of defaults, one sign convention.

A margin is a tolerance agreed at handover. The baseline records the margins it was
signed off with; later runs judge with those, never with today's profile (the profile's
margins are read only when a baseline is recorded). When the two differ, each difference
is stated in one line, and changing an agreed margin is a new dated baseline
(`acceptance baseline amend`).

Sign convention, for the junit property ``margin`` of every verdict: the tolerance as a
positive fraction of the baseline value (0.05 = 5 %); the junit property
``margin_direction`` says which way is worse: ``below`` (busbw may drop at most by the
margin) or ``above`` (step time may rise at most by the margin).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from acceptance.units import format_duration, format_size, parse_duration, parse_size

BELOW = "below"
ABOVE = "above"


@dataclass(frozen=True)
class Margins:
    """Agreed tolerances; fractions are of the baseline value."""

    busbw_tolerance: float = 0.05
    busbw_min_size: int = 1 << 20
    step_time_tolerance: float = 0.05
    loss_spike_z: float = 6.0
    loss_shift_z: float = 3.0
    probation_s: float = 24 * 3600.0

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

    @classmethod
    def from_profile(cls, raw: Mapping[str, Any]) -> Margins:
        """From a profile's ``margins:`` (sizes as ``1M``, the window as ``probation: 24h``)."""
        d = cls()
        return cls(
            busbw_tolerance=float(raw.get("busbw_tolerance", d.busbw_tolerance)),
            busbw_min_size=parse_size(raw.get("busbw_min_size", d.busbw_min_size)),
            step_time_tolerance=float(raw.get("step_time_tolerance", d.step_time_tolerance)),
            loss_spike_z=float(raw.get("loss_spike_z", d.loss_spike_z)),
            loss_shift_z=float(raw.get("loss_shift_z", d.loss_shift_z)),
            probation_s=parse_duration(raw.get("probation", d.probation_s)),
        )

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Margins:
        """From a baseline's ``margins`` (a margin an older baseline did not record takes the default)."""
        d = cls()
        return cls(**{f.name: type(getattr(d, f.name))(doc.get(f.name, getattr(d, f.name))) for f in fields(cls)})

    def to_json(self) -> dict[str, float | int]:
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
}


def judged_with_notes(profile: Margins, agreed: Margins, profile_file: str, baseline_sha256: str) -> dict[str, str]:
    """Margin name → one line, for each margin the profile states differently from the agreed one."""
    return {
        name: f"{what} {here} in {profile_file}, {then} agreed at handover (baseline sha256 {baseline_sha256[:12]}…): "
        f"judging with {then}"
        for name, what, here, then in profile.differences(agreed)
    }
