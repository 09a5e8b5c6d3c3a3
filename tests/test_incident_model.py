"""The pure parts of the incident side: change point, severity and its clocks, clocks at the end, ranks, changes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from acceptance.errors import ProfileError
from acceptance.incident import changes, clocks, severity
from acceptance.incident.changepoint import find_change
from acceptance.incident.model import Window
from acceptance.incident.ranks import rank_map
from acceptance.incident.render import ranges
from acceptance.profile import load_profile_file
from acceptance.tools import torchlogs
from acceptance.tools.launcher import LauncherEvent

OPENED = datetime(2026, 11, 23, 19, 30)
POLICY = severity.SeverityPolicy.from_profile(
    {
        "ack": "30m",
        "resolve": "8h",
        "degraded_rule": {"slower_by": 0.1, "for": "15m"},
        "levels": {
            "down": {"respond": "15m", "restore": "4h", "resolve": "48h", "joins": ["on-call"]},
            "degraded": {"escalate_after": "4h"},
        },
    }
)


def _series(n: int, at: int, factor: float, seed: int = 3) -> np.ndarray:
    r = np.random.default_rng(seed)
    t = 1.2 * np.exp(r.normal(0, 0.012, n))
    t[at:] *= factor
    t[::200] += 3.5  # checkpoint saves
    t[:3] *= 10  # start-up
    return t


@pytest.mark.parametrize(("at", "factor"), [(400, 1.15), (257, 1.08), (900, 0.8)])
def test_change_point_is_found_at_the_step(at: int, factor: float) -> None:
    change = find_change(_series(1200, at, factor))
    assert change is not None
    assert change.index == at
    assert change.ratio == pytest.approx(factor, rel=0.01)


def test_no_change_in_a_flat_series_or_a_tiny_shift() -> None:
    assert find_change(_series(1200, 600, 1.0)) is None
    assert find_change(_series(1200, 600, 1.01)) is None  # below the 3% shift that counts
    assert find_change(np.array([1.0] * 5)) is None


def test_severity_policy_from_the_profile_with_ack_and_resolve_as_defaults() -> None:
    down, degraded, node_out = (POLICY.levels[k] for k in ("down", "degraded", "node_out"))
    assert (down.respond_s, down.restore_s, down.resolve_s, down.joins) == (900, 14400, 172800, ("on-call",))
    assert (degraded.respond_s, degraded.restore_s, degraded.escalate_after_s) == (1800, 28800, 14400)
    assert (node_out.respond_s, node_out.restore_s) == (1800, 28800)
    assert severity.SeverityPolicy.from_profile(None).levels == {}


@pytest.mark.parametrize(
    ("impact", "level"),
    [
        (severity.Impact(Window("hang", 699, OPENED, 700, OPENED), job_failed=True), "down"),
        (severity.Impact(Window("errors-only"), job_failed=True), "down"),
        (severity.Impact(Window("change-point", 399, OPENED, 400, OPENED), ratio=1.15, slow_for_s=1200), "degraded"),
        (severity.Impact(Window("change-point", 399, OPENED, 400, OPENED), ratio=1.15, slow_for_s=300), None),
        (severity.Impact(Window("change-point", 399, OPENED, 400, OPENED), ratio=1.05, slow_for_s=3000), None),
        (severity.Impact(Window("none"), world_size=120, full_size=128), "node_out"),
        (severity.Impact(Window("none"), world_size=128, full_size=128), None),
    ],
)
def test_proposed_level_from_the_evidence(impact, level) -> None:
    assert severity.propose(impact, POLICY.degraded)[0] == level


def test_clocks_deadlines_and_escalation() -> None:
    down = severity.severity(POLICY, "down", "why", OPENED)
    assert [(c.name, c.deadline_utc) for c in down.clocks] == [
        ("respond", OPENED + timedelta(minutes=15)),
        ("restore", OPENED + timedelta(hours=4)),
        ("resolve", OPENED + timedelta(hours=48)),
    ]
    assert down.escalate_to is None  # nothing above down
    degraded = severity.severity(POLICY, "degraded", "why", OPENED)
    assert (degraded.escalate_to, degraded.escalate_at_utc) == ("down", OPENED + timedelta(hours=4))
    none = severity.severity(severity.SeverityPolicy(), "down", "why", OPENED)
    assert none.clocks == ()
    assert "states no clocks" in none.reason


def _doc(level: str | None = "down") -> dict:
    return {
        "created_utc": "2026-11-23T19:30:00Z",
        "ticket": "INC-5",
        "severity": {
            "level": level,
            "clocks": [{"name": "restore", "target_s": 14400}, {"name": "resolve", "target_s": 172800}],
        },
    }


def test_restoration_and_resolution_against_the_clocks() -> None:
    met = clocks.restoration(_doc(), datetime(2026, 11, 23, 22, 0, tzinfo=UTC))
    assert (met.met, met.after_bundle_s, met.deadline_utc) == (True, 9000, datetime(2026, 11, 23, 23, 30))
    assert met.line() == (
        "incident INC-5 capacity restored at 2026-11-23 22:00:00 UTC, 2h30m after the bundle; "
        "restore clock 4h (deadline 2026-11-23 23:30:00 UTC): met"
    )
    late = clocks.restoration(_doc(), datetime(2026, 11, 24, 1, 0))
    assert late.met is False
    assert late.line().endswith("MISSED")
    assert ("incident.restore_clock_met", "false") in late.properties()
    closed = clocks.resolution(_doc(), datetime(2026, 11, 25, 2, 0))
    assert closed.met is True
    assert ("incident.resolved_utc", "2026-11-25T02:00:00Z") in closed.properties()
    unstated = clocks.resolution({**_doc(), "severity": {"level": "node_out", "clocks": []}}, datetime(2026, 11, 24))
    assert unstated.met is None
    assert "no resolve clock stated for level node_out" in unstated.line()


def test_change_log_dates_changes_by_their_reference() -> None:
    now = changes.State(
        "now",
        versions={"nccl": "2.27.3", "driver": "570.1"},
        nodes=("a", "b", "c"),
        command="python train.py --lr 3e-4",
        env={"NCCL_IB_HCA": "mlx5_0"},
    )
    base = changes.State(
        "baseline x",
        OPENED - timedelta(days=5),
        "baseline",
        versions={"nccl": "2.26.5", "driver": "570.1"},
        nodes=("a", "b"),
    )
    report = changes.State(
        "report y",
        OPENED - timedelta(hours=3),
        "report",
        command="python train.py --lr 1e-4",
        env={"NCCL_IB_HCA": "mlx5_0,mlx5_1"},
    )
    log = changes.changelog(now, [base, report], OPENED)
    got = {(c.what, c.then, c.now, c.within_24h) for c in log.changes}
    assert got == {
        ("nccl", "2.26.5", "2.27.3", False),
        ("node set", "2 nodes", "3 nodes, incl. c", False),
        ("job command", "python train.py --lr 1e-4", "python train.py --lr 3e-4", True),
        ("env NCCL_IB_HCA", "mlx5_0,mlx5_1", "mlx5_0", True),
    }
    assert "driver 570.1 (as in baseline x)" in log.unchanged
    assert [r["kind"] for r in log.references] == ["report", "baseline"]


def test_rank_map_from_placement_and_a_conflict_between_sources() -> None:
    log = torchlogs.parse(
        "h1:10:11 [0] NCCL INFO comm 0x1 rank 8 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
    )
    events = [LauncherEvent("rank-exited", "job-worker-0", "x", 1, rank=8)]
    ranks = rank_map(
        [log],
        events,
        {"job-worker-0": "n1", "job-worker-1": "n2", "h1": "n2"},
        ["n1", "n2"],
        workers=((0, "n1"), (1, "n2")),
        slots=8,
    )
    assert ranks.world_size == 16
    assert len(ranks.entries) == 16
    assert ranks.by_node() == {"n1": list(range(8)), "n2": list(range(8, 16))}
    assert ranks.conflicts == ("rank 8: the sources disagree: n1 (mpirun); n2 (nccl-info, placement)",)


def test_ranges() -> None:
    assert ranges([0, 1, 2, 5, 7, 8]) == "0-2, 5, 7-8"
    assert ranges([]) == ""


def test_profile_severity_and_provider_are_validated(tmp_path: Path) -> None:
    base = (Path(__file__).resolve().parents[1] / "baselines" / "sim" / "cluster.yaml").read_text()
    good = tmp_path / "good" / "cluster.yaml"
    good.parent.mkdir()
    good.write_text(base)
    profile = load_profile_file(good)
    assert profile.provider["cluster_id"] == "sim-h200-0001"
    assert profile.severity["levels"]["down"]["restore"] == "4h"
    bad = tmp_path / "bad" / "cluster.yaml"
    bad.parent.mkdir()
    bad.write_text(base.replace("      restore: 4h", "      restore: soon").replace("node_out:", "one_node_out:"))
    with pytest.raises(ProfileError) as info:
        load_profile_file(bad)
    text = str(info.value)
    assert 'severity.levels.down.restore: found "soon"' in text
    assert (
        "severity.levels.one_node_out: found unknown field 'one_node_out', expected one of degraded, down, node_out"
        in text
    )
