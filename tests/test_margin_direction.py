"""One margin record: its direction decides which side of the baseline is worse, in the judges, junit and the plots."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from acceptance.judge.verdict import Status, Verdict
from acceptance.margins import ABOVE, BELOW, Direction, Margin
from acceptance.report.data import verdict_payload
from acceptance.report.junit import verdict_properties
from acceptance.report.plots import busbw_series
from acceptance.report.plots_training import steptime_lines

SIZES = [1 << 20, 1 << 24, 1 << 28]
BASE = [100.0, 200.0, 400.0]


def test_the_sign_convention_follows_the_direction() -> None:
    higher, lower = Margin.busbw(0.05), Margin.step_time(0.05)
    assert (higher.direction, lower.direction) == (BELOW, ABOVE)
    assert (higher.signed, lower.signed) == (-0.05, 0.05)
    assert higher.limit(200.0) == pytest.approx(190.0)
    assert lower.limit(200.0) == pytest.approx(210.0)
    assert higher.within(195.0, 200.0)
    assert not higher.within(185.0, 200.0)
    assert lower.within(205.0, 200.0)
    assert not lower.within(215.0, 200.0)


def test_a_bad_margin_is_refused_naming_the_value() -> None:
    with pytest.raises(ValueError, match="'sideways'"):
        Margin(0.05, "sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"-0\.1"):
        Margin(-0.1, BELOW)


def _fabric(direction: Direction, now: list[float]) -> dict[str, Any]:
    table = pd.DataFrame({"size": SIZES, "busbw_now": now, "busbw_baseline": BASE})
    verdict = Verdict(Status.FAIL, "all_reduce_perf", "s", {"margin": Margin(0.05, direction)}, (), table)
    return verdict_payload(verdict)


def test_the_margin_reaches_junit_and_the_report_data_as_margin_and_its_direction() -> None:
    verdict = Verdict(Status.PASS, "x", "s", {"before": 1, "margin": Margin.step_time(0.05), "unit": "s"})
    assert verdict.margin == Margin.step_time(0.05)
    names = [name for name, _ in verdict_properties(verdict)]
    assert names[3:] == ["before", "margin", "margin_direction", "unit"]
    assert dict(verdict_properties(verdict))["margin_direction"] == "above"
    assert verdict_payload(verdict)["figures"] == {
        "before": 1,
        "margin": 0.05,
        "margin_direction": "above",
        "unit": "s",
    }


def test_busbw_band_and_points_past_the_margin_are_on_the_worse_side() -> None:
    """Higher is better: the band lies under the baseline and the slow size is marked; lower is better: the
    band lies over it and the size that rose is marked. A plot that ignored the direction fails one of the two."""
    now = [100.0, 180.0, 430.0]  # the middle size 10 % below its baseline, the last 7.5 % above
    (higher,) = busbw_series([_fabric(BELOW, now)])
    assert all(high == base and low < base for (low, high), base in zip(higher.band, BASE, strict=True))
    assert higher.band[1] == pytest.approx((190.0, 200.0))
    assert higher.outside == [(SIZES[1], 180.0)]
    (lower,) = busbw_series([_fabric(ABOVE, now)])
    assert all(low == base and high > base for (low, high), base in zip(lower.band, BASE, strict=True))
    assert lower.band[2] == pytest.approx((400.0, 420.0))
    assert lower.outside == [(SIZES[2], 430.0)]


def _step(direction: str | None) -> dict[str, Any]:
    figures: dict[str, Any] = {"margin": 0.1, "baseline_median": 2.0, "smoke_median": 2.1, "unit": "s"}
    if direction is not None:
        figures["margin_direction"] = direction
    rows = [["smoke", i, 2.1] for i in range(5)] + [["baseline", i, 2.0] for i in range(5)]
    return {"status": "pass", "subject": "smoke", "figures": figures,
            "table": {"columns": ["series", "step", "step_time"], "rows": rows}}  # fmt: skip


@pytest.mark.parametrize(("direction", "limit", "factor"), [("above", 2.2, "(1 + 10%)"), ("below", 1.8, "(1 − 10%)")])
def test_step_time_limit_line_is_drawn_on_the_side_its_direction_says(
    direction: str, limit: float, factor: str
) -> None:
    lines = steptime_lines(_step(direction))
    (found,) = [line for line in lines if line[3].startswith("limit")]
    assert found[0] == pytest.approx(limit)
    assert factor in found[3]


def test_data_without_a_direction_draws_the_quantitys_own() -> None:
    """A report's data from before `margin_direction`: step time's limit above, busbw's band below."""
    (found,) = [line for line in steptime_lines(_step(None)) if line[3].startswith("limit")]
    assert found[0] == pytest.approx(2.2)
    payload = _fabric(BELOW, BASE)
    del payload["figures"]["margin_direction"]
    (series,) = busbw_series([payload])
    assert series.band[0] == pytest.approx((95.0, 100.0))
