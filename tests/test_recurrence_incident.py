"""Criterion 5 closes the incident: its pass is the resolution, at the window's end, against the resolve clock."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.report.incident import resolve_outcome
from tests.incident_logs import bundle_argv, write


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, datetime]:
    """One incident bundle (0.5-0.8 s to make) for the module's tests, which only read it."""
    tmp_path = tmp_path_factory.mktemp("incident")
    (tmp_path / "logs").mkdir()
    logs = write(tmp_path / "logs", only=("xid",))
    out = tmp_path / "reports" / "sim" / "incident-INC-9"
    assert main(bundle_argv("--job-logs", str(logs["xid"]), "--ticket", "INC-9", "--out", str(out))) == 0
    made = datetime.fromisoformat(json.loads((out / "bundle.json").read_text())["created_utc"].removesuffix("Z"))
    return tmp_path / "reports", made


def payload(status: str, window_end: datetime, summary: str = "") -> dict[str, object]:
    return {"status": status, "summary": summary, "figures": {"window_end": window_end.strftime("%Y-%m-%dT%H:%MZ")}}


def test_a_passing_probation_resolves_the_incident_at_the_windows_end(reports: tuple[Path, datetime]) -> None:
    root, made = reports
    end = (made + timedelta(hours=30)).replace(second=0, microsecond=0)
    found = resolve_outcome([root], "INC-9", payload("pass", end))
    props = dict(found.properties)
    assert found.ok
    assert props["incident.resolved_utc"] == end.isoformat() + "Z"
    assert props["incident.resolve_clock_met"] == "true"  # level down: resolve within 48 h
    assert found.lines[0].startswith(f"incident INC-9 resolved at {end:%Y-%m-%d %H:%M:%S} UTC, ")
    assert found.lines[0].endswith(": met")
    late = resolve_outcome([root], "INC-9", payload("pass", made + timedelta(hours=50)))
    assert not late.ok
    assert late.lines[0].endswith(": MISSED")


@pytest.mark.parametrize(("status", "ok"), [("pending", True), ("fail", False), ("inconclusive", False)])
def test_an_unfinished_or_failed_probation_does_not_resolve_it(
    reports: tuple[Path, datetime], status: str, ok: bool
) -> None:
    root, made = reports
    found = resolve_outcome([root], "INC-9", payload(status, made + timedelta(hours=30), "window open on gpu-07"))
    assert found.ok is ok
    assert dict(found.properties)["incident.resolved"] == "false"
    assert found.lines[0] == f"incident INC-9: not resolved: probation {status} (window open on gpu-07)"
    skipped = resolve_outcome([root], "INC-9", None)
    assert skipped.lines[0] == "incident INC-9: not resolved: probation not judged"
