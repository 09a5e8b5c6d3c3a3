"""Criterion 5's pure judge, by equality on hand-made series."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from acceptance.clusters.base import GPUS_NOT_ALLOCATABLE, NODE_READY_CHANGED, ClusterEvent
from acceptance.judge.recurrence import judge_cluster, judge_hardware, judge_job, judge_probation
from acceptance.judge.recurrence_records import (
    CENSUS_COLUMNS,
    HardwareSeries,
    JobSeries,
    WatchdogLine,
    empty,
    stamp,
)
from acceptance.judge.recurrence_rules import HW_SIGNALS, RecurrenceRules, Window
from acceptance.judge.verdict import Status

START = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
DAY = 24 * 3600.0
RULES = RecurrenceRules()
NODE = "gpu-07"


def closed() -> Window:
    return Window(START, DAY, START + timedelta(seconds=DAY + 60))


def steps(rise: float, minutes: float, at_h: float = 2.0, every_s: float = 10.0, base: float = 1.0) -> pd.Series:
    """Step time every `every_s` over the day, `rise` above `base` for `minutes` from `at_h` hours in."""
    times = pd.date_range(START, START + timedelta(seconds=DAY), freq=f"{int(every_s)}s")
    offset = (times - pd.Timestamp(START)).total_seconds()
    begin, end = at_h * 3600, at_h * 3600 + minutes * 60
    values = [base * (1 + rise) if begin <= o < end else base for o in offset]
    return pd.Series(values, index=times, dtype=float)


def progress(stall_from_h: float | None = None, stall_min: float = 0) -> pd.Series:
    times = pd.date_range(START, START + timedelta(seconds=DAY), freq="15s")
    counter, out = 0, []
    for t in times:
        hours = (t - pd.Timestamp(START)).total_seconds() / 3600
        if stall_from_h is None or not (stall_from_h <= hours < stall_from_h + stall_min / 60):
            counter += 12
        out.append(counter)
    return pd.Series(out, index=times, dtype=float)


@pytest.mark.parametrize(("minutes", "status"), [(14, Status.PASS), (16, Status.FAIL)])
def test_sustained_rise_of_ten_percent_passes_for_14_minutes_and_fails_for_16(minutes: int, status: Status) -> None:
    """The agreed definition of degraded: +10% median step time for 15 minutes."""
    job = judge_job(JobSeries(steps(0.10, minutes), progress(), baseline_step_s=1.0), RULES, closed())
    verdict = judge_probation([job], [NODE], RULES, closed())
    assert verdict.status is status
    if status is Status.FAIL:
        assert verdict.figures["signal"] == "step_time"
        assert verdict.figures["time"] == stamp(START + timedelta(hours=2, seconds=30))
        assert "step time median +10.0% vs the baseline 1 s for 15m40s" in verdict.summary
    else:
        assert verdict.summary.startswith(f"no recurrence on {NODE} over 1d (2026-12-01T03:00Z–2026-12-02T03:00Z)")
        assert "step time median +0.0% (rule +10% for 15m)" in verdict.summary


def test_a_rise_below_the_rule_never_fails() -> None:
    job = judge_job(JobSeries(steps(0.09, 300), progress(), baseline_step_s=1.0), RULES, closed())
    assert not job.findings


def test_hang_is_a_recurrence_with_its_start() -> None:
    job = judge_job(JobSeries(steps(0, 0), progress(6.0, 45), baseline_step_s=1.0), RULES, closed())
    verdict = judge_probation([job], [NODE], RULES, closed())
    assert verdict.status is Status.FAIL
    assert verdict.figures["signal"] == "hang"
    assert "no step for 45m" in verdict.summary


def test_open_window_is_pending_with_elapsed_and_remaining() -> None:
    now = START + timedelta(hours=6)
    window = Window(START, DAY, now)
    job = judge_job(JobSeries(steps(0, 0)[: pd.Timestamp(now)], None, baseline_step_s=1.0), RULES, window)
    verdict = judge_probation([job], [NODE], RULES, window)
    assert verdict.status is Status.PENDING
    assert verdict.figures["remaining_s"] == 18 * 3600
    assert "6h of 1d (2026-12-01T03:00Z–2026-12-02T03:00Z) elapsed, 18h to go" in verdict.summary


def test_a_gap_longer_than_agreed_is_inconclusive_with_its_start_and_end() -> None:
    series = steps(0, 0)
    times = pd.DatetimeIndex(series.index)
    hole = (times >= pd.Timestamp(START + timedelta(hours=2))) & (
        times < pd.Timestamp(START + timedelta(hours=2, minutes=45))
    )
    job = judge_job(JobSeries(series[~hole], None, baseline_step_s=1.0), RULES, closed())
    verdict = judge_probation([job], [NODE], RULES, closed())
    assert verdict.status is Status.INCONCLUSIVE
    assert verdict.figures["gap_start"] == "2026-12-01T04:59:50Z"
    assert verdict.figures["gap_end"] == "2026-12-01T05:45Z"


def test_a_gap_within_the_agreed_maximum_is_not_inconclusive() -> None:
    series = steps(0, 0)
    times = pd.DatetimeIndex(series.index)
    hole = (times >= pd.Timestamp(START + timedelta(hours=2))) & (
        times < pd.Timestamp(START + timedelta(hours=2, minutes=10))
    )
    verdict = judge_probation(
        [judge_job(JobSeries(series[~hole], None, 1.0), RULES, closed())], [NODE], RULES, closed()
    )
    assert verdict.status is Status.PASS


def test_watchdog_timeout_in_the_window_fails() -> None:
    when = START + timedelta(hours=9)
    line = WatchdogLine(when, 3, "rank3.log", 12, "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)")
    job = judge_job(JobSeries(steps(0, 0), None, 1.0, (line,), logs_read=1), RULES, closed())
    verdict = judge_probation([job], [NODE], RULES, closed())
    assert verdict.status is Status.FAIL
    assert verdict.figures["signal"] == "watchdog"
    assert verdict.figures["time"] == "2026-12-01T12:00Z"


def test_no_job_source_is_inconclusive_never_no_recurrence() -> None:
    verdict = judge_probation([judge_job(JobSeries(None, None, 1.0), RULES, closed())], [NODE], RULES, closed())
    assert verdict.status is Status.INCONCLUSIVE
    assert "names no source" in verdict.summary


def _presence(nodes: list[str], gpus: int, drop: dict[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    rows = []
    for k in range(1, int(DAY // 60) + 1):
        t = pd.Timestamp(START + timedelta(minutes=k))
        for node in nodes:
            lo, hi = (drop or {}).get(node, (-1, -1))
            if not (lo * 60 < k <= hi * 60):
                rows.append((t, node, gpus))
    return pd.DataFrame(rows, columns=["time", "node", "gpus"])


def _census(
    nodes: list[str], gpus: int, signals: tuple[str, ...] = ("xid", "pcie_replay", "remapped_rows", "row_remap_failure")
) -> pd.DataFrame:
    rows = []
    for s in HW_SIGNALS:
        if s.key in signals:
            rows += [(s.key, s.metric, n, str(g), f"GPU-{n}-{g}", False) for n in nodes for g in range(gpus)]
    return pd.DataFrame(rows, columns=list(CENSUS_COLUMNS))


def hardware(
    points: dict[str, pd.DataFrame] | None = None,
    drop: dict[str, tuple[float, float]] | None = None,
    census: pd.DataFrame | None = None,
) -> HardwareSeries:
    return HardwareSeries(
        (NODE,),
        8,
        _census([NODE], 8) if census is None else census,
        points or {},
        _presence([NODE], 8, drop),
        empty(("time", "node", "gpu", "uuid", "present")),
    )


def _point(hours: float, gpu: str, value: float) -> pd.DataFrame:
    t = pd.Timestamp(START + timedelta(hours=hours))
    return pd.DataFrame([(t, NODE, gpu, f"GPU-{NODE}-{gpu}", value)], columns=["time", "node", "gpu", "uuid", "value"])


def test_healthy_hardware_passes_and_says_what_is_not_collected() -> None:
    part = judge_hardware(hardware(), RULES, closed())
    verdict = judge_probation([part], [NODE], RULES, closed())
    assert verdict.status is Status.PASS
    assert "0 XID, DBE not collected" in verdict.summary
    assert any(
        line.startswith("ECC double-bit errors (volatile): not collected") and "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in line
        for line in verdict.evidence
    )


def test_listed_xid_fails_with_node_gpu_time_and_code() -> None:
    part = judge_hardware(hardware({"xid": _point(6, "3", 79)}), RULES, closed())
    verdict = judge_probation([part], [NODE], RULES, closed())
    assert verdict.status is Status.FAIL
    assert (verdict.figures["signal"], verdict.figures["node"], verdict.figures["gpu"]) == ("xid", NODE, "3")
    assert verdict.figures["time"] == "2026-12-01T09:00Z"
    assert verdict.figures["value"] == 79
    assert "XID 79 (GPU has fallen off the bus) on gpu-07 GPU 3 (GPU-gpu-07-3)" in verdict.summary


def test_unlisted_xid_is_noted_not_failed() -> None:
    part = judge_hardware(hardware({"xid": _point(6, "3", 13)}), RULES, closed())
    verdict = judge_probation([part], [NODE], RULES, closed())
    assert verdict.status is Status.PASS
    assert any("XID 13" in line and "not an agreed recurrence code" in line for line in verdict.evidence)


def test_pcie_replay_rate_above_the_rule_fails_below_passes() -> None:
    high = judge_hardware(hardware({"pcie_replay": _point(9, "0", 40)}), RULES, closed())
    low = judge_hardware(hardware({"pcie_replay": _point(9, "0", 3)}), RULES, closed())
    assert judge_probation([high], [NODE], RULES, closed()).figures["value"] == 40
    assert judge_probation([low], [NODE], RULES, closed()).status is Status.PASS
    assert "PCIe replays 3/min max" in judge_probation([low], [NODE], RULES, closed()).summary


def test_node_scrape_gap_longer_than_allowed_is_inconclusive() -> None:
    part = judge_hardware(hardware(drop={NODE: (2.0, 2.75)}), RULES, closed())
    verdict = judge_probation([part], [NODE], RULES, closed())
    assert verdict.status is Status.INCONCLUSIVE
    assert (verdict.figures["gap_start"], verdict.figures["gap_end"]) == ("2026-12-01T05:00Z", "2026-12-01T05:45Z")


def test_slowdown_needs_to_last() -> None:
    def bits(minutes: int) -> pd.DataFrame:
        times = [pd.Timestamp(START + timedelta(hours=2, seconds=15 * k)) for k in range(minutes * 4)]
        return pd.DataFrame(
            [(t, NODE, "5", "GPU-5", 0x40) for t in times], columns=["time", "node", "gpu", "uuid", "value"]
        )

    census = _census([NODE], 8, ("xid", "slowdown"))
    short = judge_hardware(hardware({"slowdown": bits(4)}, census=census), RULES, closed())
    long = judge_hardware(hardware({"slowdown": bits(6)}, census=census), RULES, closed())
    assert not short.findings
    assert long.findings[0].what == "hw_thermal_slowdown for 6m"


def test_cluster_signals_in_the_window_fail_and_out_of_it_do_not() -> None:
    inside = ClusterEvent(START + timedelta(hours=3), f"Node/{NODE}", NODE_READY_CHANGED, "Ready again", "Warning")
    before = ClusterEvent(START - timedelta(hours=3), f"Node/{NODE}", GPUS_NOT_ALLOCATABLE, "7 of 8", "Warning")
    verdict = judge_probation([judge_cluster([inside, before], [NODE], RULES, closed())], [NODE], RULES, closed())
    assert verdict.status is Status.FAIL
    assert verdict.figures["time"] == "2026-12-01T06:00Z"
    ok = judge_probation([judge_cluster([before], [NODE], RULES, closed())], [NODE], RULES, closed())
    assert ok.status is Status.PASS
