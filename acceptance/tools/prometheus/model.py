"""Records of a Prometheus / OpenMetrics text exposition, and DCGM's "no data" sentinels."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

Labels = tuple[tuple[str, str], ...]

PROMETHEUS = "prometheus"  # text format 0.0.4: timestamps in integer milliseconds
OPENMETRICS = "openmetrics"  # OpenMetrics 1.0: timestamps in seconds, ends with "# EOF"

# DCGM fills a field it cannot read with a "blank" value (dcgm_structs.h): DCGM_INT64_BLANK is
# 0x7ffffffffffffff0 and NOT_FOUND / NOT_SUPPORTED / NOT_PERMISSIONED follow it (9223372036854775794
# is NOT_SUPPORTED); as a float all of them are 2**63. DCGM_FP64_BLANK is 2**47, its siblings + 1..3.
INT64_BLANK = float(0x7FFFFFFFFFFFFFF0)
FP64_BLANK = 140737488355328.0
FP64_BLANK_END = FP64_BLANK + 4


def dcgm_blank(value: float) -> str | None:
    """The DCGM sentinel `value` is ("int64 blank", "fp64 blank"), None for a real reading."""
    if value >= INT64_BLANK:
        return "int64 blank"
    if FP64_BLANK <= value < FP64_BLANK_END:
        return "fp64 blank"
    return None


@dataclass(frozen=True)
class Family:
    """What the ``# TYPE`` / ``# HELP`` / ``# UNIT`` lines say about a metric."""

    name: str
    type: str = "untyped"
    help: str = ""
    unit: str = ""


@dataclass(frozen=True)
class Sample:
    """One sample line: name, labels in the order written, value, optional timestamp (ms since the epoch)."""

    name: str
    labels: Labels
    value: float
    timestamp_ms: int | None
    line: int

    def label(self, name: str, default: str = "") -> str:
        for key, value in self.labels:
            if key == name:
                return value
        return default

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)


@dataclass(frozen=True)
class Exposition:
    """A parsed exposition: its format, the metric families, the samples in file order.

    `noise` holds the lines that are not part of the format but were recognised as the
    wrapping a saved scrape carries (a ``curl`` command line, a ``...`` elision), with their
    line numbers, so a caller can say what it skipped.
    """

    source: str
    format: str
    families: Mapping[str, Family] = field(default_factory=dict)
    samples: tuple[Sample, ...] = ()
    noise: tuple[tuple[int, str], ...] = ()

    def names(self) -> list[str]:
        return list(dict.fromkeys(s.name for s in self.samples))
