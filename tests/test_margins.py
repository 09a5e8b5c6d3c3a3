"""The agreed margins: one type, defaults, the baseline's margins win when judging, differences in words."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acceptance.baseline import BaselineStore, amended, sha256_of
from acceptance.criteria.context import RunContext
from acceptance.errors import BaselineError
from acceptance.judge.loss import LossPolicy
from acceptance.judge.steptime import StepTimePolicy
from acceptance.margins import Margins, judged_with_notes
from acceptance.profile import load_profile_file
from tests.suite_run import ROOT, demo_key, sim_cluster_folder

WHEN = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


def test_one_set_of_defaults_used_by_the_judges() -> None:
    m = Margins()
    assert (m.busbw_tolerance, m.busbw_min_size, m.step_time_tolerance) == (0.05, 1 << 20, 0.05)
    assert StepTimePolicy().margin == m.step_time_tolerance
    assert (LossPolicy().spike_z, LossPolicy().shift_z) == (m.loss_spike_z, m.loss_shift_z)


def test_profile_spellings_and_json_round_trip() -> None:
    m = Margins.from_profile({"busbw_tolerance": 0.1, "busbw_min_size": "64M", "probation": "1h30m"})
    assert (m.busbw_tolerance, m.busbw_min_size, m.probation_s) == (0.1, 64 << 20, 5400.0)
    assert Margins.from_json(m.to_json()) == m
    # a margin an older baseline did not record takes the default
    assert (
        Margins.from_json({"busbw_tolerance": 0.1, "busbw_min_size": 1, "step_time_tolerance": 0.02}).loss_spike_z == 6
    )


@pytest.mark.parametrize(
    "bad", [{"busbw_tolerance": math.nan}, {"step_time_tolerance": 1.5}, {"loss_spike_z": 0}, {"probation_s": math.inf}]
)
def test_impossible_margins_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        Margins(**bad)


def test_differences_are_worded_one_line_each() -> None:
    notes = judged_with_notes(Margins(busbw_tolerance=0.1, probation_s=3600), Margins(), "cluster.yaml", "ab" * 32)
    assert notes == {
        "busbw_tolerance": "busbw tolerance 10% in cluster.yaml, 5% agreed at handover (baseline sha256 "
        "abababababab…): judging with 5%",
        "probation_s": "probation window 1h in cluster.yaml, 1d agreed at handover (baseline sha256 abababababab…): "
        "judging with 1d",
    }
    assert judged_with_notes(Margins(), Margins(), "cluster.yaml", "ab" * 32) == {}


def _edited_profile(tmp_path: Path, tolerance: float) -> Path:
    folder = sim_cluster_folder(tmp_path)
    path = folder / "cluster.yaml"
    path.write_text(path.read_text().replace("busbw_tolerance: 0.05", f"busbw_tolerance: {tolerance}"))
    return folder


def test_judging_uses_the_baselines_margins_recording_the_profiles(tmp_path: Path) -> None:
    folder = _edited_profile(tmp_path, 0.5)
    profile = load_profile_file(folder / "cluster.yaml")
    loaded = BaselineStore(folder).latest()
    judging = RunContext.create(profile, loaded, returned_nodes=(), run_id="r", started=WHEN)
    assert judging.margins.busbw_tolerance == 0.05
    assert judging.margins_from == "baseline"
    assert list(judging.margin_notes) == ["busbw_tolerance"]
    assert "busbw tolerance 50% in cluster.yaml, 5% agreed at handover" in judging.margin_notes["busbw_tolerance"]
    recording = RunContext.create(profile, None, returned_nodes=(), run_id="r", started=WHEN)
    assert recording.margins.busbw_tolerance == 0.5
    assert recording.margin_notes == {}


def test_amended_baseline_keeps_results_and_records_old_new_reason(tmp_path: Path) -> None:
    folder = _edited_profile(tmp_path, 0.1)
    old = BaselineStore(folder).latest()
    profile = load_profile_file(folder / "cluster.yaml")
    doc = amended(old, profile.margins, reason="fabric re-cabled, both parties agree", by="ops@x", when=WHEN)
    assert doc["margins"]["busbw_tolerance"] == 0.1
    assert doc["results"] == old.baseline.data["results"]
    assert doc["conditions"] == old.baseline.data["conditions"]
    assert doc["provenance"]["amended"] == {
        "from": old.path.name,
        "from_sha256": old.sha256,
        "from_signature_sha256": sha256_of(old.path.with_name(old.path.name + ".sig")),
        "reason": "fabric re-cabled, both parties agree",
        "by": "ops@x",
        "utc": "2026-12-01T03:00:00Z",
        "margins": {"busbw_tolerance": {"old": 0.05, "new": 0.1}},
    }
    assert old.baseline.data["margins"]["busbw_tolerance"] == 0.05, "the loaded baseline is not touched"
    with pytest.raises(BaselineError, match="nothing to amend"):
        amended(old, old.baseline.margins, reason="x", by="y", when=WHEN)
    with pytest.raises(BaselineError, match="needs a reason"):
        amended(old, profile.margins, reason="  ", by="y", when=WHEN)


def test_baseline_amend_command_writes_a_new_file_and_keeps_the_old(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from acceptance.cli import main

    folder = _edited_profile(tmp_path, 0.1)
    old = BaselineStore(folder).latest()
    before = old.path.read_bytes()
    key = demo_key(tmp_path)
    assert main(["baseline", "amend", "sim", "--margins-from-profile", "--reason", "agreed in INC-7",
                 "--baselines-dir", str(folder.parent), "--sign-key", str(key)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "busbw tolerance: 5% -> 10%" in out
    assert old.path.read_bytes() == before
    files = BaselineStore(folder).files()
    assert len(files) == 2
    new = BaselineStore(folder).latest()
    assert new.path != old.path
    assert new.baseline.margins.busbw_tolerance == 0.1
    assert new.baseline.provenance["amended"]["from_sha256"] == old.sha256
    assert main(["baseline", "show", "sim", "--baselines-dir", str(folder.parent)]) == 0
    assert "margins amended" in capsys.readouterr().out
    # a second amendment with nothing new is refused, and writes nothing
    assert main(["baseline", "amend", "sim", "--margins-from-profile", "--reason", "again",
                 "--baselines-dir", str(folder.parent), "--sign-key", str(key)]) == 2  # fmt: skip
    assert len(BaselineStore(folder).files()) == 2
    assert main(["baseline", "verify", "sim", "--baselines-dir", str(folder.parent)]) == 0, "signed by the demo key"


def test_the_shipped_sim_baseline_records_every_margin() -> None:
    loaded = BaselineStore(ROOT / "baselines" / "sim").latest()
    assert set(loaded.baseline.data["margins"]) == set(Margins().to_json())
