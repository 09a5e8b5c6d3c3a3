"""Prometheus and OpenMetrics text expositions, and dcgm-exporter's counters file.

The façade of `acceptance.tools.prometheus`. Pure: text in, records out; the caller reads the
file (`acceptance.metrics` does, for offline dumps). DCGM's sentinels ("blank" values such as
9223372036854775794, NOT_SUPPORTED) are kept as read and named by `dcgm_blank`: they are not
counts, and a caller must treat them as "no data".
"""

from __future__ import annotations

from acceptance.tools.prometheus.counters import CounterField, enabled_series, parse_counters
from acceptance.tools.prometheus.model import (
    FP64_BLANK,
    INT64_BLANK,
    OPENMETRICS,
    PROMETHEUS,
    Exposition,
    Family,
    Labels,
    Sample,
    dcgm_blank,
)
from acceptance.tools.prometheus.text import parse, parse_labels

__all__ = [
    "FP64_BLANK",
    "INT64_BLANK",
    "OPENMETRICS",
    "PROMETHEUS",
    "CounterField",
    "Exposition",
    "Family",
    "Labels",
    "Sample",
    "dcgm_blank",
    "enabled_series",
    "parse",
    "parse_counters",
    "parse_labels",
]
