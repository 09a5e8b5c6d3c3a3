"""The step-time verdict's table: both whole series in long form, for the report's plot."""

from __future__ import annotations

import numpy as np
import pandas as pd

from acceptance.judge.steptime import StepTimePolicy, judge_steptime
from acceptance.judge.verdict import Status
from acceptance.report.data import verdict_payload
from acceptance.report.plots_training import steptime_plot


def series(rng, n, *, slow=1.0, outliers=0.0):
    """Step times around 1.2 s (2% noise), a slow first step, optional stall outliers."""
    t = 1.2 * slow * (1 + 0.02 * rng.standard_normal(n))
    hit = rng.random(n) < outliers
    t[hit] *= 4.0
    t[0] *= 10
    return pd.Series(t, index=np.arange(1, n + 1))


def test_table_holds_both_series_with_the_kept_mask():
    rng = np.random.default_rng(5)
    base, smoke = series(rng, 400, outliers=0.02), series(rng, 150, slow=1.02)
    v = judge_steptime(base, smoke, StepTimePolicy())
    t = v.table
    assert t is not None
    assert list(t.columns) == ["series", "step", "step_time", "kept"]
    assert t["series"].iloc[0] == "smoke"  # smoke rows first
    by = {name: part for name, part in t.groupby("series")}
    assert set(by) == {"smoke", "baseline"}
    assert len(by["baseline"]) == 400
    assert len(by["smoke"]) == 150
    assert by["baseline"]["step"].tolist() == base.index.tolist()
    np.testing.assert_allclose(by["smoke"]["step_time"].to_numpy(), smoke.to_numpy())
    assert int(by["smoke"]["kept"].sum()) == v.figures["n_smoke"]
    assert int(by["baseline"]["kept"].sum()) == v.figures["n_baseline"]
    dropped = sum(int(v.figures[f"baseline_dropped_{k}"]) for k in ("warmup", "after_restore", "events", "outliers"))
    assert int((~by["baseline"]["kept"]).sum()) == dropped > 5  # warm-up and outliers
    assert not by["smoke"]["kept"].iloc[:5].any()  # warm-up
    kept = by["smoke"][by["smoke"]["kept"]]["step_time"]
    assert float(kept.median()) == v.figures["smoke_median"]
    assert t.attrs["plot_only"] is True


def test_table_travels_with_inconclusive_and_error_verdicts():
    rng = np.random.default_rng(6)
    short = judge_steptime(series(rng, 300), series(rng, 12), StepTimePolicy())
    assert short.status is Status.INCONCLUSIVE
    assert short.table is not None
    assert (short.table["series"] == "smoke").sum() == 12
    payload = verdict_payload(short)
    assert payload["table"]["columns"] == ["series", "step", "step_time", "kept"]
    assert steptime_plot([payload]) is not None


def test_nan_steps_are_left_out():
    s = pd.Series([1.0, np.nan, *np.full(60, 1.0)])
    v = judge_steptime(s, s)
    assert v.table is not None
    assert len(v.table) == 2 * 61
    assert v.table["step_time"].notna().all()


def test_a_long_baseline_is_thinned_evenly_for_the_plot():
    from acceptance.judge.steptime import PLOT_ROWS

    rng = np.random.default_rng(7)
    base = series(rng, 3 * PLOT_ROWS + 7)
    v = judge_steptime(base, series(rng, 200), StepTimePolicy(resamples=200))
    rows = v.table[v.table["series"] == "baseline"]
    assert PLOT_ROWS // 2 < len(rows) <= PLOT_ROWS
    assert rows["step"].iloc[0] == 1
    assert rows["step"].iloc[-1] > 3 * PLOT_ROWS - 10  # spread over the whole run
    assert (v.table["series"] == "smoke").sum() == 200  # the smoke run is whole
    assert v.figures["n_baseline"] == 3 * PLOT_ROWS + 7 - 5  # the judge still uses every step
