"""Criterion 5's rules and the signals it reads: the window, the agreed thresholds, dcgm-exporter's fields.

Pure data. `RecurrenceRules` carries the defaults an SRE would accept; a profile's
``recurrence:`` section overrides them. The window length is not here: it is the agreed
margin ``probation`` of the baseline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from acceptance.units import format_duration, parse_duration

# The XIDs that mean the hardware fault came back (their names: DCGM's XID_MEANINGS); a profile may add codes.
DEFAULT_XIDS: tuple[int, ...] = (48, 63, 64, 74, 79, 92, 94, 95)

# NVML clock event (throttle) reason bits, as DCGM_FI_DEV_CLOCKS_EVENT_REASONS reports them.
CLOCK_EVENT_BITS: dict[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clocks": 0x100,
}
DEFAULT_SLOWDOWN_REASONS: tuple[str, ...] = (
    "hw_slowdown",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
)

# Kinds of hardware signal, i.e. how a series is read for recurrence:
XID = "xid"  # a gauge holding the last XID: a change to a listed code is a recurrence
INCREMENT = "increment"  # a counter: any increase is a recurrence
RATE = "rate"  # a counter: more than the rule's increments in a minute is a recurrence
NONZERO = "nonzero"  # a gauge that is 0 when healthy
BITS = "bits"  # a bitmask gauge: the rule's bits set for longer than the rule's time


@dataclass(frozen=True)
class HwSignal:
    """One hardware signal: its dcgm-exporter field(s) (the first one found is read) and how to judge it.

    `default_on`: whether dcgm-exporter's default counters file exports it; when it is absent,
    the report says "not collected" and, for a field that is off by default, how to switch it on.
    """

    key: str
    title: str
    metrics: tuple[str, ...]
    kind: str
    default_on: bool
    unit: str = ""

    @property
    def metric(self) -> str:
        return self.metrics[0]


HW_SIGNALS: tuple[HwSignal, ...] = (
    HwSignal("xid", "XID errors", ("DCGM_FI_DEV_XID_ERRORS",), XID, True),
    HwSignal("ecc_dbe", "ECC double-bit errors (volatile)", ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",), INCREMENT, False),
    HwSignal(
        "remapped_rows",
        "rows remapped for uncorrectable errors",
        ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",),
        INCREMENT,
        True,
    ),
    HwSignal("row_remap_failure", "row-remap failure", ("DCGM_FI_DEV_ROW_REMAP_FAILURE",), NONZERO, True),
    HwSignal("row_remap_pending", "row-remap pending", ("DCGM_FI_DEV_ROW_REMAP_PENDING",), NONZERO, False),
    HwSignal("pcie_replay", "PCIe replays", ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER",), RATE, True, "/min"),
    HwSignal(
        "nvlink_crc_flit",
        "NVLink CRC flit errors",
        ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",),
        RATE,
        False,
        "/min",
    ),
    HwSignal(
        "nvlink_crc_data",
        "NVLink CRC data errors",
        ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",),
        RATE,
        False,
        "/min",
    ),
    HwSignal("nvlink_replay", "NVLink replays", ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",), RATE, False, "/min"),
    HwSignal(
        "nvlink_recovery",
        "NVLink recovery errors",
        ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",),
        INCREMENT,
        False,
    ),
    HwSignal(
        "slowdown",
        "thermal or power slowdown",
        ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"),
        BITS,
        False,
    ),
)
SIGNALS_BY_KEY = {s.key: s for s in HW_SIGNALS}
# The series that says a GPU is reporting at all (gaps, vanished GPUs): on in every counters file.
PRESENCE_METRIC = "DCGM_FI_DEV_GPU_TEMP"


@dataclass(frozen=True)
class RecurrenceRules:
    """What counts as a recurrence, and how much missing data is tolerated (profile ``recurrence:``)."""

    max_gap_s: float = 15 * 60.0
    xid_codes: tuple[int, ...] = DEFAULT_XIDS
    pcie_replays_per_min: float = 8.0  # DCGM's own health-watch limit
    nvlink_errors_per_min: float = 100.0
    slowdown_reasons: tuple[str, ...] = DEFAULT_SLOWDOWN_REASONS
    slowdown_s: float = 5 * 60.0
    vanished_s: float = 5 * 60.0
    step_time_rise: float = 0.10
    step_time_sustained_s: float = 15 * 60.0
    step_time_smoothing_s: float = 60.0
    hang_s: float = 30 * 60.0
    node_event_reasons: tuple[str, ...] = ("NodeNotReady", "Rebooted", "KernelOops", "TaskHung", "XIDError")
    ingest_delay_s: float = 120.0  # the newest minutes of an open window are not yet a gap

    @property
    def slowdown_mask(self) -> int:
        mask = 0
        for name in self.slowdown_reasons:
            mask |= CLOCK_EVENT_BITS[name]
        return mask

    def threshold(self, signal: HwSignal) -> float:
        """The per-minute limit of a RATE signal."""
        return self.pcie_replays_per_min if signal.key == "pcie_replay" else self.nvlink_errors_per_min

    def describe(self) -> dict[str, str]:
        """The rules as junit figures."""
        return {
            "rule.max_gap": format_duration(self.max_gap_s),
            "rule.xid_codes": ",".join(str(c) for c in self.xid_codes),
            "rule.pcie_replays_per_min": f"{self.pcie_replays_per_min:g}",
            "rule.nvlink_errors_per_min": f"{self.nvlink_errors_per_min:g}",
            "rule.slowdown": f"{'|'.join(self.slowdown_reasons)} for {format_duration(self.slowdown_s)}",
            "rule.step_time": f"+{self.step_time_rise:.0%} median for {format_duration(self.step_time_sustained_s)}",
            "rule.hang": format_duration(self.hang_s),
        }


def limits(rules: RecurrenceRules) -> dict[str, float]:
    """The rules' numeric limits, as figures the report's plots draw."""
    return {
        "limit.pcie_replays_per_min": rules.pcie_replays_per_min,
        "limit.nvlink_errors_per_min": rules.nvlink_errors_per_min,
        "limit.step_time_ratio": 1 + rules.step_time_rise,
    }


def rules_from_profile(raw: Mapping[str, Any], degraded: Mapping[str, Any] | None = None) -> RecurrenceRules:
    """A profile's ``recurrence:`` section (already schema-checked) over the defaults.

    The step-time rule is the agreement's shared definition of degraded (``severity.degraded_rule``:
    ``slower_by``, ``for``) unless ``recurrence:`` states its own.
    """
    d = RecurrenceRules()
    if degraded:
        d = RecurrenceRules(
            step_time_rise=float(degraded.get("slower_by", d.step_time_rise)),
            step_time_sustained_s=parse_duration(degraded.get("for", d.step_time_sustained_s)),
        )

    def seconds(key: str, default: float) -> float:
        return parse_duration(raw[key]) if key in raw else default

    extra = tuple(int(c) for c in raw.get("extra_xid_codes", ()) if int(c) not in d.xid_codes)
    return RecurrenceRules(
        max_gap_s=seconds("max_gap", d.max_gap_s),
        xid_codes=d.xid_codes + extra,
        pcie_replays_per_min=float(raw.get("pcie_replays_per_min", d.pcie_replays_per_min)),
        nvlink_errors_per_min=float(raw.get("nvlink_errors_per_min", d.nvlink_errors_per_min)),
        slowdown_reasons=tuple(raw.get("slowdown_reasons", d.slowdown_reasons)),
        slowdown_s=seconds("slowdown", d.slowdown_s),
        vanished_s=seconds("vanished", d.vanished_s),
        step_time_rise=float(raw.get("step_time_rise", d.step_time_rise)),
        step_time_sustained_s=seconds("step_time_sustained", d.step_time_sustained_s),
        step_time_smoothing_s=seconds("step_time_smoothing", d.step_time_smoothing_s),
        hang_s=seconds("hang", d.hang_s),
        node_event_reasons=tuple(raw.get("node_event_reasons", d.node_event_reasons)),
    )


def bit_names(value: int, mask: int | None = None) -> list[str]:
    """The clock event reasons set in `value` (within `mask` when given)."""
    return [name for name, bit in CLOCK_EVENT_BITS.items() if value & bit and (mask is None or mask & bit)]


@dataclass(frozen=True)
class Window:
    """The probation window: from the acceptance's pass, for the agreed length, seen at `now`."""

    start: datetime
    length_s: float
    now: datetime
    simulated: bool = False

    @property
    def end(self) -> datetime:
        return self.start + timedelta(seconds=self.length_s)

    @property
    def open(self) -> bool:
        return self.now < self.end

    @property
    def until(self) -> datetime:
        """Judged up to here: the end, or now while the window is open."""
        return min(self.now, self.end)

    @property
    def elapsed_s(self) -> float:
        return max(0.0, (self.until - self.start).total_seconds())

    @property
    def remaining_s(self) -> float:
        return max(0.0, (self.end - self.now).total_seconds())
