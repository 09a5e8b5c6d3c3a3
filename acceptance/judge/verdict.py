"""The verdict record every judge returns, and how it reads in one line."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acceptance.margins import Margin

if TYPE_CHECKING:
    import pandas as pd


class Status(enum.Enum):
    """Outcome of one criterion for one subject (a node, a collective, a job)."""

    PASS = "pass"
    FAIL = "fail"
    NOT_COMPARABLE = "not-comparable"
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"
    # Not decided yet because its time has not come (criterion 5's probation window is still open):
    # the only status a suite item reports as a skip rather than a pass or a failure.
    PENDING = "pending"

    @property
    def ok(self) -> bool:
        return self is Status.PASS


#: a verdict's figure: a plain value, or the `Margin` it applied (two junit properties, see `Verdict.flat_figures`)
Figure = str | int | float | bool | None | Margin
PlainFigure = str | int | float | bool | None


@dataclass(frozen=True)
class Verdict:
    """A judged result with everything needed to explain it.

    `summary` is the one line an on-call engineer reads first: what failed, where,
    by how much, against what. `figures` are flat name → value pairs that become
    junit properties (measured, expected, margin, ratio, unit, node, gpu, size ...); the margin a
    judge applied is a `Margin` object under ``margin``, written out by `flat_figures`.
    `evidence` holds longer lines (differences, error messages) in reading order.
    `table` is an optional per-item frame (e.g. busbw per size) for plots. `details` is plain
    structured data a report section draws (a localization's rounds), not a junit property.
    """

    status: Status
    subject: str
    summary: str
    figures: Mapping[str, Figure] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    table: pd.DataFrame | None = field(default=None, compare=False, repr=False)
    details: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def passed(self) -> bool:
        return self.status.ok

    @property
    def margin(self) -> Margin | None:
        """The margin this verdict was judged with, if it applied one."""
        found = self.figures.get("margin")
        return found if isinstance(found, Margin) else None

    def flat_figures(self) -> dict[str, PlainFigure]:
        """The figures as plain name → value pairs, in order: a `Margin` becomes ``margin`` and ``margin_direction``."""
        out: dict[str, PlainFigure] = {}
        for name, value in self.figures.items():
            if isinstance(value, Margin):
                out.update(value.figures())
            else:
                out[name] = value
        return out

    def message(self) -> str:
        """The failure text shown by pytest: the summary, then the evidence lines."""
        lines = [f"{self.status.value.upper()}: {self.summary}"]
        lines.extend(f"  - {line}" for line in self.evidence)
        return "\n".join(lines)
