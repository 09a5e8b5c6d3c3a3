"""The ticket's later acceptance run: capacity restored at its pass, how long after the bundle, the restore clock."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from acceptance.cli import main
from acceptance.report.incident import restore_outcome
from tests.incident_logs import bundle_argv, write
from tests.suite_run import run_suite, sim_cluster_folder


@pytest.fixture
def bundled(pytester: pytest.Pytester):
    base = sim_cluster_folder(pytester.path).parent
    logs = write(pytester.mkdir("logs"), only=("xid",))
    out = pytester.path / "reports" / "sim" / "incident-INC-9"
    argv = ("--job-logs", str(logs["xid"]), "--ticket", "INC-9", "--out", str(out))
    assert main(bundle_argv(*argv, "--reports-dir", str(pytester.path / "reports"), baselines=base)) == 0
    return out


@pytest.mark.slow
def test_a_passing_run_restores_capacity_within_the_restore_clock(pytester: pytest.Pytester, bundled) -> None:
    run = run_suite(pytester, "--ticket=INC-9", "-k", "preflight")
    assert run.result.ret == 0, run.result.stdout.str()[-2000:]
    props = run.suite_properties()
    assert props["incident.bundle"] == str(bundled)
    assert props["incident.ticket"] == "INC-9"
    assert props["incident.level"] == "down"
    assert props["incident.restore_clock_s"] == "14400"
    restored = datetime.fromisoformat(props["incident.restored_utc"].removesuffix("Z"))
    made = datetime.fromisoformat(props["incident.bundle_utc"].removesuffix("Z"))
    assert timedelta(0) <= restored - made < timedelta(minutes=10)
    assert props["incident.restore_clock_met"] == "true"
    assert abs(float(props["incident.restore_after_bundle_s"]) - (restored - made).total_seconds()) <= 1
    run.result.stdout.fnmatch_lines(
        [
            "*= incident =*",
            "incident INC-9 capacity restored at * UTC, * after the bundle; restore clock 4h (deadline * UTC): met",
            f"bundle: {bundled}",
        ]
    )


def test_a_failing_run_does_not_restore_capacity(tmp_path) -> None:
    logs = write(tmp_path, only=("xid",))
    out = tmp_path / "reports" / "sim" / "incident-INC-9"
    assert main(bundle_argv("--job-logs", str(logs["xid"]), "--ticket", "INC-9", "--out", str(out))) == 0
    made = datetime.fromisoformat(json.loads((out / "bundle.json").read_text())["created_utc"].removesuffix("Z"))
    failed = restore_outcome([tmp_path / "reports"], "INC-9", passed=False, at=made + timedelta(hours=5))
    props = dict(failed.properties)
    assert not failed.ok
    assert props["incident.restored"] == "false"
    assert "incident.restored_utc" not in props
    assert failed.lines[0] == (
        "incident INC-9: capacity NOT restored: this acceptance run did not pass; restore "
        f"deadline {made + timedelta(hours=4):%Y-%m-%d %H:%M:%S} UTC passed 1.0 h ago"
    )
    late = restore_outcome([tmp_path / "reports"], "INC-9", passed=True, at=made + timedelta(hours=5))
    assert not late.ok
    assert dict(late.properties)["incident.restore_clock_met"] == "false"
    assert late.lines[0].endswith(
        "restore clock 4h (deadline " + f"{made + timedelta(hours=4):%Y-%m-%d %H:%M:%S} UTC): MISSED"
    )


def test_a_ticket_without_a_bundle_says_so(tmp_path) -> None:
    outcome = restore_outcome([tmp_path / "reports"], "INC-404", passed=True, at=datetime(2026, 11, 30))
    assert outcome.ok
    assert outcome.properties == (("incident.bundle", ""),)
    assert outcome.lines == (f"incident INC-404: no bundle of this ticket under {tmp_path / 'reports'}",)


def test_a_failing_run_names_the_calendar_its_restore_deadline_was_counted_in(tmp_path) -> None:
    """A deadline counted in coverage hours says so in the not-restored line too, not only in the restored one."""
    logs = write(tmp_path, only=("xid",))
    out = tmp_path / "reports" / "sim" / "incident-INC-9"
    assert main(bundle_argv("--job-logs", str(logs["xid"]), "--ticket", "INC-9", "--out", str(out))) == 0
    doc = json.loads((out / "bundle.json").read_text())
    made = datetime.fromisoformat(doc["created_utc"].removesuffix("Z"))
    for clock in doc["severity"]["clocks"]:
        clock["calendar"] = "Mon-Fri 08:00-18:00 Europe/Berlin"
    (out / "bundle.json").write_text(json.dumps(doc))
    failed = restore_outcome([tmp_path / "reports"], "INC-9", passed=False, at=made + timedelta(hours=1))
    assert "UTC in coverage hours Mon-Fri 08:00-18:00 Europe/Berlin in " in failed.lines[0]
