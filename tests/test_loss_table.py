"""The loss verdict's table: pre-restore window and post-restore rows, trend and z, for the report."""

from __future__ import annotations

import numpy as np
import pytest

from acceptance.judge.loss import LossPolicy, judge_loss
from acceptance.judge.verdict import Status
from acceptance.report.data import verdict_payload
from acceptance.report.plots_training import loss_plot, steptime_plot
from acceptance.tools.trainlog import TrainLog

SIGMA = 0.01


def logs(rng, *, restore=400, post=60, spike_at=None, nan_at=None, step_time=False):
    steps = np.arange(1, restore + post + 1)
    trend = np.log(6.0) - 0.18 * np.log(steps)
    u = trend + SIGMA * rng.standard_normal(len(steps))
    if spike_at is not None:
        u[restore + spike_at] = trend[restore + spike_at] + 10 * SIGMA
    loss = np.exp(u)
    nan = np.zeros(len(steps))
    if nan_at is not None:
        loss[restore + nan_at], nan[restore + nan_at] = np.nan, 1
    cols = {"step": steps, "loss": loss, "nan": nan}
    if step_time:
        cols["step_time_s"] = np.full(len(steps), 1.2)
    pick = [lambda a: a[:restore], lambda a: a[restore:]]
    return [TrainLog("synthetic", f"<{i}>", {k: f(v) for k, v in cols.items()}) for i, f in enumerate(pick)]


def test_table_has_the_trend_window_before_and_the_rows_after():
    before, after = logs(np.random.default_rng(1), step_time=True)
    v = judge_loss(before, after, 400, LossPolicy())
    assert v.status is Status.PASS, v.message()
    t = v.table
    assert t is not None
    assert list(t.columns[:5]) == ["phase", "step", "loss", "trend", "z"]
    assert "step_time_s" not in t  # criterion 3's column stays out of the loss table
    pre, post = t[t["phase"] == "before"], t[t["phase"] == "after"]
    assert len(pre) == v.figures["trend_points"] == 300
    assert pre["step"].tolist() == list(range(101, 401))
    assert post["step"].tolist() == list(range(401, 461))
    assert (post["step"].to_numpy() > 400).all()
    assert t["trend"].notna().all()
    expected = np.exp(np.log(6.0) - 0.18 * np.log(t["step"].to_numpy(float)))
    np.testing.assert_allclose(t["trend"], expected, rtol=3 * SIGMA)
    judged = post["z"].notna()
    assert judged.sum() == v.figures["post_points"] == 50
    assert float(post["z"].abs().max()) == pytest.approx(v.figures["max_abs_z"])
    assert pre["z"].notna().all()
    assert float(pre["z"].abs().median()) < 1.5
    assert t.attrs["plot_only"] is True


def test_spike_is_in_the_table_and_the_plot_draws_it():
    before, after = logs(np.random.default_rng(3), spike_at=2)
    v = judge_loss(before, after, 400, LossPolicy())
    assert v.status is Status.FAIL
    row = v.table[v.table["step"] == 403].iloc[0]
    assert row["phase"] == "after"
    assert row["z"] > 6
    payload = verdict_payload(v)
    assert loss_plot([payload]) is not None
    assert steptime_plot([payload]) is None  # a loss table is not a step-time table


def test_exact_failure_keeps_both_phases_without_trend():
    before, after = logs(np.random.default_rng(4), nan_at=3)
    v = judge_loss(before, after, 400, LossPolicy())
    assert v.status is Status.FAIL
    assert "NaN/Inf at step 404" in v.summary
    assert set(v.table["phase"]) == {"before", "after"}
    assert "trend" not in v.table
    assert (v.table["phase"] == "before").sum() == 300
    assert loss_plot([verdict_payload(v)]) is not None


def test_nothing_after_the_restore_still_shows_the_run_before():
    before, _after = logs(np.random.default_rng(5))
    empty = TrainLog("synthetic", "<empty>", {"step": np.array([], dtype=np.int64), "loss": np.array([])})
    v = judge_loss(before, empty, 400, LossPolicy())
    assert v.status is Status.INCONCLUSIVE
    assert set(v.table["phase"]) == {"before"}
    assert loss_plot([verdict_payload(v)]) is not None


def test_a_long_resumed_run_is_cut_after_the_window_but_reaches_the_offending_step():
    before, after = logs(np.random.default_rng(6), post=2000)
    v = judge_loss(before, after, 400, LossPolicy())
    assert (v.table["phase"] == "after").sum() == 300  # as many steps after the restore as before
    late = logs(np.random.default_rng(6), post=2000, nan_at=1500)
    v = judge_loss(*late, 400, LossPolicy())
    assert v.figures["first_offending_step"] == 1901
    after_rows = v.table[v.table["phase"] == "after"]
    assert after_rows["step"].max() == 1920
