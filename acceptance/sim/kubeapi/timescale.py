"""Simulated time vs wall time.

Every `ToolRun.duration_s` is simulated seconds: what the real tool would take (an r3 DCGM
diag ~15 min). The emulator and benchmarks turn it into wall time with a `TimeScale`, so a
15-minute diag can take 15 s (``1/60``) or 15 ms (``1e-5``) of wall time.
"""

from __future__ import annotations

from dataclasses import dataclass

from acceptance.errors import UsageError


@dataclass(frozen=True)
class TimeScale:
    """`factor` wall seconds per simulated second (1.0 = real time, 0.0 = instantaneous)."""

    factor: float = 1.0

    def wall(self, simulated_s: float) -> float:
        return max(0.0, simulated_s) * self.factor

    def simulated(self, wall_s: float) -> float:
        """Simulated seconds that `wall_s` of wall time stands for (inf when time stands still)."""
        return float("inf") if self.factor == 0 else wall_s / self.factor

    @classmethod
    def parse(cls, text: str) -> TimeScale:
        """``realtime``, ``instant``, a number (``0.001``) or a ratio (``1/60``)."""
        t = text.strip().lower()
        if t == "realtime":
            return cls(1.0)
        if t == "instant":
            return cls(0.0)
        try:
            if "/" in t:
                num, den = t.split("/", 1)
                value = float(num) / float(den)
            else:
                value = float(t)
        except (ValueError, ZeroDivisionError) as exc:
            raise UsageError(f"bad time scale {text!r}: expected realtime, instant, 0.001 or 1/60") from exc
        if value < 0:
            raise UsageError(f"bad time scale {text!r}: must not be negative")
        return cls(value)
