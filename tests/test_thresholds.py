"""A threshold of NaN compares false with everything: it is refused wherever a threshold is read."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.errors import ProfileError
from acceptance.judge.loss import LossPolicy
from acceptance.judge.steptime import StepTimePolicy
from acceptance.profile import load_profile_file
from tests.suite_run import sim_cluster_folder


@pytest.mark.parametrize("field", ["spike_z", "shift_z", "grad_norm_z", "lr_rel_tol"])
@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_loss_policy_refuses_non_finite_limits(field: str, bad: float) -> None:
    with pytest.raises(ValueError, match=field):
        LossPolicy(**{field: bad})


@pytest.mark.parametrize("field", ["margin", "outlier_factor", "spread_floor", "confidence"])
def test_step_time_policy_refuses_non_finite_limits(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        StepTimePolicy(**{field: math.nan})


@pytest.mark.parametrize("key", ["loss_spike_z", "loss_shift_z", "busbw_tolerance", "step_time_tolerance"])
def test_a_profile_with_a_nan_margin_is_refused_naming_file_and_margin(tmp_path: Path, key: str) -> None:
    path = sim_cluster_folder(tmp_path) / "cluster.yaml"
    text = path.read_text()
    start = text.index(f"  {key}:")
    end = text.index("\n", start)
    path.write_text(text[:start] + f"  {key}: .nan" + text[end:])
    with pytest.raises(
        ProfileError, match=rf"{path}:\d+: margins(: found {key}|\.{key}: found) nan, expected (a fraction|a finite)"
    ):
        load_profile_file(path)


@pytest.mark.parametrize("option", ["--spike-z", "--shift-z"])
def test_analyze_loss_refuses_a_nan_limit(option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "x.log"
    log.write_text("")
    with pytest.raises(SystemExit) as stopped:
        main(["analyze", "loss", "--before", str(log), "--after", str(log), option, "nan"])
    assert stopped.value.code == 2
    assert f"{option}: expected a finite number, got 'nan'" in capsys.readouterr().err


def test_analyze_steptime_refuses_a_nan_margin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "x.log"
    log.write_text("")
    with pytest.raises(SystemExit) as stopped:
        main(["analyze", "steptime", "--baseline", str(log), "--run", str(log), "--margin", "nan"])
    assert stopped.value.code == 2
    assert "--margin: expected a fraction like 0.05 or 5%, got 'nan' (not a number)" in capsys.readouterr().err
